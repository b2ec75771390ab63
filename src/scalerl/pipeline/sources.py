"""Where the trainer's batches come from: the off-policy pipeline (SPEC.md §2, first row).

A *source* hands the trainer one :class:`~scalerl.train.rollout.RolloutBatch` per optimizer
step and is told after each step that the weights changed. The modes share one config key,
``recipe.off_policy.pipeline`` (with ``recipe.off_policy.k``):

``sync``              generate one batch with the current weights, train on it (k = 1);
``ppo-off-policy-k``  generate k batches with the current weights, then take k optimizer steps,
                      one per batch (data up to k - 1 updates old);
``pipeline-rl-k``     generators sample continuously and receive new weights after every update,
                      mid-sequence (:mod:`scalerl.pipeline.pipelinerl`).
"""

from __future__ import annotations

from collections import deque
from typing import Any, Callable, Protocol

from scalerl.train.rollout import RolloutBatch

#: make_batch(step_index) -> the batch whose sampling seeds derive from that index.
BatchMaker = Callable[[int], RolloutBatch]


class RolloutSource(Protocol):
    def next_batch(self, step: int) -> RolloutBatch:
        """The batch for optimizer step ``step`` (blocks until one is ready)."""
        ...

    def weights_updated(self, model: Any, version: int) -> None:
        """Called after every optimizer step with the trainer's model and the new version."""
        ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class OffPolicySource:
    """``sync`` (k = 1) and ``ppo-off-policy-k``: generate k batches, then serve them one per step.

    The generator shares the trainer's model object, so new weights need no copy: the version
    number is all that changes. Pending batches are part of the state, so a resumed run
    trains on exactly the batches an uninterrupted one would have.
    """

    def __init__(self, generator: Any, make_batch: BatchMaker, k: int) -> None:
        self.generator = generator
        self.make_batch = make_batch
        self.k = k
        self.pending: deque[RolloutBatch] = deque()

    def next_batch(self, step: int) -> RolloutBatch:
        if not self.pending:
            for i in range(self.k):
                self.pending.append(self.make_batch(step + i))
        return self.pending.popleft()

    def weights_updated(self, model: Any, version: int) -> None:
        self.generator.update_weights({}, version)

    def state_dict(self) -> dict[str, Any]:
        return {"pending": list(self.pending)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pending = deque(state.get("pending", []))

    def close(self) -> None:
        pass
