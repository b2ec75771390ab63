"""What kind of compute an x column counts, told from its name: FLOPs, TFLOPs, tokens, samples, epochs,
GPU time (in days, hours, minutes, seconds or milliseconds), days, hours, minutes, seconds, milliseconds or
steps (None: a name that says none of them).

Seeds of one run are pooled into one fit, so their x values must be in one unit. Logs of different trainers
name one counter differently (``cum_wall_hours`` in a CSV, ``hours`` in a JSON-lines log; ``num_tokens`` and
``trained_tokens``), which is one unit; ``flops`` and ``step`` are two, and a fit of both together is of
neither (:func:`mixed_compute`). A name is only a hint: where it tells no kind the seeds are pooled with a
note (:func:`untold_compute`), never refused."""

from __future__ import annotations

import re
from typing import Sequence

#: (kind, what a column's name holds when it counts that kind), the first match wins (a timer whose name
#: says GPU counts GPU time, a sum over GPUs, not the wall clock: :data:`_GPU`); TFLOPs (1e12 of them) before FLOPs (HF Trainer's ``total_flos`` too); tokens before anything timed
#: (``tokens_per_second``); RL libraries' env ``timesteps`` are steps, not time; a unit the name ends in
#: (``_ms``, ``_min``, ``_h``) before the word that says time; hours (``wall_time``: the readers' hours since
#: a run's first row) before seconds; seconds -- ``cum:timing_s/step``, verl's ``perf/time_per_step`` and
#: ``timing_s/rollout``, ``step_time``, ``_timestamp``, ``wall_clock_time``: time, whatever else the name
#: says -- before samples and steps.
KINDS: tuple[tuple[str, re.Pattern[str]], ...] = tuple((kind, re.compile(pattern, re.I)) for kind, pattern in (
    ("TFLOPs", r"tflop|teraflop"),
    ("FLOPs", r"flop|flos"),
    ("tokens", r"token"),
    ("steps", r"timestep"),
    ("milliseconds", r"millisec|_ms\b|\bms\b"),
    ("minutes", r"minute|_mins?\b|\bmins?\b"),
    ("days", r"\bdays?\b|_days?\b"),
    ("hours", r"hour|wall_time|\bh(r|rs)?\b|_h(r|rs)?\b"),
    ("seconds", r"second|_secs?\b|\bsecs?\b|timing|time|_s\b|elapsed|clock"),
    ("samples", r"sample|rollout|episode"),
    ("epochs", r"epoch"),
    ("steps", r"step|iter|update"),
))


#: Time kinds that a name saying GPU makes GPU time of that unit (``gpu_hours``, ``gpu_time_s``, ``gpu_ms``).
_TIMES = ("milliseconds", "minutes", "hours", "seconds", "days")
#: A name that says GPU, not a device's index (``wall_time_gpu0``: the wall clock, read on GPU 0) nor the wall
#: clock it is.
_GPU = re.compile(r"^(?!.*wall).*gpu(?!\d)", re.I)
#: GPU time whose unit is glued to the word (``gpuhr``, ``gpumin``, ``gpu_hrs_total``), which the unit patterns,
#: wanting a word's end, do not see.
#: (A glued ``min`` only where the name ends: ``gpu_min_time`` is more likely a minimum.)
_GPU_GLUED = tuple((kind, re.compile(rf"gpu.?{unit}", re.I)) for kind, unit in (
    ("GPU-hours", "h(ou)?rs?(?![a-z])"), ("GPU-minutes", "mins?$"), ("GPU-seconds", "secs?(?![a-z])"),
    ("GPU-days", "days?(?![a-z])")))


def compute_kind(x_name: str) -> str | None:
    """The kind of compute the column ``x_name`` counts (see :data:`KINDS`), or None where its name
    does not say. A timer whose name says GPU is GPU time in its unit (``GPU-hours``, ``GPU-seconds``):
    summed over GPUs, it is not the wall clock's."""
    glued = next((kind for kind, pattern in _GPU_GLUED if pattern.search(x_name)), None)
    if glued is not None:
        return glued
    kind = next((kind for kind, pattern in KINDS if pattern.search(x_name)), None)
    return f"GPU-{kind}" if kind in _TIMES and _GPU.search(x_name) else kind


def mixed_compute(x_names: Sequence[str]) -> bool:
    """Whether curves read against the columns ``x_names`` count different kinds of compute, as their names
    tell: one name, several names of one kind, or a name that tells no kind (``x``, ``compute``: see
    :func:`untold_compute`) is not known to be mixed."""
    kinds = {compute_kind(n) for n in set(x_names)} - {None}
    return len(kinds) > 1


def untold_compute(x_names: Sequence[str]) -> list[str]:
    """The names among several different ``x_names`` that tell no kind of compute: pooled as one unit with the
    others, which only the user can vouch for (a note says so; refusing them left no way to compare)."""
    names = list(dict.fromkeys(x_names))
    return [n for n in names if compute_kind(n) is None] if len(names) > 1 else []
