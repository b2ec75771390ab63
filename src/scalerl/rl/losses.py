"""Policy losses on per-token log-probs, in a registry: ``cispo``, ``ppo``, ``dapo``, ``gspo``.

A loss maps :class:`LossInputs` (trainer and generator log-probs, per-sequence advantages,
the completion mask, the group index) to a :class:`LossOutput`: the per-token loss, zero
outside the mask, and metrics. Reducing the per-token loss to a scalar is the separate job of
``scalerl.rl.aggregate`` (token / sample / prompt), so every loss composes with every
aggregation. Notation (docs/paper.md, "The recipe"): rho = pi_train / pi_gen per token, A = the sequence's
advantage, sg = stop-gradient.

    out = compute_policy_loss(LossInputs(logp, gen_logp, adv, mask, group), cfg.loss)
    loss = aggregate_loss(out.per_token, mask, group, cfg.aggregation)

Add a loss of your own with :func:`register_policy_loss`; it receives the whole
:class:`~scalerl.rl.recipe.LossConfig` (put your parameters in ``cfg.extra``).

Metrics (0-dim detached tensors, means over the masked tokens):

* ``clip_frac`` -- tokens whose gradient the clip removes (PPO-style losses); 0 for CISPO,
  which never removes a token's gradient, only caps its weight;
* ``truncated_frac`` -- tokens whose importance weight differs from the raw ratio (ratio outside
  the clip range, or above CISPO's cap), whatever the advantage's sign;
* ``ratio_mean`` / ``ratio_max`` -- the raw importance ratio rho, before any clip or cap (per
  sequence for GSPO): how far the trainer has moved from the data's policy.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from typing import Callable

import torch
from torch import Tensor

from scalerl.rl.recipe import LossConfig
from scalerl.rl.registry import Registry

__all__ = [
    "POLICY_LOSSES",
    "LossInputs",
    "LossOutput",
    "compute_policy_loss",
    "bound_policy_loss",
    "cispo_loss",
    "clipped_surrogate",
    "gspo_loss",
    "ratio_masked",
    "register_policy_loss",
    "zero_advantage_means_zero_gradient",
]


@dataclass
class LossInputs:
    """One batch of completions, padded to a common length T."""

    logprobs: Tensor
    """(B, T) log pi_train(token) from the trainer's forward pass; carries the gradient."""
    gen_logprobs: Tensor
    """(B, T) log pi_gen(token) recorded by the generator when it sampled the token (no gradient)."""
    advantages: Tensor
    """(B,) one advantage per sequence (already centred and normalised)."""
    mask: Tensor
    """(B, T) 1 for tokens trained on; 0 for padding, forced tokens and filtered sequences."""
    group: Tensor
    """(B,) integer index of the prompt (group) each sequence answers."""

    def __post_init__(self) -> None:
        b, t = self.logprobs.shape
        if self.gen_logprobs.shape != (b, t) or self.mask.shape != (b, t):
            raise ValueError(
                f"logprobs {tuple(self.logprobs.shape)}, gen_logprobs {tuple(self.gen_logprobs.shape)} "
                f"and mask {tuple(self.mask.shape)} must all be (B, T)"
            )
        if self.advantages.shape != (b,) or self.group.shape != (b,):
            raise ValueError(
                f"advantages {tuple(self.advantages.shape)} and group {tuple(self.group.shape)} must be (B,) = ({b},)"
            )
        self.mask = self.mask.bool()


@dataclass
class LossOutput:
    per_token: Tensor
    """(B, T) loss of each token, exactly 0 outside the mask."""
    metrics: dict[str, Tensor]
    """clip_frac, truncated_frac, ratio_mean, ratio_max (0-dim, detached)."""


PolicyLoss = Callable[[LossInputs, LossConfig], LossOutput]

POLICY_LOSSES: Registry[PolicyLoss] = Registry(
    "policy loss", "add one with @scalerl.rl.losses.register_policy_loss('name')"
)


def register_policy_loss(name: str, *, replace: bool = False) -> Callable[[PolicyLoss], PolicyLoss]:
    """Decorator: make ``fn(inputs: LossInputs, cfg: LossConfig) -> LossOutput`` selectable as ``loss.name``."""
    return POLICY_LOSSES.register(name, replace=replace)


def bound_policy_loss(cfg: LossConfig) -> Callable[[LossInputs], LossOutput]:
    """The loss ``cfg.name`` names with ``cfg`` (its clips) bound, inside ``cfg.ratio_mask``'s band when one
    is set: looked up once, called every micro-batch."""
    loss = POLICY_LOSSES.get(cfg.name)
    if cfg.ratio_mask is not None:
        return functools.partial(ratio_masked, loss, cfg=cfg)
    return functools.partial(loss, cfg=cfg)


def compute_policy_loss(inputs: LossInputs, cfg: LossConfig) -> LossOutput:
    """Run the loss ``cfg.name`` names (inside ``cfg.ratio_mask``'s band when one is set)."""
    return bound_policy_loss(cfg)(inputs)


def ratio_masked(loss: PolicyLoss, inputs: LossInputs, cfg: LossConfig) -> LossOutput:
    """``loss`` on the tokens whose importance ratio lies in ``cfg.ratio_mask`` = [lo, hi]; the rest get
    no loss and no gradient, whatever their advantage's sign (token-level masked importance sampling).

    Why: on the demo a gradient-norm spike is one to three tokens whose log-prob is hundreds of times
    more sensitive to the weights than a typical token's (docs/workload.md); the same sensitivity
    moves their probability far in a single update, so their ratio, one update stale, is far from 1.
    The aggregation weights are computed before the ratio is known, so a masked token still counts in
    their denominators (as a token PPO's clip zeroes does). Metric ``ratio_masked_frac``: the share of
    the loss tokens masked here.
    """
    lo, hi = cfg.ratio_mask
    ratio = torch.exp(_log_ratio(inputs)).detach()
    inside = (ratio >= lo) & (ratio <= hi)
    kept = inputs.mask & inside
    # (On the kept tokens, not the whole loss zeroed after: a masked token's ratio may be inf, whose
    # gradient through a zeroed branch is NaN.)
    out = loss(LossInputs(inputs.logprobs, inputs.gen_logprobs, inputs.advantages, kept, inputs.group), cfg)
    # The loss's shares (clip_frac, truncated_frac) are of the tokens it saw, ratio_masked_frac of every loss
    # token, and the trainer weights each by every loss token: the loss's as shares of every loss token too.
    seen = kept.sum().float() / inputs.mask.sum().clamp_min(1)
    shares = {key: value * seen if key.endswith("_frac") else value for key, value in out.metrics.items()}
    # The ratio metrics describe every loss token, masked ones included: recompute them on the full mask.
    metrics = {**shares, "ratio_mean": _masked_mean(ratio, inputs.mask),
               "ratio_max": torch.where(inputs.mask, ratio, torch.zeros_like(ratio)).max().float(),
               "ratio_masked_frac": _masked_mean(inputs.mask & ~inside, inputs.mask)}
    return LossOutput(out.per_token, metrics)


# ----------------------------------------------------------------------------- helpers


def _log_ratio(inputs: LossInputs) -> Tensor:
    # Zero outside the mask *before* exp: padded or forced positions may hold any log-prob
    # (forced tokens carry 0.0 from the generator), and must not overflow into NaN gradients.
    diff = inputs.logprobs - inputs.gen_logprobs.detach()
    return torch.where(inputs.mask, diff, torch.zeros_like(diff))


def _masked_mean(x: Tensor, mask: Tensor) -> Tensor:
    x = x.detach().float()
    return torch.where(mask, x, torch.zeros_like(x)).sum() / mask.sum().clamp_min(1)


def _metrics(ratio: Tensor, mask: Tensor, clipped: Tensor, truncated: Tensor) -> dict[str, Tensor]:
    ratio = ratio.detach()
    return {
        "clip_frac": _masked_mean(clipped, mask),
        "truncated_frac": _masked_mean(truncated, mask),
        "ratio_mean": _masked_mean(ratio, mask),
        # ratio > 0, so 0 stands in for masked positions (and for an all-masked batch).
        "ratio_max": torch.where(mask, ratio, torch.zeros_like(ratio)).max().float(),
    }


def _masked(x: Tensor, mask: Tensor) -> Tensor:
    return torch.where(mask, x, torch.zeros_like(x))


# ----------------------------------------------------------------------------- losses


@register_policy_loss("cispo")
def cispo_loss(inputs: LossInputs, cfg: LossConfig) -> LossOutput:
    """CISPO (MiniMax-M1; ScaleRL): ``-sg(min(rho, eps_max)) * A * log pi_train(token)``.

    The truncated ratio is a constant weight, so the gradient is ``-w * A * grad log pi`` for
    every token: no token's gradient is ever dropped (unlike PPO's clip), large ratios are
    only capped. No lower clip.
    """
    ratio = torch.exp(_log_ratio(inputs))
    eps_max = cfg.cispo.eps_max
    weight = torch.clamp(ratio, max=eps_max).detach()
    per_token = -weight * inputs.advantages.unsqueeze(1) * inputs.logprobs
    truncated = ratio > eps_max
    return LossOutput(
        _masked(per_token, inputs.mask),
        _metrics(ratio, inputs.mask, torch.zeros_like(truncated), truncated),
    )


def clipped_surrogate(inputs: LossInputs, eps_low: float, eps_high: float) -> LossOutput:
    """PPO's clipped surrogate ``-min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A)`` per token.

    Where the ratio has left the trust region in the direction the advantage pushes it
    (rho > 1 + eps_high with A > 0, rho < 1 - eps_low with A < 0) the clipped branch is the
    minimum and is constant in theta: that token's gradient is zero.
    """
    ratio = torch.exp(_log_ratio(inputs))
    adv = inputs.advantages.unsqueeze(1)
    clipped_ratio = torch.clamp(ratio, 1 - eps_low, 1 + eps_high)
    per_token = -torch.minimum(ratio * adv, clipped_ratio * adv)
    clipped = ((ratio > 1 + eps_high) & (adv > 0)) | ((ratio < 1 - eps_low) & (adv < 0))
    truncated = (ratio > 1 + eps_high) | (ratio < 1 - eps_low)
    return LossOutput(_masked(per_token, inputs.mask), _metrics(ratio, inputs.mask, clipped, truncated))


@register_policy_loss("ppo")
def ppo_loss(inputs: LossInputs, cfg: LossConfig) -> LossOutput:
    """PPO-clip / GRPO (DeepSeek): the clipped surrogate with ``cfg.ppo`` (0.2 / 0.2)."""
    return clipped_surrogate(inputs, cfg.ppo.eps_low, cfg.ppo.eps_high)


@register_policy_loss("dapo")
def dapo_loss(inputs: LossInputs, cfg: LossConfig) -> LossOutput:
    """DAPO clip-higher: the clipped surrogate with ``cfg.dapo`` (0.2 / 0.28)."""
    return clipped_surrogate(inputs, cfg.dapo.eps_low, cfg.dapo.eps_high)


@register_policy_loss("gspo")
def gspo_loss(inputs: LossInputs, cfg: LossConfig) -> LossOutput:
    """GSPO: the clipped surrogate on one ratio per sequence, ``s = exp(mean_t log rho_t)``.

    The sequence's loss is written on each of its tokens, so token, sample and prompt
    aggregation all apply unchanged (sample-level gives GSPO's own per-sequence mean). The
    gradient reaches every token of the sequence through ``s``: ``d s / d log pi_t = s / |y|``.
    """
    eps_low, eps_high = cfg.gspo.eps_low, cfg.gspo.eps_high
    mask = inputs.mask
    lengths = mask.sum(dim=1).clamp_min(1)
    seq_ratio = torch.exp(_log_ratio(inputs).sum(dim=1) / lengths)
    adv = inputs.advantages
    seq_loss = -torch.minimum(seq_ratio * adv, torch.clamp(seq_ratio, 1 - eps_low, 1 + eps_high) * adv)
    clipped = ((seq_ratio > 1 + eps_high) & (adv > 0)) | ((seq_ratio < 1 - eps_low) & (adv < 0))
    truncated = (seq_ratio > 1 + eps_high) | (seq_ratio < 1 - eps_low)
    shape = mask.shape
    per_token = _masked(seq_loss.unsqueeze(1).expand(shape), mask)
    metrics = _metrics(
        seq_ratio.unsqueeze(1).expand(shape),
        mask,
        clipped.unsqueeze(1).expand(shape),
        truncated.unsqueeze(1).expand(shape),
    )
    return LossOutput(per_token, metrics)


#: Built-in losses whose per-token loss is the sequence's advantage times a factor: a sequence
#: with advantage exactly 0 contributes exactly 0 loss and 0 gradient (all four of them).
_ADVANTAGE_SCALED = frozenset({cispo_loss, ppo_loss, dapo_loss, gspo_loss})


def zero_advantage_means_zero_gradient(name: str) -> bool:
    """Whether the loss registered as ``name`` gives a sequence with advantage 0 no gradient.

    True for the built-in ``cispo``, ``ppo``, ``dapo`` and ``gspo`` (the trainer then skips such
    sequences' forward and backward passes); False for a loss registered by a user, which may
    add terms that do not vanish with the advantage (a KL or entropy term, say).
    """
    return POLICY_LOSSES.get(name) in _ADVANTAGE_SCALED
