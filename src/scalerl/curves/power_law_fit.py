"""Fitting the power law ``A - D / C^B`` -- the law the paper shows to overshoot when fitted
early, and the one that follows a slow drift after a steep opening jump."""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np
from scipy.optimize import least_squares

from scalerl.curves.data import Curve, check_curve, fit_limits
from scalerl.curves.laws import PowerLaw
from scalerl.curves.solver import check_compute_origin, check_fittable


@dataclass
class PowerLawFit:
    law: PowerLaw
    sse: float
    n_points: int
    x: np.ndarray
    y: np.ndarray
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


def fit_power_law_arrays(x: np.ndarray, y: np.ndarray, *, A_max: float = 1.0) -> tuple[PowerLaw, float]:
    """``(law, sse)`` on points with C > 0. For fixed B the model is linear in (A, D), so a
    profile over B gives the start; a bounded least squares refines all three. Compute is
    measured in units of its geometric mean (``C_ref``): the same fit whatever the unit of x (in
    raw FLOPs, x^-B under- and D overflowed, and D's bounds cut the fit short)."""
    C_ref = float(np.exp(np.log(x).mean()))
    u = np.log(x / C_ref)
    best = None
    for B in np.geomspace(1e-3, 5.0, 80):
        X = np.stack([np.ones_like(u), -np.exp(-B * u)], axis=1)
        (A, D), *_ = np.linalg.lstsq(X, y, rcond=None)
        if D <= 0:
            continue
        A = min(A, A_max)
        sse = float(((A - D * np.exp(-B * u) - y) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, A, D, B)
    if best is None:
        best = (math.inf, min(float(y.max()) + 0.01, A_max), 1e-3, 0.5)
    _, A0, D0, B0 = best

    def resid(p):
        A, lnD, B = p
        return A - np.exp(lnD - B * u) - y

    lb, ub = [-np.inf, -50.0, 1e-4], [A_max, 50.0, 20.0]
    p0 = np.clip([A0, math.log(max(D0, 1e-12)), B0], np.array(lb) + 1e-9, np.array(ub) - 1e-9)
    res = least_squares(resid, p0, bounds=(lb, ub), method="trf", x_scale="jac")
    A, lnD, B = res.x
    return PowerLaw(A=float(A), D=float(math.exp(lnD)), B=float(B), C_ref=C_ref), float(2 * res.cost)


def fit_power_law(
    curve: Curve,
    *,
    fit_from: float | None = None,
    fit_until: float | None = None,
    A_max: float | None = None,
) -> PowerLawFit:
    """Fit ``A - D / C^B`` to the points of ``curve`` with C > 0 in ``[fit_from, fit_until]`` (``A_max``:
    default, the curve's own cap -- 1 for a pass rate, none for a curve read with ``bounded=False``)."""
    check_curve(curve, "fit_power_law")
    A_max, _ = fit_limits(curve, A_max)
    check_compute_origin(curve.x, f"run {curve.name!r}", curve.x_name)
    win = curve.window(fit_from, fit_until)
    pos = win.x > 0
    x, y = win.x[pos], win.y[pos]
    check_fittable(x, y, 3, what=f"run {curve.name!r} in the fit window (power law)")
    t0 = time.perf_counter()
    law, sse = fit_power_law_arrays(x, y, A_max=A_max)
    fit = PowerLawFit(law=law, sse=sse, n_points=int(x.size), x=x, y=y, seconds=time.perf_counter() - t0)
    if law.A >= A_max - 1e-6:
        fit.warnings.append(f"power law A is at its upper bound {A_max:g} (it keeps rising without a ceiling)")
    return fit
