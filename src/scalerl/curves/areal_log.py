"""Read AReaL's console log (or its log file): ``StatsLogger.commit`` prints, at the end of every
training step,

    (AReaL) 20251120-10:00:04.148 StatsLogger INFO: Epoch 1/1 Step 5/40 Train step 5/40 done.
    (AReaL) 20251120-10:00:04.148 StatsLogger INFO: Stats (1/1):
    (AReaL) 20251120-10:00:04.148 StatsLogger INFO:
    ╒═════════════════════╤════════════╤═════════════════════╤════════════╕
    │ eval-rollout/reward │ 4.1200e-01 │ rollout/reward      │ 3.2000e-01 │
    ├─────────────────────┼────────────┼─────────────────────┼────────────┤
    │ timeperf/eval       │ 3.0000e+01 │ timeperf/train_step │ 1.1250e+01 │
    ╘═════════════════════╧════════════╧═════════════════════╧════════════╛

the step's stats as tabulate's ``fancy_grid`` (four key / value pairs a row), floats with five significant digits (``.4e``): the log's precision. Each
table is a row: ``step``, the step AReaL's trackers (W&B, SwanLab, TensorBoard, Trackio) log it at --
``Train step N/T`` prints ``global_step + 1``, they get ``global_step``, ``N - 1``; a commit of
several stats dicts (``Stats (i/n)``) logs them at consecutive steps, after the last one logged --,
and the stats under their names (``eval-rollout/reward``: the evaluation's reward, only in the rows
of a step that evaluated; ``rollout/reward``, ``timeperf/*`` seconds). Colours and everything else
the console holds are passed over. A console a resumed training appended to is read by the step:
what the abandoned attempt logged from the resumed one's first step on is dropped; a training
started over is a run of its own (``<stem>#2``).
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import split_attempts
from scalerl.curves.console import ANSI, shown_lines, text_head
from scalerl.curves.rows import read_from_rows

#: The line a commit opens with; N is ``global_step + 1``.
_DONE = re.compile(r"Train step (\d+)/\d+ done\.")
#: Before each stats dict of the commit.
_STATS = re.compile(r"Stats \((\d+)/(\d+)\):")
#: A table's row of cells: fancy_grid's ``│`` between cells.
_CELL_BAR = re.compile(r"^\s*│(.*)│\s*$")
STEP = "step"
#: How much of a file's start is searched for a commit to tell an AReaL log.
SNIFF_CHARS = 4_000_000


def _number(text: str) -> float | None:
    try:
        return float(text)  # (nan and inf too: dropped and counted later, like any missing value)
    except ValueError:
        return None


def _cells(line: str) -> list[tuple[str, float]] | None:
    """A table row's key / value pairs; None for a line that is no row of cells."""
    found = _CELL_BAR.match(line)
    if not found:
        return None
    cells = [c.strip() for c in found.group(1).split("│")]
    if len(cells) % 2:
        return None
    pairs = []
    for key, value in zip(cells[::2], cells[1::2]):
        if not key and not value:
            continue  # the last row's empty cells
        number = _number(value)
        if not key or number is None:
            return None
        pairs.append((key, number))
    return pairs


def looks_like_areal(path: Path) -> bool:
    """Whether the start of ``path`` holds an AReaL ``StatsLogger`` commit line."""
    head = text_head(path, SNIFF_CHARS)
    if head is None:
        return False
    return "Train step" in head and _DONE.search(ANSI.sub("", head)) is not None and "Stats (" in head


def read_areal_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    log_step = None  # the step the current commit's first stats dict is logged at
    last = -1  # the last step logged (StatsLogger's _last_commit_step)
    previous = None  # the previous commit's global_step
    item = None  # the stats dict of the commit being read: its index (1-based)
    table: dict[str, float] | None = None
    unreadable = 0
    for _, line in shown_lines(path):
        done = _DONE.search(line) if "Train step" in line else None
        if done:
            global_step = int(done.group(1)) - 1
            if previous is not None and global_step <= previous:
                last = global_step - 1  # a new process (resumed, or started over): its logger's own count
            previous = global_step
            log_step = max(global_step, last + 1)
            item, table = None, None
            continue
        stats = _STATS.search(line) if "Stats (" in line else None
        if stats and log_step is not None:
            item, table = int(stats.group(1)), None
            last = max(last, log_step + int(stats.group(2)) - 1)
            continue
        if item is None:
            continue
        stripped = line.strip()
        if stripped.startswith("╒"):
            table = {}
        elif table is None:
            continue
        elif stripped.startswith(("├", "╞")):
            continue  # a rule between rows
        elif stripped.startswith("╘"):
            rows.append({**table, STEP: log_step + item - 1})
            item, table = None, None
        elif (pairs := _cells(line)) is not None:
            table.update(pairs)
        else:  # the table stops short: cut off by a kill, or another process's output in it
            unreadable += 1
            item, table = None, None
    if unreadable:
        notes.append(f"{unreadable} stats table(s) cut off or unreadable skipped")
    rows, more = split_attempts(rows, STEP, path.stem)
    return rows, notes + more


read_areal = read_from_rows(read_areal_rows)
