"""Fitting the paper's sigmoid ``R0 + (A - R0) / (1 + (C_mid / C)^B)`` to a curve.

:func:`fit_sigmoid` picks the fit window (the opening-plateau rule of
:mod:`scalerl.curves.window` by default), resolves R0 (``"first"``: the evaluation before
training, the paper's choice; a number; or ``"free"``), runs a method of
:mod:`scalerl.curves.solver` and says in plain words what a user should not over-trust.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from scalerl.curves.data import Curve, check_curve, fit_limits
from scalerl.curves.laws import Sigmoid
from scalerl.curves.solver import (B_BOUNDS, SIGMOID_METHODS, PaperGrid, check_compute_origin, check_fittable, fit_fast,
                                   late_start_warning, r0_source, resolve_r0)
from scalerl.curves.window import EarlyCut, select_fit_from
from scalerl.errors import InputError


@dataclass
class SigmoidFit:
    """A fitted sigmoid and how it was obtained. Intervals come from :mod:`uncertainty`."""

    law: Sigmoid
    sse: float
    n_points: int
    method: str
    r0_mode: str
    x: np.ndarray
    """Compute of the points the fit used."""
    y: np.ndarray
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)
    fit_from: float | None = None
    fit_until: float | None = None
    early_cut: EarlyCut | None = None
    A_max: float = 1.0
    """The cap on A the fit took (its bootstrap takes it too): 1 for a pass rate, ``inf`` unbounded."""
    y_floor: float = 0.0
    """How the opening points were handled when ``fit_from="auto"``."""

    @property
    def A(self) -> float:
        return self.law.A

    @property
    def B(self) -> float:
        return self.law.B

    @property
    def C_mid(self) -> float:
        return self.law.C_mid

    @property
    def R0(self) -> float:
        return self.law.R0

    @property
    def residual_sd(self) -> float:
        dof = max(self.n_points - (4 if self.r0_mode == "free" else 3), 1)
        return math.sqrt(self.sse / dof)


def _check_given_r0(curve: Curve, r0) -> None:
    """A given R0 (``--r0 VALUE``) at or above what the run measured after it started: the fit then
    found no rise, and its error blamed the y column ("is it a pass rate, not a loss?")."""
    if isinstance(r0, str) or r0 is None:
        return
    after = curve.y[curve.x > 0]
    # At or above every evaluation, no fit window can rise above it (one above some could still).
    if after.size and float(after.max()) <= float(r0):
        raise InputError(f"run {curve.name!r}: the given R0 (--r0 {float(r0):g}) is not below any of the run's "
                         f"evaluations after it starts (the highest is {after.max():.3g}); R0 is the pass rate "
                         "before RL -- give a lower value, or --r0 first (the first evaluation)")


def _check_window(fit_from, fit_until) -> None:
    """A window that can hold points: --fit-until NaN held none, and the error advised widening it;
    a --fit-from above --fit-until was "too few points" with no word of why."""
    if fit_until is None:
        return
    if not fit_until > 0:
        raise InputError(f"--fit-until must be a compute value > 0 (the fit uses the points up to it), got {fit_until:g}")
    if isinstance(fit_from, (int, float)) and fit_from > fit_until:
        raise InputError(f"--fit-from {fit_from:g} is above --fit-until {fit_until:g}: no point lies between; "
                         "give --fit-from below --fit-until")


def fit_sigmoid(
    curve: Curve,
    *,
    method: str = "fast",
    r0="first",
    fit_from: "float | str | None" = "auto",
    fit_until: float | None = None,
    A_max: float | None = None,
    y_floor: float | None = None,
    paper_grid: PaperGrid | None = None,
) -> SigmoidFit:
    """Fit ``R0 + (A-R0)/(1+(C_mid/C)^B)`` to ``curve`` within ``[fit_from, fit_until]``.

    ``fit_from="auto"`` (default) leaves out an opening plateau when forward validation says
    the curve is better without it (:func:`select_fit_from`); ``None`` keeps every point.
    R0 is resolved on the *whole* curve (the evaluation before training), so a window that
    drops the early points still measures the gain from the true start. ``A_max`` and
    ``y_floor`` bound the metric (default: the curve's own -- 1 and 0 for a pass rate, none for a
    curve read with ``bounded=False``).
    """
    check_curve(curve, "fit_sigmoid")
    A_max, y_floor = fit_limits(curve, A_max, y_floor)
    if method not in SIGMOID_METHODS:
        raise InputError(f"unknown fit method {method!r}; known: {', '.join(SIGMOID_METHODS)}")
    check_compute_origin(curve.x, f"run {curve.name!r}", curve.x_name)
    _check_window(fit_from, fit_until)
    R0, r0_mode = resolve_r0(curve, r0)
    _check_given_r0(curve, r0)
    early_cut = None
    if isinstance(fit_from, str):
        if fit_from != "auto":
            raise InputError(f"fit_from must be a compute value, 'auto' or None, got {fit_from!r}")
        early_cut = select_fit_from(curve, r0=r0, fit_until=fit_until, A_max=A_max, y_floor=y_floor)
        fit_from = early_cut.fit_from
    win = curve.window(fit_from, fit_until)
    n_params = 4 if R0 is None else 3
    check_fittable(win.x, win.y, n_params, what=f"run {curve.name!r} in the fit window", R0=R0,
                   r0_source=r0_source(curve, r0_mode))
    opts = {"A_max": A_max, "y_floor": y_floor}
    if method == "paper":
        opts = {"grid": paper_grid or PaperGrid()}
    t0 = time.perf_counter()
    (A, B, C_mid, R0_fit), sse = SIGMOID_METHODS[method](win.x, win.y, R0, **opts)
    seconds = time.perf_counter() - t0
    used = win.x > 0 if R0 is not None else np.ones_like(win.x, dtype=bool)
    fit = SigmoidFit(
        law=Sigmoid(A=A, B=B, C_mid=C_mid, R0=R0_fit),
        sse=sse,
        n_points=int(used.sum()),
        method=method,
        r0_mode=r0_mode,
        x=win.x[used],
        y=win.y[used],
        seconds=seconds,
        fit_from=fit_from,
        fit_until=fit_until,
        early_cut=early_cut,
        A_max=A_max,
        y_floor=y_floor,
    )
    late = late_start_warning(curve.x, curve.x_name, r0_from_first=r0_mode == "first")
    fit.warnings.extend(([late] if late else []) + diagnose(fit, A_max=A_max, paper_grid=opts.get("grid")))
    return fit


def diagnose(fit: SigmoidFit, *, A_max: float = 1.0, paper_grid: PaperGrid | None = None) -> list[str]:
    """Plain-language cautions about a fit a user should not over-trust."""
    out = []
    if fit.A >= A_max - 1e-6:
        out.append(f"A is at its upper bound {A_max:g}: the data do not show a ceiling yet")
    if fit.B <= B_BOUNDS[0] * (1 + 1e-6):
        out.append(f"B is at its lower bound {B_BOUNDS[0]:g}: the points show no bend over the window (a line in "
                   "ln C, or too few or too short to tell), so C_mid and A say nothing -- log more evaluations, or a "
                   "longer run")
    xmax = float(fit.x.max())
    if fit.C_mid > xmax:
        out.append(
            f"C_mid ({fit.C_mid:.3g}) lies beyond the last fitted point ({xmax:.3g}): the run has not reached "
            "half its gain, so A is an extrapolation with a wide interval"
        )
    if paper_grid is not None:
        edges = (paper_grid.A_lo, paper_grid.A_hi)
        if any(abs(fit.A - e) < 1e-9 for e in edges):
            out.append(f"A = {fit.A:g} is on the edge of the paper's grid [{edges[0]}, {edges[1]}]; widen it or use --method fast")
        if any(abs(fit.C_mid - e) < 1e-9 for e in (paper_grid.C_mid_lo, paper_grid.C_mid_hi)):
            out.append(f"C_mid = {fit.C_mid:g} is on the edge of the paper's grid; widen it or use --method fast")
    return out


def refit_with(fit: SigmoidFit, x: np.ndarray, y: np.ndarray, *, A_max: float = 1.0, R0: float | None = None) -> tuple[tuple[float, float, float, float], float]:
    """Refit the same model on new data (x, y), starting from ``fit`` (for the bootstrap)."""
    r0 = fit.R0 if fit.r0_mode != "free" else None
    if R0 is not None and fit.r0_mode != "free":
        r0 = R0
    return fit_fast(x, y, r0, A_max=A_max, start=(fit.A, fit.B, fit.C_mid, fit.R0))
