"""Progress a logger writes only as text, read as numbers: ms-swift (ModelScope's trainer, its GRPO
among them) logs every row -- in ``logging.jsonl`` and on its console -- with::

    'global_step/max_steps': '12/94', 'elapsed_time': '3m 52s', 'remaining_time': '1h 34m 28s'

and no ``step`` or clock column, so neither ``--x step`` nor a wall-clock x could be read. Where a
log has no column of that name, each row gets ``step`` (the ``12`` of ``'12/94'``) and ``wall_time``
(hours, from ``elapsed_time``: the time since the training started, as ms-swift counts it).
LLaMA-Factory's ``trainer_log.jsonl`` writes the same ``elapsed_time`` as Python prints a
``timedelta``: ``'5:13:22'``, ``'1 day, 2:03:04'``; read the same way.
"""

from __future__ import annotations

import re

#: ms-swift's ``'global_step/max_steps': 'N/M'``.
STEP_OF_MAX = "global_step/max_steps"
#: ms-swift's ``'elapsed_time': '1d 2h 3m 4s'`` (units left out where zero: ``'36s'``, ``'1h 1m 32s'``).
ELAPSED = "elapsed_time"
_STEP_OF_MAX = re.compile(r"^\s*(\d+)\s*/\s*\d+\s*$")
_DURATION = re.compile(r"^\s*(?:(\d+)d\s*)?(?:(\d+)h\s*)?(?:(\d+)m\s*)?(?:(\d+(?:\.\d+)?)s)?\s*$")
#: ``str(timedelta(...))``: ``'5:13:22'``, ``'0:00:29.5'``, ``'1 day, 2:03:04'``, ``'3 days, 0:00:00'``.
_CLOCK = re.compile(r"^\s*(?:(\d+) days?, )?(\d+):([0-5]\d):([0-5]\d(?:\.\d+)?)\s*$")


def duration_seconds(text: object) -> float | None:
    """``'1h 1m 32s'`` (ms-swift) or ``'1:01:32'`` (a printed ``timedelta``: LLaMA-Factory) as 3692.0;
    None for anything else (an empty string too)."""
    if not isinstance(text, str) or not text.strip():
        return None
    found = _DURATION.match(text) or _CLOCK.match(text)
    if found is None:
        return None
    d, h, m, s = (float(g) if g else 0.0 for g in found.groups())
    return ((d * 24 + h) * 60 + m) * 60 + s


def step_of_max(text: object) -> int | None:
    """``'12/94'`` as 12; None for anything else."""
    found = _STEP_OF_MAX.match(text) if isinstance(text, str) else None
    return int(found.group(1)) if found else None


def with_progress_columns(rows: list[dict], keys: set[str], *, step: str,
                          wall_time: str) -> tuple[list[dict], set[str], dict[str, str]]:
    """``rows`` with ``step`` and ``wall_time`` (the names the caller reads them by) made from
    ms-swift's progress text where the log has no such column; the keys then, and a note per column
    made (for the caller to give where that column is the x)."""
    made: dict[str, tuple[str, object]] = {}
    if step not in keys and STEP_OF_MAX in keys:
        made[step] = (STEP_OF_MAX, step_of_max)
    if wall_time not in keys and ELAPSED in keys:
        made[wall_time] = (ELAPSED, lambda v: None if (s := duration_seconds(v)) is None else s / 3600.0)
    if not made:
        return rows, keys, {}
    out = []
    for r in rows:
        extra = {}
        for name, (source, read) in made.items():
            value = read(r.get(source))
            if value is not None:
                extra[name] = value
        out.append({**r, **extra} if extra else r)
    notes = {name: f"x {name}: from {source!r}" + (" (hours since the training started)" if name == wall_time else "")
             for name, (source, _) in made.items()}
    return out, keys | set(made), notes
