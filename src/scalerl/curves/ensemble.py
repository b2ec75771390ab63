"""The point forecast: a combination of laws and fit windows, checked by rolling-origin validation.

No single law extrapolates every real run. The paper's sigmoid through R0 saturates right
after a steep opening jump and misses a slow drift that follows (a verl Qwen2.5-0.5B PPO run:
MAE 0.028 on its second half, the power law 0.009); the power law keeps rising where a run
has flattened; a run that has stopped improving is best forecast by its current level. So the
forecast combines *members* (:data:`MEMBERS`, a registry):

``sigmoid``          the paper's law, R0 = the evaluation before training, opening-plateau rule;
``sigmoid-last-4x``  the sigmoid with a free lower asymptote on the last 4x of compute
                     (``x >= x_end / 4``): the recent phase alone, e.g. the drift after a jump;
``sigmoid-last-8x``  the same on the last 8x;
``power-law``        ``A - D / C^B`` on the points with compute > 0 (after an opening plateau);
``level``            the recent level held (mean of the last 20% of the window's points, at
                     least 3): the naive "no further change" forecast (inside the window it
                     follows the sigmoid, shifted to meet that level).

Which members the default forecast combines, and how, is calibrated on real runs
(``calibration.json``: ``members``, ``temperature``): each member is fitted on the whole
window and at rolling origins inside it (its first 50%, 60%, 70% and 80% of points,
predicting the rest of the window), and a member's weight is
``exp(-(MSE - MSE_best) / (T sigma^2))`` -- MSE its rolling-origin error, sigma the window's
noise, T the temperature; ``T = None`` weighs the members equally.
``benchmarks/forecast_corpus.py`` chooses the member set and T in two steps: a candidate
must first forecast the paper's law on clean synthetic curves (within 0.02 at 2x the fitted
compute) -- which rules out equal weights with ``level``, since the naive level drags a
still-rising curve down -- then the real runs choose by mean held-out error,
leave-one-source-out. Shipped: ``sigmoid``, ``sigmoid-last-8x``, ``power-law`` and ``level``
at T = 64 (soft: members within ~8 noise levels of the best share the forecast). On the real
runs alone equal weights would have won -- the "forecast combination puzzle": weights
estimated from a window's few, noisy validation errors lose to a plain average.
Everything is decided from the fit window's own data, never from what is held out.

Besides the mean curve the ensemble gives three measures of how far its forecast can be
trusted, all used by :mod:`scalerl.curves.bands`: its *validation error* (how far off the
combined forecast was at the rolling origins), the *spread* of the members at C (how much
plausible laws disagree) and the *origin stability* (how much each member's forecast at C
moved across the rolling origins: a forecast that changes with every new evaluation is not
settled).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Callable

import numpy as np

from scalerl.curves.data import Curve, check_curve
from scalerl.curves.laws import Level
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
#: The ``level`` member holds the mean of this share of the window's last points (at least
#: LEVEL_MIN_POINTS): long enough to average the noise, short enough to be the current level.
LEVEL_SHARE = 0.2
LEVEL_MIN_POINTS = 3
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


def _level(curve: Curve, s: FitSettings) -> Law:
    pos = (curve.x > 0) & (curve.x >= (_lower_bound(s) or 0.0))
    ys = curve.y[pos]
    if ys.size < LEVEL_MIN_POINTS:
        raise InputError(f"fewer than {LEVEL_MIN_POINTS} points to take the recent level from")
    m = max(LEVEL_MIN_POINTS, int(round(LEVEL_SHARE * ys.size)))
    # Inside the window it follows the paper's sigmoid (shifted to meet the level), so that
    # the combined curve still describes the fitted points; beyond it, it holds the level.
    try:
        shape = _sigmoid(curve, s)
    except (InputError, ValueError, FloatingPointError, np.linalg.LinAlgError):
        shape = None
    return Level(float(ys[-m:].mean()), float(curve.x[pos].max()), shape)


MEMBERS: dict[str, Member] = {
    m.name: m
    for m in (
        Member("sigmoid", "the paper's sigmoid, R0 = first evaluation, opening-plateau rule", _sigmoid),
        Member("sigmoid-last-4x", "sigmoid with a free lower asymptote on the last 4x of compute", _recent_sigmoid(4.0)),
        Member("sigmoid-last-8x", "sigmoid with a free lower asymptote on the last 8x of compute", _recent_sigmoid(8.0)),
        Member("power-law", "power law A - D/C^B (points after an opening plateau)", _power_law),
        Member("level", "the recent level held: mean of the window's last 20% of points (no further change)", _level),
    )
}
#: Every member: what :func:`fit_ensemble` fits unless told otherwise. The default forecast
#: combines the subset named by the calibration (:mod:`scalerl.curves.bands`).
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
    temperature: float | None
    """Weighting temperature; None weighs the members equally (see the module docstring)."""
    weights: dict[str, float] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        if not self.weights:
            self.weights = _weights(self.laws, self.val_mse, self.sigma, self.temperature)

    def weighting(self) -> str:
        """How the weights were chosen, in words: the case :func:`_weights` took (review dh: "from rolling-origin
        validation" was said of a window too short to validate, whose members were weighted equally)."""
        if self.temperature is None:
            return "equal weights, as calibrated on real runs"
        if not self.val_mse:
            return "equal weights: too few points for rolling-origin validation"
        if len(self.laws) == 1:
            return "one member"
        return "weights from rolling-origin validation inside the fit window"

    def reweighted(self, temperature: float | None) -> "Ensemble":
        """The same fits with another temperature (cheap: nothing is refitted)."""
        return replace(self, temperature=temperature, weights={})

    def subset(self, names, temperature: float | None) -> "Ensemble":
        """The ensemble of the members in ``names`` only (those that could be fitted), weighted
        at ``temperature`` -- nothing is refitted. Raises InputError when none is left."""
        keep = [k for k in names if k in self.laws]
        if not keep:
            raise InputError(f"none of the members {', '.join(names)} could be fitted to this window")
        origins = [Origin(o.n_fit, {k: o.laws[k] for k in keep if k in o.laws}, o.x_val, o.y_val) for o in self.origins]
        return Ensemble({k: self.laws[k] for k in keep}, origins, _validation_mse(keep, origins), self.sigma,
                        self.x_end, temperature, notes=list(self.notes))

    def member_values(self, C, names=None) -> np.ndarray:
        """Each member's forecast at C: an array (members, len(C)) in the order of ``names``
        (default: every member)."""
        names = list(self.laws) if names is None else names
        C = np.atleast_1d(np.asarray(C, dtype=float))
        return np.array([np.asarray(self.laws[k](C), dtype=float).reshape(-1) for k in names])

    def _w(self) -> tuple[list[str], np.ndarray]:
        names = list(self.weights)
        return names, np.array([self.weights[k] for k in names])

    def mean(self, C) -> np.ndarray:
        """The forecast: the weighted mean of the members at compute C."""
        names, w = self._w()
        return w @ self.member_values(C, names)

    def spread(self, C) -> np.ndarray:
        """Weighted standard deviation of the members at C: how much the laws the forecast
        rests on disagree (a member validation has ruled out does not widen the band)."""
        names, w = self._w()
        if len(names) < 2:
            return np.zeros(np.atleast_1d(C).shape)
        v = self.member_values(C, names)
        return np.sqrt(np.maximum(w @ (v - w @ v) ** 2, 0.0))

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

    def _common_origins(self) -> list[Origin]:
        return [o for o in self.origins if set(self.laws) <= set(o.laws)]

    @property
    def validation_rmse(self) -> float | None:
        """RMSE of the combined forecast at the rolling origins (the weighted mean of the
        members refitted there, against the rest of the window): how far off the forecast has
        been inside the window, noise included. None: no validation possible."""
        common = self._common_origins()
        if not common:
            return None
        names, w = self._w()
        mse = [np.mean((w @ np.array([np.asarray(o.laws[k](o.x_val), dtype=float).reshape(-1) for k in names])
                        - o.y_val) ** 2) for o in common]
        return math.sqrt(float(np.mean(mse)))

    def describe(self) -> list[dict]:
        """Per member: name, weight, validation MSE -- for JSON and text output."""
        return [
            {"member": k, "weight": float(self.weights.get(k, 0.0)),
             "validation_rmse": (math.sqrt(self.val_mse[k]) if k in self.val_mse else None),
             "description": MEMBERS[k].description if k in MEMBERS else k}
            for k in self.laws
        ]


def _weights(laws: dict[str, Law], val_mse: dict[str, float], sigma: float,
             temperature: float | None) -> dict[str, float]:
    if temperature is None or not val_mse or len(laws) == 1:
        # Equal weights: by calibration (temperature None), or because nothing could be
        # validated (a short window) -- no member has earned more say than another.
        return {k: 1.0 / len(laws) for k in laws}
    best = min(val_mse.values())
    raw = {k: math.exp(-(val_mse[k] - best) / (temperature * sigma**2)) for k in laws}
    z = sum(raw.values())
    return {k: v / z for k, v in raw.items()}


def _validation_mse(names, origins: list[Origin]) -> dict[str, float]:
    """Each member's mean squared error over the origins where *every* member could be fitted,
    so that all face the same points."""
    common = [o for o in origins if set(names) <= set(o.laws)]
    if not common:
        return {}
    return {k: float(np.mean([np.mean((np.asarray(o.laws[k](o.x_val)) - o.y_val) ** 2) for o in common]))
            for k in names}


def origin_sizes(n: int) -> list[int]:
    """Points (compute > 0) seen at each rolling origin of an n-point window."""
    sizes = sorted({int(round(f * n)) for f in ORIGINS})
    return [m for m in sizes if MIN_ORIGIN_POINTS <= m <= n - 1]


def fit_ensemble(
    window: Curve,
    *,
    settings: FitSettings = FitSettings(),
    members=DEFAULT_MEMBERS,
    temperature: float | None = None,
    bounded: bool = True,
) -> Ensemble:
    """Fit every member on ``window`` and at its rolling origins; weight them (see the module
    docstring; ``temperature`` None: equal weights). ``window`` is the curve up to the end of
    the fit window, its zero-compute points (the R0 measurement) included;
    ``settings.fit_from`` sets where members start."""
    check_curve(window, "fit_ensemble")
    unknown = [m for m in members if m not in MEMBERS]
    if unknown:
        raise InputError(f"unknown ensemble member(s) {', '.join(unknown)}; known: {', '.join(MEMBERS)}")
    if temperature is not None and not temperature > 0:
        raise InputError(f"the ensemble temperature must be > 0 (or None: equal weights), got {temperature}")
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
    val_mse = _validation_mse(list(laws), origins)
    ens = Ensemble(laws, origins, val_mse, sigma, float(window.x.max()), temperature)
    if not val_mse:
        ens.notes.append("too few points for rolling-origin validation: the ensemble members are weighted equally")
    return ens
