"""The point forecast: several laws and fit windows, weighted by rolling-origin validation.

No single law extrapolates every real run. The paper's sigmoid through R0 saturates right
after a steep opening jump and misses a slow drift that follows (a verl Qwen2.5-0.5B PPO run:
MAE 0.028 on its second half, the power law 0.009); the power law keeps rising where a run
has flattened. So the forecast is an ensemble of *members* (:data:`MEMBERS`):

``sigmoid``          the paper's law, R0 = the evaluation before training, opening-plateau rule;
``sigmoid-last-4x``  the sigmoid with a free lower asymptote on the last 4x of compute
                     (``x >= x_end / 4``): the recent phase alone, e.g. the drift after a jump;
``sigmoid-last-8x``  the same on the last 8x;
``power-law``        ``A - D / C^B`` on the points with compute > 0 (after an opening plateau).

Each member is fitted on the whole window and, for the weights, at rolling origins inside it:
on the first 50%, 60%, 70% and 80% of the window's points, predicting the rest of the window.
A member's weight is ``exp(-(MSE - MSE_best) / (T sigma^2))`` with MSE its mean squared
validation error, sigma the window's noise level and T the temperature: members whose
validation error exceeds the best one's by much more than the noise get no say, members
within the noise share it. T was chosen across real runs with leave-one-source-out
(``benchmarks/forecast_corpus.py``; shipped in ``calibration.json``). Everything is decided
from the fit window's own data, never from what is held out.

Besides the mean curve the ensemble gives three measures of how far its forecast can be
trusted, all used by :mod:`scalerl.curves.bands`: its *validation error* (how far off its
members were at the rolling origins), the *spread* of the members at C (how much plausible
laws disagree) and the *origin stability* (how much each member's forecast at C moved
across the rolling origins: a forecast that changes with every new evaluation is not
settled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from scalerl.curves.data import Curve
from scalerl.curves.power_law_fit import fit_power_law
from scalerl.curves.sigmoid_fit import fit_sigmoid
from scalerl.curves.solver import resolve_r0
from scalerl.curves.window import noise_sd, select_fit_from
from scalerl.errors import InputError

Law = Callable[[np.ndarray], np.ndarray]

#: Rolling origins: shares of the fit window's points (compute > 0) an origin fit sees.
ORIGINS = (0.5, 0.6, 0.7, 0.8)
#: Fewest points (compute > 0) a fit at a rolling origin gets.
MIN_ORIGIN_POINTS = 5
#: Smallest noise level of a pass rate: no evaluation set is large enough to go below it
#: (an accuracy on 50,000 problems has a standard deviation of ~0.002).
SIGMA_FLOOR = 0.002


@dataclass(frozen=True)
class FitSettings:
    """What the user chose for the fit, passed to every member."""

    r0: object = "first"
    """R0 of the ``sigmoid`` member: 'first', 'free' or a number."""
    fit_from: object = "auto"
    """Opening-plateau rule of the ``sigmoid`` member ('auto'), or None / a compute value."""
    A_max: float = 1.0
    y_floor: float = 0.0


@dataclass(frozen=True)
class Member:
    """One way to extrapolate a curve: a law on a fit window."""

    name: str
    description: str
    fit: Callable[[Curve, FitSettings], Law]
    """Fits the member to a curve (the fit window); raises InputError when it cannot."""


def _lower_bound(s: FitSettings) -> float | None:
    """A compute value the user gave as --fit-from (None for 'auto' or none)."""
    return None if s.fit_from is None or isinstance(s.fit_from, str) else float(s.fit_from)


def _sigmoid(curve: Curve, s: FitSettings) -> Law:
    return fit_sigmoid(curve, r0=s.r0, fit_from=s.fit_from, A_max=s.A_max, y_floor=s.y_floor).law


def _recent_sigmoid(ratio: float) -> Callable[[Curve, FitSettings], Law]:
    def fit(curve: Curve, s: FitSettings) -> Law:
        start = max(float(curve.x.max()) / ratio, _lower_bound(s) or 0.0)
        if int((curve.x >= start).sum()) < MIN_ORIGIN_POINTS:
            raise InputError(f"fewer than {MIN_ORIGIN_POINTS} points in the last {ratio:g}x of compute")
        # The recent phase has its own lower asymptote (after a jump, the drift starts from the
        # jump's level, not from R0), but it cannot lie below where training started: R0 free,
        # bounded below by the evaluation before training.
        floor = max(s.y_floor, resolve_r0(curve, s.r0)[0] if s.r0 != "free" else s.y_floor)
        recent = curve.window(start, None)
        return fit_sigmoid(recent, r0="free", fit_from=None, A_max=s.A_max, y_floor=floor).law

    return fit


def _power_law(curve: Curve, s: FitSettings) -> Law:
    # An opening plateau says nothing about the drift after it, for this law either: the same
    # forward-validated cut as the sigmoid's.
    start = _lower_bound(s)
    if s.fit_from == "auto":
        start = select_fit_from(curve, r0=s.r0, A_max=s.A_max, y_floor=s.y_floor).fit_from
    return fit_power_law(curve, fit_from=start, A_max=s.A_max).law


MEMBERS: dict[str, Member] = {
    m.name: m
    for m in (
        Member("sigmoid", "the paper's sigmoid, R0 = first evaluation, opening-plateau rule", _sigmoid),
        Member("sigmoid-last-4x", "sigmoid with a free lower asymptote on the last 4x of compute", _recent_sigmoid(4.0)),
        Member("sigmoid-last-8x", "sigmoid with a free lower asymptote on the last 8x of compute", _recent_sigmoid(8.0)),
        Member("power-law", "power law A - D/C^B (points after an opening plateau)", _power_law),
    )
}
DEFAULT_MEMBERS = tuple(MEMBERS)


def _fit_members(curve: Curve, names, settings: FitSettings) -> dict[str, Law]:
    out = {}
    for name in names:
        try:
            out[name] = MEMBERS[name].fit(curve, settings)
        except (InputError, ValueError, FloatingPointError, np.linalg.LinAlgError):
            continue  # this member cannot describe this window: the others stand without it
    return out


@dataclass
class Origin:
    """The members refitted on the first ``n_fit`` points of the window."""

    n_fit: int
    laws: dict[str, Law]
    x_val: np.ndarray
    y_val: np.ndarray


@dataclass
class Ensemble:
    """Members fitted on a window, their rolling-origin scores and weights."""

    laws: dict[str, Law]
    origins: list[Origin]
    val_mse: dict[str, float]
    """Mean squared error at the rolling origins every member could be fitted at (empty: none)."""
    sigma: float
    """Noise level of the window's evaluations (robust, with the floor of a pass rate)."""
    x_end: float
    """Last compute of the fit window: horizons are measured from it."""
    temperature: float
    weights: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.weights:
            self.weights = _weights(self.laws, self.val_mse, self.sigma, self.temperature)

    def reweighted(self, temperature: float) -> "Ensemble":
        """The same fits with another temperature (cheap: nothing is refitted)."""
        return replace(self, temperature=temperature, weights={})

    def member_values(self, C, names=None) -> np.ndarray:
        """Each member's forecast at C: an array (members, len(C)) in the order of ``names``
        (default: every member)."""
        names = list(self.laws) if names is None else names
        C = np.atleast_1d(np.asarray(C, dtype=float))
        return np.array([np.asarray(self.laws[k](C), dtype=float).reshape(-1) for k in names])

    def mean(self, C) -> np.ndarray:
        """The forecast: the weighted mean of the members at compute C."""
        names = list(self.weights)
        w = np.array([self.weights[k] for k in names])
        return w @ self.member_values(C, names)

    def spread(self, C) -> np.ndarray:
        """Standard deviation of the members at C, unweighted: how much plausible laws disagree."""
        names = list(self.laws)
        if len(names) < 2:
            return np.zeros(np.atleast_1d(C).shape)
        return self.member_values(C, names).std(axis=0)

    def origin_stability(self, C) -> np.ndarray:
        """Weighted mean over members of the standard deviation of their forecast at C across
        the rolling origins and the full window: how much the forecast moved as points came in."""
        C = np.atleast_1d(np.asarray(C, dtype=float))
        out = np.zeros(C.shape)
        for k, w in self.weights.items():
            preds = [np.asarray(o.laws[k](C), dtype=float).reshape(-1) for o in self.origins if k in o.laws]
            if preds:
                preds.append(np.asarray(self.laws[k](C), dtype=float).reshape(-1))
                out += w * np.std(preds, axis=0)
        return out

    @property
    def validation_rmse(self) -> float | None:
        """Root of the weighted mean of the members' rolling-origin MSEs: how far off the
        forecast has been inside the window, noise included (None: no validation possible)."""
        if not self.val_mse:
            return None
        return math.sqrt(sum(self.weights[k] * self.val_mse[k] for k in self.val_mse))

    def describe(self) -> list[dict]:
        """Per member: name, weight, validation MSE -- for JSON and text output."""
        return [
            {"member": k, "weight": float(self.weights.get(k, 0.0)),
             "validation_rmse": (math.sqrt(self.val_mse[k]) if k in self.val_mse else None),
             "description": MEMBERS[k].description if k in MEMBERS else k}
            for k in self.laws
        ]


def _weights(laws: dict[str, Law], val_mse: dict[str, float], sigma: float, temperature: float) -> dict[str, float]:
    if not val_mse or len(laws) == 1:
        # Nothing to validate on (a short window): no member has earned more say than another.
        return {k: 1.0 / len(laws) for k in laws}
    best = min(val_mse.values())
    raw = {k: math.exp(-(val_mse[k] - best) / (temperature * sigma**2)) for k in laws}
    z = sum(raw.values())
    return {k: v / z for k, v in raw.items()}


def origin_sizes(n: int) -> list[int]:
    """Points (compute > 0) seen at each rolling origin of an n-point window."""
    sizes = sorted({int(round(f * n)) for f in ORIGINS})
    return [m for m in sizes if MIN_ORIGIN_POINTS <= m <= n - 1]


def fit_ensemble(
    window: Curve,
    *,
    settings: FitSettings = FitSettings(),
    members=DEFAULT_MEMBERS,
    temperature: float = 1.0,
    bounded: bool = True,
) -> Ensemble:
    """Fit every member on ``window`` and at its rolling origins; weight them (see the module
    docstring). ``window`` is the curve up to the end of the fit window, its zero-compute
    points (the R0 measurement) included; ``settings.fit_from`` sets where members start."""
    unknown = [m for m in members if m not in MEMBERS]
    if unknown:
        raise InputError(f"unknown ensemble member(s) {', '.join(unknown)}; known: {', '.join(MEMBERS)}")
    if temperature <= 0:
        raise InputError(f"the ensemble temperature must be > 0, got {temperature}")
    laws = _fit_members(window, members, settings)
    if not laws:
        raise InputError(f"run {window.name!r}: no law could be fitted to the fit window")
    lower = _lower_bound(settings)
    pos = (window.x > 0) & (window.x >= (lower or 0.0))
    xs, ys = window.x[pos], window.y[pos]
    floor = SIGMA_FLOOR if bounded else 0.01 * float(np.ptp(ys)) + 1e-12
    sigma = max(noise_sd(ys), floor)
    origins = []
    for m in origin_sizes(int(xs.size)):
        sub = window.window(None, float(xs[m - 1]))
        origins.append(Origin(m, _fit_members(sub, laws, settings), xs[m:], ys[m:]))
    # Score on the origins where every member could be fitted, so all face the same points.
    common = [o for o in origins if set(laws) <= set(o.laws)]
    val_mse = {}
    if common:
        for k in laws:
            val_mse[k] = float(np.mean([np.mean((np.asarray(o.laws[k](o.x_val)) - o.y_val) ** 2) for o in common]))
    ens = Ensemble(laws, origins, val_mse, sigma, float(window.x.max()), temperature)
    if not common:
        ens.notes.append("too few points for rolling-origin validation: the ensemble members are weighted equally")
    return ens
