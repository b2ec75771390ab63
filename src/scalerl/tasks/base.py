"""The task interface: problems to train on, evaluation sets, and a reward.

Rewards follow the paper: +1 for a correct answer, -1 otherwise (``pass`` means reward > 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable


@dataclass(frozen=True)
class Problem:
    """One prompt with its reference answer."""

    id: str
    """Stable id (used by the no-positive-resampling sampler and in logs)."""
    prompt: str
    """Text given to the model (before any chat template)."""
    answer: str
    """Reference answer the reward compares against."""
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)


@runtime_checkable
class Task(Protocol):
    name: str

    def train_problems(self) -> Sequence[Problem]:
        """The training pool (disjoint from every evaluation set)."""
        ...

    def eval_sets(self) -> dict[str, Sequence[Problem]]:
        """Named held-out sets; ``"val"`` is the one the forecast fits. Each becomes run-log columns."""
        ...

    def reward(self, problem: Problem, completion: str) -> float:
        """Score one completion: +1.0 correct, -1.0 otherwise. Must not raise for bad completions."""
        ...
