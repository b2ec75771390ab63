"""``recipe.off_policy.pipeline`` x ``backend.name`` -> the rollout source the trainer pulls batches from.

========================  ==========================================  ==========================================
mode                      ``--backend local`` (default)               ``--backend ray``
========================  ==========================================  ==========================================
``sync``                  the trainer's own model generates           generator actors, one batch at a time
``ppo-off-policy-k``      the trainer's own model, k batches a round  generator actors, k batches in parallel
``pipeline-rl-k``         generator threads (seeded updates) or       generator actors, continuously
                          processes (timing-driven)
========================  ==========================================  ==========================================

Locally the synchronous modes need no copy of the weights and are bit-for-bit reproducible;
``backend.generators`` only matters to pipeline-rl-k there. So is pipeline-rl-k on threads with
seeded updates (``backend.updates``, :mod:`scalerl.pipeline.landing`). The trainer never
branches on the mode or the backend: it calls :func:`make_source` with a
:class:`~scalerl.pipeline.context.PipelineContext`, and :func:`trainer_threads` for its own
torch thread count.
"""

from __future__ import annotations

import os
import sys
from typing import Any, Callable

from scalerl.errors import ConfigError
from scalerl.pipeline.config import BackendConfig, update_mode
from scalerl.pipeline.context import PipelineContext
from scalerl.pipeline.landing import WeightHistory, layout_of, window
from scalerl.pipeline.pool import WorkerPool
from scalerl.pipeline.scheduler import OffPolicySchedule, PipelineSchedule, PooledSource, SeededPipelineSchedule
from scalerl.pipeline.sources import OffPolicySource, RolloutSource
from scalerl.pipeline.work import RolloutWorker

#: mode -> schedule(k, generators) of a pooled source (timing-driven updates).
SCHEDULES: dict[str, Callable[[int, int], Any]] = {
    "sync": lambda k, generators: OffPolicySchedule(1),
    "ppo-off-policy-k": lambda k, generators: OffPolicySchedule(k),
    "pipeline-rl-k": PipelineSchedule.for_generators,
}


def _thread_pool(ctx: PipelineContext) -> WorkerPool:
    from scalerl.pipeline.threads import ThreadPool

    return ThreadPool.for_context(ctx)


def _process_pool(ctx: PipelineContext) -> WorkerPool:
    from scalerl.pipeline.processes import ProcessPool

    note = process_cores_note(ctx.backend, cpu_cores())
    if note is not None:
        print(f"note: {note}", file=sys.stderr)
    return ProcessPool.for_context(ctx)


def _ray_pool(ctx: PipelineContext) -> WorkerPool:
    from scalerl.pipeline.ray_backend import RayPool

    return RayPool.for_context(ctx)


#: backend.workers -> pool factory(ctx), for the local backend's timing-driven pipeline.
LOCAL_POOLS: dict[str, Callable[[PipelineContext], WorkerPool]] = {"threads": _thread_pool, "processes": _process_pool}


def pooled(ctx: PipelineContext, pool: WorkerPool, mode: str, k: int) -> PooledSource:
    schedule = SCHEDULES[mode](k, pool.size)
    return PooledSource(pool, ctx.rollout, schedule, version=ctx.version)


def _own_model(ctx: PipelineContext, mode: str, k: int) -> RolloutSource:
    return OffPolicySource(ctx.rollout, ctx.generator, 1 if mode == "sync" else k)


def _seeded(ctx: PipelineContext, mode: str, k: int) -> RolloutSource:
    from scalerl.pipeline.threads import ThreadPool

    history = WeightHistory()
    pool = ThreadPool.for_context(ctx, history)
    # Snapshots in the generators' dtype, not the trainer's fp32: (window + 2) of them are held.
    history.store_as(layout_of(pool.workers[0].generator.model))
    schedule = SeededPipelineSchedule(k, window(k, pool.size), ctx.rollout.seed, ctx.rollout.recipe.length.max_new_tokens)
    own = RolloutWorker(ctx.generator, ctx.rollout.round)
    return PooledSource(pool, ctx.rollout, schedule, version=ctx.version, history=history, own=own)


def _local_pipeline(ctx: PipelineContext, mode: str, k: int) -> RolloutSource:
    if update_mode(ctx.backend) == "seeded":
        return _seeded(ctx, mode, k)
    return pooled(ctx, LOCAL_POOLS[ctx.backend.workers](ctx), mode, k)


#: local backend: mode -> factory(ctx, mode, k).
LOCAL: dict[str, Callable[[PipelineContext, str, int], RolloutSource]] = {
    "sync": _own_model,
    "ppo-off-policy-k": _own_model,
    "pipeline-rl-k": _local_pipeline,
}


def _local(ctx: PipelineContext, mode: str, k: int) -> RolloutSource:
    return LOCAL[mode](ctx, mode, k)


def _ray(ctx: PipelineContext, mode: str, k: int) -> RolloutSource:
    return pooled(ctx, _ray_pool(ctx), mode, k)


#: backend.name -> factory(ctx, mode, k).
BACKENDS: dict[str, Callable[[PipelineContext, str, int], RolloutSource]] = {"local": _local, "ray": _ray}


def make_source(ctx: PipelineContext) -> RolloutSource:
    """The rollout source for the run's pipeline mode and backend."""
    off = ctx.rollout.recipe.off_policy
    backend = ctx.backend.name
    if off.pipeline not in SCHEDULES:
        raise ConfigError(f"unknown pipeline {off.pipeline!r}; known: {', '.join(SCHEDULES)}")
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[backend](ctx, off.pipeline, off.k)


def cpu_cores() -> int:
    """CPU cores this process may run on."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


def process_cores_note(backend: BackendConfig, cores: int) -> str | None:
    """A note when generator processes (``backend.generator_threads`` torch threads each on a CPU
    generator, one core for a GPU one's Python) and the trainer need more cores than this process
    may use -- they run, taking turns; Ray refuses more actors than CPUs, threads share a GIL anyway.
    Not an error: the run is correct, only slower than with fewer. None where they fit."""
    per = backend.generator_threads if backend.generator_device == "cpu" else 1
    need = backend.generators * per + 1
    if need <= cores:
        return None
    fit = max(1, (cores - 1) // per)
    return (f"backend.workers=processes: {backend.generators} generator processes "
            f"({per} thread{'s' if per > 1 else ''} each) and the trainer need {need} cores; this run may use {cores} "
            f"CPU cores: they take turns, which is slower than fewer (backend.generators={fit} fits)")


def trainer_threads(mode: str, backend: BackendConfig, cores: int | None = None) -> int | None:
    """torch threads for the trainer when the user set none (``run.threads=0``), or None to leave
    torch's default (every core). Under pipeline-rl-k on the local backend the trainer and the
    generators run at once on one machine: the trainer gets the cores the generators leave (each
    generator thread or process uses ``backend.generator_threads``), at least one -- on 2 cores,
    one each instead of two each (4 threads on 2 cores spin against each other)."""
    if mode != "pipeline-rl-k" or backend.name != "local":
        return None
    cores = cores or cpu_cores()
    return max(1, cores - backend.generators * backend.generator_threads)


def trainer_device_generators(mode: str, backend: BackendConfig) -> int:
    """Generators that decode on the trainer's device: on the local backend the trainer's own
    (sync, ppo-off-policy-k) or one per generator thread (pipeline-rl-k); 0 where processes or Ray
    actors generate."""
    if backend.name != "local":
        return 0
    if mode != "pipeline-rl-k":
        return 1
    return backend.generators if backend.workers == "threads" else 0


def trainer_device_copies(mode: str, k: int, backend: BackendConfig) -> int:
    """Copies of the policy's weights, in the generators' dtype, that the pipeline keeps on the
    trainer's device: under pipeline-rl-k on the local backend's generator threads, one per thread
    plus, with seeded updates, the trainer's weight snapshots (at most ``window + 2`` at once:
    :class:`~scalerl.pipeline.landing.WeightHistory`). 0 elsewhere: sync and ppo-off-policy-k
    generate with the trainer's own model, processes and Ray actors hold theirs elsewhere."""
    if mode != "pipeline-rl-k" or trainer_device_generators(mode, backend) == 0:
        return 0
    snapshots = window(k, backend.generators) + 2 if update_mode(backend) == "seeded" else 0
    return backend.generators + snapshots
