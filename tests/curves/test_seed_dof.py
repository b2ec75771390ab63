"""The critical value of a comparison's intervals when a run has a few seeds (scalerl.curves.seed_dof)."""

import json
import math

import numpy as np
import pytest
from scipy.stats import norm, t

from scalerl.curves import Curve, fit_seeds
from scalerl.curves.seed_dof import critical_value, welch_dof


def test_the_critical_value_grows_as_the_seeds_shrink():
    z = [critical_value(0.975, welch_dof([(0.5, k), (0.5, k)])) for k in (2, 3, 5, 10)]
    assert z == sorted(z, reverse=True) and z[-1] > norm.ppf(0.975)
    assert z[0] == pytest.approx(t.ppf(0.975, 2))  # 2 seeds a run, equal spreads: k1 + k2 - 2 = 2 df


def test_welch_dof_lies_between_the_fewer_seeds_and_the_pooled_count():
    assert welch_dof([(0.5, 3), (0.5, 3)]) == pytest.approx(4.0)  # equal spreads: k1 + k2 - 2
    assert welch_dof([(1.0, 3), (1e-12, 5)]) == pytest.approx(2.0)  # one run's spread is all of it: its k - 1
    assert 2.0 < welch_dof([(1.0, 3), (0.5, 5)]) < 6.0


def test_a_run_of_one_seed_adds_a_known_variance():
    # One seed: its spread comes from all its evaluations, no term of its own; it dilutes the other's.
    assert welch_dof([(1.0, 1), (1.0, 3)]) == pytest.approx(8.0)  # (1 + 1)^2 / (1 / 2)
    assert welch_dof([(1.0, 1), (1.0, 3)]) > welch_dof([(0.0, 1), (1.0, 3)]) == pytest.approx(2.0)


def test_one_seed_a_run_keeps_the_normal_critical_value_exactly():
    assert welch_dof([(1.0, 1), (2.0, 1)]) == math.inf
    assert critical_value(0.975, math.inf) == norm.ppf(0.975)
    assert critical_value(0.9875, math.inf) == norm.ppf(0.9875)


def test_seed_shares_split_the_spread_of_a_difference_between_the_runs_seeds():
    import numpy as np

    from scalerl.curves.seed_dof import seed_shares

    rng = np.random.default_rng(0)
    n = 4000
    run = rng.multinomial(3, [1 / 3] * 3, size=n)  # 3 seeds and 4, resampled with replacement as RunResampler draws
    base = rng.multinomial(4, [1 / 4] * 4, size=n)
    seeds_run, seeds_base = run @ np.array([0.3, -0.1, -0.2]) / 3, base @ np.array([0.1, 0.0, -0.05, -0.05]) / 4
    values = seeds_run - seeds_base + rng.normal(0, 0.05, n)  # and the residuals drawn within each seed
    v_run, v_base = seed_shares(values, [run, base])
    assert v_run == pytest.approx(seeds_run.var(), rel=0.05)
    assert v_base == pytest.approx(seeds_base.var(), rel=0.05)
    assert seed_shares(values, [run, None])[1] == 0.0  # a run of one seed has no share
    assert seed_shares(values, [np.ones((n, 1)), None]) == [0.0, 0.0]


def test_few_seeds_stretch_is_one_for_one_seed_and_t_over_z_for_seeds_alone():
    from scalerl.curves.seed_dof import few_seeds_stretch

    rng = np.random.default_rng(0)
    values = rng.normal(size=400)
    assert few_seeds_stretch(values, [None], 0.95) == 1.0
    assert few_seeds_stretch(values, [np.ones((400, 1), dtype=int)], 0.95) == 1.0
    # Three seeds, every replicate's value the mean of the seeds it drew: the spread is all the seeds' share,
    # estimated from 2 df (the resampler, not the stretch, makes up for drawing k of k with replacement).
    counts = rng.multinomial(3, [1 / 3] * 3, size=400)
    theta = np.array([0.1, -0.3, 0.4])
    values = counts @ theta / 3
    expected = t.ppf(0.975, 2) / norm.ppf(0.975)
    assert few_seeds_stretch(values, [counts], 0.95) == pytest.approx(expected, rel=1e-6)
    # Residual noise beside the seeds: more degrees of freedom, a smaller stretch, never below 1.
    noisy = values + rng.normal(0, 0.5, 400)
    assert 1.0 < few_seeds_stretch(noisy, [counts], 0.95) < expected


def test_a_several_seed_fits_own_intervals_are_widened_and_A_stays_within_its_bound():
    x = np.linspace(0, 200, 21).round() * 1e10
    curves = []
    for s, (A, C) in enumerate([(0.97, 3e11), (0.99, 5e11)]):  # A near its bound of 1
        y = 0.3 + (A - 0.3) / (1 + (C / np.where(x > 0, x, 1.0)) ** 1.5) + np.random.default_rng(s).normal(0, 0.01, 21)
        y[0] = 0.3
        curves.append(Curve.from_arrays(x, y, name=f"v/seed{s}"))
    boot = fit_seeds(curves, n_boot=100).boot
    for p in ("A", "B", "C_mid"):
        lo, hi = boot.interval(p)
        p_lo, p_hi = np.percentile(boot.samples[:, ("A", "B", "C_mid").index(p)], [2.5, 97.5])
        assert lo <= p_lo and p_hi <= hi and (lo, hi) != (p_lo, p_hi)
    assert boot.interval("A")[1] <= 1.0


# --- review ea: intervals widened for few seeds stay within what every fit keeps, one per quantity ---

X = np.linspace(0, 200, 21).round() * 1e10  # 21 evaluations, the first at compute 0 (R0), up to 4x C_mid


def _sigmoid(x, A, B, C_mid, R0=0.3):
    with np.errstate(divide="ignore", over="ignore"):
        return np.where(x > 0, R0 + (A - R0) / (1 + (C_mid / np.where(x > 0, x, 1.0)) ** B), R0)


def _seed(label, i, A=0.7, B=1.5, C_mid=5e11, R0=0.3, noise=0.005):
    y = _sigmoid(X, A, B, C_mid, R0) + np.random.default_rng(i).normal(0, noise, X.size)
    y[0] = R0
    return Curve.from_arrays(X, np.clip(y, 0, 1), name=f"{label}/seed{i}", x_name="flops", y_name="val/pass_rate")


def _csv(path, curve):
    path.write_text("flops,pass_rate\n" + "".join(f"{a:.6g},{b:.6f}\n" for a, b in zip(curve.x, curve.y)))
    return str(path)


def test_compare_fits_table_A_interval_of_two_seeds_stays_above_R0(tmp_path, capsys):
    from scalerl.cli import main

    paths = [_csv(tmp_path / "a0.csv", _seed("a", 0, A=0.6)), _csv(tmp_path / "a1.csv", _seed("a", 1, A=0.8)),
             _csv(tmp_path / "b0.csv", _seed("b", 2)), _csv(tmp_path / "b1.csv", _seed("b", 3))]
    assert main(["compare", *paths, "--labels", "a", "a", "b", "b", "--x", "flops", "--y", "pass_rate",
                 "--bootstrap", "100", "--json"]) == 0
    run = next(r for r in json.loads(capsys.readouterr().out)["runs"] if r["label"] == "a")
    lo, hi = run["intervals"]["A"]
    # Every fit and every bootstrap replicate has R0 < A <= 1 (replicates with A <= R0 are dropped as failed).
    assert run["R0"] <= lo <= run["A"] <= hi <= 1.0, (run["R0"], run["A"], (lo, hi))


@pytest.mark.parametrize("r0", ["first", "free"])
def test_a_two_seed_R0_interval_stays_a_pass_rate(r0):
    curves = [_seed("v", 0, A=0.6, R0=0.02), _seed("v", 1, A=0.6, R0=0.10)]
    sf = fit_seeds(curves, n_boot=200, r0=r0)
    lo, hi = sf.boot.intervals()["R0"]
    assert 0.0 <= lo <= sf.pooled.R0 <= hi <= 1.0, (sf.pooled.R0, (lo, hi))


def test_a_two_seed_B_interval_stays_within_the_bounds_every_fit_of_B_keeps():
    from scalerl.curves.solver import B_BOUNDS

    curves = [_seed("v", 0, B=8.0, noise=0.003), _seed("v", 1, B=45.0, C_mid=5.5e11, noise=0.003)]
    boot = fit_seeds(curves, n_boot=200).boot
    assert B_BOUNDS[0] <= boot.samples[:, 1].min() and boot.samples[:, 1].max() <= B_BOUNDS[1]  # the replicates do
    lo, hi = boot.interval("B")
    assert B_BOUNDS[0] <= lo and hi <= B_BOUNDS[1], (lo, hi)


def test_a_two_seed_mean_curve_band_far_out_is_As_interval():
    boot = fit_seeds([_seed("v", 0, A=0.6), _seed("v", 1, A=0.8)], n_boot=200).boot
    lo, hi = boot.interval("A")
    band_lo, band_hi = (float(v[0]) for v in boot.predict_interval([1e40]))  # the mean curve at C -> inf is A
    assert band_lo == pytest.approx(lo, abs=0.01) and band_hi == pytest.approx(hi, abs=0.01), ((band_lo, band_hi),
                                                                                                (lo, hi))
    q_lo, q_hi = boot.quantity_interval(lambda law: law.C_mid)
    c_lo, c_hi = boot.interval("C_mid")
    assert q_lo == pytest.approx(c_lo, rel=0.01) and q_hi == pytest.approx(c_hi, rel=0.01), ((q_lo, q_hi), (c_lo, c_hi))


def test_a_two_seed_dA_interval_stays_within_what_As_bounds_allow():
    from scalerl.curves.compare import compare

    runs = {"a": [_seed("a", 0, A=0.6), _seed("a", 1, A=0.8)], "b": [_seed("b", 2), _seed("b", 3)]}
    r = compare(runs, n_boot=100, forecasts=False)
    c = r.classifications[0]
    a, b = r.run("a").fit, r.run("b").fit
    lo, hi = c.dA_interval
    # dA = A_b - A_a with each A in (R0, A_max]: whatever the two ceilings, dA lies in [R0_b - A_max_a, A_max_b - R0_a]
    # ([-0.7, +0.7] here); the interval quoted reaches past both ends.
    assert b.R0 - a.A_max - 1e-9 <= lo and hi <= b.A_max - a.R0 + 1e-9, (c.explanation, (lo, hi))


def test_quantity_interval_of_a_pass_rate_stays_within_the_bounds_interval_keeps():
    """Two seeds (A 0.6 and 0.8): interval('A') is (0.3, 1.0), the bounds every replicate keeps; the same quantity
    through quantity_interval(lambda law: law.A) -- documented as widened "as interval" -- came out about
    (0.17, 2.22), and the curve at 1e13 about (0.17, 2.20) where predict_interval gives (0.3, 1.0): a function's
    range is the caller's to give (``bounds``), and with it the two routes agree."""
    boot = fit_seeds([_seed("v", 0, A=0.6), _seed("v", 1, A=0.8)], n_boot=300).boot
    a_lo, a_hi = boot.interval("A")
    q_lo, q_hi = boot.quantity_interval(lambda law: law.A, bounds=boot.bounds["A"])
    assert q_lo == pytest.approx(a_lo, abs=1e-9) and q_hi == pytest.approx(a_hi, abs=1e-9), ((q_lo, q_hi), (a_lo, a_hi))
    p_lo, p_hi = (float(v[0]) for v in boot.predict_interval([1e13]))
    r_lo, r_hi = boot.quantity_interval(lambda law: float(law(1e13)), bounds=boot.bounds["curve"])
    assert 0.0 <= r_lo and r_hi <= 1.0, (r_lo, r_hi)
    assert r_lo == pytest.approx(p_lo, abs=1e-9) and r_hi == pytest.approx(p_hi, abs=1e-9), ((r_lo, r_hi), (p_lo, p_hi))


def test_a_two_seed_runs_shared_ceiling_C_mid_interval_is_widened_as_its_own():
    """The take-off note reads a run's own C_mid interval (widened for few seeds) and its C_mid interval after the
    shared-A refit (plain percentiles, review ec): two widths of one C_mid from the same two seeds, 5x apart."""
    from scalerl.curves.compare import compare

    runs = {"a": [_seed("a", 0, C_mid=3e11), _seed("a", 1, C_mid=8e11)], "b": [_seed("b", 2), _seed("b", 3)]}
    r = compare(runs, n_boot=100, forecasts=False)
    c = r.classifications[0]
    assert c.C_mid_intervals is not None, c.explanation
    own_lo, own_hi = r.run("a").interval("C_mid")
    shared_lo, shared_hi = c.C_mid_intervals[1] if r.run("a").label == c.baseline else c.C_mid_intervals[0]
    ratio = math.log(shared_hi / shared_lo) / math.log(own_hi / own_lo)
    assert 1 / 3 <= ratio <= 3, ((own_lo, own_hi), (shared_lo, shared_hi))
