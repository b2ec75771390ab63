"""The decode loop's KV cache: appends into spare room instead of concatenating every step.

transformers' ``DynamicLayer`` grows by ``torch.cat([keys, new], dim=-2)``: every decode step
copies the whole cache of every layer (and allocates a new one), so a completion of T tokens
costs O(T^2) copying. On the tiny CPU model that ``cat`` was 9-13% of the generator's time
(py-spy, 128 rows x ~25 steps). :class:`AppendLayer` keeps each layer's keys and values in a
buffer with spare room along the sequence dimension and writes the new step into it; the
attention reads a view of the filled part (same values, same layout ``[batch, heads, length,
head_dim]``). The buffer grows by ``GROW`` positions at a time, so it is re-copied once per
``GROW`` steps instead of every step; selecting rows (the group expansion after the shared
prefill, dropping finished rows) copies the filled part plus the spare room only.

Only the generator uses it (inference: no autograd through the in-place writes); the trainer's
shared-prompt pass keeps transformers' own cache (:func:`scalerl.generate.layout.new_cache`).
Layers of other kinds (sliding windows, linear attention) are left as transformers makes them.

    cache = decode_cache(model)   # pass as the model's cache argument, like a DynamicCache
"""

from __future__ import annotations

from typing import Any

import torch
from transformers.cache_utils import DynamicLayer

from scalerl.generate.layout import new_cache

#: Spare positions added when a buffer fills up. Larger: fewer re-copies, more memory and more
#: bytes copied per row selection; 16 re-copies the cache about twice in a 48-token completion.
GROW = 16


class AppendLayer(DynamicLayer):
    """A full-attention cache layer that writes new keys / values into spare room.

    ``keys`` / ``values`` are views ``[batch, heads, length, head_dim]`` of the buffers, as
    transformers expects of a ``DynamicLayer``.
    """

    def __init__(self) -> None:
        super().__init__()
        self._k: torch.Tensor | None = None
        self._v: torch.Tensor | None = None
        self._len = 0

    def lazy_initialization(self, key_states: torch.Tensor, value_states: torch.Tensor) -> None:
        self.device = key_states.device
        self.is_initialized = True

    def _resize(self, capacity: int) -> None:
        """New buffers with room for ``capacity`` positions holding the filled part."""
        k, v = self._k[:, :, : self._len], self._v[:, :, : self._len]
        new_k = k.new_empty((k.shape[0], k.shape[1], capacity, k.shape[3]))
        new_v = v.new_empty((v.shape[0], v.shape[1], capacity, v.shape[3]))
        new_k[:, :, : self._len] = k
        new_v[:, :, : self._len] = v
        self._k, self._v = new_k, new_v

    def _views(self) -> None:
        self.keys, self.values = self._k[:, :, : self._len], self._v[:, :, : self._len]

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs
               ) -> tuple[torch.Tensor, torch.Tensor]:
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
        end = self._len + key_states.shape[-2]
        if self._k is None:  # the prefill: exactly its length plus spare room
            b, h, _, d = key_states.shape
            self._k = key_states.new_empty((b, h, end + GROW, d))
            self._v = value_states.new_empty((b, h, end + GROW, value_states.shape[-1]))
        elif end > self._k.shape[-2]:
            self._resize(end + GROW)
        self._k[:, :, self._len : end] = key_states
        self._v[:, :, self._len : end] = value_states
        self._len = end
        self._views()
        return self.keys, self.values

    def get_seq_length(self) -> int:
        return self._len

    def reset(self) -> None:
        self._k = self._v = None
        self._len = 0
        super().reset()

    def _unsupported(self, *args, **kwargs) -> None:
        raise NotImplementedError("AppendLayer serves scalerl's decode loop only (no cropping, beams or repeats)")

    crop = batch_repeat_interleave = reorder_cache = _unsupported

    def batch_select_indices(self, indices: torch.Tensor) -> None:
        # One gather of whole buffers (spare room included): indexing the filled views first and
        # copying them into new buffers copied every kept byte twice (~1 ms a layer at 128 rows).
        if self._len > 0:
            self._k = self._k.index_select(0, indices)
            self._v = self._v.index_select(0, indices)
            self._views()


def decode_cache(model: Any) -> Any:
    """A transformers cache for ``model`` whose full-attention layers are :class:`AppendLayer`."""
    cache = new_cache(model)
    layers = getattr(cache, "layers", None)
    if layers:  # built from the config: one layer object per decoder layer
        cache.layers = [AppendLayer() if type(layer) is DynamicLayer else layer for layer in layers]
    elif hasattr(cache, "layer_class_to_replicate") and cache.layer_class_to_replicate is DynamicLayer:
        cache.layer_class_to_replicate = AppendLayer  # lazily built: one per layer on first use
    return cache
