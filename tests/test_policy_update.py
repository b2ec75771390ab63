"""policy_update: leaving gradient-free sequences out of the passes changes nothing but the work."""

from __future__ import annotations

import copy

import pytest
import torch

from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.rl.presets import get_recipe
from scalerl.rollout.groups import Group
from scalerl.train.update import policy_update


def _groups(model, tokenizer, rewards_per_group):
    """Real completions of the tiny random model, one group per reward list (given rewards)."""
    from scalerl.tasks.base import Problem

    gen = HFGenerator(model, tokenizer, seed=0)
    groups = []
    for i, rewards in enumerate(rewards_per_group):
        prompt = tokenizer(f"{i}+{i + 3}=").input_ids
        comps = gen.generate([prompt] * len(rewards), SamplingParams(max_new_tokens=6 + 2 * i, seed=i))
        groups.append(Group(Problem(str(i), f"{i}+{i + 3}=", str(2 * i + 3)), comps, list(rewards), list(rewards)))
    return groups


def _step(model, groups, recipe, skip_idle, optimizer="sgd"):
    model = copy.deepcopy(model)
    params = [p for p in model.parameters()]
    opt = torch.optim.SGD(params, lr=1.0) if optimizer == "sgd" else torch.optim.AdamW(params, lr=1e-2)
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
    result = policy_update(model, opt, sched, groups, recipe, temperature=1.0, pad_token_id=0, micro_batch_size=3,
                           skip_idle=skip_idle)
    return model, result


@pytest.mark.parametrize("name", ["scalerl", "deepseek-grpo", "qwen-dapo", "scalerl-loo-zero-variance-off"])
def test_skipping_idle_sequences_gives_the_same_step(random_model, char_tokenizer, name):
    recipe = get_recipe(name)
    recipe.optimizer.grad_clip = None
    recipe.filtering.dynamic_sampling = False
    # Groups 1 and 3 have no reward variance: filtered, or advantage exactly 0 when the filter is off.
    groups = _groups(random_model, char_tokenizer, [[1, -1, -1, 1], [-1] * 4, [1, 1, -1, 1], [1] * 4])
    skipped, r_skip = _step(random_model, groups, recipe, True)
    full, r_full = _step(random_model, groups, recipe, False)
    for (n, a), (_, b) in zip(skipped.named_parameters(), full.named_parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=n)
    assert r_skip.metrics["no_grad_frac"] == pytest.approx(0.5)
    assert r_full.metrics["no_grad_frac"] == 0.0
    assert r_skip.trained_tokens < r_full.trained_tokens
    assert r_skip.metrics["loss"] == pytest.approx(r_full.metrics["loss"], abs=1e-6)


def test_a_step_where_every_advantage_is_zero_still_takes_the_optimizer_step(random_model, char_tokenizer):
    recipe = get_recipe("deepseek-grpo")  # no filter: the step is not skipped, its gradient is 0
    groups = _groups(random_model, char_tokenizer, [[-1] * 3, [1] * 3])
    warm, _ = _step(random_model, _groups(random_model, char_tokenizer, [[1, -1, -1]]), recipe, False, "adamw")
    skipped, r_skip = _step(warm, groups, recipe, True, "adamw")
    full, r_full = _step(warm, groups, recipe, False, "adamw")
    assert not r_skip.skipped and not r_full.skipped
    assert r_skip.trained_tokens == 0
    for (n, a), (_, b) in zip(skipped.named_parameters(), full.named_parameters()):
        torch.testing.assert_close(a, b, msg=n)  # weight decay applied the same way
