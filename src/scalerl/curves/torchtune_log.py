"""Read torchtune's metric logs: ``DiskLogger``'s file (``metric_logger._component_:
torchtune.training.metric_logging.DiskLogger``, ``<log_dir>/log_<unix time>.txt``: a new file each
time a recipe starts), the ``log_dir`` holding those files, or a console ``StdoutLogger`` printed
into. Both loggers write a ``log_dict`` call as one line, a ``log`` call as a line of one metric::

    Step 4 | rewards:tensor(0.3125, device='cuda:0') successes:tensor(0.2500, device='cuda:0') loss:0.0123 lr:1e-05
    Step 4 | grad_norm:0.82

Each ``name:value`` is a metric of that step (the lines of one step make one row, ``step``). The GRPO
recipes (``recipes/dev/grpo_*``) hand the logger tensors, which print as their repr: the number is
read out of ``tensor(...)``. The files of a ``log_dir`` are one run, read in the order of their
timestamps; where the step goes back (a recipe resumed from a checkpoint), what the abandoned attempt
logged from there on is dropped, said in the notes; back to the first step: a run of its own
(``<stem>#2``). Other lines (the recipe's own logging, tqdm bars) are passed over.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import split_attempts
from scalerl.curves.console import shown_lines, skipped_lines_note, text_head
from scalerl.curves.rows import read_from_rows

STEP = "step"
#: ``Step N | `` and what follows: ``name:value`` items, space-separated (no space after the colon:
#: prime-rl's older ``Step N | Time: 7.1s | Reward: ...`` lines are not these).
#: Searched for, not matched at the line's start: captured with stderr (``2>&1 | tee``, Slurm's one
#: ``slurm-<id>.out``) the line follows the recipe's tqdm bar, written as ``\r<bar>`` with no newline, on the
#: same line (review dl: such steps were dropped unsaid); torchrun's ``--tee`` puts ``[default0]:`` before it.
#: Not after a space -- a log line that mentions "Step N | ..." in its text is not a metric line (review dn) --
#: but after a time of day (``... | ts``'s ``May 01 12:00:00 Step 1 | ...``).
_LINE = re.compile(r"(?:^|[\]:] *|\d\d:\d\d:\d\d(?:[.,]\d+)? +)Step (-?\d+) \| (.*)$")  # (tqdm pads a bar with spaces)
#: One item; a tensor's repr holds spaces and colons (``tensor(0.25, device='cuda:0')``).
_ITEM = re.compile(r"([^\s:]+):(tensor\([^()]*\)|\S+)(?:\s+|$)")
_TENSOR = re.compile(r"tensor\(\s*([^,()\s]+)[^()]*\)")
#: The file name DiskLogger gives each start of a recipe.
_DISK_FILE = re.compile(r"log_(\d+)\.txt")
#: How much of a file's start is searched for a metric line.
SNIFF_CHARS = 1_000_000


def _items(rest: str) -> dict[str, Any] | None:
    """The ``name: value`` items of what follows ``Step N | ``, or None where it is not such a list."""
    items: dict[str, Any] = {}
    at = 0
    rest = rest.rstrip()
    while at < len(rest):
        found = _ITEM.match(rest, at)
        if found is None:
            return None
        name, value = found.group(1), found.group(2)
        tensor = _TENSOR.fullmatch(value)
        text = tensor.group(1) if tensor else value
        try:
            items[name] = float(text)
        except ValueError:
            items[name] = text  # (kept as text: an error only if that column is asked for)
        at = found.end()
    return items or None


def _row(line: str) -> dict[str, Any] | None:
    found = _LINE.search(line.strip())
    if found is None:
        return None
    items = _items(found.group(2))
    if items is None or not any(isinstance(v, float) for v in items.values()):
        return None
    return {STEP: int(found.group(1)), **items}


def disk_logs(path: Path) -> list[Path] | None:
    """A ``log_dir``'s DiskLogger files, oldest first (by the time in their names), or None where
    ``path`` is not a directory of them."""
    if not path.is_dir():
        return None
    found = sorted((int(m.group(1)), f) for f in path.iterdir() if (m := _DISK_FILE.fullmatch(f.name)) and f.is_file())
    files = [f for _, f in found]
    return files if files and any(looks_like_torchtune(f) for f in files) else None


def looks_like_torchtune(path: Path) -> bool:
    """Whether the start of ``path`` holds a torchtune metric line (or it is a directory of them)."""
    if path.is_dir():
        return disk_logs(path) is not None
    head = text_head(path, SNIFF_CHARS)
    if head is None or "Step " not in head:
        return False
    return any(_row(line) is not None for line in head.splitlines() if "Step " in line)


def read_torchtune_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """One row per step, in log order (the lines of a step merged), and the notes."""
    rows: list[dict[str, Any]] = []
    torn: list[int] = []
    for file in disk_logs(path) or [path]:
        for lineno, line in shown_lines(file):
            if "Step " not in line:
                continue
            row = _row(line)
            if row is None:
                if _LINE.search(line.strip()):
                    torn.append(lineno)
                continue
            if rows and rows[-1][STEP] == row[STEP] and not set(row).intersection(rows[-1]) - {STEP}:
                rows[-1].update(row)  # another call of the same step (log() of one metric after log_dict())
            else:
                rows.append(row)
    notes = skipped_lines_note(torn, "metric")
    rows, more = split_attempts(rows, STEP, path.stem)
    return rows, notes + more


read_torchtune = read_from_rows(read_torchtune_rows)
