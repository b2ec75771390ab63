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
    """The first ``chars`` characters of a text file (undecodable bytes replaced), what a reader's
    format test looks at; None where it cannot be read. ``newline=""`` keeps a ``\r`` (a line a
    progress bar redrew) inside its line."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline=newline) as f:
            return f.read(chars)
    except OSError:
        return None


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
