"""A take-off before the first evaluation: C_mid below every measured point after the start.

The sigmoid's B and C_mid describe where and how steeply a run takes off. When a run has jumped
before its first evaluation after the start -- verl's GRPO on GSM8K went from 0.229 at step 0 to
0.856 at step 5, its first evaluation after training began -- the fit still returns a C_mid (0.875
steps there) and a B, but no evaluation lies on the rise: both come from the shape of the law
between the point at zero compute and the plateau, not from the data. A and the forecast rest on the
later points and stand; B and C_mid, and an "efficiency" verdict that leans on them, do not.
"""

from __future__ import annotations

import math

import numpy as np


def first_measured(x) -> float | None:
    """The first evaluation after the start among ``x``, or None. The start is where the fit takes R0
    from (:func:`scalerl.curves.solver.resolve_r0`): the points at compute 0, or -- where none is, a
    clock such as W&B's ``_runtime`` putting the evaluation before training at 90 s -- the first point.
    The first evaluation after the start is the smallest compute above it."""
    x = np.asarray(x, dtype=float)
    x = x[np.isfinite(x)]
    if not x.size:
        return None
    after = x[x > max(float(x.min()), 0.0)]
    return float(after.min()) if after.size else None


def below_first(C_mid: float, x, interval: tuple[float, float] | None = None) -> float | None:
    """The first evaluation after the start (:func:`first_measured`) when C_mid lies below it --
    the whole of its ``interval``, where one is given --, that is when the take-off was not measured;
    else None. ``x`` is one curve's compute, or a list of several seeds' (each has its own start)."""
    if isinstance(x, list) and x and all(np.ndim(seed) == 1 for seed in x):
        firsts = [f for f in map(first_measured, x) if f is not None]
        first = min(firsts) if firsts else None
    else:
        first = first_measured(x)
    if first is None or not math.isfinite(C_mid):
        return None
    # With an interval, all of it: a C_mid just below the first evaluation (9.8 against 10) is
    # pinned by the points on either side of it, and its interval reaches past the first evaluation.
    if (interval[1] if interval is not None else C_mid) < first:
        return first
    return None


def unmeasured_takeoff_note(C_mid: float, B: float, x, x_name: str, interval: tuple[float, float] | None = None) -> str:
    """What ``fit`` says of a C_mid below the first evaluation after the start ("" when it is not), with
    the share of the gain the fitted law puts before that evaluation."""
    first = below_first(C_mid, x, interval)
    if first is None:
        return ""
    shown = f"C_mid {C_mid:.3g}" + (f" [{interval[0]:.3g}, {interval[1]:.3g}]" if interval is not None else "")
    share = 1.0 / (1.0 + (C_mid / first) ** B)  # the sigmoid's share of A - R0 reached at C = first
    return (f"{shown} lies below the first evaluation after the start ({x_name} = {first:.4g}, where the fitted "
            f"curve has made {100 * share:.0f}% of its gain): the take-off came before the first evaluation, so B "
            "and C_mid are not measured but extrapolated below the data (A and the forecast rest on the later "
            "points); evaluating more often early in training would measure them")

