"""The default forecast: an ensemble of laws and windows, weighted from the fit window alone."""

import numpy as np
import pytest

from scalerl.curves import Curve, MEMBERS, backtest, default_calibration, fit_ensemble, forecast
from scalerl.curves.ensemble import origin_sizes
from scalerl.curves.laws import Level
from scalerl.errors import InputError

from .conftest import PAPER_LAW, jump_then_drift, synthetic


def test_jump_then_drift_is_forecast_where_the_plain_sigmoid_misses():
    """The issue's case: a steep opening jump, then a slow drift. Fit on the first half."""
    results = [backtest(jump_then_drift(seed=s), cut_fraction=0.5, n_boot=0) for s in range(6)]
    for bt in results:
        assert bt.default.mae <= 0.015, bt.default.mae
        assert bt.default.mae < bt.plain_sigmoid.mae
        # no opening plateau to drop: the plateau rule cannot help, the ensemble must
        assert bt.forecast.fit.fit_from is None
        assert set(bt.forecast.ensemble.laws) == set(default_calibration().members)
    assert np.mean([bt.plain_sigmoid.mae for bt in results]) > 0.015
    assert sum(bt.bands.end_covered for bt in results) >= 5


def test_the_held_out_part_never_moves_the_forecast():
    """Weights, members and bands come from the fit window alone."""
    c = jump_then_drift(seed=1)
    cut = 4.3
    a = forecast(c, fit_until=cut, n_boot=0)
    y2 = np.where(c.x > cut, 1.0 - c.y, c.y)  # anything at all after the cut
    b = forecast(Curve.from_arrays(c.x, y2), fit_until=cut, n_boot=0)
    at = [5.0, 8.6, 20.0]
    for p, q in zip(a.predict(at), b.predict(at)):
        assert (p.R, p.lo, p.hi, p.obs_lo, p.obs_hi) == (q.R, q.lo, q.hi, q.obs_lo, q.obs_hi)
    assert a.ensemble.weights == b.ensemble.weights


def test_clean_sigmoid_is_forecast_closely():
    """On data the paper's law describes exactly, fitted up to 1.6 x C_mid: the forecast at
    2x and 3x the fitted compute is close and the truth lies in the confidence band."""
    x = np.array([8000.0, 12000.0])
    for seed in range(4):
        c = synthetic(PAPER_LAW, n=60, c_max=8000, noise=0.005, seed=seed)
        fc = forecast(c, fit_until=4000, n_boot=0)
        assert abs(fc.mean([8000.0])[0] - PAPER_LAW(8000.0)) < 0.02
        b = fc.band_arrays(x)
        assert np.all((b["lo"] <= PAPER_LAW(x)) & (PAPER_LAW(x) <= b["hi"]))


def test_level_member_holds_the_recent_level():
    law = Level(0.42)
    assert law(10.0) == 0.42 and np.all(law(np.array([1.0, 1e6])) == 0.42)
    assert law.compute_for(0.4) == 0.0 and law.compute_for(0.5) == np.inf
    x = np.r_[0.0, np.arange(1.0, 21.0)]
    y = np.r_[0.1, np.full(15, 0.3), np.full(5, 0.5)]  # its last 20% (4 points) sit at 0.5
    ens = fit_ensemble(Curve.from_arrays(x, y), members=("level",))
    assert ens.laws["level"](100.0) == pytest.approx(0.5)


def test_subset_and_equal_weights_refit_nothing():
    c = synthetic(PAPER_LAW, n=40, noise=0.01, seed=4)
    ens = fit_ensemble(c, temperature=16.0)
    sub = ens.subset(("sigmoid", "power-law", "level", "no-such-member"), None)
    assert set(sub.laws) == {"sigmoid", "power-law", "level"}
    assert all(sub.laws[k] is ens.laws[k] for k in sub.laws)
    assert list(sub.weights.values()) == pytest.approx([1 / 3] * 3)
    x = np.array([9000.0, 20000.0])
    assert np.allclose(sub.mean(x), np.mean([ens.laws[k](x) for k in sub.laws], axis=0))
    # the validation error is the combined forecast's own: between its best and worst member's
    rmse = {k: v**0.5 for k, v in sub.val_mse.items()}
    assert min(rmse.values()) - 1e-12 <= sub.validation_rmse <= max(rmse.values()) + 1e-12
    with pytest.raises(InputError, match="could be fitted"):
        ens.subset(("no-such-member",), None)


def test_a_still_rising_curve_is_not_held_at_its_level():
    """The level member says the gain is over; where the window says otherwise (a clean sigmoid
    fitted before its knee), the calibrated weighting gives it no say."""
    c = synthetic(PAPER_LAW, n=60, c_max=8000, noise=0.005, seed=1)
    fc = forecast(c, fit_until=2500, n_boot=0)
    w = fc.ensemble.weights
    assert w["level"] < 0.05 and w["sigmoid"] > 0.3


def test_origins_and_weights():
    assert origin_sizes(500) == [250, 300, 350, 400]
    assert origin_sizes(7) == [5, 6]
    assert origin_sizes(5) == []
    c = synthetic(PAPER_LAW, n=40, noise=0.01, seed=2)
    ens = fit_ensemble(c)
    assert set(ens.laws) == set(MEMBERS) and len(ens.origins) == 4
    assert sum(ens.weights.values()) == pytest.approx(1.0)
    # a cold ensemble follows the best validated member, a hot one weighs all alike
    best = min(ens.val_mse, key=ens.val_mse.get)
    assert ens.reweighted(1e-3).weights[best] == pytest.approx(1.0)
    hot = ens.reweighted(1e9).weights
    assert max(hot.values()) - min(hot.values()) < 1e-6
    assert ens.validation_rmse is not None and ens.validation_rmse > 0.005


def test_a_short_window_weighs_members_equally_and_says_its_bands_are_uncalibrated():
    c = synthetic(PAPER_LAW, n=5, noise=0.01, seed=3)
    fc = forecast(c, n_boot=0)
    assert len(set(fc.ensemble.weights.values())) == 1
    assert any("rolling-origin" in n for n in fc.notes)
    assert not any(p.calibrated for p in fc.predict([4000, 8000]))


def test_unknown_member_and_bad_temperature():
    c = synthetic()
    with pytest.raises(InputError, match="unknown ensemble member"):
        fit_ensemble(c, members=("sigmoid", "cubic"))
    with pytest.raises(InputError, match="temperature"):
        fit_ensemble(c, temperature=0)
    assert len(set(fit_ensemble(c, temperature=None).weights.values())) == 1  # None: equal weights
