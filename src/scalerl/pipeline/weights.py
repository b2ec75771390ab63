"""Where the generators' weights are read from: a model held whole, or a stream off the trainer's shards.

A :class:`WeightSource` yields the policy's weights as a generator loads them (LoRA merged in),
one named tensor at a time. Ray's weight sync (:mod:`scalerl.pipeline.ray_backend`) reads
every update through one:

* :class:`ModelWeights` -- a model the trainer holds whole: the trainer's own in one process,
  or rank 0's generator copy of a trainer group;
* under ``run.generate_on_shards`` with ``--nproc``, the trainer group's stream
  (:class:`scalerl.train.shard_weights.ShardWeights`): every rank gathers each tensor in turn
  and rank 0 hands it on, so no device ever holds a whole copy of a model bigger than one.

A stream over ranks is a collective per tensor: :meth:`WeightSource.tensors` must be consumed
to its end, in the trainer's main thread (where the ranks' other orders come from).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator, Protocol, Union

import torch

from scalerl.models.lora import generator_state_dict


class WeightSource(Protocol):
    """The weights the generators load, one tensor at a time."""

    @property
    def device(self) -> torch.device:
        """Where :meth:`tensors` yields them (a NCCL broadcast sends from there)."""
        ...

    def tensors(self) -> Iterator[tuple[str, torch.Tensor]]:
        """Every state-dict entry once, by name (consume it to the end)."""
        ...

    def meta(self) -> list[tuple[str, torch.dtype, tuple[int, ...]]]:
        """Name, dtype and shape of what :meth:`tensors` yields, in its order, without producing it."""
        ...


@dataclass
class ModelWeights:
    """The weights of a model held whole (LoRA adapters merged: :func:`generator_state_dict`)."""

    model: torch.nn.Module

    @property
    def device(self) -> torch.device:
        return next(self.model.parameters()).device

    def tensors(self) -> Iterator[tuple[str, torch.Tensor]]:
        yield from generator_state_dict(self.model).items()

    def meta(self) -> list[tuple[str, torch.dtype, tuple[int, ...]]]:
        return [(k, v.dtype, tuple(v.shape)) for k, v in generator_state_dict(self.model).items()]


#: What the trainer hands the rollout source after an update: its model, or a source of weights.
Weights = Union[torch.nn.Module, WeightSource]


def weight_source(weights: Weights) -> WeightSource:
    """``weights`` as a :class:`WeightSource` (a model is read whole)."""
    return ModelWeights(weights) if isinstance(weights, torch.nn.Module) else weights
