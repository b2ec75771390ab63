"""Generation on the FSDP shards (``run.generate_on_shards``): no rank holds the whole policy.

By default rank 0 of a trainer group generates and evaluates with a plain copy of the policy,
gathered after every update -- the whole model in the compute dtype on one device, which a model
bigger than one device does not allow. With ``run.generate_on_shards`` every rank generates
instead, on the sharded model itself: rank 0's :class:`ShardedGenerator` gives the group the
order, each rank samples its share of the prompts (rows ``rank``, ``rank + world``, ...) and
rank 0 gathers the completions back into order.

Every forward of the sharded model is a collective (FSDP all-gathers each decoder layer in
turn), so the ranks step in lockstep (:func:`any_rank`, the generator's ``lockstep`` hook): one
whose rows have finished keeps stepping on padding until every rank's have, and a rank with no
prompt of its own decodes a stand-in (prompt 0) whose completion it drops. A rank samples with
its own seed (``params.seed`` moved by the rank), so a run is reproducible for a given number of
ranks, not across numbers of ranks; greedy decoding gives the one-process tokens, except where the
length control draws each sequence's thinking budget (from that same seed).

    generator = ShardedGenerator(group)            # rank 0; the other ranks wait in follow()
    completions = generator.generate(prompts, SamplingParams(max_new_tokens=64, seed=1))
"""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import torch
import torch.distributed as dist

from scalerl.generate.base import Completion, Generator, LengthController, SamplingParams, ScheduledUpdates
from scalerl.train.collectives import object_group

if TYPE_CHECKING:
    from scalerl.train.distributed import TrainerGroup

#: How far apart the ranks' sampling seeds are (rank 0 keeps the run's own).
RANK_SEED_STRIDE = 1_000_003


def any_rank(flag: bool, device: torch.device) -> bool:
    """Whether ``flag`` holds on any rank of the process group (every rank must call it). A tensor
    collective on ``device``, the rank's own (NCCL takes no CPU tensor): it runs between two decode
    steps of the sharded model, whose all-gathers are on the same group and device."""
    t = torch.tensor([1 if flag else 0], device=device)
    dist.all_reduce(t, op=dist.ReduceOp.MAX)
    return bool(t.item())


def share_rows(n: int, rank: int, world: int) -> list[int]:
    """The prompts rank ``rank`` of ``world`` samples: every ``world``-th, from its own index."""
    return list(range(rank, n, world))


def rank_params(params: SamplingParams, rank: int) -> SamplingParams:
    """``params`` with the rank's own sampling seed (a seedless call uses each rank's generator RNG)."""
    if params.seed is None or rank == 0:
        return params
    return dataclasses.replace(params, seed=params.seed + RANK_SEED_STRIDE * rank)


def generate_share(generator: Generator, prompts: Sequence[Sequence[int]], params: SamplingParams,
                   length_control: LengthController | None, rank: int, world: int) -> list[Completion] | None:
    """Every rank: sample this rank's share of ``prompts`` on the sharded model (``generator``, an
    :class:`~scalerl.generate.hf.HFGenerator` with ``lockstep``); rank 0 returns all completions in
    prompt order, the other ranks None."""
    rows = share_rows(len(prompts), rank, world)
    mine = generator.generate([prompts[i] for i in rows] or [prompts[0]], rank_params(params, rank), length_control)
    mine = mine if rows else []  # a stand-in's completion is dropped
    gathered: list[Any] | None = [None] * world if rank == 0 else None
    # Completions are Python objects: on the gloo group, not pickled into a GPU tensor (NCCL's way).
    dist.gather_object(mine, gathered, dst=0, group=object_group())
    if gathered is None:
        return None
    out: list[Completion | None] = [None] * len(prompts)
    for r, completions in enumerate(gathered):
        for i, completion in zip(share_rows(len(prompts), r, world), completions):
            out[i] = completion
    return out  # type: ignore[return-value]


class ShardedGenerator:
    """Rank 0's generator under ``run.generate_on_shards`` (implements ``Generator``): each call is
    an order to the whole trainer group (:meth:`TrainerGroup.generate`). The weights it samples
    with are the trained shards themselves, so an update needs no copy: only the version moves."""

    def __init__(self, group: "TrainerGroup") -> None:
        self.group = group

    @property
    def version(self) -> int:
        return self.group.generator.version

    @version.setter
    def version(self, value: int) -> None:
        self.group.generator.version = value

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams,
                 length_control: LengthController | None = None, *,
                 updates: ScheduledUpdates | None = None) -> list[Completion]:
        if updates is not None:
            raise ValueError("ShardedGenerator: scheduled in-flight updates are pipeline-rl-k's, which generates "
                             "beside the trainer, not on its shards")
        if not prompts:
            return []
        return self.group.generate([list(p) for p in prompts], params, length_control is not None, self.version)

    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        if state_dict:
            raise ValueError("ShardedGenerator: it samples with the trained shards; there are no weights to copy")
        self.version = version
