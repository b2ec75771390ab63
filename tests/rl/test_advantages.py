"""Group-centred advantages and their normalisations, with the zero-std guard."""

from __future__ import annotations

import math

import pytest
import torch

from scalerl.errors import ConfigError
from scalerl.rl.advantages import compute_advantages
from scalerl.rl.filters import zero_variance_mask

# Group 0: +1 -1 -1 (mean -1/3); group 1: +1 +1 (all equal); group 2: +1 -1 (mean 0).
REWARDS = torch.tensor([1.0, -1.0, -1.0, 1.0, 1.0, 1.0, -1.0])
GROUP = torch.tensor([0, 0, 0, 1, 1, 2, 2])
CENTRED = torch.tensor([4 / 3, -2 / 3, -2 / 3, 0.0, 0.0, 1.0, -1.0])


def test_none_is_group_centred():
    torch.testing.assert_close(compute_advantages(REWARDS, GROUP, "none"), CENTRED)


def test_prompt_normalisation_divides_by_each_groups_std():
    # group 0: unbiased var = (16/9 + 4/9 + 4/9) / 2 = 4/3; group 2: (1 + 1) / 1 = 2;
    # group 1 has std 0: the guard leaves its (zero) advantages unscaled instead of 0/0.
    s0, s2 = math.sqrt(4 / 3), math.sqrt(2)
    expected = torch.tensor([4 / 3 / s0, -2 / 3 / s0, -2 / 3 / s0, 0.0, 0.0, 1 / s2, -1 / s2])
    torch.testing.assert_close(compute_advantages(REWARDS, GROUP, "prompt"), expected)


def test_batch_normalisation_uses_the_std_of_the_kept_advantages():
    # Kept (zero-variance group 1 dropped): 4/3, -2/3, -2/3, 1, -1; mean 0, sum of squares 42/9,
    # unbiased var (42/9) / 4. Keeping group 1's zeros would shrink the std to sqrt((42/9) / 6).
    keep = zero_variance_mask(REWARDS, GROUP)
    std_kept = math.sqrt(42 / 9 / 4)
    torch.testing.assert_close(compute_advantages(REWARDS, GROUP, "batch", keep=keep), CENTRED / std_kept)
    std_all = math.sqrt(42 / 9 / 6)
    torch.testing.assert_close(compute_advantages(REWARDS, GROUP, "batch"), CENTRED / std_all)


@pytest.mark.parametrize("normalization", ["batch", "prompt", "none"])
def test_zero_std_guard(normalization):
    # Every group solved: all advantages are 0, and must stay 0 (not NaN, not inf).
    adv = compute_advantages(torch.ones(6), torch.tensor([0, 0, 0, 1, 1, 1]), normalization)
    assert torch.all(adv == 0)
    # Rewards equal up to float noise: the guard keeps the noise from being blown up.
    noisy = torch.tensor([1.0, 1.0 + 1e-9, 1.0, 1.0 - 1e-9], dtype=torch.float64)
    adv = compute_advantages(noisy, torch.tensor([0, 0, 1, 1]), normalization)
    assert adv.abs().max() < 1e-8


def test_group_of_one_has_zero_advantage():
    adv = compute_advantages(torch.tensor([1.0, 1.0, -1.0]), torch.tensor([5, 8, 8]), "prompt")
    assert adv[0] == 0 and adv[1] > 0 > adv[2]


def test_group_ids_need_not_be_contiguous_or_sorted():
    perm = torch.tensor([6, 2, 0, 4, 1, 5, 3])
    relabel = torch.tensor([40, 10, 30])[GROUP]
    adv = compute_advantages(REWARDS[perm], relabel[perm], "prompt")
    torch.testing.assert_close(adv, compute_advantages(REWARDS, GROUP, "prompt")[perm])


def test_unknown_normalisation_and_bad_shapes():
    with pytest.raises(ConfigError, match="known: batch, none, prompt"):
        compute_advantages(REWARDS, GROUP, "group")
    with pytest.raises(ValueError, match=r"must both be \(B,\)"):
        compute_advantages(REWARDS.view(7, 1), GROUP, "none")


def test_a_reward_of_minus_1e30_keeps_its_groups_advantages():
    from scalerl.rl.advantages import compute_advantages

    rewards = torch.tensor([-1e30, 1.0, -1.0, 1.0])
    adv = compute_advantages(rewards, torch.zeros(4, dtype=torch.long), "prompt")
    assert torch.isfinite(adv).all()
    # the right answers (1.0) are better than the call that scored -1e30 (the group's std is 5e29: -1.5, 0.5, 0.5, 0.5)
    assert adv[1] > 0 > adv[0] and adv[3] > 0, adv
