"""Which points a fit should use: the opening-plateau rule, and the noise level it rests on.

Real RL curves often open with evaluations that show no gain yet (the model has not
learned the answer format), then jump, then drift up slowly. The paper drops the first
~1.5k GPU-hours by hand; :func:`select_fit_from` decides from the data.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from scalerl.curves.data import Curve, fit_limits
from scalerl.curves.solver import check_fittable, fit_fast, initial_r0, resolve_r0, sigmoid_model
from scalerl.errors import InputError


@dataclass(frozen=True)
class EarlyCut:
    """The outcome of :func:`select_fit_from`: where the fit starts and why."""

    fit_from: float | None
    dropped: int
    scores: tuple[tuple[float, float], ...]
    """(candidate start compute, forward-validation RMSE) for every candidate tried."""
    reason: str


def noise_sd(y: np.ndarray) -> float:
    """Robust noise level of an evaluation series: MAD of successive differences / sqrt(2).

    Differences cancel the slow trend; the MAD ignores the few large steps (a jump)."""
    d = np.diff(np.asarray(y, dtype=float))
    if d.size < 2:
        return 0.0
    return float(1.4826 * np.median(np.abs(d - np.median(d))) / math.sqrt(2.0))


def select_fit_from(
    curve: Curve,
    *,
    r0="first",
    fit_until: float | None = None,
    A_max: float | None = None,
    y_floor: float | None = None,
    holdout: float = 0.3,
    max_drop: float = 0.4,
    n_sd: float = 3.0,
    one_se: float = 1.0,
) -> EarlyCut:
    """Decide whether to leave the run's opening plateau out of the fit.

    Real RL curves often open with evaluations that show no gain yet (the model has not
    learned the answer format), then jump, then drift up slowly. A sigmoid through R0 that
    must also stay flat over that plateau is forced steep and misses the drift -- which is
    why the paper drops the first ~1.5k GPU-hours by hand. We decide from the data:

    1. *Propose*: the leading points whose pass rate is within ``n_sd`` noise levels of R0
       (noise from :func:`noise_sd`) form the plateau -- no information about the curve's
       shape, only a delay the sigmoid cannot express. (At most ``max_drop`` of the points.)
    2. *Dispose*: forward validation inside the fit window. Hold out the last ``holdout``
       share of the points, fit with and without the plateau on the rest, and keep the
       plateau unless dropping it predicts the hold-out better by more than ``one_se``
       standard errors (the one-standard-error rule: dropping data must earn its keep).

    R0 stays the evaluation before training whatever is dropped.
    """
    A_max, y_floor = fit_limits(curve, A_max, y_floor)  # (default: the curve's own bounds)
    R0, _ = resolve_r0(curve, r0)
    win = curve.window(None, fit_until)
    pos = win.x > 0
    xs, ys = win.x[pos], win.y[pos]
    n = xs.size
    n_val = max(3, int(round(holdout * n)))
    n_fit_max = n - n_val
    if n < 10 or n_fit_max < 6:
        return EarlyCut(None, 0, (), "too few points to validate a cut; all points used")
    base = R0 if R0 is not None else initial_r0(win.x, win.y)
    tau = n_sd * max(noise_sd(ys), 1e-6)
    above = np.abs(ys - base) > tau
    k_plateau = int(np.argmax(above)) if above.any() else n
    k_limit = min(int(max_drop * n_fit_max), n_fit_max - 4)
    if k_plateau < 1:
        return EarlyCut(None, 0, (), "no opening plateau: the first evaluations already show gain")
    if k_plateau > k_limit:
        return EarlyCut(None, 0, (), f"the opening plateau ({k_plateau} points) is too long to drop and still validate")
    x_val, y_val = xs[n_fit_max:], ys[n_fit_max:]
    zero_x, zero_y = win.x[~pos], win.y[~pos]
    errors = {}
    for k in (0, k_plateau):
        xf = np.concatenate([zero_x, xs[k:n_fit_max]])
        yf = np.concatenate([zero_y, ys[k:n_fit_max]])
        try:
            check_fittable(xf, yf, 3, R0=R0)
            (A, B, C_mid, r0v), _ = fit_fast(xf, yf, R0, A_max=A_max, y_floor=y_floor)
        except InputError:
            continue
        errors[k] = (sigmoid_model(np.log(x_val), A, B, math.log(C_mid), r0v) - y_val) ** 2
    scores = tuple((float(xs[k]), float(np.sqrt(e.mean()))) for k, e in errors.items())
    if k_plateau not in errors:
        return EarlyCut(None, 0, scores, "the fit without the opening plateau failed; all points used")
    if 0 in errors:
        # One-standard-error rule (Breiman et al.): the cut must beat keeping every point by
        # more than the standard error of its own hold-out MSE.
        e = errors[k_plateau]
        se = float(e.std(ddof=1) / math.sqrt(e.size))
        if errors[0].mean() <= e.mean() + one_se * se:
            return EarlyCut(None, 0, scores, "forward validation keeps the opening plateau (dropping it does not help)")
    k = k_plateau
    rmse = dict(scores)
    return EarlyCut(
        float(xs[k]),
        k,
        scores,
        f"left out the opening plateau: {k} point(s) before compute {xs[k]:.4g} show no gain over R0 "
        f"(within {tau:.3g}); without them the curve predicts the later points better (hold-out RMSE "
        f"{rmse[float(xs[k])]:.4f} vs {rmse.get(float(xs[0]), float('nan')):.4f})",
    )
