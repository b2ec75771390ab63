"""Read ROLL's console log: the driver's stdout with the ``stdout`` tracker
(``track_with: stdout``), or its log file (``$ROLL_LOG_DIR/log_rank_DRIVER_0_1.log``). ROLL's
``StdoutTracker`` writes each tracker call through its logger as one line::

    [2026-11-20 10:00:05] [tracking.py (161)] [INFO] [DRIVER 0 / 1][PID 4242] metrics_tag: {"step": 10, "metrics": {"val_correct/all/mean": 0.41, "time/step_total": 30.2, ...}}

Each such line is a row: ``step`` (the pipeline's ``global_step``) and the metrics under the names
the other trackers get (``val_correct/all/mean``, ``val_correct/<tag>/mean``, ``critic/score/mean``,
``time/step_total``). The rest of the log is passed over -- the RLVR pipeline's own print of
``{"val_correct/all/mean": x}`` too, which has no step (read as a printed dict, it was a second
point of the evaluation, at the step before). A log a resumed pipeline appended to is read by the
step: what the abandoned attempt logged from the resumed attempt's first step on is dropped; a
pipeline started over is a run of its own (``<stem>#2``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import split_attempts
from scalerl.curves.console import shown_lines, skipped_lines_note, text_head
from scalerl.curves.rows import read_from_rows

#: The tracker's line: what follows is ``{"step": N, "metrics": {...}}``.
TAG = "metrics_tag: "
_LINE = re.compile(re.escape(TAG) + r"(\{.*\})\s*$")
STEP = "step"
#: How much of a file's start is searched for a tracker line to tell a ROLL log.
SNIFF_CHARS = 4_000_000


def _row(line: str) -> dict[str, Any] | None:
    found = _LINE.search(line)
    if not found:
        return None
    try:
        record = json.loads(found.group(1))
    except ValueError:
        return None
    if not isinstance(record, dict) or not isinstance(record.get("metrics"), dict):
        return None
    step = record.get(STEP)
    return {**record["metrics"], STEP: step} if step is not None else dict(record["metrics"])


def looks_like_roll(path: Path) -> bool:
    """Whether the start of ``path`` holds a line of ROLL's stdout tracker."""
    head = text_head(path, SNIFF_CHARS)
    if head is None:
        return False
    return TAG in head and any(_row(line) is not None for line in head.splitlines() if TAG in line)


def read_roll_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    torn: list[int] = []
    for lineno, line in shown_lines(path):
        if TAG not in line:
            continue
        row = _row(line)
        if row is None:
            torn.append(lineno)
        else:
            rows.append(row)
    notes = skipped_lines_note(torn, "tracker")
    rows, more = split_attempts(rows, STEP, path.stem)
    return rows, notes + more


read_roll = read_from_rows(read_roll_rows)
