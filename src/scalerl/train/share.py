"""A trainer rank's share of one policy update (multi-process training, :mod:`scalerl.train.distributed`).

    mine, passes = Share(rank, world).split(micro_batches)   # every world-th micro-batch, and how many passes
    parts = share.merge(local_stats)                          # every rank's statistics

In one process (``SINGLE``) a rank's share is the whole step.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Sequence

import torch.distributed as dist

from scalerl.train.collectives import object_group


@dataclass(frozen=True)
class Share:
    """This rank's share of a step's micro-batches: every ``world``-th, from ``rank``."""

    rank: int = 0
    world: int = 1

    def split(self, micro_batches: Sequence[Any]) -> tuple[list[Any], int]:
        """(this rank's micro-batches, passes every rank must run): ranks with fewer pad with
        zero-weighted passes, so that every rank joins every FSDP collective."""
        mine = list(micro_batches[self.rank :: self.world])
        return mine, math.ceil(len(micro_batches) / self.world)

    def merge(self, local: dict[str, Any]) -> list[dict[str, Any]]:
        """Every rank's ``local`` statistics (one per rank); just ``[local]`` in one process. Plain
        Python numbers: on the gloo group, never through a GPU (:mod:`scalerl.train.collectives`)."""
        if self.world == 1:
            return [local]
        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, local, group=object_group())
        return out


SINGLE = Share()


def full_value(x: Any) -> Any:
    """A DTensor's full value (an all-gather); anything else as it is."""
    return x.full_tensor() if hasattr(x, "full_tensor") else x
