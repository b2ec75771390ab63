import math

import numpy as np
import pytest

from scalerl.curves import Curve, Sigmoid, backtest, bootstrap, compare, fit_seeds, fit_sigmoid, forecast, read_curve
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
    # past the knee, 2.5-3x beyond the data: the expected gain is tiny, but the calibrated
    # interval (real runs drift that far out) cannot rule out +0.01 -- it can rule out +0.05
    far = fc.verdict(20000, 24000)
    assert far.gain < 0.01 and far.word == "uncertain"
    assert fc.verdict(20000, 24000, min_gain=0.05).word == "not worth it"
    text = fc.verdict(500, 5000).text("GPU-hours")
    assert "Verdict: worth it" in text and "GPU-hours" in text
    with pytest.raises(InputError):
        fc.verdict(10, 5)


def test_the_questions_refuse_what_has_no_answer_instead_of_nan(paper_curve):
    """The README's API at NaN, 0 or a negative compute, and pass rates that are not one, answered silently:
    predict(nan) and predict(0) gave R = -inf with NaN bands, compute_to_reach(nan) "never" (inf),
    compute_to_reach below R0 the first compute evaluated, marginal_gain NaN, a NaN min_gain 'uncertain'."""
    fc = forecast(paper_curve, n_boot=0)
    for C, needle in ((math.nan, "got nan"), (0, "at 0, before training, the curve is at its R0"), (-5, "got -5")):
        with pytest.raises(InputError, match="compute to predict at must be a number > 0"):
            fc.predict([1000, C])
        with pytest.raises(InputError, match=needle):
            fc.predict(C)
    with pytest.raises(InputError, match="must be a number > 0"):
        fc.predict(None)
    for R in (math.nan, 1.5, -0.1, 60):
        with pytest.raises(InputError, match=r"the pass rate to reach must be a number in \[0, 1\]"):
            fc.compute_to_reach(R)
    with pytest.raises(InputError, match="must be one number, got \\[0.5, 0.6\\]"):
        fc.compute_to_reach([0.5, 0.6])
    assert fc.compute_to_reach(fc.fit.R0 - 0.05) == (0.0, 0.0, 0.0)  # already there before training
    assert fc.compute_to_reach(1.0)[0] == math.inf  # a pass rate above the ceiling: never, as before
    for C in (math.nan, 0, -5, math.inf):
        with pytest.raises(InputError, match="marginal gain must be a finite number > 0"):
            fc.marginal_gain(C)
    with pytest.raises(InputError, match="min_gain must be a finite gain"):
        fc.verdict(500, 5000, min_gain=math.nan)
    with pytest.raises(InputError, match=r"need 0 < from < to, both finite compute values, got from=5000 to=500"):
        fc.verdict(5000, 500)  # swapped


def test_forecast_and_backtest_of_arrays_say_to_build_a_curve():
    """forecast([...]) and backtest([...]) gave "AttributeError: 'list' object has no attribute 'x'"."""
    for call in (lambda: forecast([0, 1, 2]), lambda: backtest(np.arange(3.0), cut=1)):
        with pytest.raises(InputError, match=r"takes a Curve, got (list|ndarray); build one with Curve.from_arrays"):
            call()


def test_gain_interval_of_a_pass_rate_stays_within_what_a_pass_rate_can_move():
    """Extrapolated absurdly far, the interval read -8.6 to +8.7 for a pass rate in [0, 1]."""
    fc = forecast(synthetic(n=40, c_max=8000, seed=3), n_boot=0)
    v = fc.verdict(8000, 1e300)
    p_from = fc.predict([8000])[0]
    assert -p_from.obs_hi - 1e-12 <= v.gain_lo <= v.gain <= v.gain_hi <= 1 - p_from.obs_lo + 1e-12
    assert fc.verdict(500, 5000).gain_hi - fc.verdict(500, 5000).gain_lo < 0.2  # near the data: not clipped
    unbounded = forecast(synthetic(n=40, c_max=8000, seed=3), n_boot=0, A_max=math.inf)
    assert unbounded.verdict(8000, 1e300).gain_hi > 1  # an unbounded metric is not clipped


def test_gain_interval_holds_the_true_gain_and_shrinks_with_the_span():
    """On the paper's law the gain's interval contains the true gain, and two nearly equal
    budgets have a nearly zero gain with a nearly zero interval."""
    for seed in range(3):
        fc = forecast(synthetic(n=60, c_max=8000, noise=0.005, seed=seed), n_boot=0)
        for a, b in ((8000, 12000), (8000, 16000), (12000, 20000)):
            v = fc.verdict(a, b)
            assert v.gain_lo <= PAPER_LAW(b) - PAPER_LAW(a) <= v.gain_hi
        wide, narrow = fc.verdict(8000, 16000), fc.verdict(8000, 8080)
        assert narrow.gain_hi - narrow.gain_lo < 0.2 * (wide.gain_hi - wide.gain_lo)


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


def test_a_run_evaluated_only_at_compute_0_is_said_to_have_nothing_to_cut():
    """Its cut came out 0, and the reason given was "--cut must be ... > 0, got 0", a --cut never given."""
    curve = Curve.from_arrays([0.0, 0.0], [0.1, 0.12], name="c")
    with pytest.raises(InputError, match="run 'c': its 2 evaluation\\(s\\) are all at compute 0"):
        backtest(curve, cut_fraction=0.5)


def test_a_seed_numpy_refuses_is_an_input_error(paper_curve):
    """--seed -1 ended in numpy's traceback ("expected non-negative integer")."""
    with pytest.raises(InputError, match="seed \\(--seed\\) must be a whole number >= 0, got -1"):
        forecast(paper_curve, n_boot=0, seed=-1)
    with pytest.raises(InputError, match="--seed"):
        fit_seeds([paper_curve, synthetic(seed=1)], n_boot=20, seed=-1)


def test_a_fit_window_that_holds_nothing_says_why(paper_curve):
    """--fit-until nan selected no point, and the error advised widening the window."""
    with pytest.raises(InputError, match="--fit-until must be a compute value > 0 .*, got nan"):
        fit_sigmoid(paper_curve, fit_until=math.nan)
    with pytest.raises(InputError, match="--fit-from 3000 is above --fit-until 2000"):
        fit_sigmoid(paper_curve, fit_from=3000.0, fit_until=2000.0)


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


def test_a_ceiling_verdict_names_the_level_of_its_interval():
    """`compare --level 0.9` printed "95% interval" beside the 90% interval it computed."""
    base = [synthetic(PAPER_LAW, seed=s, noise=0.005) for s in range(2)]
    ceiling = [synthetic(Sigmoid(A=0.68, B=1.92, C_mid=2542, R0=0.3), seed=10 + s, noise=0.005) for s in range(2)]
    for level, words in ((0.9, "90% interval"), (0.95, "95% interval")):
        (c,) = compare({"base": base, "ceiling": ceiling}, n_boot=150, level=level).classifications
        assert c.kind == "ceiling" and words in c.explanation, c.explanation


def test_compare_unknown_baseline():
    with pytest.raises(InputError, match="baseline"):
        compare({"a": [synthetic()], "b": [synthetic(seed=1)]}, baseline="c", n_boot=0)


def test_compare_refuses_what_it_cannot_answer():
    """From Python: a seed given twice was pooled with itself (narrower intervals, silently); a NaN margin or
    min_effect read every raised ceiling as 'same ceiling'; a NaN forecast_at forecast NaN; a list of curves
    or a bare curve per label gave an AttributeError or a TypeError."""
    a, b = synthetic(seed=0), synthetic(PAPER_LAW, seed=1)
    with pytest.raises(InputError, match="run 'a': seeds 1 and 3 are the same curve, point for point"):
        compare({"a": [a, synthetic(seed=2), a], "b": [b]}, n_boot=0)
    for kw, needle in (({"rule": "paper", "margin": math.nan}, "margin must be a finite number >= 0"),
                       ({"min_effect": math.nan}, "min_effect must be a finite number >= 0"),
                       ({"forecast_at": math.nan}, "forecast_at must be a finite compute value > 0")):
        with pytest.raises(InputError, match=needle):
            compare({"a": [a], "b": [b]}, n_boot=0, **kw)
    for runs in ([a, b], {"a": a, "b": b}):
        with pytest.raises(InputError, match=r"compare takes \{label: \[curve, ...\]\}"):
            compare(runs, n_boot=0)


def test_plot_compare_draws_the_calibrated_band(tmp_path, monkeypatch):
    """Each run's shaded band is its forecast's calibrated confidence band, not the bootstrap of
    the sigmoid's mean curve."""
    import scalerl.curves.plot as plot

    res = compare({"base": [synthetic(seed=1)], "run": [synthetic(Sigmoid(A=0.66, B=1.92, C_mid=2542.0, R0=0.3),
                                                                  seed=2)]}, n_boot=100)
    seen = {}

    def capture(fig, ax, path, *, title, legend_loc="lower right"):
        seen["ax"] = ax
        return path

    monkeypatch.setattr(plot, "finish", capture)
    plot.plot_compare(res, tmp_path / "c.png")
    ax = seen["ax"]
    assert any("calibrated" in t.get_text() for t in ax.legend().get_texts())
    bands = [p for p in ax.collections if p.__class__.__name__ in ("PolyCollection", "FillBetweenPolyCollection")]
    assert len(bands) == 2
    for rf, poly in zip(res.runs, bands):
        v = poly.get_paths()[0].vertices
        grid = np.unique(v[:, 0])
        b = rf.forecast.band_arrays(grid)
        top = np.array([v[v[:, 0] == g, 1].max() for g in grid])
        assert np.allclose(top, b["hi"], atol=1e-9)


def test_a_forecast_above_the_sigmoid_s_ceiling_is_explained(capsys):
    """A real run (TinyZero's empty-CoT Llama, fitted on its first half) whose forecast at 10x stands above
    the sigmoid's A and its interval: printed with no word, it read as a contradiction. The note names A,
    and the members that stand higher there with their values and weights; fit --json carries it too."""
    import json

    from scalerl.cli import main

    corpus = "examples/data/rl_curve_corpus.csv"
    args = ["fit", corpus, "--x", "x", "--y", "val_score", "--run", "cogbeh_llama_empty_cot", "--fit-until", "125"]
    assert main(args) == 0
    out = capsys.readouterr().out
    note = next(line for line in out.splitlines() if "above the sigmoid's ceiling" in line)
    assert note.startswith("note: the forecast at 1200 (") and "A is the sigmoid's alone" in note
    assert "sigmoid-last-8x 0." in note and "(weight 0." in note
    assert main(args + ["--json"]) == 0
    assert any("above the sigmoid's ceiling" in n for n in json.loads(capsys.readouterr().out)["notes"])
    # The paper's law fitted past its midpoint: the forecast stays under A's interval, nothing to explain.
    fc = forecast(synthetic(), fit_until=4000, n_boot=100)
    assert fc.above_ceiling_note(fc.predict([4000, 8000, 40000])) == ""
