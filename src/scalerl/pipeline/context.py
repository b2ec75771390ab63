"""What a rollout source and its generator pool need from the run, in one typed object.

The trainer builds a :class:`PipelineContext` once (``Trainer._setup``) and hands it to
:func:`scalerl.pipeline.registry.make_source`; nothing in this package reads the trainer.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

from scalerl.generate.hf import HFGenerator
from scalerl.pipeline.config import BackendConfig
from scalerl.rollout.context import RolloutContext


@dataclass
class TaskSpec:
    """How to rebuild the task in another process (generator processes, Ray actors)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    reward: str | None = None
    reward_timeout: float = 10.0


@dataclass
class PipelineContext:
    """The run as the pipeline sees it."""

    rollout: RolloutContext
    """Problems, sampler, the resolved recipe, seeds: what decides each batch's content."""
    backend: BackendConfig
    model: torch.nn.Module
    """The trainer's policy: its weights go to the generators after every step (thread workers
    start from a copy of it)."""
    generator: HFGenerator
    """A generator on the trainer's own model (no copy): the synchronous modes generate with it,
    and so does deterministic PipelineRL-k for dynamic-sampling refills."""
    task: TaskSpec
    model_path: str
    """The model's name or path as configured (a vLLM engine loads the architecture from it)."""
    version: int = 0
    """The trainer's policy version when the source is built."""
