"""Loss aggregation: how per-token losses become one scalar. A registry: token, sample, prompt.

Each aggregation is written as per-token *weights* ``w`` (B, T), with ``loss = sum(w * per_token)``:

* ``token``  -- ``mask / (all tokens of the batch)``: every token counts the same, so long
  completions weigh more (DAPO's token-level loss);
* ``sample`` -- ``mask / (len_i * number of sequences)``: mean per sequence, then mean
  (GRPO's original loss);
* ``prompt`` -- ``mask / (tokens of the prompt's group * number of prompts)``: each prompt's
  tokens over the total tokens of its generations, then mean over prompts (ScaleRL).

Weights depend only on the mask and the group index, never on the model, which is why they
are the unit of this module: a trainer that splits a step into micro-batches computes the
weights once on the whole step's batch and uses ``(w[mb] * per_token[mb]).sum()`` in each
micro-batch; the accumulated gradient then equals the full batch's exactly, whichever
aggregation is chosen.

Sequences (and prompts) with no unmasked token -- zero-variance groups dropped by the
filter, masked truncated completions -- are left out of the counts, so dropping a sequence
by masking it is the same as removing it from the batch.
"""

from __future__ import annotations

from typing import Callable

import torch
from torch import Tensor

from scalerl.rl.registry import Registry

__all__ = ["AGGREGATIONS", "aggregate_loss", "aggregation_weights", "register_aggregation"]

Aggregation = Callable[[Tensor, Tensor], Tensor]
"""``weights(mask (B, T) float, group (B,) long) -> (B, T)``."""

AGGREGATIONS: Registry[Aggregation] = Registry(
    "loss aggregation", "add one with @scalerl.rl.aggregate.register_aggregation('name')"
)


def register_aggregation(name: str, *, replace: bool = False) -> Callable[[Aggregation], Aggregation]:
    """Decorator: make ``weights(mask, group) -> (B, T)`` selectable as ``aggregation``."""
    return AGGREGATIONS.register(name, replace=replace)


def aggregation_weights(
    name: str | Aggregation, mask: Tensor, group: Tensor, dtype: torch.dtype = torch.float32
) -> Tensor:
    """Per-token weights (B, T) of the aggregation ``name`` (or the function itself); they sum to 1
    unless all is masked."""
    weights = AGGREGATIONS.get(name) if isinstance(name, str) else name
    return weights(mask.to(dtype), group)


def aggregate_loss(per_token: Tensor, mask: Tensor, group: Tensor, name: str) -> Tensor:
    """The scalar loss ``sum(weights * per_token)`` for one whole batch."""
    weights = aggregation_weights(name, mask, group, dtype=per_token.dtype)
    return (weights * per_token).sum()


@register_aggregation("token")
def token_weights(mask: Tensor, group: Tensor) -> Tensor:
    return mask / mask.sum().clamp_min(1)


@register_aggregation("sample")
def sample_weights(mask: Tensor, group: Tensor) -> Tensor:
    lengths = mask.sum(dim=1)
    n_sequences = (lengths > 0).sum().clamp_min(1)
    return mask / (lengths.clamp_min(1).unsqueeze(1) * n_sequences)


@register_aggregation("prompt")
def prompt_weights(mask: Tensor, group: Tensor) -> Tensor:
    # Group ids may be any integers (e.g. dataset indices); make them 0..G-1 first.
    _, index = torch.unique(group, return_inverse=True)
    lengths = mask.sum(dim=1)
    group_tokens = torch.zeros(int(index.max()) + 1 if index.numel() else 0, dtype=mask.dtype, device=mask.device)
    group_tokens.index_add_(0, index, lengths)
    n_prompts = (group_tokens > 0).sum().clamp_min(1)
    return mask / (group_tokens[index].clamp_min(1).unsqueeze(1) * n_prompts)
