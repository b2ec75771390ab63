"""Policy losses on hand-computed tensors: values, gradients, metrics, registry."""

from __future__ import annotations

import math

import pytest
import torch

from scalerl.errors import ConfigError
from scalerl.rl.losses import (
    POLICY_LOSSES,
    LossInputs,
    LossOutput,
    compute_policy_loss,
    register_policy_loss,
)
from scalerl.rl.recipe import LossConfig


def make_inputs(ratios, advantages, mask=None, logprobs=None):
    """Inputs whose importance ratios pi_train / pi_gen are exactly ``ratios``."""
    ratios = torch.tensor(ratios, dtype=torch.float64)
    if logprobs is None:
        logprobs = torch.full_like(ratios, math.log(0.5))
    logprobs = torch.as_tensor(logprobs, dtype=torch.float64).clone().requires_grad_(True)
    gen = logprobs.detach() - ratios.log()
    mask = torch.ones_like(ratios) if mask is None else torch.tensor(mask, dtype=torch.float64)
    b = ratios.shape[0]
    return LossInputs(logprobs, gen, torch.tensor(advantages, dtype=torch.float64), mask, torch.arange(b))


def grad_of_sum(out: LossOutput, inputs: LossInputs) -> torch.Tensor:
    (g,) = torch.autograd.grad(out.per_token.sum(), inputs.logprobs)
    return g


def test_cispo_values_and_gradient_flow_only_through_log_pi():
    # eps_max = 5: ratios 7 and 6 are capped at 5; the lower side is never clipped (0.5 stays).
    logprobs = [[-0.1, -0.2, -0.3], [-0.4, -0.5, -9.0]]
    inputs = make_inputs([[1.0, 7.0, 0.5], [2.0, 6.0, 3.0]], [1.0, -2.0], [[1, 1, 1], [1, 1, 0]], logprobs)
    out = compute_policy_loss(inputs, LossConfig(name="cispo"))
    w = torch.tensor([[1.0, 5.0, 0.5], [2.0, 5.0, 0.0]], dtype=torch.float64)
    a = torch.tensor([[1.0], [-2.0]], dtype=torch.float64)
    lp = torch.tensor(logprobs, dtype=torch.float64)
    torch.testing.assert_close(out.per_token, -w * a * lp * torch.tensor([[1, 1, 1], [1, 1, 0]]))
    # d/dlogp of -sg(w) * A * logp is -w * A: no term from the ratio's own dependence on logp.
    torch.testing.assert_close(grad_of_sum(out, inputs), -w * a)
    m = out.metrics
    assert m["clip_frac"] == 0  # CISPO never drops a token's gradient
    assert m["truncated_frac"] == pytest.approx(2 / 5)  # ratios 7 and 6 of the 5 unmasked tokens
    assert m["ratio_mean"] == pytest.approx((1 + 7 + 0.5 + 2 + 6) / 5)
    assert m["ratio_max"] == pytest.approx(7.0)  # the masked 3.0 does not count, 7 is the raw ratio


def test_ppo_values_and_zero_gradient_where_clipped_against_the_advantage():
    # eps 0.2 / 0.2. Row 0 has A = +1, row 1 has A = -1.
    inputs = make_inputs([[1.0, 1.5, 0.5], [1.1, 0.5, 1.5]], [1.0, -1.0])
    out = compute_policy_loss(inputs, LossConfig(name="ppo"))
    expected = torch.tensor(
        [
            [-1.0, -1.2, -0.5],  # 1.5 clipped to 1.2 (A > 0); 0.5 is below the range but min keeps 0.5
            [1.1, 0.8, 1.5],  # 0.5 clipped to 0.8 (A < 0); 1.5 above the range but min keeps -1.5
        ],
        dtype=torch.float64,
    )
    torch.testing.assert_close(out.per_token, expected)
    # d(-rho * A)/dlogp = -A * rho where unclipped; 0 where the clipped branch is taken.
    torch.testing.assert_close(
        grad_of_sum(out, inputs), torch.tensor([[-1.0, 0.0, -0.5], [1.1, 0.0, 1.5]], dtype=torch.float64)
    )
    assert out.metrics["clip_frac"] == pytest.approx(2 / 6)
    assert out.metrics["truncated_frac"] == pytest.approx(4 / 6)
    assert out.metrics["ratio_max"] == pytest.approx(1.5)


def test_dapo_clips_higher_than_ppo():
    inputs = make_inputs([[1.25, 0.75]], [1.0])
    ppo = compute_policy_loss(inputs, LossConfig(name="ppo"))
    dapo = compute_policy_loss(inputs, LossConfig(name="dapo"))
    # ratio 1.25 with A > 0: outside PPO's 1.2 (no gradient) but inside DAPO's 1.28 (gradient -1.25).
    torch.testing.assert_close(grad_of_sum(ppo, inputs), torch.tensor([[0.0, -0.75]], dtype=torch.float64))
    torch.testing.assert_close(grad_of_sum(dapo, inputs), torch.tensor([[-1.25, -0.75]], dtype=torch.float64))
    assert ppo.metrics["clip_frac"] == pytest.approx(0.5) and dapo.metrics["clip_frac"] == 0


def test_gspo_ratio_is_per_sequence():
    # Row 0: token log-ratios 0.003, -0.001, 0.001 -> s = exp(0.001), inside [0.997, 1.004].
    # Row 1: log-ratios 0.01, 0.02 (third token masked, its 5.0 must not count) -> s = exp(0.015),
    # above 1.004 with A = 2 > 0: clipped, so the loss is -1.004 * 2 and the gradient zero.
    log_ratios = [[0.003, -0.001, 0.001], [0.01, 0.02, 5.0]]
    inputs = make_inputs([[math.exp(x) for x in row] for row in log_ratios], [1.0, 2.0], [[1, 1, 1], [1, 1, 0]])
    out = compute_policy_loss(inputs, LossConfig(name="gspo"))
    s0 = math.exp(0.001)
    expected = torch.tensor([[-s0, -s0, -s0], [-2.008, -2.008, 0.0]], dtype=torch.float64)
    torch.testing.assert_close(out.per_token, expected)
    # ds/dlogp_t = s / |y| for every token of the sequence; the sequence loss is written on each
    # of its 3 tokens, so the gradient of the sum is 3 * (-A * s / 3) = -A * s per token.
    torch.testing.assert_close(
        grad_of_sum(out, inputs), torch.tensor([[-s0, -s0, -s0], [0.0, 0.0, 0.0]], dtype=torch.float64)
    )
    assert out.metrics["clip_frac"] == pytest.approx(2 / 5)  # row 1's two tokens
    assert out.metrics["ratio_max"] == pytest.approx(math.exp(0.015))


def test_gspo_negative_advantage_clipped_below():
    inputs = make_inputs([[0.99, 0.99]], [-1.0])  # s = 0.99 < 0.997 with A < 0: clipped
    out = compute_policy_loss(inputs, LossConfig(name="gspo"))
    torch.testing.assert_close(out.per_token, torch.tensor([[0.997, 0.997]], dtype=torch.float64))
    assert torch.all(grad_of_sum(out, inputs) == 0)


@pytest.mark.parametrize("name", ["cispo", "ppo", "dapo", "gspo"])
def test_masked_positions_are_exactly_zero_even_with_extreme_logprobs(name):
    ratios = torch.tensor([[1.0, 1.0]], dtype=torch.float64)
    logprobs = torch.tensor([[-0.5, -1e4]], dtype=torch.float64, requires_grad=True)
    gen = torch.tensor([[-0.5, 0.0]], dtype=torch.float64)  # forced token: generator log-prob 0.0
    inputs = LossInputs(logprobs, gen, torch.tensor([1.0], dtype=torch.float64), ratios * torch.tensor([[1, 0]]),
                        torch.tensor([0]))
    out = compute_policy_loss(inputs, LossConfig(name=name))
    assert out.per_token[0, 1] == 0
    (g,) = torch.autograd.grad(out.per_token.sum(), logprobs)
    assert torch.isfinite(g).all() and g[0, 1] == 0
    assert all(torch.isfinite(v) for v in out.metrics.values())


def test_zero_advantage_gives_zero_loss_and_gradient():
    for name in POLICY_LOSSES:
        inputs = make_inputs([[1.3, 0.7]], [0.0])
        out = compute_policy_loss(inputs, LossConfig(name=name))
        assert torch.all(out.per_token == 0)
        assert torch.all(grad_of_sum(out, inputs) == 0)


def test_on_policy_gradient_is_the_policy_gradient_for_every_loss():
    # At ratio 1 (generator == trainer) all four losses have gradient -A (per token, summed),
    # i.e. they are the same REINFORCE estimator; they differ only off-policy.
    for name in ("cispo", "ppo", "dapo"):
        inputs = make_inputs([[1.0, 1.0], [1.0, 1.0]], [0.5, -2.0])
        g = grad_of_sum(compute_policy_loss(inputs, LossConfig(name=name)), inputs)
        torch.testing.assert_close(g, torch.tensor([[-0.5, -0.5], [2.0, 2.0]], dtype=torch.float64))


def test_input_shapes_are_checked():
    with pytest.raises(ValueError, match=r"must all be \(B, T\)"):
        LossInputs(torch.zeros(2, 3), torch.zeros(2, 4), torch.zeros(2), torch.ones(2, 3), torch.arange(2))
    with pytest.raises(ValueError, match=r"must be \(B,\)"):
        LossInputs(torch.zeros(2, 3), torch.zeros(2, 3), torch.zeros(2, 1), torch.ones(2, 3), torch.arange(2))


def test_unknown_loss_lists_the_known_ones():
    with pytest.raises(ConfigError, match="unknown policy loss 'nope'; known: cispo, dapo, gspo, ppo"):
        compute_policy_loss(make_inputs([[1.0]], [1.0]), LossConfig(name="nope"))


def test_a_user_can_register_a_loss_reading_extra_params():
    @register_policy_loss("test-scaled-reinforce")
    def scaled(inputs, cfg):
        per_token = -cfg.extra["scale"] * inputs.advantages.unsqueeze(1) * inputs.logprobs
        return LossOutput(per_token * inputs.mask, {})

    try:
        inputs = make_inputs([[1.0, 2.0]], [1.0])
        out = compute_policy_loss(inputs, LossConfig(name="test-scaled-reinforce", extra={"scale": 3.0}))
        torch.testing.assert_close(grad_of_sum(out, inputs), torch.tensor([[-3.0, -3.0]], dtype=torch.float64))
        with pytest.raises(ValueError, match="already registered"):
            register_policy_loss("test-scaled-reinforce")(scaled)
    finally:
        POLICY_LOSSES._items.pop("test-scaled-reinforce")
