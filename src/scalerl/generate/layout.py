"""The token layout of a batch of prompts, written once for every forward pass over them.

Prompts are **left-padded** to a common width, so that every row's last prompt token sits in
the same column and generation appends in lock step; completions follow to the right.
**Position ids count real tokens only**: a row's positions do not depend on how much padding
it got, so the same sequence gets the same numbers in the generator's batched decode
(:mod:`scalerl.generate.hf`), in the trainer's teacher-forced recomputation
(:mod:`scalerl.generate.logprobs`) and in the shared-prompt variant of it -- the importance
ratio is exactly 1 on unchanged weights only if all of them agree.

    ids, mask = left_pad(prompts, pad_id)              # [B, P] each
    positions = position_ids(mask)                    # 0, 1, 2, ... from each row's first token
    cache_arg, keeps = forward_kwargs(model)          # transformers' names for the cache / logits_to_keep
    extra = no_router_logits(model)                   # keyword arguments of every forward
"""

from __future__ import annotations

import functools
import inspect
from typing import Any, Sequence

import torch

from scalerl.errors import InputError

#: Why a model with no end-of-sequence id cannot be trained or evaluated, and what to do: every
#: completion would run to the token budget, and the answer phase could never end.
NO_EOS = ("the model defines no end-of-sequence token: no eos_token in its tokenizer (tokenizer_config.json), "
          "no eos_token_id in config.json or generation_config.json, so no completion could end before the "
          "token budget; set one (e.g. tokenizer.eos_token = '<|im_end|>' or config.eos_token_id = ID, then "
          "save_pretrained) and run again")


def left_pad(prompts: Sequence[Sequence[int]], pad_id: int, *, extra: int = 0) -> tuple[torch.Tensor, torch.Tensor]:
    """``(ids [B, P], attention_mask [B, P + extra])``: prompts right-aligned at width ``P`` (the
    longest prompt); the mask has ``extra`` zero columns after them, for tokens still to come."""
    width = max(len(p) for p in prompts)
    ids = torch.full((len(prompts), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(prompts), width + extra), dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p) : width] = torch.as_tensor(list(p), dtype=torch.long)
        mask[i, width - len(p) : width] = 1
    return ids, mask


def position_ids(mask: torch.Tensor) -> torch.Tensor:
    """Position of every column of ``mask`` counted in real tokens (padding on the left gets 0)."""
    return (mask.cumsum(-1) - 1).clamp(min=0)


def forward_kwargs(model: Any) -> tuple[str, bool]:
    """Name of the cache argument (``cache`` in transformers 5, ``past_key_values`` before) and
    whether the model accepts ``logits_to_keep`` (compute the LM head for the last positions only)."""
    params = inspect.signature(model.forward).parameters
    return ("cache" if "cache" in params else "past_key_values"), "logits_to_keep" in params


def no_router_logits(model: Any) -> dict[str, bool]:
    """``{"output_router_logits": False}`` where ``model``'s forward takes that argument, else ``{}``:
    passed by every decoding and scoring forward.

    A mixture-of-experts checkpoint saved with ``output_router_logits: true`` in its config (after
    training with the router's load-balancing loss) makes each forward compute that loss from the
    attention mask. In a decode step, or a pass over a KV cache, the mask covers the cached
    positions too while the router saw only the new ones, and the forward raised (transformers' own
    ``generate`` does as well). Nothing here uses the loss -- transformers adds it to the loss only
    with ``labels``, which no RL loss passes -- so asking for no router logits changes no number."""
    takes = "output_router_logits" in inspect.signature(model.forward).parameters
    return {"output_router_logits": False} if takes else {}


def new_cache(model: Any) -> Any:
    """An empty cache for ``model``: a ``DynamicCache``, or the cache class of its own that a model
    transformers' ``generate`` gives no ``DynamicCache`` needs (MiniMax's ``MiniMaxCache``, which
    keeps the lightning-attention layers' state beside the keys and values; its forward refuses any
    other). :class:`InputError` for a model whose state is no transformers cache at all."""
    from transformers import DynamicCache

    own = _own_cache_class(model)
    if own is not None:
        return _laid_out(own(), model.config)
    try:
        return DynamicCache(config=model.config)
    except TypeError:  # older transformers: no config argument
        return DynamicCache()


def _laid_out(cache: Any, config: Any) -> Any:
    """``cache`` with a layer object per decoder layer where it is a ``MiniMaxCache``: a
    ``DummyLayer`` for each lightning-attention layer (its state is in ``linear_cache``) and an
    empty ``DynamicLayer`` for each softmax-attention one.

    Built empty, a ``MiniMaxCache`` adds a ``DynamicLayer`` for every layer up to the last that
    stores keys, linear ones included, and transformers sizes the attention mask of a decode step
    by the first layer's length -- in MiniMax-Text-01 a linear layer whose ``DynamicLayer`` stays
    empty: the mask covered the new token only, so left-padded rows attended to their padding (log-
    probs up to 4e-4 off a plain forward on a random model). A ``DummyLayer`` is what transformers'
    mask code skips to find the first attention layer. ``linear_cache`` is laid out as the class
    itself pads it (``[]`` where a layer keeps no linear state), with None for a linear state not
    yet computed (what ``get_linear_cache`` returns before the prompt pass)."""
    from transformers.cache_utils import DummyLayer, DynamicLayer

    layer_types = getattr(config, "layer_types", None)
    if not hasattr(cache, "linear_cache") or not layer_types:
        return cache
    linear = [t == "linear_attention" for t in layer_types]
    cache.layers = [DummyLayer() if is_linear else DynamicLayer() for is_linear in linear]
    cache.linear_cache = [None if is_linear else [] for is_linear in linear]
    return cache


def _own_cache_class(model: Any) -> type | None:
    """The ``Cache`` subclass ``model``'s modeling module defines for it, where transformers says the
    model cannot use a ``DynamicCache`` (``_supports_default_dynamic_cache``; the model builds its
    own cache when given none, so no public factory exists); None where a ``DynamicCache`` does."""
    import sys

    from transformers import PreTrainedModel
    from transformers.cache_utils import Cache

    # The transformers model itself, under a peft or FSDP wrapper.
    hf = next((m for m in model.modules() if isinstance(m, PreTrainedModel)), None) if hasattr(model, "modules") else None
    supports = getattr(hf, "_supports_default_dynamic_cache", None)
    if hf is None or supports is None or supports():
        return None
    for cls in type(hf).__mro__:
        module = sys.modules.get(cls.__module__)
        found = [c for c in vars(module).values() if isinstance(c, type) and issubclass(c, Cache)
                 and c.__module__ == module.__name__] if module is not None else []
        if len(found) == 1:
            return found[0]
    raise InputError(f"{type(hf).__name__} keeps a decoding state that is not a transformers cache (transformers' "
                     "generate gives it no DynamicCache and its module defines no Cache class), which scalerl's "
                     "decode loop and scoring pass need: use a model of another architecture")


def _linear_attention_layer_type() -> type | tuple:
    try:
        from transformers.cache_utils import LinearAttentionCacheLayerMixin
    except ImportError:  # transformers before linear-attention caches: every layer is attention
        return ()
    return LinearAttentionCacheLayerMixin


def attends(cache: Any) -> bool:
    """Whether any layer of the model behind ``cache`` is attention (keeps keys and values). A
    model made only of recurrent layers (Mamba) reads the attention mask solely to zero padded
    inputs, which a decode step never has -- and expects none then: transformers' own generate
    passes it no mask after the prompt, and a full-length one would be broadcast over the step."""
    from transformers.cache_utils import DynamicLayer

    recurrent = _linear_attention_layer_type()
    layers = getattr(cache, "layers", None) or []
    return not layers or any(isinstance(layer, DynamicLayer) or not isinstance(layer, recurrent) for layer in layers)


def rows_selectable(cache: Any) -> bool:
    """Whether ``cache.batch_select_indices`` keeps a cache's rows whole: true of attention caches
    (keys and values), not of the recurrent and convolution states of state-space / linear-attention
    layers (Mamba, and the hybrids: Qwen3-Next, Jamba, Falcon-H1, Granite 4, ...). transformers
    gives a pure recurrent layer no row selection at all, and a hybrid layer its attention half's,
    which would leave the recurrent states of the other rows in place; nor of an attention layer
    whose extra per-row state only ``reorder_cache`` knows (:func:`_selection_covers_reorder`); nor
    of a cache that keeps state outside its layers (:func:`_state_outside_layers`). Without it the
    generator decodes every row to the end and runs the prompt of a group once per row, and the
    trainer scores every sequence whole: the same numbers, more compute."""
    recurrent = _linear_attention_layer_type()
    layers = getattr(cache, "layers", None) or []
    return not _state_outside_layers(type(cache)) and all(
        callable(getattr(layer, "batch_select_indices", None)) and not isinstance(layer, recurrent)
        and _selection_covers_reorder(type(layer)) for layer in layers)


@functools.cache
def _state_outside_layers(cls: type) -> bool:
    """Whether a cache class selects rows with a ``batch_select_indices`` of its own rather than
    transformers' (which selects each layer's): it keeps per-row state beside its layers, whose
    selection scalerl cannot check. MiniMax's ``MiniMaxCache`` keeps the lightning-attention state
    in a list that ends at the last linear layer, and its selection walks every layer: with a
    softmax-attention layer last (MiniMax-Text-01's layout) it raised ``IndexError: list index out
    of range`` at the first group expansion. Treated as not selectable: the same numbers."""
    from transformers.cache_utils import Cache

    owner = next((c for c in cls.__mro__ if "batch_select_indices" in vars(c)), None)
    return owner is not None and owner.__module__ != Cache.__module__


@functools.cache  # one answer per cache-layer class; asked at every generate call and update pass
def _selection_covers_reorder(cls: type) -> bool:
    """Whether ``cls.batch_select_indices`` is defined at or below the class that defines its
    ``reorder_cache``. A cache layer with per-row state beyond keys and values extends
    ``reorder_cache`` for it (beam search needs it); when it inherits ``batch_select_indices``
    from further up, a selection keeps that state's old rows (DeepSeek-V4's compressor buffers:
    the next step failed on 8 rows of buffer against 16 of keys). Those caches are treated as
    not selectable: every row decoded to the end, the same numbers."""
    def owner(name: str) -> type | None:
        return next((c for c in cls.__mro__ if name in vars(c)), None)

    select, reorder = owner("batch_select_indices"), owner("reorder_cache")
    return reorder is None or select is None or issubclass(select, reorder)


def eos_ids(model: Any, tokenizer: Any) -> list[int]:
    """Every id that ends a completion: the model's generation config, its config, the tokenizer."""
    return eos_ids_of(getattr(model, "generation_config", None), model.config, tokenizer)


def eos_ids_of(*sources: Any) -> list[int]:
    """The ``eos_token_id`` of every source that has one (a generation config, a model config, a
    tokenizer; Llama 3 lists several ids in one), together; :class:`InputError` when none has."""
    ids: set[int] = set()
    for source in sources:
        value = getattr(source, "eos_token_id", None) if source is not None else None
        if value is not None:
            ids.update(value if isinstance(value, (list, tuple)) else [value])
    if not ids:
        raise InputError(NO_EOS)
    return sorted(ids)


def pad_id_of(model: Any, tokenizer: Any) -> int:
    """The id padding is written with: the tokenizer's pad token, else the first EOS id -- the first
    of them the model's input embedding has a row for. Padding is masked out everywhere, so any id
    would do (generator and trainer use the same one), but it is still looked up in the embedding:
    a pad token added to the tokenizer without ``resize_token_embeddings`` (``add_special_tokens(
    {"pad_token": ...})``, a common fix for a tokenizer with none) raised torch's ``IndexError:
    index out of range in self`` at the first batch with prompts of different lengths."""
    rows = embedding_rows(model)
    pad = tokenizer.pad_token_id
    if pad is not None and (rows is None or 0 <= pad < rows):
        return pad
    return next((i for i in eos_ids(model, tokenizer) if rows is None or 0 <= i < rows), 0)


def embedding_rows(model: Any) -> int | None:
    """Rows of the model's input embedding (ids 0 to rows - 1 can be looked up), None if unknown."""
    embedding = model.get_input_embeddings() if hasattr(model, "get_input_embeddings") else None
    rows = getattr(embedding, "num_embeddings", None)
    return rows if isinstance(rows, int) else None
