"""Zero-variance filtering and DAPO's dynamic-sampling buffer."""

from __future__ import annotations

import pytest
import torch

from scalerl.generate.base import Completion
from scalerl.rl.components import resolve_recipe
from scalerl.rl.filters import DynamicSamplingBuffer, has_reward_variance, zero_variance_mask
from scalerl.rl.presets import get_recipe
from scalerl.rollout.groups import Group
from scalerl.tasks.base import Problem
from scalerl.train.update import prepare_batch


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


# Review CQ: the trainer's filter and dynamic sampling judged the same rewards in float32 and float64.

def _completion(n: int) -> Completion:
    return Completion([1, 2, 3], list(range(5, 5 + n)), [-1.0] * n, [1] * n, [0] * n, "stop")


def test_dynamic_sampling_and_the_trainer_filter_agree_on_which_groups_vary():
    """DAPO dynamic sampling: 'over-sample and filter out prompts with the accuracy equal to 1 and 0' until the
    batch is full -- the groups it keeps are exactly the ones the loss's zero-variance filter keeps
    (filters.has_reward_variance is documented as 'the pure-Python twin of the mask'; the mask is True where
    'max - min > tol').

    A user reward that sums partial credits gives 0.1 + 0.2 = 0.30000000000000004 for one completion and 0.3 for
    another: max - min = 5.6e-17 > 0. The buffer keeps the group; the trainer's filter, on the float32 cast, sees
    two equal rewards and drops it -- the step dynamic sampling reported full has no trainable token."""
    rewards = [0.1 + 0.2, 0.3]
    recipe = get_recipe("qwen-dapo")  # dynamic sampling on, zero-variance filter on correctness
    parts = resolve_recipe(recipe)

    buffer = DynamicSamplingBuffer(target_groups=1, max_rounds=1)
    group = Group(Problem("p", "1+2=", "3"), [_completion(3), _completion(4)], list(rewards), list(rewards))
    buffer.add_round([group], [parts.filter_values(group.rewards, group.shaped)])
    buffer_keeps = buffer.take() == [group]  # today: True (the Python floats differ)

    # The public mask, on the rewards as given (float64), must say what its documented twin says.
    mask = zero_variance_mask(torch.tensor(rewards, dtype=torch.float64), torch.tensor([0, 0]))
    assert bool(mask.all()) == has_reward_variance(rewards)
    # ...and the trainer's filter must keep exactly what dynamic sampling kept (whichever way the fix goes).
    trainer_keeps = bool(prepare_batch([group], group.completions, parts).keep.all())
    assert trainer_keeps == buffer_keeps, (trainer_keeps, buffer_keeps)
