"""Read SkyRL's console log (``trainer.logger=console``): the trainer's stdout, where SkyRL's
``ConsoleLogger`` writes each tracker call as a loguru line ending ``Step N:`` and, below it, the
``pprint`` of the metrics with every float as a 4-decimal string::

    (skyrl_entrypoint pid=811) 2026-01-05 10:02:11.204 | INFO | ...:log:189 - Step 10:
    (skyrl_entrypoint pid=811) {'eval/all/avg_score': '0.4520',
    (skyrl_entrypoint pid=811)  'eval/all/pass_at_1': '0.4520',
    (skyrl_entrypoint pid=811)  'timing/step': '70.7184',
    (skyrl_entrypoint pid=811)  'trainer/global_step': 10}

Each such block is a row: ``step`` (N, the tracker's step: SkyRL's ``global_step``) and the
metrics. SkyRL evaluates inside the step's row (``eval/all/avg_score``, ``eval/<source>/...``)
and, with ``eval_before_train``, logs an evaluation-only row at the step it starts from (0, or the
checkpoint it resumed from). Everything else the console holds -- Ray's prefixes and log lines,
loguru's colours (SkyRL forces them), the decoded examples, the trainer's one-line status dicts,
progress bars -- is passed over; a block is read from the lines of the process that printed its
header, so another worker's output between its lines does no harm.

* **a console appended to by a resumed training** (``tee -a``): the step goes back to the
  checkpoint's; what the abandoned attempt logged after it is dropped, and at the checkpoint's own
  step its row takes the resumed attempt's evaluation of that checkpoint (one evaluation of it, the
  later; the step's training metrics kept); the last step logged again without going back (killed
  right after the checkpoint) shows no launch in this console: both rows are kept, said;
  a training started over (the step back to where the log began) is a run of its own,
  ``<stem>#1``, ``<stem>#2``, ...;
* a block cut off (the run was killed while printing) is skipped and counted.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import split_attempts
from scalerl.curves.console import ray_source, shown_lines
from scalerl.curves.data import Curve
from scalerl.curves.dict_lines_log import parse_printed_dict
from scalerl.curves.rows import curves_from_rows
from scalerl.errors import InputError

#: The line SkyRL's ``ConsoleLogger`` opens a block with: loguru's ``... - Step N: `` (or the bare
#: message, where the log was written without loguru's format).
_HEADER = re.compile(r"(?:^|\s-\s)Step (-?\d+):\s*$")
#: How many lines a block may take before it is given up on (pprint writes a key per line).
MAX_BLOCK_LINES = 10_000
#: How many lines of a file's start are read to tell whether it is a SkyRL console.
SNIFF_LINES = 200_000
#: A header anywhere in a text, colours and all: the cheap test before the blocks are parsed (every
#: text log that is no verl console is asked whether it is a SkyRL one).
_HEADER_ANYWHERE = re.compile(r"Step -?\d+:\s*$", re.M)


def _blocks(path: Path, limit: int | None = None):
    """``(step, metrics or None, header's line number)`` per block, in the order they close; None
    for a block that never parsed (cut off, or not a dict)."""
    open_blocks: dict[str, tuple[int, int, list[str]]] = {}  # per process: (step, line number, lines)
    for n, (lineno, line) in enumerate(shown_lines(path)):
        if limit is not None and n >= limit:
            return
        who, text = ray_source(line)
        if who in open_blocks:
            step, start, body = open_blocks[who]
            if not body and not text.startswith("{"):
                del open_blocks[who]  # "Step N:" with no dict below it: not one of SkyRL's
            elif _HEADER.search(text):
                del open_blocks[who]  # the process began another block: this one never closed
                yield step, None, start
            else:
                body.append(text)
                if text.rstrip().endswith("}"):
                    metrics = parse_printed_dict("\n".join(body))
                    if metrics is not None:
                        del open_blocks[who]
                        yield step, metrics, start
                        continue
                if len(body) > MAX_BLOCK_LINES:
                    del open_blocks[who]
                    yield step, None, start
                continue
        header = _HEADER.search(text) if "Step " in text else None
        if header:
            open_blocks[who] = (int(header.group(1)), lineno, [])
    for step, start, body in open_blocks.values():
        if body:
            yield step, None, start


def looks_like_skyrl(path: Path) -> bool:
    """Whether the start of ``path`` holds a SkyRL console block (``Step N:`` over a printed dict)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            if not _HEADER_ANYWHERE.search(f.read(4_000_000)):
                return False
        return any(metrics is not None for _, metrics, _ in _blocks(path, SNIFF_LINES))
    except OSError:
        return False


def read_skyrl_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows (``step`` and the metrics) in log order, resumes and restarts resolved, and notes."""
    rows: list[dict[str, Any]] = []
    cut: list[int] = []
    for step, metrics, lineno in _blocks(path):
        if metrics is None:
            cut.append(lineno)
        else:
            rows.append({**metrics, "step": step})
    notes = [f"{len(cut)} block(s) cut off or unreadable (from line {', '.join(map(str, cut[:5]))}"
             f"{', ...' if len(cut) > 5 else ''}) skipped"] if cut else []
    rows, more = split_attempts(rows, "step", path.stem)
    return rows, notes + more


def read_skyrl(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """SkyRL's console log: see :mod:`scalerl.curves.skyrl_log`; ``x`` may be ``step``, a logged
    number (``trainer/global_step``), or ``cum:`` of one (``cum:timing/step``: seconds so far)."""
    path = Path(path)
    rows, notes = read_skyrl_rows(path)
    if not rows:
        raise InputError(f"{path}: no SkyRL console blocks ('Step N:' over a printed dict of metrics) in the file")
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded)
