"""``recipe.off_policy.pipeline`` x ``backend.name`` -> the rollout source the trainer pulls batches from.

========================  ==========================================  ==========================================
mode                      ``--backend local`` (default)               ``--backend ray``
========================  ==========================================  ==========================================
``sync``                  the trainer's own model generates           generator actors, one batch at a time
``ppo-off-policy-k``      the trainer's own model, k batches a round  generator actors, k batches in parallel
``pipeline-rl-k``         generator threads (or processes)            generator actors, continuously
========================  ==========================================  ==========================================

Locally the synchronous modes need no copy of the weights and are bit-for-bit reproducible;
``backend.generators`` only matters to pipeline-rl-k there. The trainer never branches on
the mode or the backend: it calls :func:`make_source`.
"""

from __future__ import annotations

from typing import Any, Callable

from scalerl.errors import ConfigError
from scalerl.pipeline.scheduler import BatchPlan, OffPolicySchedule, PipelineSchedule, PooledSource
from scalerl.pipeline.sources import OffPolicySource, RolloutSource

#: mode -> schedule(k, generators) of a pooled source.
SCHEDULES: dict[str, Callable[[int, int], Any]] = {
    "sync": lambda k, generators: OffPolicySchedule(1),
    "ppo-off-policy-k": lambda k, generators: OffPolicySchedule(k),
    "pipeline-rl-k": PipelineSchedule.for_generators,
}


def _thread_pool(trainer: Any) -> Any:
    from scalerl.pipeline.threads import ThreadPool

    return ThreadPool.for_trainer(trainer)


def _process_pool(trainer: Any) -> Any:
    from scalerl.pipeline.processes import ProcessPool

    return ProcessPool.for_trainer(trainer)


def _ray_pool(trainer: Any) -> Any:
    from scalerl.pipeline.ray_backend import RayPool

    return RayPool.for_trainer(trainer)


#: backend.workers -> pool factory(trainer), for the local backend.
LOCAL_POOLS: dict[str, Callable[[Any], Any]] = {"threads": _thread_pool, "processes": _process_pool}


def pooled(trainer: Any, pool: Any, mode: str, k: int) -> PooledSource:
    schedule = SCHEDULES[mode](k, pool.size)
    return PooledSource(pool, BatchPlan.from_trainer(trainer), schedule, version=trainer.version)


def _own_model(trainer: Any, mode: str, k: int) -> RolloutSource:
    return OffPolicySource(trainer.generator, trainer.make_batch, 1 if mode == "sync" else k)


def _local_pool(trainer: Any, mode: str, k: int) -> RolloutSource:
    return pooled(trainer, LOCAL_POOLS[trainer.cfg.backend.workers](trainer), mode, k)


#: local backend: mode -> factory(trainer, mode, k).
LOCAL: dict[str, Callable[[Any, str, int], RolloutSource]] = {
    "sync": _own_model,
    "ppo-off-policy-k": _own_model,
    "pipeline-rl-k": _local_pool,
}


def _local(trainer: Any, mode: str, k: int) -> RolloutSource:
    return LOCAL[mode](trainer, mode, k)


def _ray(trainer: Any, mode: str, k: int) -> RolloutSource:
    return pooled(trainer, _ray_pool(trainer), mode, k)


#: backend.name -> factory(trainer, mode, k).
BACKENDS: dict[str, Callable[[Any, str, int], RolloutSource]] = {"local": _local, "ray": _ray}


def make_source(trainer: Any, mode: str, k: int) -> RolloutSource:
    backend = trainer.cfg.backend.name
    if mode not in SCHEDULES:
        raise ConfigError(f"unknown pipeline {mode!r}; known: {', '.join(SCHEDULES)}")
    if backend not in BACKENDS:
        raise ConfigError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[backend](trainer, mode, k)
