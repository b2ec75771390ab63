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
from scalerl.pipeline.weights import Weights, WeightSource
from scalerl.rollout.context import RolloutContext


@dataclass
class TaskSpec:
    """How to rebuild the task in another process (generator processes, Ray actors)."""

    name: str
    settings: dict[str, Any] = field(default_factory=dict)
    reward: str | None = None
    reward_timeout: float = 10.0
    reward_workers: int = 1
    reward_load_timeout: float = 60.0


@dataclass
class PipelineContext:
    """The run as the pipeline sees it."""

    rollout: RolloutContext
    """Problems, sampler, the resolved recipe, seeds: what decides each batch's content."""
    backend: BackendConfig
    model: torch.nn.Module
    """The trainer's policy: its weights go to the generators after every step, LoRA adapters
    merged in (:func:`scalerl.models.lora.generator_state_dict`); thread workers start from a
    plain copy of it (:func:`scalerl.models.lora.generator_copy`)."""
    generator: HFGenerator
    """A generator on the trainer's own model (no copy): the synchronous modes generate with it,
    and so does deterministic PipelineRL-k for dynamic-sampling refills."""
    task: TaskSpec
    model_path: str
    """The model's name or path as configured (a vLLM engine loads the architecture from it)."""
    generator_dtype: torch.dtype = torch.float32
    """The dtype a generator's own copy of the policy is held in: the run's compute dtype (an
    inference copy needs no fp32 master weights; logits stay fp32 through the FP32 head)."""
    version: int = 0
    """The trainer's policy version when the source is built."""
    decode_rows: int | None = None
    """The most rows a generator thread's Hugging Face decode loop holds at once (their KV cache
    shares the trainer's device; None: every row of a batch)."""
    engine_rows: int | None = None
    """The most rows a generator process's or Ray actor's Hugging Face decode loop holds at once:
    ``run.decode_rows`` when set, else None (every row). The automatic fit of :attr:`decode_rows`
    measures the trainer's device, not theirs, so it does not carry over."""
    cudnn_attention: bool = False
    """``run.cudnn_attention``: whether generator processes and Ray actors on CUDA let SDPA use
    cuDNN's kernel (:func:`scalerl.generate.attention.cudnn_attention`)."""
    weights: WeightSource | None = None
    """Where generator processes and Ray actors read the weights from when not ``model``: under
    ``run.generate_on_shards`` a stream off the trainer group's shards (no whole copy on a device)."""

    @property
    def generator_weights(self) -> Weights:
        """What generator processes and Ray actors start from: :attr:`weights`, else the model."""
        return self.weights if self.weights is not None else self.model
