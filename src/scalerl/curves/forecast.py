"""What users ask of a run's curve: the forecast with its two bands, compute to reach a
target, the marginal gain of more compute, and a verdict on a bigger budget.

:func:`forecast` puts the pieces together:

* the fit window without its one-evaluation excursions (:mod:`excursions`), which every
  fit below sees; the curve itself (plots, held-out scores) keeps them;
* the paper's sigmoid on the default window (:mod:`sigmoid_fit`) with a residual bootstrap
  (:mod:`uncertainty`) -- the parameters A, B, C_mid and their intervals;
* the ensemble of laws and windows, its make-up calibrated on real runs (:mod:`ensemble`)
  -- the point forecast;
* the confidence and prediction bands calibrated on real runs (:mod:`bands`);
* the stability check (:mod:`stability`): on a run that peaked and fell, or is falling, the
  extrapolation is not a forecast, and every output says so.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Sequence

import numpy as np

from scalerl.curves.bands import Bands, Calibration, band_scale, default_calibration, gain_scale, level_text
from scalerl.curves.data import Curve, check_curve, dropped_note, fit_limits
from scalerl.curves.ensemble import Ensemble, FitSettings, fit_ensemble
from scalerl.curves.excursions import Excursions, drop_excursions
from scalerl.curves.power_law_fit import PowerLawFit, fit_power_law
from scalerl.curves.sigmoid_fit import SigmoidFit, fit_sigmoid
from scalerl.curves.stability import Stability, check_stability
from scalerl.curves.takeoff import unmeasured_takeoff_note
from scalerl.curves.uncertainty import N_BOOT, Bootstrap, _evaluate_many, bootstrap, check_bootstrap, seeded_rng
from scalerl.errors import InputError

#: Bootstrap resamples behind the bands' parameter-uncertainty term when the caller asked
#: for fewer (or none) for the parameter intervals.
BAND_BOOTSTRAP = 200


@dataclass
class Prediction:
    """The forecast at compute C with its two bands."""

    C: float
    R: float
    """The forecast: expected pass rate (the ensemble's mean curve)."""
    lo: float
    """Confidence band of the expected curve."""
    hi: float
    obs_lo: float
    """Prediction band: where one observed evaluation at C will land."""
    obs_hi: float
    calibrated: bool = True
    """False beyond the horizon the bands were calibrated on (they are then stretched)."""

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class Forecast:
    """A run's forecast: sigmoid parameters, ensemble forecast, bands and stability."""

    fit: SigmoidFit
    boot: Bootstrap | None
    power_law: PowerLawFit | None = None
    curve: Curve | None = None
    notes: list[str] = field(default_factory=list)
    ensemble: Ensemble | None = None
    bands: Bands | None = None
    stability: Stability | None = None
    band_boot: Bootstrap | None = None
    """Bootstrap behind the bands' parameter term (``boot`` when it is large enough)."""
    excursions: Excursions = field(default_factory=Excursions)
    """Evaluations of the fit window left out of every fit as one-evaluation excursions (they
    stay in :attr:`curve`)."""

    @property
    def unstable(self) -> bool:
        """True when the run peaked and fell or is falling: the extrapolation is not a forecast."""
        return self.stability is not None and self.stability.unstable

    @property
    def level(self) -> float:
        return self.bands.level if self.bands else (self.boot.level if self.boot else 0.95)

    @property
    def held_level(self) -> float:
        """The level the bands hold: ``level``, or less where the calibration's run-cuts are too few to give it
        (:meth:`~scalerl.curves.bands.Calibration.band_level`)."""
        return self.bands.calibration.band_level(self.level) if self.bands else self.level

    @property
    def level_text(self) -> str:
        """The level the bands hold, for labels: "95%", or less ("85.7%") where the calibration's run-cuts are
        too few to give ``level`` (:meth:`~scalerl.curves.bands.Calibration.band_level`) -- the tables and the
        figure's legend said 95% above a note that said 85.7%."""
        return self.bands.calibration.level_text(self.level) if self.bands else level_text(self.level)

    # -- parameters -------------------------------------------------------------------
    def intervals(self) -> dict[str, list[float]]:
        if self.boot is None:
            return {}
        return {k: v for k, v in self.boot.intervals().items() if not (k == "R0" and self.fit.r0_mode == "given")}

    # -- the curve and its bands ------------------------------------------------------
    def mean(self, C) -> np.ndarray:
        """The forecast at each C: the ensemble's mean (the sigmoid's without one); below the first evaluation
        fitted, a run from R0 to it."""
        C = np.atleast_1d(np.asarray(C, dtype=float))
        if not self.ensemble:
            return np.atleast_1d(self.fit.law(C))
        R = self.ensemble.mean(C)
        # Before the first evaluation fitted the members extrapolate backwards, where the power law runs away (review
        # FY: -0.067 at step 1 of a run starting at 0.1; GA: -2.54 for a reward): there the forecast runs from the
        # sigmoid's R0 to the ensemble's value at that evaluation along the sigmoid's shape -- monotone, and
        # continuous there (GD: the sigmoid alone stepped by up to 0.085 at it). Where the ensemble starts below R0
        # it falls to it (GC; a stated limit).
        first = self._first_fitted
        before = C < first
        if before.any():
            law = np.atleast_1d(self.fit.law(np.append(C[before], first)))
            R0, at_first = self.fit.R0, float(self.ensemble.mean([first])[0])
            rise = law[-1] - R0
            shape = (law[:-1] - R0) / rise if abs(rise) > 1e-12 else C[before] / first
            R[before] = R0 + (at_first - R0) * shape
        return R

    @property
    def _first_fitted(self) -> float:
        """The compute of the first evaluation fitted (above 0): where the ensemble's forecast begins."""
        return float(self.fit.x[self.fit.x > 0].min())

    def scale(self, C) -> np.ndarray:
        """The bands' scale s(C) (see :mod:`scalerl.curves.bands`); before the first evaluation fitted, its value
        there (the members' spread ran away below it: a band of [0, 1] at step 0.1 -- review GC)."""
        C = np.maximum(np.atleast_1d(np.asarray(C, dtype=float)), self._first_fitted)
        boot_sd = _evaluate_many(self.band_boot.samples, C).std(axis=0) if self.band_boot else np.zeros(C.shape)
        ens = self.ensemble
        return band_scale(self.bands.sigma, ens.validation_rmse, boot_sd, ens.origin_stability(C), ens.spread(C))

    def band_arrays(self, C) -> dict[str, np.ndarray]:
        """Forecast, both bands and the calibrated flag at every C, as arrays (for plots)."""
        C = np.atleast_1d(np.asarray(C, dtype=float))
        if not (C > 0).all():  # NaN too: it came out as a forecast of -inf with NaN bands
            bad = float(C[~(C > 0)][0])
            raise InputError(f"compute to predict at must be a number > 0, got {bad:g}"
                             + (" (at 0, before training, the curve is at its R0: fit.R0)" if bad == 0 else ""))
        R = self.mean(C)
        if self.bands is None or self.ensemble is None:
            return {"R": R, "lo": R, "hi": R, "obs_lo": R, "obs_hi": R, "calibrated": np.ones(C.shape, bool)}
        lo, hi, obs_lo, obs_hi = self.bands.edges(R, self.scale(C), C)
        # The members' mean can leave the metric's bounds where one runs away -- the power law as C -> 0, before
        # the first evaluation (review FY: -0.067, outside its own band [0, 0.297]): the forecast stays in its band.
        R = np.clip(R, lo, hi)
        return {"R": R, "lo": lo, "hi": hi, "obs_lo": obs_lo, "obs_hi": obs_hi, "calibrated": self.bands.calibrated(C)}

    # -- questions --------------------------------------------------------------------
    def predict(self, C) -> list[Prediction]:
        """The forecast at each compute value with its confidence and prediction bands."""
        C = np.atleast_1d(np.asarray(C, dtype=float))
        b = self.band_arrays(C)
        return [Prediction(float(c), float(r), float(lo), float(hi), float(ol), float(oh), bool(cal))
                for c, r, lo, hi, ol, oh, cal in zip(C, b["R"], b["lo"], b["hi"], b["obs_lo"], b["obs_hi"], b["calibrated"])]

    def _search_grid(self) -> np.ndarray:
        x = self.curve.x[self.curve.x > 0] if self.curve is not None else self.fit.x[self.fit.x > 0]
        end = self.ensemble.x_end if self.ensemble else float(x.max())
        # From 1/1000 of the first evaluation fitted (GC: a target the forecast reaches before it was answered at it)
        # -- but from the first fitted where the window leaves out earlier evaluations (an opening plateau, still
        # below: GD), which the answer must not precede.
        first = self._first_fitted
        return np.geomspace(first / 1000 if not (x < first).any() else first, end * 1e6, 4000)

    @staticmethod
    def _first_reach(grid: np.ndarray, values: np.ndarray, R: float) -> float:
        """First compute on the grid where ``values`` reach R, interpolated in ln C."""
        hit = np.nonzero(values >= R)[0]
        if not hit.size:
            return math.inf
        i = int(hit[0])
        if i == 0 or values[i] == values[i - 1]:
            return float(grid[i])
        t = (R - values[i - 1]) / (values[i] - values[i - 1])
        return float(np.exp(np.log(grid[i - 1]) + t * (np.log(grid[i]) - np.log(grid[i - 1]))))

    def compute_to_reach(self, R: float) -> tuple[float, float, float]:
        """Compute at which the forecast reaches pass rate ``R``: (estimate, lo, hi) from the
        mean curve and its confidence band; ``inf`` when it does not within 10^6 x the fit window,
        0 when the run starts there (``R`` at or below R0)."""
        R = _number(R, "the pass rate to reach")
        lo_b, hi_b = self.bands.bounds if self.bands is not None else (-math.inf, math.inf)
        if not lo_b <= R <= hi_b:  # NaN too: it was "never" (inf), as for a level above the ceiling
            raise InputError(f"the pass rate to reach must be a number in [{lo_b:g}, {hi_b:g}], got {R:g}; give a "
                             "fraction (0.6, not 60)")
        if R <= self.fit.R0:  # the search starts at the first compute > 0: it answered that compute
            return 0.0, 0.0, 0.0
        grid = self._search_grid()
        b = self.band_arrays(grid)
        est, early, late = (self._first_reach(grid, b[k], R) for k in ("R", "hi", "lo"))
        floor = grid[0] if grid[0] < self._first_fitted else None  # (a floor below the first evaluation fitted)
        if est == floor:  # below the search's floor: read off the forecast's shape there (GE: a slow sigmoid is
            est = self._reach_before_first(R)  # above R at 1/1000 of the first evaluation)
        # A band end at the floor: its edge holds R from before training, as R <= R0 does (GD: it read the floor).
        return est, 0.0 if early == floor else early, late

    def _reach_before_first(self, R: float) -> float:
        """Compute where the forecast below the first evaluation fitted (:meth:`mean`: R0 to the ensemble's value
        there, along the sigmoid's shape) reaches ``R``, solved on the sigmoid."""
        first, law, R0 = self._first_fitted, self.fit.law, self.fit.R0
        if not self.ensemble:  # (the forecast is the sigmoid itself)
            return law.compute_for(R)
        at_first, law_first = float(self.ensemble.mean([first])[0]), float(np.atleast_1d(law(first))[0])
        if not (R0 < R < at_first and R0 < law_first < law.A):
            return 0.0
        return law.compute_for(R0 + (R - R0) / (at_first - R0) * (law_first - R0))

    def compute_to_fraction(self, f: float) -> tuple[float, float, float]:
        """Compute for the sigmoid to reach a fraction ``f`` of its gain A - R0: (estimate, lo, hi)."""
        est = self.fit.law.compute_for_fraction(f)
        if self.boot is None:
            return est, est, est
        lo, hi = self.boot.quantity_interval(lambda law: law.compute_for_fraction(f))
        return est, lo, hi

    def marginal_gain(self, C: float) -> float:
        """dR/dC of the forecast at C: the pass rate one more unit of compute buys there."""
        C = _number(C, "the compute of the marginal gain")
        if not 0 < C < math.inf:  # it was NaN at 0, below it and at NaN
            raise InputError(f"the compute of the marginal gain must be a finite number > 0, got {C:g}")
        eps = 1e-4
        lo, hi = self.mean([C * (1 - eps), C * (1 + eps)])
        return float((hi - lo) / (2 * eps * C))

    def gain_scale(self, c_from: float, c_to: float) -> float:
        """The scale of the gain ``R(c_to) - R(c_from)`` (:func:`scalerl.curves.bands.gain_scale`)."""
        s_from, s_to = self.scale([c_from, c_to])
        return gain_scale(s_from, s_to, math.log(c_to / c_from), self.bands.calibration.gain_span)

    def above_ceiling_note(self, preds: Sequence[Prediction]) -> str:
        """Why a forecast stands above the sigmoid's ceiling A ("" where none does beyond A's interval): A
        is the sigmoid's alone, while the forecast combines it with laws that do not level off there -- a
        user read "A 0.60" beside "0.66 at 10x" as a contradiction, with no word on it."""
        top = self.intervals().get("A", [self.fit.A, self.fit.A])[1]
        above = [p for p in preds if p.R > top + 1e-9]
        if not above or self.ensemble is None:
            return ""
        first = above[0]
        names = [k for k, w in self.ensemble.weights.items() if k != "sigmoid" and w >= 0.005]
        values = self.ensemble.member_values([first.C], names)[:, 0]
        higher = [f"{k} {v:.4f} (weight {self.ensemble.weights[k]:.2f})" for k, v in zip(names, values) if v > top]
        return (f"the forecast at {first.C:.4g} ({first.R:.4f}) is above the sigmoid's ceiling A = {self.fit.A:.4g}"
                f"{f' (interval up to {top:.4g})' if top != self.fit.A else ''}: A is the sigmoid's alone, and the "
                f"forecast weighs it with laws that stand higher there ({', '.join(higher)}); the sigmoid column is "
                "the sigmoid's own forecast")

    def ceiling(self) -> float:
        """Where the forecast levels off: its mean at 10^6 x the end of the fit window."""
        end = self.ensemble.x_end if self.ensemble else float(self.fit.x.max())
        return float(self.mean([end * 1e6])[0])

    def verdict(self, budget_from: float, budget_to: float, *, min_gain: float = 0.01) -> "Verdict":
        """Is it worth going from ``budget_from`` to ``budget_to``? (See :class:`Verdict`.)

        The gain's interval is ``gain +- q_gain * f * g``: g from the bands' scale at both ends
        (:meth:`gain_scale`), f the small-sample factor and q_gain a conformal factor calibrated
        on gains observed in real runs (:mod:`scalerl.curves.bands`)."""
        if not 0 < budget_from < budget_to < math.inf:  # (inf read "infx the compute": review al)
            raise InputError(f"need 0 < from < to, both finite compute values, got from={budget_from:g} to={budget_to:g}")
        if not math.isfinite(min_gain):  # NaN compared false with both ends: always 'uncertain'
            raise InputError(f"min_gain must be a finite gain in pass rate (e.g. 0.01), got {min_gain:g}")
        p_from, p_to = self.predict([budget_from, budget_to])
        gain = p_to.R - p_from.R
        if self.bands is not None and self.ensemble is not None:
            half = self.bands.gain_half_width(self.gain_scale(budget_from, budget_to), budget_to)
        else:
            half = 0.0
        lo, hi = gain - half, gain + half
        if self.bands is not None:
            # A pass rate stays within the bands' bounds ([0, 1]): the gain cannot leave [floor - the
            # highest, top - the lowest plausible evaluation at budget_from] however far the
            # extrapolation goes (at 1e297x the compute it read -8.6 to +8.7).
            floor, top = self.bands.bounds
            lo, hi = max(lo, floor - p_from.obs_hi), min(hi, top - p_from.obs_lo)
        headroom = self.ceiling() - p_from.R
        share = gain / headroom if headroom > 0 else 0.0
        if self.unstable:
            word = "no verdict (unstable run)"
        elif lo >= min_gain:
            word = "worth it"
        elif hi < min_gain:
            word = "not worth it"
        else:
            word = "uncertain"
        return Verdict(budget_from, budget_to, p_from.R, p_to.R, gain, lo, hi, share, word, min_gain, self.held_level)


@dataclass
class Verdict:
    """Plain-language answer to "is it worth going from budget X to budget Y"."""

    budget_from: float
    budget_to: float
    R_from: float
    R_to: float
    gain: float
    gain_lo: float
    gain_hi: float
    headroom_share: float
    word: str
    """'worth it' (the whole interval of the gain is >= min_gain), 'not worth it' (all of it
    below), 'uncertain', or 'no verdict (unstable run)'."""
    min_gain: float
    level: float = 0.95
    """The level the gain's interval holds: the forecast's, or less where the calibration's run-cuts are too
    few to give it (:meth:`~scalerl.curves.bands.Calibration.band_level`; review cu: "95% interval" below a
    table of 85.7% bands)."""

    def text(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        x = self.budget_to / self.budget_from
        return (
            f"Going from {self.budget_from:.4g}{u} to {self.budget_to:.4g}{u} ({x:.3g}x the compute) is expected to "
            f"move the pass rate from {self.R_from:.3f} to {self.R_to:.3f}: {self.gain:+.3f} "
            f"({level_text(self.level)} interval {self.gain_lo:+.3f} to {self.gain_hi:+.3f}), "
            f"{100 * self.headroom_share:.0f}% of the headroom left below where the forecast levels off. "
            f"Verdict: {self.word} (threshold {self.min_gain:+.3f})."
        )


def _number(value, what: str) -> float:
    """``value`` as one float, or an InputError naming ``what`` (a list or a string gave numpy's error)."""
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{what} must be one number, got {value!r}") from None


def check_settings(*, n_boot: int, level: float, seed, calibration: Calibration | None = None) -> None:
    """Refuse settings no forecast can be made with -- a band level the calibration does not cover, a
    bootstrap too small for intervals, a seed numpy refuses -- before any work. A command over several
    runs calls it once, before it reads them: ``backtest`` listed every run as skipped for a bad
    ``--seed``, ``--level`` or ``--bootstrap`` and exited 0."""
    (calibration or default_calibration()).q(level, "confidence")
    if n_boot:
        check_bootstrap(n_boot, level=level)
    seeded_rng(seed)


def forecast(
    curve: Curve,
    *,
    method: str = "fast",
    r0="first",
    fit_from="auto",
    fit_until: float | None = None,
    n_boot: int = N_BOOT,
    level: float = 0.95,
    boot_kind: str = "residual",
    seed: int = 0,
    power_law: bool = True,
    A_max: float | None = None,
    y_floor: float | None = None,
    paper_grid=None,
    members=None,
    calibration: Calibration | None = None,
    temperature: float | None | str = "calibrated",
    excursions: bool = True,
) -> Forecast:
    """Forecast ``curve`` from its points up to ``fit_until`` (see the module docstring).

    ``n_boot`` resamples give the parameter intervals (0: none; the bands still use
    :data:`BAND_BOOTSTRAP`). ``calibration`` (default: the shipped one), ``members``
    (default: the calibration's) and ``temperature`` (default: the calibration's; None: equal
    weights) are for calibrating the forecaster itself. ``excursions``: leave the window's
    one-evaluation excursions out of the fits (:mod:`scalerl.curves.excursions`); False fits
    every point.
    """
    check_curve(curve, "forecast")
    A_max, y_floor = fit_limits(curve, A_max, y_floor)  # (default: the curve's own bounds)
    check_settings(n_boot=n_boot, level=level, seed=seed, calibration=calibration)  # before any work
    shown = curve
    left = Excursions()
    if excursions:
        curve, left = drop_excursions(curve, fit_until, bounded=math.isfinite(A_max))
    calibration = calibration or default_calibration()
    members = calibration.members if members is None else tuple(members)
    if temperature == "calibrated":
        temperature = calibration.temperature
    fit = fit_sigmoid(
        curve, method=method, r0=r0, fit_from=fit_from, fit_until=fit_until, A_max=A_max, y_floor=y_floor,
        paper_grid=paper_grid,
    )
    boot = bootstrap(fit, n_boot, level=level, kind=boot_kind, seed=seed, A_max=A_max, y_floor=y_floor) if n_boot else None
    band_boot = boot if boot is not None and boot.kind == "residual" and len(boot.samples) >= BAND_BOOTSTRAP else \
        bootstrap(fit, BAND_BOOTSTRAP, level=level, seed=seed, A_max=A_max, y_floor=y_floor)
    pl = None
    if power_law:
        try:
            pl = fit_power_law(curve, fit_from=fit.fit_from, fit_until=fit_until, A_max=A_max)
        except InputError as exc:  # the sigmoid stands on its own; say why the comparison is missing
            fit.warnings.append(f"power law not fitted: {exc}")
    window = curve.window(None, fit_until)
    bounded = math.isfinite(A_max)
    settings = FitSettings(r0=r0, fit_from=fit_from, A_max=A_max, y_floor=y_floor)
    ens = fit_ensemble(window, settings=settings, members=members, temperature=temperature, bounded=bounded)
    bands = Bands(sigma=ens.sigma, x_end=ens.x_end, calibration=calibration, level=level,
                  validated=ens.validation_rmse is not None,
                  bounds=(y_floor if math.isfinite(y_floor) else -np.inf, A_max if bounded else np.inf),
                  df=int(((window.x > 0) & np.isfinite(window.y)).sum()))
    # On every evaluation of the window, excursions included: left out, the peak before a collapse was one,
    # and the points left too few to test (review ch: a collapse to 0 forecast at 0.25).
    raw = shown.window(None, fit_until)
    stability = check_stability(raw.x, raw.y, R0=fit.R0 if fit.r0_mode != "free" else None)
    out = Forecast(fit=fit, boot=boot, power_law=pl, curve=shown, ensemble=ens, bands=bands,
                   stability=stability, band_boot=band_boot, excursions=left)
    if curve.dropped:
        out.notes.append(dropped_note(curve))
    out.notes.extend(curve.notes)
    if left:
        out.notes.append(left.note(curve.x_name))
    if fit.early_cut is not None and fit.early_cut.dropped:
        out.notes.append(fit.early_cut.reason)
    out.notes.extend(ens.notes)
    if boot is not None:
        out.notes.extend(boot.notes)
    takeoff = unmeasured_takeoff_note(fit.C_mid, fit.B, shown.x, curve.x_name, out.intervals().get("C_mid"))
    if takeoff:
        out.notes.append(takeoff)
    if stability.unstable:
        fit.warnings.insert(0, f"unstable run: {stability.text()}")
    elif stability.untested:  # (not "stable": a 5-point collapse is not told from noise -- review ch)
        out.notes.append(stability.text())
    return out


def fmt_compute(c: float) -> str:
    if math.isinf(c):
        return "never"
    return f"{c:.4g}"
