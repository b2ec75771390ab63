import numpy as np
import pytest

from scalerl.curves import Curve, PaperGrid, Sigmoid, fit_power_law, fit_sigmoid, select_fit_from
from scalerl.errors import InputError

from .conftest import synthetic


def test_fast_recovers_the_paper_law(paper_curve):
    fit = fit_sigmoid(paper_curve)
    assert fit.method == "fast" and fit.r0_mode == "first"
    assert fit.R0 == pytest.approx(0.30)
    assert fit.A == pytest.approx(0.61, abs=0.015)
    assert fit.B == pytest.approx(1.92, rel=0.25)
    assert fit.C_mid == pytest.approx(2542, rel=0.15)
    assert fit.n_points == len(paper_curve) - 1  # the zero-compute point is R0, not fitted


def test_fast_matches_or_beats_the_paper_grid_sse(paper_curve):
    fast = fit_sigmoid(paper_curve, fit_from=None)
    paper = fit_sigmoid(paper_curve, method="paper", fit_from=None)
    assert paper.A in np.round(PaperGrid().A_values(), 6) or min(abs(paper.A - PaperGrid().A_values())) < 1e-9
    assert fast.sse <= paper.sse * (1 + 1e-9)


def test_fast_is_not_bounded_to_the_paper_grid():
    law = Sigmoid(A=0.92, B=1.5, C_mid=500.0, R0=0.2)
    c = synthetic(law, c_max=5000, seed=3)
    fast = fit_sigmoid(c)
    assert fast.A == pytest.approx(0.92, abs=0.02)
    paper = fit_sigmoid(c, method="paper", fit_from=None)
    assert paper.A == pytest.approx(0.80)  # stuck on the grid's edge ...
    assert any("edge of the paper's grid" in w for w in paper.warnings)  # ... and says so
    assert fast.sse < paper.sse


def test_r0_modes():
    c = synthetic(seed=1)
    assert fit_sigmoid(c, r0=0.25).R0 == 0.25
    free = fit_sigmoid(c, r0="free")
    assert free.r0_mode == "free"
    assert 0.0 <= free.R0 < free.A
    assert free.R0 == pytest.approx(0.30, abs=0.05)
    with pytest.raises(InputError):
        fit_sigmoid(c, r0="sometimes")


def test_r0_first_without_a_zero_compute_point_is_the_first_evaluation():
    c = synthetic(zero=False, seed=2)
    assert fit_sigmoid(c).R0 == pytest.approx(c.y[0])


def test_fit_window_limits_the_points():
    c = synthetic(n=40, c_max=8000, seed=4)
    fit = fit_sigmoid(c, fit_from=1000, fit_until=4000, r0="first")
    assert fit.x.min() >= 1000 and fit.x.max() <= 4000
    assert fit.n_points == int(((c.x >= 1000) & (c.x <= 4000)).sum())


def test_too_few_points_flat_and_falling_metrics_are_refused():
    with pytest.raises(InputError, match="parameters"):
        fit_sigmoid(Curve.from_arrays([0, 1, 2], [0.1, 0.2, 0.3]))
    # As many points as free parameters (A, B, C_mid): the curve would interpolate them and its
    # bootstrap intervals come out zero-wide -- refused; one more point is enough to fit.
    with pytest.raises(InputError, match="needs at least 4") as refused:
        fit_sigmoid(Curve.from_arrays([0, 1, 2, 3], [0.1, 0.2, 0.3, 0.32]))
    # The same error reaches fit, the run report and the study: its advice names each one's remedy.
    assert "fit: --fit-from/--fit-until" in str(refused.value) and "eval.every" in str(refused.value)
    assert fit_sigmoid(Curve.from_arrays([0, 1, 2, 3, 4], [0.1, 0.2, 0.3, 0.32, 0.33])).n_points == 4  # x > 0
    with pytest.raises(InputError, match="does not rise"):
        fit_sigmoid(Curve.from_arrays([0, 1, 2, 3, 4], [0.3] * 5))
    with pytest.raises(InputError, match="does not rise"):
        fit_sigmoid(Curve.from_arrays([1, 2, 3, 4, 5, 6], [0.6, 0.5, 0.45, 0.4, 0.35, 0.3]), r0="free")
    with pytest.raises(InputError, match="unknown fit method"):
        fit_sigmoid(synthetic(), method="magic")


def test_a_run_that_fell_below_its_start_and_rises_again_is_refused_in_words_that_match_its_curve():
    # The evaluations climb 0.30 -> 0.42 but stay below the first, 0.50: the refusal used to say "does
    # not rise (change -0.123: 0.3 at first, 0.42 at the end)", which contradicts its own numbers.
    curve = Curve.from_arrays([0, 10, 20, 30, 40, 50, 60], [0.5, 0.3, 0.35, 0.38, 0.4, 0.41, 0.42])
    with pytest.raises(InputError, match="does not rise above where the run started") as refused:
        fit_sigmoid(curve)
    message = str(refused.value)
    assert "R0 = 0.5" in message and "average 0.377" in message and "(0.3 at first, 0.42 at the end)" in message
    assert "change -" not in message and "--r0 the level it rises from (here 0.3, the lowest evaluation in the window" in message
    # Named with the command that takes it: the run report and the study, which show this error, have no --r0.
    assert "scalerl fit FILE --r0 VALUE" in message
    # Following the advice fits the recovery.
    assert fit_sigmoid(curve, r0=0.3).A == pytest.approx(0.42, abs=0.02)
    # A run that only falls keeps the old refusal.
    with pytest.raises(InputError, match="does not rise with compute"):
        fit_sigmoid(Curve.from_arrays([0, 1, 2, 3, 4, 5], [0.5, 0.45, 0.4, 0.38, 0.35, 0.3]))


def test_a_saturated_tail_is_fittable_when_r0_is_known():
    # Only the flat end of a run in the window: fine, its points sit above R0.
    c = synthetic(seed=5)
    fit = fit_sigmoid(c, fit_from=6000)
    assert fit.A == pytest.approx(0.61, abs=0.05)
    assert fit.A >= c.window(6000).y.mean() - 0.01


def test_power_law_overshoots_where_the_sigmoid_does_not():
    # The paper's point: fitted early, the power law's ceiling runs away.
    c = synthetic(n=60, c_max=20000, seed=6)
    early = 3000
    pl = fit_power_law(c, fit_until=early)
    sig = fit_sigmoid(c, fit_until=early)
    assert pl.law.A > sig.A
    assert abs(sig.A - 0.61) < abs(pl.law.A - 0.61)


def test_power_law_fit_does_not_depend_on_the_unit_of_compute():
    """In FLOPs (x 1e22) and beyond, D's bounds and x^-B's underflow cut the fit short: the power-law
    column of backtest changed with the unit (0.49 at x 1e300 where steps gave 0.61)."""
    c = synthetic(n=40, c_max=8000, seed=2)
    base = fit_power_law(c).law
    for scale in (1e-30, 1e22, 1e300):
        law = fit_power_law(Curve.from_arrays(c.x * scale, c.y)).law
        assert (law.A, law.B, law.D) == pytest.approx((base.A, base.B, base.D), rel=1e-4)
        assert law(c.x[-1] * scale) == pytest.approx(base(c.x[-1]), abs=1e-6)


def test_select_fit_from_drops_an_opening_plateau():
    # A run that shows nothing for a while, jumps, then drifts up slowly.
    rng = np.random.default_rng(0)
    law = Sigmoid(A=0.55, B=0.9, C_mid=0.25, R0=0.0)
    x = np.r_[0.0, np.linspace(0.2, 8.0, 40)]
    y = law(x) + rng.normal(0, 0.006, x.size)
    y[1:4] = [0.0, 0.001, 0.003]  # the plateau: format not learned yet
    c = Curve.from_arrays(x, np.clip(y, 0, 1))
    cut = select_fit_from(c, fit_until=4.0)
    assert cut.dropped == 3 and cut.fit_from == pytest.approx(x[4])
    assert "plateau" in cut.reason
    fit = fit_sigmoid(c, fit_until=4.0)
    assert fit.fit_from == pytest.approx(x[4])
    assert fit.R0 == c.y[0]  # R0 is still the evaluation before training


def test_select_fit_from_keeps_a_clean_sigmoid():
    for seed in range(5):
        c = synthetic(seed=seed)
        assert select_fit_from(c).dropped == 0


def test_diagnostics_warn_when_the_ceiling_is_unseen():
    law = Sigmoid(A=0.8, B=1.0, C_mid=5000.0, R0=0.2)
    c = synthetic(law, c_max=1500, n=25, noise=0.003, seed=7)
    fit = fit_sigmoid(c)
    assert any("C_mid" in w and "beyond" in w for w in fit.warnings)


def test_a_run_that_peaked_and_fell_is_told_by_its_start_peak_and_end_not_only_called_a_loss():
    """A real collapse (SofT-GRPO-like: rises, then falls below where it started) fails the rising check;
    the error gives where it started, peaked and ended, and the way to fit the part before the peak --
    it said only "is the y column a pass rate (not a loss)?"."""
    x = np.arange(1.0, 10.0) * 20
    y = np.array([0.78, 0.80, 0.79, 0.77, 0.72, 0.66, 0.62, 0.60, 0.58])
    with pytest.raises(InputError, match=r"0\.8 at its best \(compute 40\), 0\.58 at the end.*--fit-until"):
        fit_sigmoid(Curve.from_arrays(x, y), r0="free")
