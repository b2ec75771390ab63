"""Fitting the sigmoid (and the power law) to a compute-performance curve.

Two sigmoid methods, chosen by name from :data:`SIGMOID_METHODS`:

``paper``
    The ScaleRL paper's procedure: a grid over A (0.450, 0.455, ..., 0.800) and C_mid
    (100 values in [100, 40000]); for each pair ``scipy.optimize.curve_fit`` fits B; the
    lowest sum of squares wins. About 7,100 ``curve_fit`` calls, bounded to the grid.

``fast`` (default)
    A profile over A with the linearising transform ``z = ln((A-R0)/(R-R0) - 1) =
    B ln C_mid - B ln C``: for a dense grid of A the best (B, C_mid) comes from one weighted
    linear regression, all A at once in numpy; the few best starts are then refined jointly
    with a bounded ``scipy.optimize.least_squares``. It reaches the paper's SSE or lower,
    tens to hundreds of times faster, with A anywhere in (R0, A_max].

R0 (the pass rate before RL) is ``"first"`` (the mean of the evaluations at zero compute,
else the first evaluation -- the paper's choice), a number, or ``"free"`` (fitted).
"""

from __future__ import annotations

import math
import time
import warnings
from dataclasses import dataclass, field
from typing import Callable

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit, least_squares

from scalerl.curves.data import Curve
from scalerl.curves.laws import PowerLaw, Sigmoid
from scalerl.errors import InputError

R0Spec = "str | float"
B_BOUNDS = (1e-3, 50.0)


# --------------------------------------------------------------------------- results


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
    early_cut: "EarlyCut | None" = None
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


@dataclass
class PowerLawFit:
    law: PowerLaw
    sse: float
    n_points: int
    x: np.ndarray
    y: np.ndarray
    seconds: float = 0.0
    warnings: list[str] = field(default_factory=list)


# --------------------------------------------------------------------------- helpers


def resolve_r0(curve: Curve, r0) -> tuple[float | None, str]:
    """``(R0 value or None when fitted, mode label)`` from the user's ``r0`` choice."""
    if r0 is None or r0 == "first":
        at_zero = curve.zero_compute
        value = float(curve.y[at_zero].mean()) if at_zero.any() else float(curve.y[0])
        return value, "first"
    if r0 == "free":
        return None, "free"
    try:
        value = float(r0)
    except (TypeError, ValueError):
        raise InputError(f"r0 must be 'first', 'free' or a number, got {r0!r}") from None
    if not math.isfinite(value):
        raise InputError(f"r0 must be finite, got {r0!r}")
    return value, "given"


def check_fittable(x: np.ndarray, y: np.ndarray, n_params: int, what: str = "the fit window", R0: float | None = None) -> None:
    """Refuse what no sigmoid can describe: too few points, a flat or falling metric.

    With R0 known, a window on the flat tail of a saturated run is fine (its points sit
    above R0: the gain has happened); without it, the window itself must rise.
    """
    pos = x > 0
    if pos.sum() < n_params:
        raise InputError(
            f"{what} has {int(pos.sum())} points with compute > 0 but the fit has {n_params} parameters; "
            "widen the window (--fit-from/--fit-until) or log more evaluations"
        )
    base = R0 if R0 is not None else (float(y[~pos].mean()) if (~pos).any() else None)
    if base is not None:
        gain = float(y[pos].mean() - base)
        if gain > 1e-12:
            return
        trend = gain
    else:
        if np.ptp(y) <= 1e-12:
            raise InputError(f"{what}: the metric is flat ({y[0]:g} everywhere); there is no curve to fit")
        trend = float(np.polyfit(np.log(x[pos]), y[pos], 1)[0])
        if trend > 0:
            return
    raise InputError(
        f"{what}: the metric does not rise with compute (change {trend:.3g}); a sigmoid forecast needs a "
        "rising curve -- is the y column a pass rate (not a loss)?"
    )


def _model(u: np.ndarray, A: float, B: float, lnC: float, R0: float) -> np.ndarray:
    # R0 + (A-R0) * logistic(B (ln C - ln C_mid)), written with exp clipped for stability.
    return R0 + (A - R0) / (1.0 + np.exp(np.clip(B * (lnC - u), -700.0, 700.0)))


# --------------------------------------------------------------------------- fast method


def _linearised_starts(u: np.ndarray, y: np.ndarray, R0: float, A_grid: np.ndarray) -> np.ndarray:
    """For each A of the grid, (B, ln C_mid) from a weighted regression of the transform z on u.

    Returns an array (len(A_grid), 3) of (B, lnC, sse); rows with no valid line get sse=inf.
    All grid values at once: masks over a (grid x points) matrix.
    """
    A = A_grid[:, None]
    gain = A - R0
    d = y[None, :] - R0
    valid = (d > 1e-9 * np.abs(gain)) & (A - y[None, :] > 1e-9 * np.abs(gain))
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        z = np.log(gain / d - 1.0)
        # Weights from the transform's derivative: dz/dR = -(A-R0)/((R-R0)(A-R)), so noise of
        # constant size in R is amplified near R0 and near A; weight those points down.
        w = ((d * (A - y[None, :])) / gain) ** 2
    w = np.where(valid, w, 0.0)
    z = np.where(valid, z, 0.0)
    U = u[None, :]
    sw = w.sum(1)
    mu = (w * U).sum(1) / np.where(sw > 0, sw, 1)
    mz = (w * z).sum(1) / np.where(sw > 0, sw, 1)
    suu = (w * (U - mu[:, None]) ** 2).sum(1)
    suz = (w * (U - mu[:, None]) * (z - mz[:, None])).sum(1)
    with np.errstate(divide="ignore", invalid="ignore"):
        slope = suz / suu
        B = -slope
        lnC = mu + mz / B  # z = B lnC - B u  =>  mean: mz = B lnC - B mu
    ok = (valid.sum(1) >= 2) & np.isfinite(B) & (B > 0) & np.isfinite(lnC)
    B = np.where(ok, np.clip(B, *B_BOUNDS), 1.0)
    lnC = np.where(ok, lnC, u.mean())
    pred = _model(U, A, B[:, None], lnC[:, None], R0)
    sse = np.where(ok, ((pred - y[None, :]) ** 2).sum(1), np.inf)
    return np.stack([B, lnC, sse], axis=1)


def _refine(u, y, start, R0: float | None, A_max: float, lnC_bounds, y_floor: float = 0.0):
    """Bounded least squares from one start ``(A, B, ln C_mid[, R0])``. Returns (params, sse).

    Fixed R0: parameters (A, ln B, ln C_mid) with A in (R0, A_max]. Free R0: a fourth
    parameter keeps R0 below A by construction -- ``R0 = y_floor + f (A - y_floor)`` with
    f in [0, 1) for a bounded metric, ``R0 = A - exp(g)`` for an unbounded one -- because a
    box on R0 alone lets the optimiser trade a huge negative R0 for a log-linear fit.
    """
    free_r0 = R0 is None
    bounded_floor = free_r0 and math.isfinite(y_floor)

    def unpack(p):
        A, lnB, lnC = p[0], p[1], p[2]
        if not free_r0:
            r0 = R0
        elif bounded_floor:
            r0 = y_floor + p[3] * (A - y_floor)
        else:
            r0 = A - math.exp(p[3])
        return A, math.exp(lnB), lnC, r0

    def resid(p):
        A, B, lnC, r0 = unpack(p)
        return _model(u, A, B, lnC, r0) - y

    def jac(p):
        # Analytic Jacobian: 3-4x fewer model evaluations than finite differences, which is
        # what makes a 1,000-replicate bootstrap take about a second.
        A, B, lnC, r0 = unpack(p)
        d = lnC - u
        s = 1.0 / (1.0 + np.exp(np.clip(B * d, -700.0, 700.0)))
        ds = s * (1.0 - s)
        g = A - r0
        J = np.empty((u.size, len(p)))
        J[:, 1] = -g * ds * d * B  # d/d ln B
        J[:, 2] = -g * ds * B  # d/d ln C_mid
        if not free_r0:
            J[:, 0] = s
        elif bounded_floor:
            J[:, 0] = s + (1.0 - s) * p[3]
            J[:, 3] = (1.0 - s) * (A - y_floor)
        else:
            J[:, 0] = 1.0
            J[:, 3] = -(1.0 - s) * math.exp(p[3])
        # Zero-compute points (u = -inf) sit exactly at R0: no dependence on B or C_mid.
        J[~np.isfinite(J)] = 0.0
        return J

    A0, B0, lnC0 = start[0], start[1], start[2]
    gain_eps = 1e-6
    lb = [(R0 + gain_eps) if not free_r0 else (y_floor + gain_eps if bounded_floor else -np.inf),
          math.log(B_BOUNDS[0]), lnC_bounds[0]]
    ub = [A_max, math.log(B_BOUNDS[1]), lnC_bounds[1]]
    p0 = [A0, math.log(B0), lnC0]
    if free_r0:
        r0_start = start[3]
        if bounded_floor:
            lb.append(0.0)
            ub.append(1.0 - 1e-9)
            p0.append((r0_start - y_floor) / max(A0 - y_floor, 1e-9))
        else:
            lb.append(-30.0)
            ub.append(30.0)
            p0.append(math.log(max(A0 - r0_start, 1e-9)))
    lb_a, ub_a = np.array(lb), np.array(ub)
    x0 = np.clip(np.asarray(p0, dtype=float), lb_a + 1e-9 * (np.abs(lb_a) + 1), ub_a - 1e-9 * (np.abs(ub_a) + 1))
    res = least_squares(resid, x0, jac=jac, bounds=(lb_a, ub_a), method="trf", x_scale="jac", max_nfev=400)
    A, B, lnC, r0 = unpack(res.x)
    return (float(A), float(B), float(math.exp(lnC)), float(r0)), float(2.0 * res.cost)


def _fit_fast(x, y, R0, *, A_max: float = 1.0, y_floor: float = 0.0, n_grid: int = 160, n_starts: int = 3, start=None):
    """The default method. ``R0=None`` fits R0 too. ``start`` (A, B, C_mid, R0) skips the profile
    (used by the bootstrap, which starts from the full-data optimum)."""
    pos = x > 0
    u = np.log(x[pos])
    yy = y[pos]
    if R0 is None:
        # R0 free: zero-compute points pin it (model value R0 at C=0); include them.
        u_all = np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)
        u, yy = u_all, y
    span = (np.log(x[pos]).min(), np.log(x[pos]).max())
    width = max(span[1] - span[0], 1.0)
    # C_mid may lie well outside the data (a run that has barely started, or one long flat).
    lnC_bounds = (span[0] - 3 * width - 5, span[1] + 3 * width + 5)
    if start is not None:
        A, B, C_mid, r0 = start
        return _refine(u, yy, (A, B, math.log(C_mid), r0), R0, A_max, lnC_bounds, y_floor)

    r0_for_grid = R0 if R0 is not None else _initial_r0(x, y)
    top = float(np.max(y))
    lo = r0_for_grid + 0.02 * max(top - r0_for_grid, 1e-3)
    # Dense near the data's top, where the ceiling usually is, up to A_max.
    A_grid = np.unique(np.concatenate([
        np.linspace(lo, A_max, n_grid),
        top + (A_max - top) * np.linspace(0, 1, n_grid // 2) ** 2,
    ]))
    A_grid = A_grid[(A_grid > r0_for_grid) & (A_grid <= A_max)]
    upos = np.log(x[pos])
    table = _linearised_starts(upos, y[pos], r0_for_grid, A_grid)
    order = np.argsort(table[:, 2])
    starts = []
    for i in order:
        if not np.isfinite(table[i, 2]):
            break
        # Distinct starts: skip A values close to one already chosen.
        if all(abs(A_grid[i] - s[0]) > 0.02 for s in starts):
            starts.append((A_grid[i], table[i, 0], table[i, 1]))
        if len(starts) >= n_starts:
            break
    if not starts:  # no usable linearisation (e.g. all points at the ceiling): crude start
        starts = [(min(top + 0.05, A_max), 1.0, float(np.median(upos)))]
    best = None
    for A0, B0, lnC0 in starts:
        params, sse = _refine(u, yy, (A0, B0, lnC0, r0_for_grid), R0, A_max, lnC_bounds, y_floor)
        if best is None or sse < best[1]:
            best = (params, sse)
    return best


def _initial_r0(x, y) -> float:
    at_zero = x == 0
    if at_zero.any():
        return float(y[at_zero].mean())
    return float(min(y[0], np.min(y)))


# --------------------------------------------------------------------------- paper method


@dataclass(frozen=True)
class PaperGrid:
    """The paper's search grid (its units: GB200 GPU-hours). Change it for other compute units."""

    A_lo: float = 0.450
    A_hi: float = 0.800
    A_step: float = 0.005
    C_mid_lo: float = 100.0
    C_mid_hi: float = 40000.0
    n_C_mid: int = 100

    def A_values(self) -> np.ndarray:
        n = int(round((self.A_hi - self.A_lo) / self.A_step)) + 1
        return self.A_lo + self.A_step * np.arange(n)

    def C_mid_values(self) -> np.ndarray:
        return np.linspace(self.C_mid_lo, self.C_mid_hi, self.n_C_mid)


def _fit_paper(x, y, R0, *, grid: PaperGrid = PaperGrid(), **_):
    if R0 is None:
        raise InputError("the paper method keeps R0 fixed; use --r0 first or a value (or --method fast)")
    pos = x > 0
    xs, ys = x[pos], y[pos]
    best = (None, math.inf)
    for A in grid.A_values():
        for C_mid in grid.C_mid_values():
            def f(C, B, A=A, C_mid=C_mid):
                return R0 + (A - R0) / (1.0 + (C_mid / C) ** B)

            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore", OptimizeWarning)
                    warnings.simplefilter("ignore", RuntimeWarning)
                    (B,), _ = curve_fit(f, xs, ys, p0=[1.0], maxfev=2000)
                    # (C_mid / C) ** B overflows to inf for tiny C: the model value is then R0, as it should be.
                    sse = float(((f(xs, B) - ys) ** 2).sum())
            except RuntimeError:  # curve_fit did not converge for this grid cell
                continue
            if not np.isfinite(B) or B <= 0:
                continue
            if sse < best[1]:
                best = ((float(A), float(B), float(C_mid), R0), sse)
    if best[0] is None:
        raise InputError("the paper's grid found no fit; adjust the grid to the data's compute units")
    return best


#: name -> fitting function ``(x, y, R0 or None, **options) -> ((A, B, C_mid, R0), sse)``
SIGMOID_METHODS: dict[str, Callable] = {"fast": _fit_fast, "paper": _fit_paper}


# --------------------------------------------------------------------------- public API


def fit_sigmoid(
    curve: Curve,
    *,
    method: str = "fast",
    r0="first",
    fit_from: "float | str | None" = "auto",
    fit_until: float | None = None,
    A_max: float = 1.0,
    y_floor: float = 0.0,
    paper_grid: PaperGrid | None = None,
) -> SigmoidFit:
    """Fit ``R0 + (A-R0)/(1+(C_mid/C)^B)`` to ``curve`` within ``[fit_from, fit_until]``.

    ``fit_from="auto"`` (default) leaves out an opening plateau when forward validation says
    the curve is better without it (:func:`select_fit_from`); ``None`` keeps every point.
    R0 is resolved on the *whole* curve (the evaluation before training), so a window that
    drops the early points still measures the gain from the true start. ``A_max`` and
    ``y_floor`` bound the metric (1 and 0 for a pass rate; ``inf``/``-inf`` for others).
    """
    if method not in SIGMOID_METHODS:
        raise InputError(f"unknown fit method {method!r}; known: {', '.join(SIGMOID_METHODS)}")
    R0, r0_mode = resolve_r0(curve, r0)
    early_cut = None
    if isinstance(fit_from, str):
        if fit_from != "auto":
            raise InputError(f"fit_from must be a compute value, 'auto' or None, got {fit_from!r}")
        early_cut = select_fit_from(curve, r0=r0, fit_until=fit_until, A_max=A_max, y_floor=y_floor)
        fit_from = early_cut.fit_from
    win = curve.window(fit_from, fit_until)
    n_params = 4 if R0 is None else 3
    check_fittable(win.x, win.y, n_params, what=f"run {curve.name!r} in the fit window", R0=R0)
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
    )
    fit.warnings.extend(diagnose(fit, A_max=A_max, paper_grid=opts.get("grid")))
    return fit


def diagnose(fit: SigmoidFit, *, A_max: float = 1.0, paper_grid: PaperGrid | None = None) -> list[str]:
    """Plain-language cautions about a fit a user should not over-trust."""
    out = []
    if fit.A >= A_max - 1e-6:
        out.append(f"A is at its upper bound {A_max:g}: the data do not show a ceiling yet")
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
    return _fit_fast(x, y, r0, A_max=A_max, start=(fit.A, fit.B, fit.C_mid, fit.R0))


def fit_sigmoid_fixed_A(x: np.ndarray, y: np.ndarray, A: float, R0: float | None, start=None) -> tuple[tuple[float, float, float, float], float]:
    """Fit B and C_mid (and R0 if None) with A held fixed -- the paper's shared-A refit."""
    pos = x > 0 if R0 is not None else np.ones_like(x, dtype=bool)
    u = np.where(x[pos] > 0, np.log(np.where(x[pos] > 0, x[pos], 1.0)), -np.inf)
    yy = y[pos]
    r0 = R0 if R0 is not None else _initial_r0(x, y)
    if start is None:
        upos = np.log(x[x > 0])
        tab = _linearised_starts(upos, y[x > 0], r0, np.array([A]))
        B0, lnC0 = (tab[0, 0], tab[0, 1]) if np.isfinite(tab[0, 2]) else (1.0, float(np.median(upos)))
    else:
        B0, lnC0 = start[1], math.log(start[2])
    free = R0 is None

    def resid(p):
        rr = p[2] if free else R0
        return _model(u, A, math.exp(p[0]), p[1], rr) - yy

    span = np.log(x[x > 0])
    w = max(span.max() - span.min(), 1.0)
    lb = [math.log(B_BOUNDS[0]), span.min() - 3 * w - 5] + ([0.0] if free else [])
    ub = [math.log(B_BOUNDS[1]), span.max() + 3 * w + 5] + ([A] if free else [])
    p0 = np.clip([math.log(B0), lnC0] + ([r0] if free else []), np.array(lb) + 1e-9, np.array(ub) - 1e-9)
    res = least_squares(resid, p0, bounds=(lb, ub), method="trf", x_scale="jac")
    r0_out = res.x[2] if free else R0
    return (A, math.exp(res.x[0]), math.exp(res.x[1]), float(r0_out)), float(2 * res.cost)


def fit_power_law(
    curve: Curve,
    *,
    fit_from: float | None = None,
    fit_until: float | None = None,
    A_max: float = 1.0,
) -> PowerLawFit:
    """Fit ``A - D / C^B`` (points with C > 0). For fixed B the model is linear in (A, D), so a
    profile over B gives the start; a bounded least squares refines all three."""
    win = curve.window(fit_from, fit_until)
    pos = win.x > 0
    x, y = win.x[pos], win.y[pos]
    check_fittable(x, y, 3, what=f"run {curve.name!r} in the fit window (power law)")
    t0 = time.perf_counter()
    best = None
    for B in np.geomspace(1e-3, 5.0, 80):
        X = np.stack([np.ones_like(x), -np.power(x, -B)], axis=1)
        (A, D), *_ = np.linalg.lstsq(X, y, rcond=None)
        if D <= 0:
            continue
        A = min(A, A_max)
        sse = float(((A - D * x ** -B - y) ** 2).sum())
        if best is None or sse < best[0]:
            best = (sse, A, D, B)
    if best is None:
        best = (math.inf, min(float(y.max()) + 0.01, A_max), 1e-3, 0.5)
    _, A0, D0, B0 = best
    u = np.log(x)

    def resid(p):
        A, lnD, B = p
        return A - np.exp(lnD - B * u) - y

    lb, ub = [-np.inf, -50.0, 1e-4], [A_max, 50.0, 20.0]
    p0 = np.clip([A0, math.log(max(D0, 1e-12)), B0], np.array(lb) + 1e-9, np.array(ub) - 1e-9)
    res = least_squares(resid, p0, bounds=(lb, ub), method="trf", x_scale="jac")
    A, lnD, B = res.x
    fit = PowerLawFit(
        law=PowerLaw(A=float(A), D=float(math.exp(lnD)), B=float(B)),
        sse=float(2 * res.cost),
        n_points=int(x.size),
        x=x,
        y=y,
        seconds=time.perf_counter() - t0,
    )
    if A >= A_max - 1e-6:
        fit.warnings.append(f"power law A is at its upper bound {A_max:g} (it keeps rising without a ceiling)")
    return fit


# --------------------------------------------------------------------------- early points


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
    A_max: float = 1.0,
    y_floor: float = 0.0,
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
    R0, _ = resolve_r0(curve, r0)
    win = curve.window(None, fit_until)
    pos = win.x > 0
    xs, ys = win.x[pos], win.y[pos]
    n = xs.size
    n_val = max(3, int(round(holdout * n)))
    n_fit_max = n - n_val
    if n < 10 or n_fit_max < 6:
        return EarlyCut(None, 0, (), "too few points to validate a cut; all points used")
    base = R0 if R0 is not None else _initial_r0(win.x, win.y)
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
            (A, B, C_mid, r0v), _ = _fit_fast(xf, yf, R0, A_max=A_max, y_floor=y_floor)
        except InputError:
            continue
        errors[k] = (_model(np.log(x_val), A, B, math.log(C_mid), r0v) - y_val) ** 2
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
