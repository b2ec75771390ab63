"""``loss.ratio_mask`` after review x: refused with gspo (a token mask changed GSPO's sequence ratio, metrics
and trust region), the loss's shares (clip_frac) counted over every loss token, a band that must hold 1
inside; eval's refusal of a reward field given as a task setting names the flag eval takes."""

from __future__ import annotations

import argparse
import math

import pytest
import torch

from scalerl.errors import InputError
from scalerl.rl.losses import LossInputs, compute_policy_loss
from scalerl.rl.recipe import LossConfig


def make_inputs(ratios, advantages):
    """Inputs whose importance ratios pi_train / pi_gen are exactly ``ratios``."""
    ratios = torch.tensor(ratios, dtype=torch.float64)
    logprobs = torch.full_like(ratios, math.log(0.5)).requires_grad_(True)
    gen = logprobs.detach() - ratios.log()
    return LossInputs(logprobs, gen, torch.tensor(advantages, dtype=torch.float64), torch.ones_like(ratios),
                      torch.arange(ratios.shape[0]))


def test_gspo_with_a_ratio_mask_is_refused_and_the_band_must_hold_1():
    from scalerl.errors import ConfigError
    from scalerl.rl.recipe import RecipeConfig

    def problems(**loss):
        cfg = RecipeConfig()
        cfg.loss = LossConfig(**loss)
        with pytest.raises(ConfigError) as exc:
            cfg.validate()
        return str(exc.value)

    # Under GSPO the mask dropped a token from the sequence ratio: [1, 1, 3] with A > 0, clipped whole by
    # GSPO (ratio 1.44), got gradient -1 on two tokens; its ratio metrics read per token (3.0, not 1.44).
    assert "loss.ratio_mask does not apply to gspo" in problems(name="gspo", ratio_mask=(0.8, 1.25))
    assert "0 <= lo < 1 < hi" in problems(name="cispo", ratio_mask=(1.0, 1.0))


def test_a_band_that_masks_nothing_changes_nothing():
    ratios = [[1.3, 0.5, 1.0, 1.0]]
    for name in ("cispo", "ppo", "dapo"):
        plain = compute_policy_loss(make_inputs(ratios, [1.0]), LossConfig(name=name))
        wide = compute_policy_loss(make_inputs(ratios, [1.0]), LossConfig(name=name, ratio_mask=(0.0, math.inf)))
        assert torch.equal(plain.per_token, wide.per_token)
        assert {k: float(v) for k, v in plain.metrics.items()} == {
            k: float(v) for k, v in wide.metrics.items() if k != "ratio_masked_frac"}


def test_clip_frac_under_a_ratio_mask_is_a_share_of_the_loss_tokens():
    # PPO, A > 0: 1.3 is clipped (> 1 + 0.2), 0.5 is masked by [0.6, 1.5], the two 1.0s neither.
    out = compute_policy_loss(make_inputs([[1.3, 0.5, 1.0, 1.0]], [1.0]), LossConfig(name="ppo", ratio_mask=(0.6, 1.5)))
    assert float(out.metrics["ratio_masked_frac"]) == pytest.approx(1 / 4)
    assert float(out.metrics["clip_frac"]) == pytest.approx(1 / 4)  # 1 of the 4 loss tokens (it reads 1/3)


def _eval_refusal(argv) -> str:
    from scalerl.commands.evaluate import _chosen_settings, _eval_task, add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(argv)
    pick, base, _ = _chosen_settings(args)
    with pytest.raises(InputError) as exc:
        _eval_task(args, pick, base)
    return str(exc.value)


def test_eval_s_refusal_of_reward_workers_as_a_setting_names_a_flag_eval_takes():
    message = _eval_refusal(["--task", "arithmetic", "--set", "task.settings={reward_workers: 2}",
                             "--max-new-tokens", "8"])
    assert "eval takes it as --reward-workers N" in message, message
    message = _eval_refusal(["--task", "arithmetic", "--set", "task.settings={reward: x.py:f}", "--max-new-tokens", "8"])
    assert "eval takes it as --reward MODULE:FUNCTION" in message, message
