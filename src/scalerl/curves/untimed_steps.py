"""``--x cum:COL``: which rows that lack ``COL`` are steps whose compute went unlogged.

A row without the per-step timer (or counter) ``cum:`` adds up is of one of three kinds:

* an evaluation -- verl's step-0 validation line, TRL's ``eval_*`` dict -- that spends no training
  compute: it adds nothing, and its point sits at the total so far;
* a row of another stream of the log -- slime's optimizer ``step N`` dicts beside the ``perf N``
  rollouts that carry the timer -- which adds nothing either;
* a training step whose timer is missing -- a line cut off by a crash or a paste, a step the trainer did
  not time. Counted as 0, its own point sat at the compute *before* it (x = 0 for a first step) and
  every later total left its time out, silently.

A row is of the last kind when it logs a metric that most timed rows log too (a training step's; an
evaluation's rides on a timed row only now and then), other than an evaluation's (a name or a part of it
``val``, ``eval``, ``test``, ``validation``, ...: ``val-core/...``, ``timing/validation/...``) and the
counters every kind of row carries. What a row logs is its values (:func:`scalerl.curves.cells.logged`):
a writer of whole rows fills in ``NaN`` / ``null`` where a row logged nothing, so an evaluation row
holding ``loss: NaN`` logs no training metric and is no step.
"""

from __future__ import annotations

import math
import re
from collections import Counter

from scalerl.curves.cells import logged

#: A key an evaluation logs: verl's ``val-core/...``, ``val/...``, ``test_score/...``, ``timing_s/testing``;
#: TRL's ``eval_loss``; NeMo-RL's ``validation-default/...``, ``timing/validation/...``; slime's ``eval/...``.
EVALUATION_KEY = re.compile(r"(?i)(?:^|/)(?:val|valid|validation|eval|evaluation|test|testing)(?:[-_/@]|$)")
#: Counters and clocks that rows of every kind carry.
COUNTERS = frozenset({"step", "global_step", "train/global_step", "trainer/global_step", "_step", "epoch",
                      "iteration", "rollout_id", "rollouts", "_runtime", "_timestamp", "timestamp", "time",
                      "wall_time", "type"})


def timed(row: dict, cols: list[str]) -> bool:
    """Whether ``row`` logs a number in one of ``cols``."""
    return any(isinstance(v := row.get(c), (int, float)) and not isinstance(v, bool) and math.isfinite(v)
               for c in cols)


def untimed_steps(rows: list[dict], cols: list[str], run_column: str) -> set[int]:
    """The indices of the rows that are training steps without any of ``cols`` (see the module's doc)."""
    timed_rows = [r for r in rows if timed(r, cols)]
    counts = Counter(k for r in timed_rows for k, v in r.items() if logged(v))
    stream = {k for k, n in counts.items() if 2 * n >= len(timed_rows)} - set(cols) - COUNTERS - {run_column}
    stream = {k for k in stream if not EVALUATION_KEY.search(k)}
    return {i for i, r in enumerate(rows)
            if not timed(r, cols) and any(k in stream and logged(v) for k, v in r.items())}


def untimed_note(count: int, dropped: int, x: str) -> str:
    return (f"{count} step row(s) lack {x.removeprefix('cum:')!r} (cut off, or not timed): their compute is unknown, "
            f"so the x of every later point leaves it out" + (f"; {dropped} point(s) on them dropped" if dropped else ""))
