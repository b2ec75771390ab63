"""Zero-variance filtering and DAPO's dynamic-sampling buffer."""

from __future__ import annotations

import pytest
import torch

from scalerl.rl.filters import DynamicSamplingBuffer, has_reward_variance, zero_variance_mask


def test_zero_variance_mask_marks_whole_groups():
    rewards = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, -1.0, 0.5])
    group = torch.tensor([0, 0, 1, 1, 2, 2, 3])
    assert zero_variance_mask(rewards, group).tolist() == [True, True, False, False, False, False, False]
    assert zero_variance_mask(torch.tensor([1.0, 1.05]), torch.tensor([0, 0]), tol=0.1).tolist() == [False, False]


def test_has_reward_variance():
    assert has_reward_variance([1, -1, 1]) and not has_reward_variance([1, 1]) and not has_reward_variance([])


def test_dynamic_sampling_refills_until_full_and_truncates_to_the_target():
    buf: DynamicSamplingBuffer[str] = DynamicSamplingBuffer(target_groups=3, max_rounds=5)
    buf.add_round(["a", "b", "c"], [[1, -1], [1, 1], [-1, 1]])  # b has no variance
    assert not buf.done and buf.missing == 1
    buf.add_round(["d", "e", "f"], [[-1, -1], [1, -1], [1, -1]])  # d dropped; e fills; f is extra
    assert buf.full and buf.done and not buf.exhausted
    with pytest.raises(RuntimeError, match="already done"):
        buf.add_round(["g"], [[1, -1]])
    assert buf.take() == ["a", "c", "e"]
    # Every generated group is compute, including the dropped and the extra one.
    assert (buf.rounds, buf.generated_groups, buf.dropped_groups) == (2, 6, 2)
    with pytest.raises(RuntimeError, match="new DynamicSamplingBuffer"):
        buf.take()


def test_dynamic_sampling_stops_at_the_round_cap():
    buf: DynamicSamplingBuffer[int] = DynamicSamplingBuffer(target_groups=4, max_rounds=2)
    buf.add_round([1, 2], [[1, 1], [1, -1]])
    assert not buf.done
    buf.add_round([3, 4], [[-1, -1], [-1, -1]])
    assert buf.exhausted and buf.done and not buf.full
    assert buf.take() == [2]  # the step trains on what it has


def test_buffer_checks_its_inputs():
    with pytest.raises(ValueError, match="must be >= 1"):
        DynamicSamplingBuffer(0, 3)
    with pytest.raises(ValueError, match="2 groups but 1 reward lists"):
        DynamicSamplingBuffer(1, 1).add_round(["a", "b"], [[1]])


def test_dapo_and_magistral_filter_on_correctness_and_dynamic_sampling_follows_the_basis():
    from scalerl.rl.components import resolve_recipe
    from scalerl.rl.presets import get_recipe

    for name in ("qwen-dapo", "magistral", "scalerl"):
        assert get_recipe(name).filtering.basis == "correctness", name
    rewards, shaped = [-1.0, -1.0, -1.0], [-1.0, -1.2, -1.6]  # all wrong, different overlong penalties
    for basis, kept in (("correctness", 0), ("shaped", 1)):
        recipe = get_recipe("qwen-dapo")
        recipe.filtering.basis = basis
        parts = resolve_recipe(recipe)
        buffer = DynamicSamplingBuffer(1, 2)
        buffer.add_round(["group"], [parts.filter_values(rewards, shaped)])
        assert buffer.missing == 1 - kept
