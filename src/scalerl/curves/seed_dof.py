"""The spread and critical value of an interval of a difference between runs of a few seeds.

A run of k seeds is bootstrapped over its seeds (:class:`scalerl.curves.uncertainty.RunResampler`:
the seeds resampled, each as its own fitted curve, then residuals within each). The part of its
replicates' variance that the draw of seeds explains, S (:func:`seed_shares`), is estimated from k seeds:
k - 1 degrees of freedom. The interval of a difference takes the whole bootstrap variance -- the seeds'
shares and the rest (the residuals drawn within the seeds, a one-seed run's evaluation noise), counted as
known -- with Student's t on Satterthwaite's effective degrees of freedom,

    df = (S_1 + S_2 + R)^2 / sum_i (S_i^2 / (k_i - 1)),

so the critical value grows as a run's seeds get fewer and its seeds' share of the spread larger. Two runs
of one seed: no share, an infinite df, the normal critical value and the bootstrap's variance, exactly as
before.

Measured on pairs of known truth (``python benchmarks/compare_verdicts.py --cases identical --seeds K
--seed-sd-A 0.02 --seed-sd-logC 0.15 --noise 0.01``, 100 pairs; docs/forecasting.md, Comparing runs):
identical configurations came out a ceiling or efficiency change 23%, 24% and 18% of the time with 2, 3
and 5 seeds with the whole variance and the normal's z. The seeds' shares alone with Welch's t (the rest
dropped as counted twice) gave 7%, 8% and 11%, but where the runs stop near C_mid, A poorly identified,
the share the draw of seeds explains fell far below the spread of the seeds' own A (12x on one pair), and
identical runs whose seeds agreed came out "ceiling raised" (review): the whole variance is kept.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.stats import norm, t


def seed_shares(values: np.ndarray, counts: "list[np.ndarray | None]") -> list[float]:
    """The variance of bootstrap ``values`` (a difference between runs) that each run's draw of seeds explains.

    ``counts``: per run, an array (replicates x seeds) of how often each of its seeds was drawn in each
    replicate (None or one column: one seed, no share). The values are regressed (least squares) on all the
    runs' counts at once -- each row of a run's counts sums to its k, so they carry the intercept -- and a
    run's share is the variance of its part of the fitted values. On the difference itself, not on each
    run's side of it: in a joint fit with one shared A, one run's seeds move the other's B and C_mid too."""
    values = np.asarray(values, dtype=float)
    blocks = {i: np.asarray(c, dtype=float) for i, c in enumerate(counts) if c is not None and np.shape(c)[1] > 1}
    shares = [0.0] * len(counts)
    if not blocks or values.size < 2:
        return shares
    beta, *_ = np.linalg.lstsq(np.hstack(list(blocks.values())), values, rcond=None)
    at = 0
    for i, b in blocks.items():
        shares[i] = float((b @ beta[at:at + b.shape[1]]).var(ddof=1))
        at += b.shape[1]
    return shares


def welch_dof(parts: "list[tuple[float, int]]") -> float:
    """Welch-Satterthwaite degrees of freedom of a sum of variances, each ``(V, k)`` estimated from k
    seeds (k - 1 degrees of freedom; k = 1: from one run's evaluations, counted as known)."""
    estimated = [(v, k) for v, k in parts if k > 1 and v > 0]
    if not estimated:
        return math.inf
    total = sum(v for v, _ in parts if v > 0)
    return total * total / sum(v * v / (k - 1) for v, k in estimated)


def critical_value(p: float, dof: float) -> float:
    """The ``p`` quantile of Student's t with ``dof`` degrees of freedom (the normal's where infinite)."""
    return float(norm.ppf(p)) if math.isinf(dof) else float(t.ppf(p, dof))


def difference_spread(diff: np.ndarray, counts: "list[np.ndarray | None]") -> tuple[float, float]:
    """The sd and degrees of freedom of an interval of a difference between two runs from its bootstrap
    replicates ``diff``; ``counts``: per run, how often each of its seeds was drawn in each replicate (None:
    one seed).

    The whole spread, with Satterthwaite's degrees of freedom: each run's seeds' share of it estimated from
    its k seeds (k - 1 each), the rest -- the residuals' share, a one-seed run's evaluation noise -- counted
    as known. Both of one seed: the whole spread and the normal's z, as always. (The seeds' shares alone,
    Welch's t on the seeds, was tried: where the runs stop near C_mid and A is poorly identified, the share
    the draw of seeds explains is far below the spread of the seeds' own A, and identical runs whose seeds
    agreed came out "ceiling raised" -- review of seeds11.)"""
    if len(diff) < 2:
        return math.inf, math.inf
    whole = float(np.var(diff, ddof=1))
    seeds = [1 if c is None else c.shape[1] for c in counts]
    shares = seed_shares(diff, counts)
    if sum(shares) > whole:  # few replicates for the seeds: the regression fits noise; its shares cap at the whole
        shares = [v * whole / sum(shares) for v in shares]
    rest = max(whole - sum(shares), 0.0)
    parts = [(v, k) for v, k in zip(shares, seeds) if k > 1] + [(rest, 1)]
    return math.sqrt(whole), welch_dof(parts)


def few_seeds_stretch(values: np.ndarray, counts: "list[np.ndarray | None]", level: float) -> float:
    """How much wider than its bootstrap percentiles an interval of one quantity must be where runs have a few
    seeds: Student's t over the normal's z at the ``level``, t on Satterthwaite's degrees of freedom as for a
    difference (:func:`difference_spread`: each run's seeds' share of the replicates' spread estimated from its
    k - 1, the rest -- the residuals drawn within the seeds -- counted as known). ``counts``: per run, how often
    each of its seeds was drawn in each replicate (None: one seed). 1 where no run has several seeds. (The seeds'
    share is already the spread of k seeds' mean, not (k - 1) / k of it: the resampler scales each seed's
    distance from the pooled curve by sqrt(k / (k - 1)).)"""
    if all(c is None or np.shape(c)[1] < 2 for c in counts) or np.size(values) < 3:
        return 1.0
    q = 1 - (1 - level) / 2
    return critical_value(q, difference_spread(np.asarray(values, dtype=float), list(counts))[1]) / float(norm.ppf(q))


def widen_for_seeds(values: np.ndarray, lo: float, hi: float, counts: "list[np.ndarray | None]", level: float, *,
                    log: bool = False, bounds: tuple[float, float] = (-math.inf, math.inf)) -> tuple[float, float]:
    """The percentile interval ``(lo, hi)`` of bootstrap ``values`` widened for few seeds: about the values' median
    by :func:`few_seeds_stretch`, on the log scale where ``log`` (positive values: B, C_mid, a compute), and
    within ``bounds`` -- the ones every replicate keeps (A above the start and at most its bound, B within the
    solver's, a pass rate within [0, 1]): t on one degree of freedom is 6.5 times z, and two seeds' A interval
    had reached below 0 (review ea). Unchanged where no run has several seeds or a value is not finite."""
    values = np.asarray(values, dtype=float)
    if not np.isfinite(values).all() or (log and not (values > 0).all()):
        return lo, hi
    v = np.log(values) if log else values
    r = few_seeds_stretch(v, counts, level)
    if r == 1.0:
        return lo, hi
    f, inv = (math.log, math.exp) if log else (float, float)
    mid = float(np.median(v))
    wide_lo, wide_hi = inv(mid - r * (mid - f(lo))), inv(mid + r * (f(hi) - mid))
    return max(wide_lo, min(bounds[0], lo)), min(wide_hi, max(bounds[1], hi))


__all__ = ["critical_value", "difference_spread", "few_seeds_stretch", "seed_shares", "welch_dof", "widen_for_seeds"]
