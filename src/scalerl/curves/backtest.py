"""Backtests: fit on a prefix of a run, score the rest -- so a user can see how far to trust
the forecaster on their own logs before trusting its forecast.

Scored on the held-out evaluations, side by side:

* ``forecast`` -- the default forecast (the ensemble, :mod:`scalerl.curves.ensemble`);
* ``sigmoid`` -- the paper's sigmoid on the default window (the fit behind A, B, C_mid);
* ``plain_sigmoid`` -- the sigmoid on every point, R0 = the first evaluation;
* ``power_law`` -- ``A - D / C^B``.

For each: the mean absolute error (MAE) over the held-out points, the *end-level error*
(forecast minus observed, both averaged over the last quarter of the held-out evaluations:
less noisy than one point), and the last point's error. For the forecast's bands: whether
the confidence band (averaged over those same points) covers the observed end level, and
the share of held-out evaluations inside the prediction band, with the half-widths.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from scalerl.curves.data import Curve, check_curve
from scalerl.curves.forecast import Forecast, forecast
from scalerl.curves.sigmoid_fit import fit_sigmoid
from scalerl.curves.stability import Stability, check_stability
from scalerl.curves.window import noise_sd
from scalerl.errors import InputError

#: The end level is the mean over this share of the held-out evaluations (the last ones).
END_SHARE = 0.25
#: Targets a forecast is held to (the figures ``backtest --all-runs`` counts).
MAE_TARGET = 0.015
END_TARGET = 0.02


@dataclass
class LawScore:
    params: dict[str, float]
    mae: float
    end_error: float
    """Predicted minus observed end level (mean over the last quarter of held-out points)."""
    last_error: float
    """Predicted minus observed at the last held-out point (signed)."""
    max_abs_error: float
    predictions: list[float]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class BandScore:
    """How the forecast's bands did on the held-out points."""

    level: float
    end_lo: float
    end_hi: float
    end_covered: bool
    """The observed end level lies inside the confidence band (averaged over the end points)."""
    end_half_width: float
    point_coverage: float
    """Share of held-out evaluations inside the prediction band."""
    point_half_width: float
    """Median half-width of the prediction band over the held-out points."""
    calibrated: bool
    """False when some held-out points lie beyond the calibrated horizon."""
    wider_than_run: bool = False
    """The confidence band at the end is more than twice as wide as the whole run's range of values (its
    highest evaluation minus its lowest): it covers the end level without saying anything about it (an
    ``--unbounded`` reward's ceiling the fit cannot bound gave bands 13-20 wide on rewards in [-1, 1],
    which a coverage share counted as hits). Twice: on a flat run the range is the noise's, which an
    honest band may match (review EU)."""

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Backtest:
    run: str
    cut: float
    n_fit: int
    n_test: int
    test_x: list[float]
    test_y: list[float]
    forecast: Forecast
    default: LawScore
    sigmoid: LawScore
    plain_sigmoid: LawScore | None
    power_law: LawScore | None
    bands: BandScore
    end_level: float
    """Observed end level: mean of the last quarter of the held-out evaluations."""
    run_stability: Stability | None = None
    """Stability of the whole run, held-out part included (hindsight: what the forecast could
    not know). A run unstable over its whole length is not one a forecast is held to."""

    @property
    def unstable(self) -> bool:
        """Flagged unstable at the cut (from the fitted points only)."""
        return self.forecast.unstable

    @property
    def noise_tolerance(self) -> float:
        """The MAE difference the held-out noise alone can make: the standard error of the mean
        of the held-out evaluations, ``sigma_held / sqrt(n_held)`` (sigma from successive
        differences). Two forecasts whose MAEs differ by less cannot be told apart."""
        y = np.asarray(self.test_y)
        return noise_sd(y) / math.sqrt(y.size) if y.size >= 3 else math.inf

    def better_reference_mae(self) -> float:
        """The better of the plain sigmoid's and the power law's held-out MAE -- chosen with
        hindsight, an oracle no forecast made before the cut can match on every run."""
        refs = [s.mae for s in (self.plain_sigmoid, self.power_law) if s is not None]
        return min(refs) if refs else math.inf

    @property
    def scored(self) -> bool:
        """Counted in a summary: stable at the cut and over the whole run."""
        return not self.unstable and not (self.run_stability is not None and self.run_stability.unstable)

    @property
    def unscored(self) -> str:
        """Why a run stable at the cut is not scored ("" where it is scored or unstable at the cut): it fell after
        the cut -- or, too few evaluations before the cut to test, it may have fallen before it (review ck: "fell
        later" of a run that fell from 0.62 to 0.05 by the cut)."""
        if self.scored or self.unstable:
            return ""
        st = self.forecast.stability
        return "not tested at the cut, unstable over the run" if st is not None and st.untested else "fell later"

    def as_dict(self) -> dict:
        st = self.forecast.stability
        return {
            "run": self.run,
            "scored": self.scored,
            "cut": self.cut,
            "n_fit": self.n_fit,
            "n_test": self.n_test,
            "fit_from": self.forecast.fit.fit_from,
            "end_level": self.end_level,
            "unstable": self.unstable,
            "stability": st.as_dict() if st is not None else None,
            "run_stability": self.run_stability.as_dict() if self.run_stability is not None else None,
            "forecast": self.default.as_dict(),
            "ensemble": self.forecast.ensemble.describe() if self.forecast.ensemble else None,
            "bands": self.bands.as_dict(),
            "sigmoid": self.sigmoid.as_dict(),
            "plain_sigmoid": self.plain_sigmoid.as_dict() if self.plain_sigmoid else None,
            "power_law": self.power_law.as_dict() if self.power_law else None,
            "test": [{"C": c, "R": r} for c, r in zip(self.test_x, self.test_y)],
            # What the text prints under the scores (rows dropped as NaN, the reader's notes): the JSON
            # had none of it, so a script scored a run on 8 of its 10 points without a word.
            "dropped_rows": self.forecast.curve.dropped,
            "warnings": list(self.forecast.fit.warnings),
            "notes": list(self.forecast.notes),
        }


def _end_slice(n: int) -> slice:
    return slice(n - max(1, int(round(END_SHARE * n))), n)


def _score(pred: np.ndarray, y: np.ndarray, params: dict, warnings) -> LawScore:
    err = pred - y
    end = _end_slice(y.size)
    return LawScore(
        params=params,
        mae=float(np.mean(np.abs(err))),
        end_error=float(pred[end].mean() - y[end].mean()),
        last_error=float(err[-1]),
        max_abs_error=float(np.max(np.abs(err))),
        predictions=[float(p) for p in pred],
        warnings=list(warnings),
    )


def points_to_fit(r0: object = "first") -> int:
    """Evaluations with compute > 0 a backtest's fit needs before its cut: one more than the sigmoid's free
    parameters (3, and R0 when it is fitted: ``r0="free"``), to measure the noise, as the fit requires."""
    return (4 if r0 == "free" else 3) + 1


def _check_enough_before(curve: Curve, cut: float, need: int) -> None:
    """In a backtest the fit window is set by the cut: too few points before it is "cut later", a run too
    short for any cut is said so (the fit's own error advised --fit-from/--fit-until, which backtest does not
    take)."""
    pos = curve.x[curve.x > 0]
    if pos.size <= need:  # no cut can leave enough before it and one after (the fit's error named its own flags)
        raise InputError(f"run {curve.name!r} has {pos.size} evaluation(s) with compute > 0: too short to backtest, "
                         f"which needs at least {need} before the cut to fit and one after it to score "
                         f"({need + 1} in all); log more evaluations (train / study: a smaller eval.every)")
    if (pos <= cut).sum() < need:
        raise InputError(f"run {curve.name!r}: the cut {cut:g} leaves {int((pos <= cut).sum())} point(s) with compute > 0 "
                         f"to fit, and the fit needs at least {need}: cut later, at {pos[need - 1]:g} or after "
                         f"(evaluation {need} with compute > 0)")


def check_cut(cut: float) -> None:
    """``--cut``: a compute value after training began."""
    if not (math.isfinite(cut) and cut > 0):
        raise InputError(f"--cut must be a finite compute value > 0, got {cut:g}")


def backtest(
    curve: Curve,
    *,
    cut: float | None = None,
    cut_fraction: float | None = None,
    n_boot: int = 200,
    **forecast_kwargs,
) -> Backtest:
    """Fit on the points with compute <= cut, score the points after it.

    ``cut`` is absolute compute; ``cut_fraction`` a fraction of the curve's last compute.
    """
    check_curve(curve, "backtest")
    if (cut is None) == (cut_fraction is None):
        raise InputError("give exactly one of --cut (compute) or --cut-fraction (0..1) (from Python: backtest(curve, "
                         "cut=C) or backtest(curve, cut_fraction=F))")
    if cut_fraction is not None:
        if not 0.0 < cut_fraction < 1.0:
            raise InputError(f"--cut-fraction must be in (0, 1), got {cut_fraction}")
        if not curve.x.max() > 0:  # (its cut came out 0, and the reason given was a --cut never given)
            raise InputError(f"run {curve.name!r}: its {len(curve)} evaluation(s) are all at compute 0 (before "
                             "training): there is nothing to cut -- is --x the compute column?")
        cut = float(curve.x.max() * cut_fraction)
    assert cut is not None
    check_cut(cut)
    test = curve.x > cut
    if test.sum() < 1:
        raise InputError(f"no points after the cut {cut:g} (last compute {curve.x.max():g}); cut earlier")
    _check_enough_before(curve, cut, points_to_fit(forecast_kwargs.get("r0", "first")))
    fc = forecast(curve, fit_until=cut, n_boot=n_boot, **forecast_kwargs)
    xt, yt = curve.x[test], curve.y[test]
    b = fc.band_arrays(xt)
    default = _score(b["R"], yt, {}, fc.fit.warnings)
    sig = _score(np.asarray(fc.fit.law(xt)), yt, fc.fit.law.params(), fc.fit.warnings)
    plain = None
    fit_opts = {k: forecast_kwargs[k] for k in ("r0", "A_max", "y_floor") if k in forecast_kwargs}
    try:
        pf = fit_sigmoid(curve, fit_from=None, fit_until=cut, **fit_opts)
        plain = _score(np.asarray(pf.law(xt)), yt, pf.law.params(), pf.warnings)
    except InputError:
        pass
    pl = None
    if fc.power_law is not None:
        pl = _score(np.asarray(fc.power_law.law(xt)), yt, fc.power_law.law.params(), fc.power_law.warnings)
    end = _end_slice(yt.size)
    end_level = float(yt[end].mean())
    lo, hi = float(b["lo"][end].mean()), float(b["hi"][end].mean())
    inside = (yt >= b["obs_lo"]) & (yt <= b["obs_hi"])
    bands = BandScore(
        level=fc.level, end_lo=lo, end_hi=hi, end_covered=bool(lo <= end_level <= hi),
        end_half_width=(hi - lo) / 2, point_coverage=float(inside.mean()),
        point_half_width=float(np.median((b["obs_hi"] - b["obs_lo"]) / 2)), calibrated=bool(b["calibrated"].all()),
        wider_than_run=bool(hi - lo > 2 * np.ptp(curve.y)),
    )
    return Backtest(
        run=curve.name, cut=float(cut), n_fit=int(((curve.x <= cut) & (curve.x > 0)).sum()), n_test=int(test.sum()),
        test_x=[float(v) for v in xt], test_y=[float(v) for v in yt], forecast=fc, default=default, sigmoid=sig,
        plain_sigmoid=plain, power_law=pl, bands=bands, end_level=end_level,
        run_stability=check_stability(curve.x, curve.y, R0=fc.fit.R0 if fc.fit.r0_mode != "free" else None),
    )


@dataclass
class Summary:
    """Backtests of many runs in one table's worth of numbers. Only runs stable at the cut and
    over their whole length are scored; the others are counted (see :attr:`Backtest.scored`)."""

    n_runs: int
    n_unstable: int
    """Flagged unstable at the cut: no forecast was given."""
    n_unstable_later: int
    """Stable at the cut, unstable over the whole run (they fell after the cut)."""
    n_scored: int
    mae_ok: float
    """Share of scored runs with forecast MAE <= :data:`MAE_TARGET`."""
    end_ok: float
    """Share with |end-level error| <= :data:`END_TARGET`."""
    end_coverage: float
    """Share whose observed end level lies in the confidence band."""
    n_covered_wider_than_run: int
    """Of the runs counted in :attr:`end_coverage`, those whose band is more than twice as wide as the run's whole
    range of values (:attr:`BandScore.wider_than_run`): hits that say nothing."""
    median_end_half_width: float
    point_coverage: float
    """Mean over runs of the share of held-out evaluations inside the prediction band."""
    no_worse: float
    """Share where the forecast's MAE is at most the better of the plain sigmoid's and the
    power law's (+ ``tolerance``)."""
    tolerance: float
    no_worse_strict: float
    """The same with no margin at all."""
    no_worse_noise: float
    """The same within the held-out noise (:attr:`Backtest.noise_tolerance`)."""
    median_mae: float
    level: float

    def as_dict(self) -> dict:
        return asdict(self)


def summarize(results: list[Backtest], *, tolerance: float = 0.0) -> Summary:
    """Aggregate backtests (see :class:`Summary`)."""
    scored = [r for r in results if r.scored]
    n = len(scored)
    n_unstable = sum(r.unstable for r in results)

    def share(values) -> float:
        values = list(values)
        return float(np.mean(values)) if values else math.nan

    return Summary(
        n_runs=len(results), n_unstable=n_unstable, n_unstable_later=len(results) - n - n_unstable, n_scored=n,
        mae_ok=share(r.default.mae <= MAE_TARGET for r in scored),
        end_ok=share(abs(r.default.end_error) <= END_TARGET for r in scored),
        end_coverage=share(r.bands.end_covered for r in scored),
        n_covered_wider_than_run=sum(r.bands.end_covered and r.bands.wider_than_run for r in scored),
        median_end_half_width=float(np.median([r.bands.end_half_width for r in scored])) if n else math.nan,
        point_coverage=share(r.bands.point_coverage for r in scored),
        no_worse=share(r.default.mae <= r.better_reference_mae() + tolerance for r in scored),
        tolerance=tolerance,
        no_worse_strict=share(r.default.mae <= r.better_reference_mae() for r in scored),
        no_worse_noise=share(r.default.mae <= r.better_reference_mae() + r.noise_tolerance for r in scored),
        median_mae=float(np.median([r.default.mae for r in scored])) if n else math.nan,
        level=results[0].bands.level if results else 0.95,
    )
