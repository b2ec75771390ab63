"""The data a policy update consumes: groups of scored completions, and the batch of one step.

One *group* is one prompt with its G completions (the unit of group-centred advantages,
zero-variance filtering and the no-positive-resampling curriculum). A *batch* is the groups
of one optimizer step plus what it cost to make them (dynamic sampling may generate and
drop groups: their compute still counts).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from scalerl.generate.base import Completion
from scalerl.tasks.base import Problem


@dataclass
class Group:
    """One prompt and its scored completions."""

    problem: Problem
    completions: list[Completion]
    rewards: list[float]
    """The task's rewards (+1 / -1); a completion passes when its reward is > 0."""
    shaped: list[float]
    """The rewards trained on (after length shaping, e.g. DAPO's overlong penalty)."""
    failed: list[bool] = field(default_factory=list)
    """Which rewards are a failed call's score (a user reward function that raised, hung or returned a
    non-number); empty where none failed."""


@dataclass
class RolloutBatch:
    """The groups of one optimizer step and the cost of producing them."""

    groups: list[Group]
    samples: int = 0
    """Completions generated for this batch, dropped groups included."""
    tokens: int = 0
    """Completion tokens generated, dropped groups included."""
    prompt_tokens: int = 0
    stats: dict[str, float] = field(default_factory=dict)
    reward_failures: dict[str, int] = field(default_factory=dict)
    """Failed reward calls (errors, timeouts) in scoring this batch, refill rounds included: the
    trainer counts them when it trains on the batch, so a batch scored again after a resume is
    counted once (:mod:`scalerl.tasks.failure_tally`)."""

    @property
    def completions(self) -> list[Completion]:
        return [c for g in self.groups for c in g.completions]


def completion_lags(completions: Sequence[Completion], version: int) -> list[int]:
    """How many updates a trainer at ``version`` is ahead of each sampled token that enters the
    loss (``loss_mask``): the staleness PipelineRL-k bounds by k."""
    return [version - v for c in completions for v, m in zip(c.versions, c.loss_mask) if m]
