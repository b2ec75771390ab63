"""Teacher-forced log-probs of completions: what the trainer computes as ``log pi_train``.

Same layout as the generator (:mod:`scalerl.generate.layout`: prompts left-padded, completions
right-padded after them, position ids counting real tokens only) and the same convention
(:func:`scalerl.generate.sampling.token_logprobs`: fp32, after temperature), so that on
unchanged weights the result equals the generator's recorded log-probs up to float noise.
Only the completion positions go through the LM head (``logits_to_keep``), which matters for
large vocabularies.
"""

from __future__ import annotations

from typing import Any, Sequence

import torch

from scalerl.generate.base import Completion
from scalerl.generate.head_chunks import chunked_logprobs, head_of, needs_chunks
from scalerl.generate.layout import forward_kwargs, left_pad, new_cache, no_router_logits, position_ids, rows_selectable
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
    length = max((len(c.token_ids) for c in completions), default=0)
    prompt_ids, attention = left_pad([c.prompt_ids for c in completions], pad_token_id, extra=length)
    width = prompt_ids.shape[1]
    c_ids, c_mask, loss_mask = _right_pad(completions, length, pad_token_id)
    ids = torch.cat([prompt_ids, c_ids], dim=1)
    attention[:, width:] = c_mask
    positions = position_ids(attention)
    out = {
        "input_ids": ids,
        "attention_mask": attention,
        "position_ids": positions,
        "completion_ids": ids[:, width:],
        "completion_mask": attention[:, width:],
        "loss_mask": loss_mask,
    }
    return {k: v.to(device) for k, v in out.items()}


def completion_logprobs(model: Any, batch: dict[str, torch.Tensor], temperature: float,
                        logits_budget: int = 0) -> torch.Tensor:
    """``log pi(token)`` of every completion position, ``[B, T]`` fp32 (0 where padded).

    Runs under the caller's grad mode: the trainer calls it with gradients on. ``logits_budget``:
    bytes the fp32 logits may take at once; above it the LM head runs in chunks
    (:mod:`scalerl.generate.head_chunks`; same log-probs). 0: in one piece.
    """
    length = batch["completion_ids"].shape[1]
    if length == 0:
        return torch.zeros(batch["completion_ids"].shape, dtype=torch.float32, device=batch["input_ids"].device)
    inputs = dict(input_ids=batch["input_ids"], attention_mask=batch["attention_mask"],
                  position_ids=batch["position_ids"], use_cache=False, **no_router_logits(model))
    # Position j predicts token j + 1: of the last T + 1 positions, all but the final one score the T tokens.
    scoring = lambda t: t[:, -(length + 1) : -1]  # noqa: E731
    head = head_of(model)
    if needs_chunks(*batch["completion_ids"].shape, head, logits_budget):
        logprobs = chunked_logprobs(model, head, batch["completion_ids"], temperature, logits_budget, scoring, **inputs)
        if logprobs is not None:
            return logprobs * batch["completion_mask"]
    extra = {"logits_to_keep": length + 1} if forward_kwargs(model)[1] else {}
    logits = scoring(model(**inputs, **extra).logits)
    return token_logprobs(logits, batch["completion_ids"], temperature) * batch["completion_mask"]


def checkpointing_enabled(model: Any) -> bool:
    """Whether gradient (activation) checkpointing is on (the attribute's name changed in transformers 5)."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name):
            return bool(getattr(model, name))
    return False


def shared_prompt_logprobs(
    model: Any, completions: Sequence[Completion], temperature: float, pad_token_id: int, device: torch.device | str = "cpu",
    logits_budget: int = 0,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Like :func:`completion_logprobs`, but each distinct prompt goes through the model once.

    A group's G completions share one prompt; the plain forward recomputes it G times (a
    quarter of the tokens of a short-prompt task). Here the distinct prompts are run once with
    a KV cache, the cache is expanded to the completions by indexing (so gradients from every
    completion flow back into the one prompt pass), and the completions run on top of it. The
    first completion token is scored by the prompt's last position, the rest by the
    completion pass. Same log-probs as the full forward up to float rounding (tested).

    Returns ``(logprobs [N, T], completion_ids [N, T], completion_mask [N, T])``. ``logits_budget``:
    as in :func:`completion_logprobs`.
    """
    cache = new_cache(model)
    # A checkpointed layer drops the KV cache in training (transformers does, as the replay would
    # write it twice); a recurrent layer's cache cannot be expanded to the rows. Either way the
    # prompt pass cannot be shared: score every sequence whole.
    if (model.training and torch.is_grad_enabled() and checkpointing_enabled(model)) or not rows_selectable(cache):
        batch = pack_completions(completions, pad_token_id, device)
        logprobs = completion_logprobs(model, batch, temperature, logits_budget)
        return logprobs, batch["completion_ids"], batch["completion_mask"]
    keys: dict[tuple[int, ...], int] = {}
    inverse = [keys.setdefault(tuple(c.prompt_ids), len(keys)) for c in completions]
    n = len(completions)
    length = max((len(c.token_ids) for c in completions), default=0)
    p_ids, p_mask = left_pad(list(keys), pad_token_id)
    c_ids, c_mask, _ = _right_pad(completions, length, pad_token_id)
    p_ids, p_mask, c_ids, c_mask = (t.to(device) for t in (p_ids, p_mask, c_ids, c_mask))
    inv = torch.tensor(inverse, dtype=torch.long, device=device)
    if length == 0:
        return torch.zeros((n, 0), device=device), c_ids, c_mask

    cache_arg, keeps_logits = forward_kwargs(model)
    keep = {"logits_to_keep": 1} if keeps_logits else {}
    p_pos = position_ids(p_mask)
    fixed = no_router_logits(model)
    first = model(input_ids=p_ids, attention_mask=p_mask, position_ids=p_pos, use_cache=True,
                  **{cache_arg: cache}, **keep, **fixed).logits[:, -1:, :]
    cache.batch_select_indices(inv)  # expand: completion i attends to the K/V of its prompt
    mask = torch.cat([p_mask[inv], c_mask], dim=1)
    pos = position_ids(mask)[:, p_mask.shape[1]:]  # the completions continue their prompt's count
    inputs = dict(input_ids=c_ids, attention_mask=mask, position_ids=pos, use_cache=True, **{cache_arg: cache}, **fixed)
    head = head_of(model)
    if needs_chunks(n, length, head, logits_budget):
        # The prompt's last position scores the first token (its logits are one position: kept);
        # the completion pass's positions score the rest, its head in chunks.
        rest = chunked_logprobs(model, head, c_ids[:, 1:], temperature, logits_budget, lambda t: t[:, :-1], **inputs)
        if rest is not None:
            first_lp = token_logprobs(first[inv], c_ids[:, :1], temperature)
            return torch.cat([first_lp, rest], dim=1) * c_mask, c_ids, c_mask
        # Not chunkable after all: the KV cache now holds the completions, so start over whole.
        return shared_prompt_logprobs(model, completions, temperature, pad_token_id, device)
    rest = model(**inputs).logits
    logits = torch.cat([first[inv], rest[:, :-1, :]], dim=1)
    return token_logprobs(logits, c_ids, temperature) * c_mask, c_ids, c_mask


def _right_pad(completions: Sequence[Completion], length: int, pad_token_id: int
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """``(token ids, real-token mask, the generator's loss mask)``, each ``[B, length]``."""
    n = len(completions)
    ids = torch.full((n, length), pad_token_id, dtype=torch.long)
    mask = torch.zeros((n, length), dtype=torch.long)
    loss_mask = torch.zeros((n, length), dtype=torch.long)
    for i, c in enumerate(completions):
        t = len(c.token_ids)
        ids[i, :t] = torch.as_tensor(c.token_ids, dtype=torch.long)
        mask[i, :t] = 1
        loss_mask[i, :t] = torch.as_tensor(c.loss_mask, dtype=torch.long)
    return ids, mask, loss_mask
