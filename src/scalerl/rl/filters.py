"""Which prompt groups enter the loss: zero-variance filtering and DAPO's dynamic sampling.

A group whose generations all got the same reward has a zero advantage everywhere, so it
adds nothing to the gradient but still dilutes the aggregation's denominators.

* :func:`zero_variance_mask` -- ScaleRL's filter, as a (B,) mask: the trainer multiplies the
  completion mask by it, so the dropped groups leave the loss while their tokens are still
  counted as compute (they were generated).
* :class:`DynamicSamplingBuffer` -- DAPO's dynamic sampling: collect the non-zero-variance
  groups of successive generation rounds until the batch is full, or until the cap on
  rounds is hit (then the step trains on what it has).
* :data:`FILTER_BASES` -- *which* rewards must vary (``filtering.basis``): ``correctness``, the
  task's rewards before length shaping (DAPO -- verl's ``filter_groups.metric=acc`` -- and
  Magistral drop groups that are all right or all wrong, whatever their overlong penalties),
  or ``shaped``, the rewards trained on. Under forced interruption or truncation the two agree.
"""

from __future__ import annotations

from typing import Callable, Generic, Sequence, TypeVar

import torch
from torch import Tensor

from scalerl.rl.advantages import group_index
from scalerl.rl.registry import Registry

__all__ = ["EQUAL_WITHIN", "FILTER_BASES", "DynamicSamplingBuffer", "has_reward_variance", "zero_variance_mask"]

FilterBasis = Callable[[Sequence[float], Sequence[float]], Sequence[float]]
"""``basis(task rewards, shaped rewards) -> the rewards whose variance decides`` (one group)."""

FILTER_BASES: Registry[FilterBasis] = Registry("filter basis")


@FILTER_BASES.register("correctness")
def correctness_basis(rewards: Sequence[float], shaped: Sequence[float]) -> Sequence[float]:
    """The task's rewards, before length shaping (pass / fail for +1 / -1 rewards)."""
    return rewards


@FILTER_BASES.register("shaped")
def shaped_basis(rewards: Sequence[float], shaped: Sequence[float]) -> Sequence[float]:
    """The rewards trained on, after length shaping (e.g. DAPO's overlong penalty)."""
    return shaped

G = TypeVar("G")

#: Rewards closer than this are equal: a reward that sums partial credits gives 0.1 + 0.2 =
#: 0.30000000000000004 against 0.3, a "variance" of float rounding whose advantages, once normalised
#: by a batch std of the same size, would train on noise. Rewards are on the scale of +-1; above float32's
#: rounding there (~6e-8), so that the mask on MPS (no float64) agrees with the Python floats too.
EQUAL_WITHIN = 1e-6


def zero_variance_mask(rewards: Tensor, group: Tensor, *, tol: float = EQUAL_WITHIN) -> Tensor:
    """(B,) bool: True for sequences whose group's rewards are not all equal (max - min > tol).

    In float64, as :func:`has_reward_variance` judges the same rewards for dynamic sampling: the two
    must keep the same groups (in float32 a group dynamic sampling kept could be dropped here)."""
    index = group_index(group)
    n = int(index.max()) + 1 if index.numel() else 0
    rewards = rewards.to(torch.float32 if rewards.device.type == "mps" else torch.float64)  # (MPS has no float64)
    high = rewards.new_full((n,), -torch.inf).scatter_reduce(0, index, rewards, "amax")
    low = rewards.new_full((n,), torch.inf).scatter_reduce(0, index, rewards, "amin")
    return ((high - low) > tol)[index]


def has_reward_variance(rewards: Sequence[float], tol: float = EQUAL_WITHIN) -> bool:
    """Whether one group's rewards are not all equal (the pure-Python twin of the mask)."""
    return len(rewards) > 0 and max(rewards) - min(rewards) > tol


class DynamicSamplingBuffer(Generic[G]):
    """Accumulates groups over generation rounds for DAPO's dynamic sampling.

    ``G`` is whatever the caller uses for a group (e.g. a list of completions). Per round the
    trainer generates some prompts, scores them, and calls :meth:`add_round`; it generates
    another round (of :attr:`missing` prompts or more) while :attr:`done` is false, then calls
    :meth:`take`. One buffer serves one optimizer step. Extra groups beyond the target are discarded, as in DAPO; every generated
    group is counted in :attr:`generated_groups` for compute accounting.
    """

    def __init__(self, target_groups: int, max_rounds: int, *, tol: float = EQUAL_WITHIN) -> None:
        if target_groups < 1 or max_rounds < 1:
            raise ValueError(f"target_groups ({target_groups}) and max_rounds ({max_rounds}) must be >= 1")
        self.target_groups = target_groups
        self.max_rounds = max_rounds
        self.tol = tol
        self.rounds = 0
        self.generated_groups = 0
        self.dropped_groups = 0
        self._kept: list[G] = []
        self._taken = False

    def add_round(self, groups: Sequence[G], rewards: Sequence[Sequence[float]]) -> None:
        """Record one generation round: ``rewards[i]`` are the rewards of ``groups[i]``."""
        if len(groups) != len(rewards):
            raise ValueError(f"{len(groups)} groups but {len(rewards)} reward lists")
        if self._taken:
            raise RuntimeError("this batch was taken; use a new DynamicSamplingBuffer for the next step")
        if self.done:
            raise RuntimeError("the batch is already done; call take() instead of generating more")
        self.rounds += 1
        self.generated_groups += len(groups)
        for g, r in zip(groups, rewards):
            if has_reward_variance(r, self.tol):
                self._kept.append(g)
            else:
                self.dropped_groups += 1

    @property
    def missing(self) -> int:
        """Groups still needed to fill the batch."""
        return max(0, self.target_groups - len(self._kept))

    @property
    def full(self) -> bool:
        return self.missing == 0

    @property
    def exhausted(self) -> bool:
        """The cap on rounds is hit and the batch is still not full."""
        return self.rounds >= self.max_rounds and not self.full

    @property
    def done(self) -> bool:
        return self.full or self.exhausted

    def take(self) -> list[G]:
        """The kept groups, at most ``target_groups`` of them, in arrival order (once per buffer)."""
        if self._taken:
            raise RuntimeError("take() was already called; use a new DynamicSamplingBuffer for the next step")
        self._taken = True
        return self._kept[: self.target_groups]
