"""Teacher-forced log-probs of completions: what the trainer computes as ``log pi_train``.

Same layout as the generator (prompts left-padded, completions right-padded after them,
position ids counting real tokens only) and the same convention
(:func:`scalerl.generate.sampling.token_logprobs`: fp32, after temperature), so that on
unchanged weights the result equals the generator's recorded log-probs up to float noise.
Only the completion positions go through the LM head (``logits_to_keep``), which matters for
large vocabularies.
"""

from __future__ import annotations

import inspect
from typing import Any, Sequence

import torch

from scalerl.generate.base import Completion
from scalerl.generate.sampling import token_logprobs


def pack_completions(
    completions: Sequence[Completion], pad_token_id: int, device: torch.device | str = "cpu"
) -> dict[str, torch.Tensor]:
    """Batch tensors for a teacher-forced forward.

    Returns ``input_ids``/``attention_mask``/``position_ids`` ``[B, P + T]`` (prompt left-padded
    to ``P``, completion right-padded to ``T``), ``completion_ids [B, T]``, ``completion_mask
    [B, T]`` (1 on real completion tokens) and ``loss_mask [B, T]`` (the generator's mask:
    0 on forced tokens and padding).
    """
    width = max(len(c.prompt_ids) for c in completions)
    length = max((len(c.token_ids) for c in completions), default=0)
    n = len(completions)
    ids = torch.full((n, width + length), pad_token_id, dtype=torch.long)
    attention = torch.zeros((n, width + length), dtype=torch.long)
    loss_mask = torch.zeros((n, length), dtype=torch.long)
    for i, c in enumerate(completions):
        p, t = len(c.prompt_ids), len(c.token_ids)
        ids[i, width - p : width] = torch.as_tensor(c.prompt_ids, dtype=torch.long)
        ids[i, width : width + t] = torch.as_tensor(c.token_ids, dtype=torch.long)
        attention[i, width - p : width + t] = 1
        loss_mask[i, :t] = torch.as_tensor(c.loss_mask, dtype=torch.long)
    positions = (attention.cumsum(-1) - 1).clamp(min=0)
    out = {
        "input_ids": ids,
        "attention_mask": attention,
        "position_ids": positions,
        "completion_ids": ids[:, width:],
        "completion_mask": attention[:, width:],
        "loss_mask": loss_mask,
    }
    return {k: v.to(device) for k, v in out.items()}


def completion_logprobs(model: Any, batch: dict[str, torch.Tensor], temperature: float) -> torch.Tensor:
    """``log pi(token)`` of every completion position, ``[B, T]`` fp32 (0 where padded).

    Runs under the caller's grad mode: the trainer calls it with gradients on.
    """
    length = batch["completion_ids"].shape[1]
    if length == 0:
        return torch.zeros(batch["completion_ids"].shape, dtype=torch.float32, device=batch["input_ids"].device)
    extra = {"logits_to_keep": length + 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}
    out = model(
        input_ids=batch["input_ids"],
        attention_mask=batch["attention_mask"],
        position_ids=batch["position_ids"],
        use_cache=False,
        **extra,
    )
    # Position j predicts token j + 1: of the last T + 1 positions, all but the final one score the T tokens.
    logits = out.logits[:, -(length + 1) : -1, :]
    return token_logprobs(logits, batch["completion_ids"], temperature) * batch["completion_mask"]
