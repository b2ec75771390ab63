"""The ``backend`` section of a training config: where generators and trainer run (docs/distributed.md).

Plain data (no torch): the training config embeds it, :mod:`scalerl.pipeline.registry` reads it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass
class BackendConfig:
    """Where generation and training run (docs/distributed.md)."""

    name: Literal["local", "ray"] = "local"
    """local (one machine: generator threads or processes beside the trainer) or ray (generator
    actors on a Ray cluster, the trainer in the driver process)."""
    generators: int = 1
    """Generator workers (threads, processes or Ray actors); each holds a copy of the policy and
    samples continuously under pipeline-rl-k. Locally only pipeline-rl-k uses them (sync and
    ppo-off-policy-k generate with the trainer's own model); on Ray every mode does."""
    workers: Literal["threads", "processes"] = "threads"
    """local backend: generator workers as threads (the default: measured as fast or faster on
    CPU, and nothing to start -- benchmarks/pipeline_workers.py) or processes (weights through
    shared memory; no GIL shared with the trainer)."""
    generator: Literal["hf", "vllm"] = "hf"
    """Generation engine in processes and actors: hf (runs anywhere) or vllm (CUDA GPUs, the
    ``vllm`` extra; Ray backend)."""
    generator_threads: int = 1
    """torch CPU threads of each generator thread, process or actor (1: one core each)."""
    generator_device: str = "cpu"
    """Device of the hf generator in processes and actors (cpu, cuda); vllm always uses its GPU."""
    generator_options: dict[str, Any] = field(default_factory=dict)
    """Extra engine options, e.g. for vllm {gpu_memory_utilization: 0.8, enforce_eager: true}."""
    generator_cpus: float = 1.0
    """ray: CPUs reserved per generator actor."""
    generator_gpus: float = 0.0
    """ray: GPUs reserved per generator actor (1 for vllm on a GPU cluster)."""
    weight_sync: Literal["auto", "object_store", "nccl"] = "auto"
    """ray: how new weights reach the actors: object_store (ray.put once per update, every actor
    pulls; CPU), nccl (a broadcast from the trainer's GPU to the vllm generators' GPUs), auto
    (nccl for vllm, else object_store)."""
    max_restarts: int = 3
    """ray: times a generator actor that died is restarted (its batch is re-run, not lost)."""
    ray_address: str | None = None
    """ray backend: address of a running cluster (``ray start --head`` prints it; the RAY_ADDRESS
    variable works too); null starts a local one."""
    updates: Literal["auto", "seeded", "timing"] = "auto"
    """pipeline-rl-k: where the trainer's new weights land in the generators' decoding. seeded:
    at decode steps drawn from (seed, batch index, version), each batch waiting for the weights it
    is scheduled to get -- the same seed gives the same run log, and a killed run resumed with
    --resume repeats the uninterrupted one (local generator threads only). timing: whenever the
    weights arrive -- as fast as the machine allows, but thread timing decides which weights each
    token saw, so runs are not reproducible. auto: seeded on local threads, timing elsewhere."""




def backend_problems(b: BackendConfig) -> list[str]:
    """Combinations of backend settings that cannot run, each with what to do instead."""
    problems = []
    choices = {"name": ("local", "ray"), "workers": ("processes", "threads"), "generator": ("hf", "vllm"),
               "weight_sync": ("auto", "object_store", "nccl"), "updates": ("auto", "seeded", "timing")}
    for key, known in choices.items():
        if getattr(b, key) not in known:
            problems.append(f"backend.{key}: unknown value {getattr(b, key)!r}; known: {', '.join(known)}")
    if problems:
        return problems
    for key in ("generator_cpus", "generator_gpus"):  # Ray refuses them only once the cluster is up
        if not math.isfinite(getattr(b, key)) or getattr(b, key) < 0:
            problems.append(f"backend.{key} must be a number >= 0, got {getattr(b, key):g}")
    if b.generator == "vllm" and b.name != "ray":
        problems.append("backend.generator=vllm runs in Ray actors: add --backend ray (a one-machine cluster "
                        "starts by itself)")
    if b.weight_sync == "nccl" and b.generator != "vllm":
        problems.append("backend.weight_sync=nccl is implemented for the vllm generator; use object_store (or auto) "
                        "with the hf generator")
    if b.name == "local" and b.workers == "threads" and b.generator_device != "cpu":
        problems.append("backend.generator_device applies to generator processes and actors; thread workers share "
                        "the trainer's device")
    if b.updates == "seeded" and not seeded_updates_supported(b):
        problems.append("backend.updates=seeded runs on the local backend's generator threads; with processes or "
                        "Ray use backend.updates=timing (or auto)")
    return problems


def seeded_updates_supported(b: BackendConfig) -> bool:
    """Whether deterministic (seeded) in-flight updates run on this backend: local generator threads."""
    return b.name == "local" and b.workers == "threads"


def update_mode(b: BackendConfig) -> str:
    """``backend.updates`` with auto resolved: seeded where supported, else timing."""
    if b.updates != "auto":
        return b.updates
    return "seeded" if seeded_updates_supported(b) else "timing"
