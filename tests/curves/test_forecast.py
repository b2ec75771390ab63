import math

import pytest

from scalerl.curves import Sigmoid, backtest, bootstrap, compare, fit_seeds, fit_sigmoid, forecast, read_curve
from scalerl.errors import InputError

from .conftest import DEEPSEEK, PAPER_LAW, QWEN, REAL_CSV, synthetic


def test_bootstrap_intervals_bracket_the_estimates(paper_curve):
    fit = fit_sigmoid(paper_curve)
    boot = bootstrap(fit, 200, seed=1)
    for name in ("A", "B", "C_mid", "R0"):
        lo, hi = boot.interval(name)
        assert lo <= getattr(fit, name) <= hi, name
        assert lo < hi
    assert boot.samples.shape[1] == 4
    pairs = bootstrap(fit, 200, kind="pairs", seed=1)
    assert pairs.interval("A")[0] < fit.A < pairs.interval("A")[1]
    with pytest.raises(InputError):
        bootstrap(fit, 200, kind="jackknife")


def test_predictions_have_intervals_that_widen_when_extrapolating():
    c = synthetic(n=30, c_max=3000, seed=2)
    fc = forecast(c, n_boot=200)
    near, far = fc.predict([3000, 60000])
    assert near.lo <= near.R <= near.hi and far.lo <= far.R <= far.hi
    assert (far.hi - far.lo) > (near.hi - near.lo)


def test_compute_to_reach_and_fraction(paper_curve):
    fc = forecast(paper_curve, n_boot=200)
    c, lo, hi = fc.compute_to_reach(0.5)
    assert lo <= c <= hi
    assert fc.mean([c])[0] == pytest.approx(0.5, abs=1e-4)  # the forecast's own curve reaches it there
    assert fc.compute_to_reach(0.99)[0] == math.inf
    c50, _, _ = fc.compute_to_fraction(0.5)
    assert c50 == pytest.approx(fc.fit.C_mid)
    assert fc.marginal_gain(1000) > fc.marginal_gain(50000) > 0


def test_verdict_words():
    fc = forecast(synthetic(n=40, c_max=8000, seed=3), n_boot=200)
    assert fc.verdict(500, 5000).word == "worth it"
    assert fc.verdict(20000, 24000).word == "not worth it"  # past the knee, within 2.5x of the data
    text = fc.verdict(500, 5000).text("GPU-hours")
    assert "Verdict: worth it" in text and "GPU-hours" in text
    with pytest.raises(InputError):
        fc.verdict(10, 5)


@pytest.mark.parametrize("run", [QWEN, DEEPSEEK])
def test_real_backtests_meet_the_targets(run):
    """Both shipped real runs: fit on the first half of compute, score the second half."""
    curve = read_curve(REAL_CSV, "cum_wall_hours", "val_score", run=run)
    bt = backtest(curve, cut_fraction=0.5, n_boot=50)
    assert bt.n_test > 10
    assert bt.default.mae <= 0.015 and bt.sigmoid.mae <= 0.015
    assert abs(bt.default.end_error) <= 0.02
    assert bt.bands.end_covered and bt.bands.point_coverage >= 0.9
    assert not bt.unstable and bt.scored
    assert bt.power_law is not None and bt.power_law.mae > 0


def test_backtest_needs_exactly_one_cut(paper_curve):
    with pytest.raises(InputError):
        backtest(paper_curve)
    with pytest.raises(InputError):
        backtest(paper_curve, cut=10, cut_fraction=0.5)
    with pytest.raises(InputError, match="no points after"):
        backtest(paper_curve, cut=1e9)


def test_seed_pooling_reports_the_spread():
    curves = [synthetic(seed=s) for s in range(3)]
    sf = fit_seeds(curves, n_boot=100)
    assert sf.pooled.n_points == sum(len(c) - 1 for c in curves)
    spread = sf.spread()
    assert spread["A"][0] <= spread["A"][1]
    lo, hi = sf.boot.interval("A")
    assert lo < sf.pooled.A < hi
    assert sf.pooled.A == pytest.approx(0.61, abs=0.01)


def test_compare_classifies_ceiling_efficiency_and_nothing():
    base = [synthetic(PAPER_LAW, seed=s, noise=0.005) for s in range(2)]
    ceiling = [synthetic(Sigmoid(A=0.68, B=1.92, C_mid=2542, R0=0.3), seed=10 + s, noise=0.005) for s in range(2)]
    faster = [synthetic(Sigmoid(A=0.61, B=1.92, C_mid=1200, R0=0.3), seed=20 + s, noise=0.005) for s in range(2)]
    same = [synthetic(PAPER_LAW, seed=30 + s, noise=0.005) for s in range(2)]
    res = compare({"base": base, "ceiling": ceiling, "faster": faster, "same": same}, n_boot=150)
    kinds = {c.label: (c.kind, c.better) for c in res.classifications}
    assert kinds["ceiling"] == ("ceiling", True)
    assert kinds["faster"] == ("efficiency", True)
    assert kinds["same"][0] == "no clear effect"
    paper = compare({"base": base, "faster": faster}, rule="paper", n_boot=0)
    (c,) = paper.classifications
    assert c.kind == "efficiency" and c.rule == "paper" and c.shared_A is not None


def test_compare_unknown_baseline():
    with pytest.raises(InputError, match="baseline"):
        compare({"a": [synthetic()], "b": [synthetic(seed=1)]}, baseline="c", n_boot=0)
