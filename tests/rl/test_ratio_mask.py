"""``loss.ratio_mask``: tokens whose importance ratio leaves the band get no loss and no gradient; refused with
gspo and unless the band holds 1 inside; the loss's shares counted over every loss token (review x)."""

from __future__ import annotations

import math

import pytest
import torch

from scalerl.rl.components import resolve_recipe
from scalerl.rl.losses import LossInputs, compute_policy_loss
from scalerl.rl.recipe import LossConfig, RecipeConfig
from scalerl.train.config import TrainConfig, resolve


def make_inputs(ratios, advantages):
    """Inputs whose importance ratios pi_train / pi_gen are exactly ``ratios``."""
    ratios = torch.tensor(ratios, dtype=torch.float64)
    logprobs = torch.full_like(ratios, math.log(0.5)).requires_grad_(True)
    gen = logprobs.detach() - ratios.log()
    b = ratios.shape[0]
    return LossInputs(logprobs, gen, torch.tensor(advantages, dtype=torch.float64), torch.ones_like(ratios),
                      torch.arange(b))


@pytest.mark.parametrize("name", ["cispo", "ppo", "dapo"])
def test_tokens_outside_the_band_get_no_loss_and_no_gradient_whatever_the_advantage_sign(name):
    # Row 0 has A = +1, row 1 A = -1; 0.5 and 2.0 (and 21, CISPO-capped at 5) lie outside [0.8, 1.25].
    ratios = [[1.0, 0.5, 1.1, 21.0], [0.9, 2.0, 1.2, 0.7]]
    inputs = make_inputs(ratios, [1.0, -1.0])
    out = compute_policy_loss(inputs, LossConfig(name=name, ratio_mask=(0.8, 1.25)))
    plain = compute_policy_loss(make_inputs(ratios, [1.0, -1.0]), LossConfig(name=name))
    inside = torch.tensor([[1, 0, 1, 0], [1, 0, 1, 0]], dtype=torch.bool)
    torch.testing.assert_close(out.per_token, torch.where(inside, plain.per_token, torch.zeros_like(plain.per_token)))
    (grad,) = torch.autograd.grad(out.per_token.sum(), inputs.logprobs)
    assert (grad[~inside] == 0).all()
    assert (grad[inside] != 0).all()
    assert out.metrics["ratio_masked_frac"] == pytest.approx(4 / 8)
    # The ratio metrics still describe every loss token: the masked 21 is the step's largest.
    assert out.metrics["ratio_max"] == pytest.approx(21.0)
    assert out.metrics["ratio_mean"] == pytest.approx(sum(sum(r) for r in ratios) / 8)


def test_the_run_s_loss_is_masked_when_the_config_sets_a_band():
    cfg = resolve(TrainConfig(), ["recipe.loss.ratio_mask=[0.8, 1.25]"])
    assert cfg.recipe.loss.ratio_mask == (0.8, 1.25)
    out = resolve_recipe(cfg.recipe).loss(make_inputs([[1.0, 3.0]], [-1.0]))
    assert out.per_token[0, 1] == 0 and out.per_token[0, 0] != 0
    # Off by default (ScaleRL): the same token keeps its capped weight.
    out = resolve_recipe(RecipeConfig()).loss(make_inputs([[1.0, 3.0]], [-1.0]))
    assert out.per_token[0, 1] != 0 and "ratio_masked_frac" not in out.metrics


@pytest.mark.parametrize("band", [(1.1, 2.0), (0.5, 0.9), (-0.1, 2.0), (0.8, 1.25, 2.0)])
def test_a_band_that_excludes_ratio_1_is_refused_with_an_example(band):
    problems = RecipeConfig(loss=LossConfig(ratio_mask=band)).problems()
    assert any("loss.ratio_mask must be [lo, hi]" in p and "[0.8, 1.25]" in p for p in problems)


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
