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
