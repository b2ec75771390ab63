"""The generators' weights streamed off the trainer group's shards (``run.generate_on_shards``).

Under ``--nproc`` rank 0 normally keeps a whole generator copy of the policy on its device,
refreshed after every update, and the generators' weights are read from it. For a model bigger
than one device there is no such copy: :class:`ShardWeights` is the
:class:`~scalerl.pipeline.weights.WeightSource` that replaces it. Each time the generators need
the weights (Ray's actors after every update, local generator processes), every rank all-gathers
one tensor at a time (:meth:`TrainerGroup.stream_weights`); rank 0 casts it to the generators'
dtype and hands it on -- into host memory for Ray's object store or a process pool's shared
memory, or straight into a NCCL broadcast to vLLM -- before the next is gathered. At most one
whole tensor is on a device beside the shards.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Iterator

import torch

from scalerl.train.distributed import TrainerGroup


@dataclass
class ShardWeights:
    """The full weights of ``group``'s sharded policy in ``dtype``, one tensor at a time (rank 0)."""

    group: TrainerGroup
    dtype: torch.dtype
    """The generators' dtype (the run's compute dtype): what a generator copy would hold."""

    @property
    def device(self) -> torch.device:
        return self.group.rank.device

    def tensors(self) -> Iterator[tuple[str, torch.Tensor]]:
        yield from self.group.stream_weights(self.dtype)

    def meta(self) -> list[tuple[str, torch.dtype, tuple[int, ...]]]:
        # A DTensor's shape is the whole tensor's: nothing is gathered here.
        return [(name, self.dtype if v.is_floating_point() else v.dtype, tuple(v.shape))
                for name, v in self.group.model.state_dict().items()]
