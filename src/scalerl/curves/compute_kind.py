"""What kind of compute an x column counts, told from its name: FLOPs, tokens, samples, epochs, GPU-hours,
hours, seconds or steps (None: a name that says none of them).

Seeds of one run are pooled into one fit, so their x values must be in one unit. Logs of different trainers
name one counter differently (``cum_wall_hours`` in a CSV, ``hours`` in a JSON-lines log; ``num_tokens`` and
``trained_tokens``), which is one unit; ``flops`` and ``step`` are two, and a fit of both together is of
neither (:func:`mixed_compute`)."""

from __future__ import annotations

import re
from typing import Sequence

#: (kind, what a column's name holds when it counts that kind), the first match wins: GPU-hours before
#: hours; hours (``wall_time``: the readers' hours since a run's first row) before seconds; seconds
#: (``cum:timing_s/step``, prime-rl's ``cum:time/step``: time per step, summed) before steps.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(pattern, re.I)) for kind, pattern in (
    ("GPU-hours", r"gpu.?h(ou)?rs?"),
    ("FLOPs", r"flop"),
    ("tokens", r"token"),
    ("samples", r"sample|rollout|episode"),
    ("epochs", r"epoch"),
    ("hours", r"hour|wall_time|\bh(r|rs)?\b"),
    ("seconds", r"second|timing|\btime\b|_s\b|runtime|elapsed"),
    ("steps", r"step|iter|update"),
))


def compute_kind(x_name: str) -> str | None:
    """The kind of compute the column ``x_name`` counts (see :data:`KINDS`), or None where its name
    does not say."""
    return next((kind for kind, pattern in KINDS if pattern.search(x_name)), None)


def mixed_compute(x_names: Sequence[str]) -> bool:
    """Whether curves read against the columns ``x_names`` count different kinds of compute (or kinds their
    names do not tell): one name, or several names of one kind, is one unit."""
    names = set(x_names)
    if len(names) <= 1:
        return False
    kinds = {compute_kind(n) for n in names}
    return None in kinds or len(kinds) > 1
