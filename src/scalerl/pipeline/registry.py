"""``recipe.off_policy.pipeline`` -> the rollout source that implements it."""

from __future__ import annotations

from typing import Any, Callable

from scalerl.errors import ConfigError
from scalerl.pipeline.sources import OffPolicySource, RolloutSource


def _off_policy(trainer: Any, k: int) -> RolloutSource:
    return OffPolicySource(trainer.generator, trainer.make_batch, k)


def _pipeline_rl(trainer: Any, k: int) -> RolloutSource:
    from scalerl.pipeline.pipelinerl import PipelineRLSource

    return PipelineRLSource.for_trainer(trainer, k)


#: mode -> factory(trainer, k). The trainer never branches on the mode.
PIPELINES: dict[str, Callable[[Any, int], RolloutSource]] = {
    "sync": lambda trainer, k: _off_policy(trainer, 1),
    "ppo-off-policy-k": _off_policy,
    "pipeline-rl-k": _pipeline_rl,
}


def make_source(trainer: Any, mode: str, k: int) -> RolloutSource:
    if mode not in PIPELINES:
        raise ConfigError(f"unknown pipeline {mode!r}; known: {', '.join(PIPELINES)}")
    return PIPELINES[mode](trainer, k)
