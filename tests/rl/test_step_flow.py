"""The pieces composed as a trainer step would compose them (scalerl.rl's docstring)."""

from __future__ import annotations

import pytest
import torch

from scalerl.rl.advantages import compute_advantages
from scalerl.rl.aggregate import aggregation_weights
from scalerl.rl.filters import zero_variance_mask
from scalerl.rl.losses import LossInputs, compute_policy_loss
from scalerl.rl.presets import get_recipe


def step_gradient(cfg, logits, tokens, gen_logp, rewards, group, completion_mask, micro_batches):
    keep = zero_variance_mask(rewards, group) if cfg.filtering.zero_variance else torch.ones_like(rewards).bool()
    adv = compute_advantages(rewards, group, cfg.advantages.normalization, keep=keep)
    mask = completion_mask * keep[:, None]
    weights = aggregation_weights(cfg.aggregation, mask, group)
    logits.grad = None
    for mb in torch.arange(len(rewards)).chunk(micro_batches):
        logp = torch.log_softmax(logits[mb], -1).gather(-1, tokens[mb, :, None]).squeeze(-1)
        out = compute_policy_loss(LossInputs(logp, gen_logp[mb], adv[mb], mask[mb], group[mb]), cfg.loss)
        (weights[mb] * out.per_token).sum().backward()
    return logits.grad.clone(), keep


@pytest.mark.parametrize("name", ["scalerl", "deepseek-grpo", "qwen-dapo", "scalerl-loo-zero-variance-off"])
def test_micro_batched_step_equals_the_full_step_and_filtered_groups_get_no_gradient(name):
    cfg = get_recipe(name)
    g = torch.Generator().manual_seed(0)
    b, t, v = 8, 5, 11
    logits = torch.randn(b, t, v, generator=g, dtype=torch.float64, requires_grad=True)
    tokens = torch.randint(0, v, (b, t), generator=g)
    with torch.no_grad():
        gen_logp = torch.log_softmax(logits, -1).gather(-1, tokens[..., None]).squeeze(-1)
        gen_logp += 0.1 * torch.randn(b, t, generator=g, dtype=torch.float64)
    group = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3])
    rewards = torch.tensor([1.0, -1.0, 1.0, 1.0, -1.0, 1.0, -1.0, -1.0])  # groups 1 and 3: no variance
    completion_mask = torch.ones(b, t)
    completion_mask[0, 3:] = 0

    full, keep = step_gradient(cfg, logits, tokens, gen_logp, rewards, group, completion_mask, 1)
    split, _ = step_gradient(cfg, logits, tokens, gen_logp, rewards, group, completion_mask, 4)
    torch.testing.assert_close(split, full)
    assert full[~keep].abs().sum() == 0  # zero variance: filtered, or zero advantage anyway
    assert full[keep].abs().sum() > 0
    assert full[0, 3:].abs().sum() == 0  # masked tokens
