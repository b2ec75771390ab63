"""Ray's generator actors as one generator, for the trainer's evaluations (``eval.engine: generators``).

By default the trainer evaluates with its own model; on a GPU cluster that is the Hugging Face
decode loop beside vLLM actors that generate many times faster. :class:`PoolGenerator`
implements :class:`~scalerl.generate.base.Generator` on the actors instead: a call is cut into
one :class:`GenerateJob` per live actor, queued ahead of the training batches
(:meth:`scalerl.pipeline.ray_backend.RayPool.submit_jobs`), and the completions are gathered back
into prompt order. Only the job travels to the actor; its :class:`QueuedJob` envelope, with the
future the trainer waits on, stays in the driver's queue.
"""

from __future__ import annotations

import dataclasses
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence

from scalerl.generate.base import Completion, LengthController, SamplingParams, ScheduledUpdates


@dataclass
class GenerateJob:
    """Prompts for one actor to sample outside the training batches (an evaluation's share)."""

    prompts: list[list[int]]
    params: SamplingParams
    length_control: bool
    """Apply the recipe's length control (forced interruptions), as the trainer's own would."""


@dataclass
class QueuedJob:
    """A :class:`GenerateJob` in the pool's queue, and the future of its completions."""

    job: GenerateJob
    result: "Future[list[Completion]]" = field(default_factory=Future)


class JobPool(Protocol):
    """What :class:`PoolGenerator` needs of a pool (:class:`~scalerl.pipeline.ray_backend.RayPool`)."""

    @property
    def version(self) -> int: ...

    def live_actors(self) -> list: ...

    def submit_jobs(self, jobs: Sequence[GenerateJob]) -> list["Future[list[Completion]]"]: ...


#: Sampling seeds of an evaluation's shares: share i samples with the call's seed + i x this.
SHARE_SEED_STRIDE = 1_000_003


class PoolGenerator:
    """The generator actors as one generator: a call is cut into one share per live actor (rows
    i, i + N, ...; each share with its own seed, so sampled results depend on the number of actors,
    as they do on the number of ranks on the shards), queued *ahead* of the training batches, and
    gathered back into order. Every share carries the newest weights, which the actor loads
    first: the trainer's current policy, since the trainer pushes after each step and waits here
    before the next."""

    def __init__(self, pool: JobPool) -> None:
        self.pool = pool

    @property
    def version(self) -> int:
        return self.pool.version

    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        if state_dict:
            raise ValueError("PoolGenerator: the actors get their weights from the pool's weight sync")

    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams,
                 length_control: LengthController | None = None, *,
                 updates: ScheduledUpdates | None = None) -> list[Completion]:
        if updates is not None:
            raise ValueError("PoolGenerator: scheduled in-flight updates are the training batches' own")
        if not prompts:
            return []
        shares = max(1, min(len(prompts), len(self.pool.live_actors())))
        jobs = []
        for i in range(shares):
            seed = None if params.seed is None else params.seed + SHARE_SEED_STRIDE * i
            jobs.append(GenerateJob([list(p) for p in prompts[i::shares]], dataclasses.replace(params, seed=seed),
                                    length_control is not None))
        results = self.pool.submit_jobs(jobs)
        out: list[Completion | None] = [None] * len(prompts)
        for i, result in enumerate(results):
            out[i::shares] = result.result()  # raises what the actor (or the pool) raised
        return out  # type: ignore[return-value]
