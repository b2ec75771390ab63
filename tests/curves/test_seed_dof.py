"""The critical value of a comparison's intervals when a run has a few seeds (scalerl.curves.seed_dof)."""

import math

import pytest
from scipy.stats import norm, t

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
    import numpy as np

    from scalerl.curves.seed_dof import few_seeds_stretch

    rng = np.random.default_rng(0)
    values = rng.normal(size=400)
    assert few_seeds_stretch(values, None, 0.95) == 1.0
    assert few_seeds_stretch(values, np.ones((400, 1), dtype=int), 0.95) == 1.0
    # Three seeds, every replicate's value the mean of the seeds it drew: the spread is all the seeds' share,
    # estimated from 2 df (the resampler, not the stretch, makes up for drawing k of k with replacement).
    counts = rng.multinomial(3, [1 / 3] * 3, size=400)
    theta = np.array([0.1, -0.3, 0.4])
    values = counts @ theta / 3
    expected = t.ppf(0.975, 2) / norm.ppf(0.975)
    assert few_seeds_stretch(values, counts, 0.95) == pytest.approx(expected, rel=1e-6)
    # Residual noise beside the seeds: more degrees of freedom, a smaller stretch, never below 1.
    noisy = values + rng.normal(0, 0.5, 400)
    assert 1.0 < few_seeds_stretch(noisy, counts, 0.95) < expected


def test_a_several_seed_fits_own_intervals_are_widened_and_A_stays_within_its_bound():
    import numpy as np

    from scalerl.curves import Curve, fit_seeds

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
