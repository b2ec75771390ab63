"""What the console-log readers share: the text a terminal showed, line by line.

A trainer's stdout holds more than its metrics: ANSI colours (Ray colours its worker prefixes,
SkyRL forces loguru's colours), progress bars redrawn with ``\\r``, and -- where the trainer runs
in a Ray task or actor, as verl's and SkyRL's do -- each line behind Ray's prefix naming the
process that printed it, ``(TaskRunner pid=77)`` or ``(skyrl_entrypoint pid=1, ip=10.0.0.1)``.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Iterator

from scalerl.curves.unpack import file_tail

#: ANSI escape sequences.
ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
#: Ray's prefix of a worker's output line: ``(TaskRunner pid=77)``, ``(main_task pid=1, ip=10.0.0.1)``.
RAY_PREFIX = re.compile(r"^\s*\([\w.-]+ pid=\d+(?:, ip=[\w.:-]+)?\)\s?")


def ray_source(line: str) -> tuple[str, str]:
    """``(Ray's prefix -- the process that printed the line --, or '' where there is none; the line
    without it)``."""
    found = RAY_PREFIX.match(line) if "pid=" in line else None  # (the test first: most lines have none)
    return (found.group(0).strip(), line[found.end():]) if found else ("", line)


def text_head(path: Path, chars: int, newline: str | None = None) -> str | None:
    """The first ``chars`` characters of a text file (undecodable bytes replaced), colours removed:
    what a reader's format test looks at; None where it cannot be read. ``newline=""`` keeps a ``\r``
    (a line a progress bar redrew) inside its line."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline=newline) as f:
            head = f.read(chars)
    except OSError:
        return None
    # The readers take each line's colours off (shown_lines): a format test that did not would refuse
    # the log they read -- a report re-logged through a colouring logger (loguru's <level>, rich's
    # highlighter: '\x1b[32mStep 1 | loss:...', 'Iter \x1b[1;36m10\x1b[0m: ...') was no format at all.
    return ANSI.sub("", head) if "\x1b" in head else head


def shown_lines(path: Path) -> Iterator[tuple[int, str]]:
    """``(line number, text)`` of each non-blank line as a terminal showed it: colours removed, and
    of a line redrawn with ``\\r`` (tqdm) each piece in turn."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, raw in enumerate(f, start=1):
            if "\x1b" in raw:  # (the tests before the regexes: most lines of a large log have neither)
                raw = ANSI.sub("", raw)
            for piece in raw.split("\r") if "\r" in raw else (raw,):
                line = piece.rstrip("\n")
                if line.strip():
                    yield lineno, line


def skipped_lines_note(lines: list[int], what: str) -> list[str]:
    """The note for a console's lines of ``what`` that were cut off or unreadable (the first five
    line numbers), or none."""
    if not lines:
        return []
    shown = ", ".join(map(str, lines[:5])) + (", ..." if len(lines) > 5 else "")
    return [f"{len(lines)} {what} line(s) cut off or unreadable (line {shown}) skipped"]


#: How a line that a cut may have ended inside a number ends: a digit, or a digit and the ``.`` or exponent
#: that would have gone on with more.
_ENDS_IN_NUMBER = re.compile(r"\d(?:\.|[eE][-+]?)?$")

def cut_last_line(path: Path) -> str | None:
    """The last line of a text file that ends inside a number with no newline after it -- where a killed
    run stopped writing (a block-buffered stdout is flushed at any byte, not at a line's end): ``Peak mem
    65.0`` of ``Peak mem 65.006 GB``, read as a right-looking wrong value.
    None where the file ends with a newline (what every logger and ``print`` write last) or its last line
    ends in anything else (``}``, a unit, a word: no number a cut could have shortened)."""
    try:
        tail = file_tail(path)
    except OSError:
        return None
    if not tail or tail.endswith((b"\n", b"\r")):
        return None
    last = tail.rsplit(b"\n", 1)[-1].decode("utf-8", errors="replace")
    last = ANSI.sub("", last).rsplit("\r", 1)[-1]
    return last if _ENDS_IN_NUMBER.search(last) else None
