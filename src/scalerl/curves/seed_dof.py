"""The spread and critical value of an interval of a difference between runs of a few seeds.

A run of k seeds is bootstrapped over its seeds (:class:`scalerl.curves.uncertainty.RunResampler`:
the seeds resampled, each as its own fitted curve, then residuals within each). The part of its
replicates' variance that the draw of seeds explains, S, is (1/k) x the variance of the seeds' own
estimates -- which already hold each seed's evaluation noise -- so S alone estimates the variance of
the pooled estimate, from k seeds: k - 1 degrees of freedom. The residuals drawn on top count that
noise a second time. So a run of several seeds enters an interval of a difference with S, and the
critical value is Student's t with Welch-Satterthwaite's effective degrees of freedom,

    df = (V_1 + V_2)^2 / sum_i (V_i^2 / (k_i - 1)),

V_i a run's variance, k_i its seeds: Welch's test on the seeds' own estimates. A run of one seed is
bootstrapped from its own evaluations, a variance estimated from all of them: its whole bootstrap
variance, and no term in the sum. Two runs of one seed: an infinite df, the normal critical value and
the bootstrap's variance, exactly as before.

Measured on pairs of known truth (``python benchmarks/compare_verdicts.py --cases identical --seeds K
--seed-sd-A 0.02 --seed-sd-logC 0.15 --noise 0.01``, 100 pairs; docs/forecasting.md, Comparing runs):
identical configurations came out a ceiling or efficiency change 23%, 24% and 18% of the time with 2, 3
and 5 seeds with the whole variance and the normal's z, 7%, 8% and 11% with this. The whole variance
with Welch's t on k - 1 (the residual noise counted twice) was measured too: 1%, 5% and 9%; and the
whole variance with Satterthwaite's degrees of freedom from the seeds' share alone (the residual share
counted as known): 6%, 9% and 9%, with the same power as this within what 100 pairs tell apart. This
one is Welch's test as it stands: its level does not rest on degrees of freedom estimated from a seed
share that a few seeds ending alike make small.
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


__all__ = ["critical_value", "seed_shares", "welch_dof"]
