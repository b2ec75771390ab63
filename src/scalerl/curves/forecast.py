"""What users ask of a fitted curve: predictions with intervals, compute to reach a target,
the marginal gain of more compute, a verdict on a bigger budget, and backtests.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np

from scalerl.curves.data import Curve
from scalerl.curves.power_law_fit import PowerLawFit, fit_power_law
from scalerl.curves.sigmoid_fit import SigmoidFit, fit_sigmoid
from scalerl.curves.uncertainty import Bootstrap, bootstrap
from scalerl.errors import InputError


@dataclass
class Prediction:
    C: float
    R: float
    lo: float
    hi: float

    def as_dict(self) -> dict[str, float]:
        return asdict(self)


@dataclass
class Forecast:
    """A sigmoid fit with its bootstrap: everything needed to answer questions about a run."""

    fit: SigmoidFit
    boot: Bootstrap | None
    power_law: PowerLawFit | None = None
    curve: Curve | None = None
    notes: list[str] = field(default_factory=list)

    # -- parameters -------------------------------------------------------------------
    def intervals(self) -> dict[str, list[float]]:
        if self.boot is None:
            return {}
        return {k: v for k, v in self.boot.intervals().items() if not (k == "R0" and self.fit.r0_mode == "given")}

    # -- questions --------------------------------------------------------------------
    def predict(self, C) -> list[Prediction]:
        """Expected pass rate at each compute value, with the bootstrap band of the mean curve."""
        C = np.atleast_1d(np.asarray(C, dtype=float))
        if (C < 0).any():
            raise InputError("compute to predict at must be >= 0")
        R = np.atleast_1d(self.fit.law(C))
        if self.boot is None:
            lo = hi = R
        else:
            lo, hi = self.boot.predict_interval(C)
        return [Prediction(float(c), float(r), float(l), float(h)) for c, r, l, h in zip(C, R, lo, hi)]

    def compute_to_reach(self, R: float) -> tuple[float, float, float]:
        """Compute at which the pass rate reaches ``R``: (estimate, lo, hi); inf if beyond A."""
        est = self.fit.law.compute_for(R)
        if self.boot is None:
            return est, est, est
        lo, hi = self.boot.quantity_interval(lambda law: law.compute_for(R))
        return est, lo, hi

    def compute_to_fraction(self, f: float) -> tuple[float, float, float]:
        """Compute to reach a fraction ``f`` of the gain A - R0: (estimate, lo, hi)."""
        est = self.fit.law.compute_for_fraction(f)
        if self.boot is None:
            return est, est, est
        lo, hi = self.boot.quantity_interval(lambda law: law.compute_for_fraction(f))
        return est, lo, hi

    def marginal_gain(self, C: float) -> float:
        """dR/dC at C: the pass rate one more unit of compute buys there."""
        return float(self.fit.law.slope(C))

    def verdict(self, budget_from: float, budget_to: float, *, min_gain: float = 0.01) -> "Verdict":
        """Is it worth going from ``budget_from`` to ``budget_to``? (See :class:`Verdict`.)"""
        if not 0 < budget_from < budget_to:
            raise InputError(f"need 0 < from < to, got from={budget_from:g} to={budget_to:g}")
        p_from, p_to = self.predict([budget_from, budget_to])
        gain = p_to.R - p_from.R
        if self.boot is not None:
            preds = self.boot.samples
            from scalerl.curves.uncertainty import _evaluate_many

            both = _evaluate_many(preds, np.array([budget_from, budget_to]))
            gains = both[:, 1] - both[:, 0]
            a = (1 - self.boot.level) / 2
            lo, hi = (float(v) for v in np.percentile(gains, [100 * a, 100 * (1 - a)]))
        else:
            lo = hi = gain
        headroom = self.fit.A - p_from.R
        share = gain / headroom if headroom > 0 else 0.0
        if lo >= min_gain:
            word = "worth it"
        elif hi < min_gain:
            word = "not worth it"
        else:
            word = "uncertain"
        return Verdict(budget_from, budget_to, p_from.R, p_to.R, gain, lo, hi, share, word, min_gain)


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
    below), or 'uncertain'."""
    min_gain: float

    def text(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        x = self.budget_to / self.budget_from
        return (
            f"Going from {self.budget_from:.4g}{u} to {self.budget_to:.4g}{u} ({x:.3g}x the compute) is expected to "
            f"move the pass rate from {self.R_from:.3f} to {self.R_to:.3f}: {self.gain:+.3f} "
            f"(95% interval {self.gain_lo:+.3f} to {self.gain_hi:+.3f}), {100 * self.headroom_share:.0f}% of the "
            f"headroom left below the ceiling. Verdict: {self.word} (threshold {self.min_gain:+.3f})."
        )


def forecast(
    curve: Curve,
    *,
    method: str = "fast",
    r0="first",
    fit_from="auto",
    fit_until: float | None = None,
    n_boot: int = 1000,
    level: float = 0.95,
    boot_kind: str = "residual",
    seed: int = 0,
    power_law: bool = True,
    A_max: float = 1.0,
    y_floor: float = 0.0,
    paper_grid=None,
) -> Forecast:
    """Fit the sigmoid (and the power law beside it) and bootstrap the sigmoid."""
    fit = fit_sigmoid(
        curve, method=method, r0=r0, fit_from=fit_from, fit_until=fit_until, A_max=A_max, y_floor=y_floor,
        paper_grid=paper_grid,
    )
    boot = bootstrap(fit, n_boot, level=level, kind=boot_kind, seed=seed, A_max=A_max, y_floor=y_floor) if n_boot else None
    pl = None
    if power_law:
        try:
            pl = fit_power_law(curve, fit_from=fit.fit_from, fit_until=fit_until, A_max=A_max)
        except InputError as exc:  # the sigmoid stands on its own; say why the comparison is missing
            fit.warnings.append(f"power law not fitted: {exc}")
    out = Forecast(fit=fit, boot=boot, power_law=pl, curve=curve)
    if curve.dropped:
        out.notes.append(f"{curve.dropped} row(s) with missing, NaN or infinite values were dropped")
    out.notes.extend(curve.notes)
    if fit.early_cut is not None and fit.early_cut.dropped:
        out.notes.append(fit.early_cut.reason)
    if boot is not None:
        out.notes.extend(boot.notes)
    return out


# --------------------------------------------------------------------------- backtest


@dataclass
class LawScore:
    params: dict[str, float]
    mae: float
    last_error: float
    """Predicted minus observed at the last held-out point (signed)."""
    max_abs_error: float
    predictions: list[float]
    warnings: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass
class Backtest:
    cut: float
    n_fit: int
    n_test: int
    test_x: list[float]
    test_y: list[float]
    sigmoid: LawScore
    power_law: LawScore | None
    forecast: Forecast

    def as_dict(self) -> dict:
        return {
            "cut": self.cut,
            "n_fit": self.n_fit,
            "n_test": self.n_test,
            "fit_from": self.forecast.fit.fit_from,
            "sigmoid": self.sigmoid.as_dict(),
            "power_law": self.power_law.as_dict() if self.power_law else None,
            "test": [{"C": c, "R": r} for c, r in zip(self.test_x, self.test_y)],
        }


def _score(law, x: np.ndarray, y: np.ndarray, params: dict, warnings) -> LawScore:
    pred = np.asarray(law(x), dtype=float)
    err = pred - y
    return LawScore(
        params=params,
        mae=float(np.mean(np.abs(err))),
        last_error=float(err[-1]),
        max_abs_error=float(np.max(np.abs(err))),
        predictions=[float(p) for p in pred],
        warnings=list(warnings),
    )


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
    Both the sigmoid and the power law are scored on the same held-out points.
    """
    if (cut is None) == (cut_fraction is None):
        raise InputError("give exactly one of --cut (compute) or --cut-fraction (0..1)")
    if cut_fraction is not None:
        if not 0.0 < cut_fraction < 1.0:
            raise InputError(f"--cut-fraction must be in (0, 1), got {cut_fraction}")
        cut = float(curve.x.max() * cut_fraction)
    assert cut is not None
    test = curve.x > cut
    if test.sum() < 1:
        raise InputError(f"no points after the cut {cut:g} (last compute {curve.x.max():g}); cut earlier")
    fc = forecast(curve, fit_until=cut, n_boot=n_boot, **forecast_kwargs)
    xt, yt = curve.x[test], curve.y[test]
    sig = _score(fc.fit.law, xt, yt, fc.fit.law.params(), fc.fit.warnings)
    pl = _score(fc.power_law.law, xt, yt, fc.power_law.law.params(), fc.power_law.warnings) if fc.power_law else None
    return Backtest(
        cut=float(cut),
        n_fit=fc.fit.n_points,
        n_test=int(test.sum()),
        test_x=[float(v) for v in xt],
        test_y=[float(v) for v in yt],
        sigmoid=sig,
        power_law=pl,
        forecast=fc,
    )


def fmt_compute(c: float) -> str:
    if math.isinf(c):
        return "never"
    return f"{c:.4g}"
