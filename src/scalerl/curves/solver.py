"""The numerical core of the sigmoid fit, and the input rules every fit shares.

Two methods, chosen by name from :data:`SIGMOID_METHODS`:

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

Both take arrays ``(x, y, R0 or None)`` and return ``((A, B, C_mid, R0), sse)``; R0 None
means fitted. :mod:`scalerl.curves.sigmoid_fit` wraps them for curves.
"""

from __future__ import annotations

import math
import warnings
from dataclasses import dataclass
from typing import Callable

import numpy as np
from scipy.optimize import OptimizeWarning, curve_fit, least_squares

from scalerl.curves.data import Curve
from scalerl.errors import InputError

B_BOUNDS = (1e-3, 50.0)


# --------------------------------------------------------------------------- input rules


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


#: A run's compute must grow by at least this share of where it starts to be compute counted from
#: the run's start: a clock (Unix time: 1.76e9 s, growing by 0.04% a week) does not.
MIN_COMPUTE_GROWTH = 0.01


def check_compute_origin(x: np.ndarray, what: str, x_name: str) -> None:
    """Refuse compute that does not start near 0: the sigmoid is a law of compute *spent* (C = 0 at
    the run's start), and a column that only grows by a sliver of where it starts -- a clock such as
    Unix time -- gives a fit of nothing (C_mid in the year 2030, "2x the compute" in 2081)."""
    pos = x[x > 0]
    if pos.size < 2:
        return
    start, span = float(pos.min()), float(pos.max() - pos.min())
    if span < MIN_COMPUTE_GROWTH * start:
        raise InputError(
            f"{what}: compute {x_name!r} runs from {start:.6g} to {start + span:.6g}, growing by {100 * span / start:.2g}% "
            "of where it starts: not compute counted from the run's start (a clock such as Unix time?) -- give "
            "--x wall_time (hours since the run's first row, for a log with a time or timestamp column), "
            "cum:COL of a per-step time, or step")


def late_start_warning(x: np.ndarray, x_name: str, r0_from_first: bool = True) -> str | None:
    """A caution where compute starts later than the log spans: no evaluation at compute 0 and the first at
    more than the whole span after it (a step counter carried over from an earlier stage, a W&B ``_step``
    that kept counting, or the later part of a run). The fit reads C from 0 at the run's start; an offset
    of 10x the span bends the curve into a step at the first point (B on its bound) and a C_mid that a
    comparison with a run counted from 0 reads as 1,000x less efficient. Said, not refused: the later
    part of a run on its true compute is a fair fit, only its first evaluation is not the run's start.
    ``r0_from_first``: R0 is the first evaluation (``--r0 first``, the default); given or fitted, the
    warning does not say it is, nor advise ``--r0``."""
    if (x <= 0).any() or x.size < 2:
        return None
    start, span = float(x.min()), float(x.max() - x.min())
    if start <= span:
        return None
    r0 = (", and its first evaluation is taken as the start (R0)" if r0_from_first else "")
    later = ("; if the log is the later part of a run, give the run's start with --r0" if r0_from_first else "")
    return (f"compute {x_name!r} starts at {start:.4g} with no evaluation at 0, and the log spans {span:.4g} after it: "
            f"a sigmoid is a law of compute spent since the run's start{r0}. If the counter carries an earlier "
            "stage (SFT steps, a global step or W&B _step that kept counting), subtract its first value from the "
            f"column (pandas: df[col] -= df[col].iloc[0]){later}")


def _points(n: int) -> str:
    return "no points" if n == 0 else "1 point" if n == 1 else f"{n} points"


def check_fittable(x: np.ndarray, y: np.ndarray, n_params: int, what: str = "the fit window", R0: float | None = None,
                   r0_source: str = "the evaluation at compute 0, or --r0") -> None:
    """Refuse what no sigmoid can describe: too few points, a flat or falling metric.

    Too few: no more points with compute > 0 than free parameters.

    With R0 known (``r0_source``: where it came from, for the message), a window on the flat tail of a
    saturated run is fine (its points sit above R0: the gain has happened); without it, the window itself
    must rise.
    """
    pos = x > 0
    # One point more than parameters: with exactly as many the curve passes through every point,
    # leaving no residual to measure the noise by, and the intervals would come out zero-wide.
    if pos.sum() <= n_params:
        raise InputError(
            f"{what} has {_points(int(pos.sum()))} with compute > 0 but the fit has {n_params} parameters and "
            f"needs at least {n_params + 1} (one more than its parameters, to measure the noise); widen the window "
            "(fit: --fit-from/--fit-until) or log more evaluations (train / study: a smaller eval.every)"
        )
    base = R0 if R0 is not None else (float(y[~pos].mean()) if (~pos).any() else None)
    # Equal values in floating point: the slope of a least-squares line through a constant series is
    # ~1e-17, not 0, and a flat run was refused as "rising but still below R0" (review ch).
    flat = float(np.ptp(y[pos])) <= 1e-12 * max(1.0, float(np.abs(y[pos]).max()))
    if base is not None:
        gain = float(y[pos].mean() - base)
        if gain > 1e-12:
            return
        if flat and gain > -1e-12:
            raise InputError(f"{what}: the metric does not rise: it is flat ({base:g} at the start and everywhere "
                             "after); there is no curve to fit")
        if pos.sum() >= 2 and not flat and _rises(x[pos], y[pos]):
            raise InputError(_below_start(x[pos], y[pos], base, what, r0_source))
        # (the change from the start, which the points after it do not show: review en -- "change -1.01: -0.968 at
        # first, -1 at the end" measured from a step-0 0.0099 the message never named)
        change = f"mean {y[pos].mean():.3g} against R0 = {base:.3g} ({r0_source}): {gain:+.3g}"
    else:
        if flat:
            raise InputError(f"{what}: the metric is flat ({y[pos][0]:g} everywhere); there is no curve to fit")
        trend = float(np.polyfit(np.log(x[pos]), y[pos], 1)[0])
        if trend > 0:
            return
        change = f"slope {trend:.3g} per e-fold of compute"
    raise InputError(
        f"{what}: the metric does not rise with compute ({change}{_path_of(x[pos], y[pos])}); a sigmoid "
        "forecast needs a rising curve -- a run that peaked and fell has nothing to forecast (fit the part "
        "before its peak: scalerl fit LOG --fit-until X, or look at it: scalerl fit LOG --plot FILE); a falling "
        "metric may be a loss, not a pass rate"
    )


def _rises(x: np.ndarray, y: np.ndarray) -> bool:
    """Whether ``y`` rises with log compute beyond its noise: the least-squares slope more than two standard
    errors above 0 (two points: above 0). A flat, noisy window's slope is as often above 0 as below, and it
    was called "rising" (review dh)."""
    lx = np.log(x)
    slope, intercept = np.polyfit(lx, y, 1)
    if x.size < 3:
        return bool(slope > 0)
    spread = float(((lx - lx.mean()) ** 2).sum())
    se = math.sqrt(float(((y - (slope * lx + intercept)) ** 2).sum()) / (x.size - 2) / spread) if spread > 0 else 0.0
    return bool(slope > 2 * se)


def r0_source(curve: Curve, mode: str) -> str:
    """Where R0 (of :func:`resolve_r0`'s ``mode``) came from, in words, for the messages that quote it: a log
    without an evaluation at compute 0 takes its first (review dh: "the evaluation at compute 0" of a log
    that has none)."""
    if mode == "given":
        return "--r0"
    if curve.zero_compute.any():
        return "the evaluation at compute 0"
    return f"the first evaluation, at compute {float(curve.x[0]):g}"


def _below_start(x: np.ndarray, y: np.ndarray, base: float, what: str, source: str) -> str:
    """The refusal of a run that fell below where it started and rises again from there: its
    evaluations climb, so "the metric does not rise" alone reads as wrong; the gain a sigmoid
    measures is over the start, and that is what is missing."""
    low, path = float(y.min()), _path_of(x, y).removeprefix(": ")
    return (
        f"{what}: the metric does not rise above where the run started: R0 = {base:.3g} ({source}), and the "
        f"evaluations after it average {float(y.mean()):.3g}, rising"
        f"{f' ({path})' if path else ''} but still below R0 -- a sigmoid measures the gain over R0. If the first "
        "evaluation was made another way than the later ones (greedy, another set), fit with their own R0: "
        "scalerl fit FILE --r0 VALUE (backtest takes --r0 too); to forecast the recovery alone, --r0 the level it "
        f"rises from (here {low:.3g}, the lowest evaluation in the window)"
    )


def _path_of(x: np.ndarray, y: np.ndarray) -> str:
    """Where the metric started, peaked and ended, for the error above: a run that rose and fell back
    (a collapse) is told from a loss by these three numbers, not by the overall trend."""
    if y.size < 3:
        return ""
    order = np.argsort(x, kind="stable")
    ys, xs = y[order], x[order]
    best = int(np.argmax(ys))
    if 0 < best < ys.size - 1:
        return f": {ys[0]:.3g} at first, {ys[best]:.3g} at its best (compute {xs[best]:.4g}), {ys[-1]:.3g} at the end"
    return f": {ys[0]:.3g} at first, {ys[-1]:.3g} at the end"


# --------------------------------------------------------------------------- the model


def sigmoid_model(u: np.ndarray, A: float, B: float, lnC: float, R0: float) -> np.ndarray:
    """The sigmoid at ``u = ln C`` (``-inf`` for C = 0 gives R0)."""
    # R0 + (A-R0) * logistic(B (ln C - ln C_mid)), written with exp clipped for stability.
    return R0 + (A - R0) / (1.0 + np.exp(np.clip(B * (lnC - u), -700.0, 700.0)))


# --------------------------------------------------------------------------- fast method


def linearised_starts(u: np.ndarray, y: np.ndarray, R0: float, A_grid: np.ndarray) -> np.ndarray:
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
    pred = sigmoid_model(U, A, B[:, None], lnC[:, None], R0)
    sse = np.where(ok, ((pred - y[None, :]) ** 2).sum(1), np.inf)
    return np.stack([B, lnC, sse], axis=1)


def refine(u, y, start, R0: float | None, A_max: float, lnC_bounds, y_floor: float = 0.0):
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
        return sigmoid_model(u, A, B, lnC, r0) - y

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
    with np.errstate(invalid="ignore"):  # infinite bounds (an unbounded metric) stay infinite
        lo_in = np.where(np.isfinite(lb_a), lb_a + 1e-9 * (np.abs(lb_a) + 1), lb_a)
        hi_in = np.where(np.isfinite(ub_a), ub_a - 1e-9 * (np.abs(ub_a) + 1), ub_a)
    x0 = np.clip(np.asarray(p0, dtype=float), lo_in, hi_in)
    res = least_squares(resid, x0, jac=jac, bounds=(lb_a, ub_a), method="trf", x_scale="jac", max_nfev=400)
    A, B, lnC, r0 = unpack(res.x)
    return (float(A), float(B), float(math.exp(lnC)), float(r0)), float(2.0 * res.cost)


#: ln of the least positive normal and of the largest float: the widest ln C_mid whose exp is a positive
#: finite number.
LN_FLOAT_MIN, LN_FLOAT_MAX = math.log(np.finfo(float).tiny), math.log(np.finfo(float).max)


def ln_c_mid_bounds(u: np.ndarray) -> tuple[float, float]:
    """Where ln C_mid may go, for the points at ``u = ln C``: well outside the data (a run that has barely
    started, or one long flat), three times its span and e^5 beyond either end, and within what a float
    holds (x from 1e-217 to 1 put the bound at e^-1997, and C_mid came out 0.0)."""
    lo, hi = float(np.min(u)), float(np.max(u))
    width = max(hi - lo, 1.0)
    bottom = max(lo - 3 * width - 5, LN_FLOAT_MIN)
    # (above the bottom even for compute below the least normal float, 1e-310: the bounds crossed -- review cy)
    return bottom, max(min(hi + 3 * width + 5, LN_FLOAT_MAX), bottom + 1.0)


def fit_fast(x, y, R0, *, A_max: float = 1.0, y_floor: float = 0.0, n_grid: int = 160, n_starts: int = 3, start=None):
    """The default method. ``R0=None`` fits R0 too. ``start`` (A, B, C_mid, R0) skips the profile
    (used by the bootstrap, which starts from the full-data optimum)."""
    pos = x > 0
    u = np.log(x[pos])
    yy = y[pos]
    if R0 is None:
        # R0 free: zero-compute points pin it (model value R0 at C=0); include them.
        u_all = np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), -np.inf)
        u, yy = u_all, y
    lnC_bounds = ln_c_mid_bounds(np.log(x[pos]))
    if start is not None:
        A, B, C_mid, r0 = start
        return refine(u, yy, (A, B, math.log(C_mid), r0), R0, A_max, lnC_bounds, y_floor)

    r0_for_grid = R0 if R0 is not None else initial_r0(x, y)
    top = float(np.max(y))
    lo = r0_for_grid + 0.02 * max(top - r0_for_grid, 1e-3)
    # Dense near the data's top, where the ceiling usually is, up to A_max (an unbounded
    # metric: up to three times the data's rise above its top).
    A_hi = A_max if math.isfinite(A_max) else top + 3.0 * max(top - r0_for_grid, 1e-3)
    A_grid = np.unique(np.concatenate([
        np.linspace(lo, A_hi, n_grid),
        top + (A_hi - top) * np.linspace(0, 1, n_grid // 2) ** 2,
    ]))
    A_grid = A_grid[(A_grid > r0_for_grid) & (A_grid <= A_hi)]
    upos = np.log(x[pos])
    table = linearised_starts(upos, y[pos], r0_for_grid, A_grid)
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
        params, sse = refine(u, yy, (A0, B0, lnC0, r0_for_grid), R0, A_max, lnC_bounds, y_floor)
        if best is None or sse < best[1]:
            best = (params, sse)
    return best


def initial_r0(x, y) -> float:
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


def fit_paper(x, y, R0, *, grid: PaperGrid = PaperGrid(), **_):
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
SIGMOID_METHODS: dict[str, Callable] = {"fast": fit_fast, "paper": fit_paper}


# --------------------------------------------------------------------------- shared-A refit


def fit_sigmoid_fixed_A(x: np.ndarray, y: np.ndarray, A: float, R0: float | None, start=None) -> tuple[tuple[float, float, float, float], float]:
    """Fit B and C_mid (and R0 if None) with A held fixed -- the paper's shared-A refit."""
    pos = x > 0 if R0 is not None else np.ones_like(x, dtype=bool)
    u = np.where(x[pos] > 0, np.log(np.where(x[pos] > 0, x[pos], 1.0)), -np.inf)
    yy = y[pos]
    r0 = R0 if R0 is not None else initial_r0(x, y)
    if start is None:
        upos = np.log(x[x > 0])
        tab = linearised_starts(upos, y[x > 0], r0, np.array([A]))
        B0, lnC0 = (tab[0, 0], tab[0, 1]) if np.isfinite(tab[0, 2]) else (1.0, float(np.median(upos)))
    else:
        B0, lnC0 = start[1], math.log(start[2])
    free = R0 is None

    def resid(p):
        rr = p[2] if free else R0
        return sigmoid_model(u, A, math.exp(p[0]), p[1], rr) - yy

    span = np.log(x[x > 0])
    w = max(span.max() - span.min(), 1.0)
    lb = [math.log(B_BOUNDS[0]), span.min() - 3 * w - 5] + ([0.0] if free else [])
    ub = [math.log(B_BOUNDS[1]), span.max() + 3 * w + 5] + ([A] if free else [])
    p0 = np.clip([math.log(B0), lnC0] + ([r0] if free else []), np.array(lb) + 1e-9, np.array(ub) - 1e-9)
    res = least_squares(resid, p0, bounds=(lb, ub), method="trf", x_scale="jac")
    r0_out = res.x[2] if free else R0
    return (A, math.exp(res.x[0]), math.exp(res.x[1]), float(r0_out)), float(2 * res.cost)


# --------------------------------------------------------------------------- many refits at once


#: Series x points refitted at once by :func:`refine_many`, which holds some twenty arrays that size per iteration:
#: all 1000 of a bootstrap's replicates at once took 180 KB a point -- 1.9 GB for a 10k-point log, 18 GB for 100k
#: (review bq; a log with a value at every step).
_REFINED_AT_ONCE = 1_000_000


def refine_many(
    u: np.ndarray,
    Y: np.ndarray,
    R0: np.ndarray,
    start: tuple[float, float, float],
    *,
    A_max: float = 1.0,
    lnC_bounds: tuple[float, float] | None = None,
    iterations: int = 60,
) -> tuple[np.ndarray, np.ndarray]:
    """Refit the fixed-R0 sigmoid to many series at once: ``Y`` (n_series, n_points) at the
    same ``u = ln C`` (C > 0), each with its own R0, all from ``start = (A, B, C_mid)``.

    A batched Levenberg-Marquardt in (A, ln B, ln C_mid) with the bounds of :func:`refine`
    enforced by projection -- the residual bootstrap's refits, vectorised: one numpy pass per
    iteration for every replicate instead of one ``least_squares`` call each. Returns
    ``(params, sse)``: params (n_series, 4) as (A, B, C_mid, R0), NaN rows where a fit failed.
    """
    Y = np.atleast_2d(np.asarray(Y, dtype=float))
    R0 = np.asarray(R0, dtype=float).reshape(-1, 1)
    m = Y.shape[0]
    if lnC_bounds is None:
        lnC_bounds = ln_c_mid_bounds(u)
    rows = max(1, _REFINED_AT_ONCE // max(Y.shape[1], 1))
    if m > rows:  # each series' refit is its own: in slices, the same answer in bounded memory
        parts = [refine_many(u, Y[i:i + rows], R0[i:i + rows], start, A_max=A_max, lnC_bounds=lnC_bounds,
                             iterations=iterations) for i in range(0, m, rows)]
        return np.concatenate([params for params, _ in parts]), np.concatenate([sse for _, sse in parts])
    lo = np.stack([R0[:, 0] + 1e-6, np.full(m, math.log(B_BOUNDS[0])), np.full(m, lnC_bounds[0])], axis=1)
    hi = np.stack([np.full(m, A_max), np.full(m, math.log(B_BOUNDS[1])), np.full(m, lnC_bounds[1])], axis=1)
    P = np.tile([start[0], math.log(start[1]), math.log(start[2])], (m, 1))
    P = np.clip(P, lo + 1e-9, hi - 1e-9)

    def resid_jac(P, Y, R0):
        A, B, lnC = P[:, :1], np.exp(P[:, 1:2]), P[:, 2:3]
        d = lnC - u[None, :]
        s = 1.0 / (1.0 + np.exp(np.clip(B * d, -700.0, 700.0)))
        g = A - R0
        r = R0 + g * s - Y
        ds = s * (1.0 - s)
        J = np.stack([s, -g * ds * d * B, -g * ds * B], axis=2)
        return r, J

    r, J = resid_jac(P, Y, R0)
    cost = (r**2).sum(1)
    lam = np.full(m, 1e-3)
    active = np.ones(m, dtype=bool)
    eye = np.eye(3)
    for _ in range(iterations):
        idx = np.nonzero(active)[0]
        if idx.size == 0:
            break
        Ja, ra = J[idx], r[idx]
        JtJ = np.einsum("mni,mnj->mij", Ja, Ja)
        Jtr = np.einsum("mni,mn->mi", Ja, ra)
        diag = np.einsum("mii->mi", JtJ)
        Aug = JtJ + lam[idx, None, None] * (diag[:, :, None] * eye + 1e-12 * eye)
        try:
            step = -np.linalg.solve(Aug, Jtr[:, :, None])[:, :, 0]
        except np.linalg.LinAlgError:
            step = -np.einsum("mij,mj->mi", np.linalg.pinv(Aug), Jtr)
        P_new = np.clip(P[idx] + step, lo[idx], hi[idx])
        r_new, J_new = resid_jac(P_new, Y[idx], R0[idx])
        cost_new = (r_new**2).sum(1)
        better = np.isfinite(cost_new) & (cost_new < cost[idx])
        gain = np.where(better, cost[idx] - cost_new, 0.0)
        ib = idx[better]
        P[ib], r[ib], J[ib], cost[ib] = P_new[better], r_new[better], J_new[better], cost_new[better]
        lam[idx] = np.where(better, lam[idx] / 3.0, lam[idx] * 4.0)
        # Converged: an accepted step that no longer lowers the cost, or a damping so large
        # that no step is taken any more.
        done = (better & (gain <= 1e-12 * (cost[idx] + 1e-30))) | (lam[idx] > 1e10)
        active[idx[done]] = False
    params = np.stack([P[:, 0], np.exp(P[:, 1]), np.exp(P[:, 2]), R0[:, 0]], axis=1)
    bad = ~np.isfinite(params).all(1) | ~np.isfinite(cost)
    params[bad] = np.nan
    return params, cost
