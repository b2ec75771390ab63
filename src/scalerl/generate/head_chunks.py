"""The LM head in chunks: a trainer's log-probs without the whole batch's logits in memory.

Scoring completions needs ``log_softmax`` over the vocabulary at every completion position.
Computed in one piece that is a ``[rows, positions, vocab]`` fp32 tensor -- and autograd keeps
it, plus the log-softmax, for the backward pass. For a real model that is what runs out of
memory first: Qwen2.5's 151,936-token vocabulary makes 2.5 GB of fp32 logits for *one*
4,096-token completion, 160 GB for a micro-batch of 64 of them. (TRL, verl and torchtune
chunk the same computation; Liger fuses it into one kernel.)

:func:`chunked_logprobs` runs the decoder once and returns its final hidden states
(``output_hidden_states``, with the head computed for the last position only:
``logits_to_keep=1``), then applies the head to ``positions`` positions at a time, each chunk
under activation checkpointing: only the hidden states and the per-token log-probs are kept
between the passes, and the backward pass recomputes one chunk's logits at a time. The extra
cost is one more head matmul per chunk in the backward pass.

Hugging Face models that post-process the head's output (Gemma 2's logit soft-capping,
Cohere's logit scale, ...) would be scored wrongly by ``head(hidden)``. The head the model
computed for the last position is the check, at no cost, on every call: where ``head(hidden)``
does not reproduce it, the model is remembered as not chunkable and scored with its own
logits from then on. So are models without ``logits_to_keep``.

Under FSDP2 the head belongs to the root unit (scalerl.train.distributed.shard), whose weights
FSDP gathers for the root's forward and, for training, keeps gathered until the backward pass
is over (the root is not resharded after its forward): the chunks run on those gathered weights
after the forward, their recomputation in the backward pass too, and the head's gradient is
reduce-scattered with the root's at the end of the backward pass. A head that is an FSDP unit
of its own, or whose weights are shards again once the forward returns, is scored whole.
"""

from __future__ import annotations

import sys
import weakref
from typing import Any, Callable

import torch
from torch.utils.checkpoint import checkpoint

from scalerl.generate.layout import forward_kwargs
from scalerl.generate.sampling import token_logprobs

#: Models found not to be scored correctly by ``head(final hidden state)``.
_NOT_CHUNKABLE: "weakref.WeakSet[Any]" = weakref.WeakSet()

#: Bytes of one logit (the head's output is fp32 under the FP32 head, and log-softmax is fp32).
LOGIT_BYTES = 4


def head_of(model: Any) -> torch.nn.Module | None:
    """The model's output projection, where its log-probs may be computed in chunks; else None."""
    if model in _NOT_CHUNKABLE or not forward_kwargs(model)[1]:
        return None
    get = getattr(model, "get_output_embeddings", None)
    head = get() if callable(get) else None
    if not isinstance(head, torch.nn.Linear):
        return None
    if _sharded(head.weight) and not _in_fsdp_root(model, head):
        return None
    return head


def _sharded(weight: torch.Tensor) -> bool:
    return hasattr(weight, "full_tensor")  # a DTensor: an FSDP shard


def _in_fsdp_root(model: Any, head: torch.nn.Module) -> bool:
    """Whether ``head``'s weights are the FSDP root ``model``'s own (gathered by its forward).
    Looked up in ``sys.modules``: a model can be an FSDP module only where FSDP was imported."""
    fsdp = sys.modules.get("torch.distributed.fsdp")
    unit = getattr(fsdp, "FSDPModule", None)
    return unit is not None and isinstance(model, unit) and not isinstance(head, unit)


def chunk_positions(budget_bytes: int, vocab: int) -> int:
    """Positions per chunk whose fp32 logits fit in ``budget_bytes`` (at least one)."""
    return max(1, budget_bytes // (LOGIT_BYTES * vocab))


def needs_chunks(rows: int, positions: int, head: torch.nn.Module | None, budget_bytes: int) -> bool:
    """Whether the logits of ``rows`` x ``positions`` would exceed the budget (and can be chunked)."""
    return head is not None and budget_bytes > 0 and rows * positions * head.out_features * LOGIT_BYTES > budget_bytes


def chunked_logprobs(model: Any, head: torch.nn.Module, tokens: torch.Tensor, temperature: float, budget_bytes: int,
                     select: Callable[[torch.Tensor], torch.Tensor], **inputs: Any) -> torch.Tensor | None:
    """``token_logprobs(logits, tokens, temperature)`` where ``logits`` would be
    ``select(model(**inputs).logits)``, the head applied in chunks (see the module docstring).

    ``select`` picks, from ``[rows, length, ...]``, the positions that score ``tokens``
    (``[rows, T]``); it is applied to the final hidden states instead. Returns None -- and
    remembers the model -- when ``head(hidden)`` does not reproduce the model's own logits:
    the caller then computes them the plain way.
    """
    try:
        out = model(**inputs, output_hidden_states=True, logits_to_keep=1)
    except TypeError:  # a forward that takes no output_hidden_states: a plain forward will tell why
        _NOT_CHUNKABLE.add(model)
        return None
    if not out.hidden_states:
        _NOT_CHUNKABLE.add(model)
        return None
    hidden = out.hidden_states[-1]
    if _sharded(head.weight):  # FSDP resharded the root after its forward: the head has no weights to use
        _NOT_CHUNKABLE.add(model)
        return None
    with torch.no_grad():
        # The very call the model made (same input, same shape: same kernel), so a plain head
        # matches to rounding; post-processing as gentle as Gemma 2's soft-capping of a random
        # model's logits (~4e-4) does not.
        own = out.logits[:, -1:, :].float()
        mine = head(hidden[:, -1:, :]).float()
    if own.shape != mine.shape or not torch.allclose(mine, own, rtol=1e-5, atol=1e-5):
        _NOT_CHUNKABLE.add(model)
        return None
    h = select(hidden)
    rows, positions = tokens.shape
    if rows * positions == 0:
        return torch.zeros((rows, positions), dtype=torch.float32, device=hidden.device)
    flat_h, flat_t = h.reshape(rows * positions, h.shape[-1]), tokens.reshape(rows * positions)
    step = chunk_positions(budget_bytes, head.out_features)

    def score(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return token_logprobs(head(x), y, temperature)

    pieces = []
    for s in range(0, flat_t.shape[0], step):
        x, y = flat_h[s : s + step], flat_t[s : s + step]
        # Recomputed in the backward pass: the chunk's logits are not kept (nor under no_grad made).
        pieces.append(checkpoint(score, x, y, use_reentrant=False) if torch.is_grad_enabled() else score(x, y))
    return torch.cat(pieces).reshape(rows, positions)
