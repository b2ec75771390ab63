"""Group-centred advantages and their normalisation (a registry: batch, prompt, none).

    A_i = r_i - mean(r_j : j in the group of i)        (every generation of the same prompt)

then divided by a standard deviation chosen by ``advantages.normalization``:

* ``batch``  -- the std of all advantages of the batch that enter the loss (ScaleRL);
* ``prompt`` -- the std of the group's rewards (GRPO);
* ``none``   -- no division (Dr. GRPO).

Stds are unbiased (``torch.std``'s default, as TRL and verl use). Zero-std guard: where the
std is at or below ``std_eps`` -- a group whose rewards are all equal, a batch where every
group is -- the advantages are left unscaled (they are ~0 there) instead of being divided by
~0, which would turn rounding noise into huge advantages.

``keep`` marks the sequences that enter the loss (the zero-variance filter's output). Group
means always use the whole group; the ``batch`` std uses only kept sequences: a dropped
group's zeros would otherwise shrink the std as more prompts are solved or failed
outright, inflating every advantage (and the effective learning rate) for a reason that
has nothing to do with the remaining prompts.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from scalerl.rl.registry import Registry

__all__ = ["NORMALIZATIONS", "compute_advantages", "group_index", "register_normalization"]

Normalization = Callable[[Tensor, Tensor, Tensor, float], Tensor]
"""``scale(centred (B,), group_index (B,) in 0..G-1, keep (B,) bool, std_eps) -> (B,)``."""

NORMALIZATIONS: Registry[Normalization] = Registry(
    "advantage normalization", "add one with @scalerl.rl.advantages.register_normalization('name')"
)


def register_normalization(name: str, *, replace: bool = False) -> Callable[[Normalization], Normalization]:
    return NORMALIZATIONS.register(name, replace=replace)


def group_index(group: Tensor) -> Tensor:
    """Map arbitrary integer group ids to 0..G-1 (same order as ``torch.unique``)."""
    return torch.unique(group, return_inverse=True)[1]


def _group_sum(values: Tensor, index: Tensor) -> Tensor:
    out = torch.zeros(int(index.max()) + 1, dtype=values.dtype, device=values.device)
    return out.index_add_(0, index, values)


def compute_advantages(
    rewards: Tensor,
    group: Tensor,
    normalization: str | Normalization = "batch",
    *,
    keep: Tensor | None = None,
    std_eps: float = 1e-6,
) -> Tensor:
    """Per-sequence advantages (B,) from rewards (B,) and group ids (B,).

    ``normalization``: a registered name, or the function itself (as
    :func:`scalerl.rl.components.resolve_recipe` returns it). ``keep`` (B,) bool: sequences that
    enter the loss (default: all); only the ``batch`` normalisation reads it. Returned in float32
    (or the rewards' dtype if wider).
    """
    if rewards.ndim != 1 or group.shape != rewards.shape:
        raise ValueError(f"rewards {tuple(rewards.shape)} and group {tuple(group.shape)} must both be (B,)")
    out_dtype = torch.promote_types(rewards.dtype, torch.float32)
    # Computed in float64 (where the device has it): a user reward of -1e30 is a float32, its square is not -- the
    # group's variance overflowed to inf and every advantage of the group came out 0 (review cf).
    rewards = rewards.to(torch.float32 if rewards.device.type == "mps" else torch.float64)
    keep = torch.ones_like(rewards, dtype=torch.bool) if keep is None else keep.bool()
    index = group_index(group)
    counts = _group_sum(torch.ones_like(rewards), index)
    centred = rewards - (_group_sum(rewards, index) / counts)[index]
    scale = NORMALIZATIONS.get(normalization) if isinstance(normalization, str) else normalization
    return scale(centred, index, keep, std_eps).to(out_dtype)


def _safe(std: Tensor, eps: float) -> Tensor:
    return torch.where(std > eps, std, torch.ones_like(std))


@register_normalization("none")
def no_normalization(centred: Tensor, index: Tensor, keep: Tensor, std_eps: float) -> Tensor:
    return centred


@register_normalization("prompt")
def prompt_normalization(centred: Tensor, index: Tensor, keep: Tensor, std_eps: float) -> Tensor:
    counts = _group_sum(torch.ones_like(centred), index)
    # Unbiased group variance; a group of one has no spread, so its std is taken as 0.
    var = _group_sum(centred**2, index) / (counts - 1).clamp_min(1)
    return centred / _safe(var.sqrt(), std_eps)[index]


@register_normalization("batch")
def batch_normalization(centred: Tensor, index: Tensor, keep: Tensor, std_eps: float) -> Tensor:
    kept = centred[keep]
    std = kept.std() if kept.numel() > 1 else torch.zeros((), dtype=centred.dtype, device=centred.device)
    return centred / _safe(std, std_eps)
