"""The default forecast: an ensemble weighted by rolling-origin validation inside the window."""

import numpy as np
import pytest

from scalerl.curves import Curve, MEMBERS, backtest, fit_ensemble, forecast
from scalerl.curves.ensemble import origin_sizes
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
        w = {m["member"]: m["weight"] for m in bt.forecast.ensemble.describe()}
        assert w["sigmoid-last-4x"] + w["sigmoid-last-8x"] > w["sigmoid"]
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
