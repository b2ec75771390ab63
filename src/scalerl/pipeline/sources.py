"""Where the trainer's batches come from: the off-policy pipeline (docs/paper.md, "The recipe", first row).

A *source* hands the trainer one :class:`~scalerl.rollout.groups.RolloutBatch` per optimizer
step and is told after each step that the weights changed. The modes share one config key,
``recipe.off_policy.pipeline`` (with ``recipe.off_policy.k``):

``sync``              generate one batch with the current weights, train on it (k = 1);
``ppo-off-policy-k``  generate k batches with the current weights, then take k optimizer steps,
                      one per batch (data up to k - 1 updates old);
``pipeline-rl-k``     generators sample continuously and receive new weights after every update,
                      mid-sequence (:mod:`scalerl.pipeline.scheduler` over the worker pools), at
                      seeded decode steps (:mod:`scalerl.pipeline.landing`) or whenever they arrive.

:mod:`scalerl.pipeline.registry` maps (mode, backend) to a source.
"""

from __future__ import annotations

import time
from collections import deque
from typing import Any, Protocol

from scalerl.generate.base import Generator
from scalerl.pipeline.weights import Weights
from scalerl.rollout.context import RolloutContext
from scalerl.rollout.groups import RolloutBatch
from scalerl.rollout.produce import make_batch


class RolloutSource(Protocol):
    def wait_ready(self) -> None:
        """Block until the source's generators are up (processes spawned, their models built): the trainer's
        clock starts after it, so that their start-up -- again at every resume -- is not counted as training."""
        ...

    def next_batch(self, step: int) -> RolloutBatch:
        """The batch for optimizer step ``step`` (blocks until one is ready)."""
        ...

    def weights_updated(self, weights: Weights, version: int, *, step: int) -> None:
        """Called after every optimizer step (and on resume) with the trainer's weights (its model,
        or a :class:`~scalerl.pipeline.weights.WeightSource`), its policy version and the number of
        steps it has taken."""
        ...

    def eval_generator(self, step: int) -> Generator | None:
        """The source's generators as one, for the trainer's evaluation at ``step`` (``eval.engine:
        generators``), or None where it has none of its own."""
        ...

    def state_dict(self) -> dict[str, Any]: ...

    def load_state_dict(self, state: dict[str, Any]) -> None: ...

    def close(self) -> None: ...


class FinishedSource:
    """The source of a resumed run with nothing left to train (its last checkpoint at ``run.steps``
    or past it): it generates nothing, so that no generator -- a thread's copy, a process, a Ray
    cluster (~16 s to start) -- is started only to be closed. The checkpoint's source state is kept
    as it was, should anything save it again."""

    def __init__(self) -> None:
        self._state: dict[str, Any] = {}

    def wait_ready(self) -> None:
        pass

    def next_batch(self, step: int) -> RolloutBatch:
        raise RuntimeError(f"step {step}: this run had nothing left to train, so its source generates nothing")

    def weights_updated(self, weights: Weights, version: int, *, step: int) -> None:
        pass

    def eval_generator(self, step: int) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return self._state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self._state = state

    def close(self) -> None:
        pass


class OffPolicySource:
    """``sync`` (k = 1) and ``ppo-off-policy-k``: generate k batches, then serve them one per step.

    The generator shares the trainer's model object, so new weights need no copy: the version
    number is all that changes. Pending batches are part of the state, so a resumed run
    trains on exactly the batches an uninterrupted one would have. Generation and training
    take turns on the same device: the trainer "waits" while it generates, the "generator"
    idles while it trains (:meth:`stats`, comparable with the pipelined sources').
    """

    def __init__(self, ctx: RolloutContext, generator: Generator, k: int) -> None:
        self.ctx = ctx
        self.generator = generator
        self.k = k
        self.pending: deque[RolloutBatch] = deque()
        self._t0: float | None = None
        self.generating = 0.0
        self.samples = 0

    def wait_ready(self) -> None:
        pass  # it generates with the trainer's own generator

    def next_batch(self, step: int) -> RolloutBatch:
        if self._t0 is None:
            self._t0 = time.perf_counter()
        if not self.pending:
            t = time.perf_counter()
            for i in range(self.k):
                self.pending.append(make_batch(self.ctx, self.generator, step + i))
            self.generating += time.perf_counter() - t
        batch = self.pending.popleft()
        batch.stats["batch_index"] = step
        self.samples += batch.samples
        return batch

    def weights_updated(self, weights: Weights, version: int, *, step: int) -> None:
        self.generator.update_weights({}, version)

    def eval_generator(self, step: int) -> None:
        return None  # it generates with the trainer's own generator

    def stats(self) -> dict[str, float]:
        elapsed = max(time.perf_counter() - self._t0, 1e-9) if self._t0 is not None else None
        if elapsed is None:
            return {"pipeline/trainer_wait_frac": 0.0, "pipeline/generator_idle_frac": 0.0, "pipeline/samples_per_s": 0.0}
        return {
            "pipeline/trainer_wait_frac": self.generating / elapsed,
            "pipeline/generator_idle_frac": 1.0 - self.generating / elapsed,
            "pipeline/samples_per_s": self.samples / elapsed,
        }

    def state_dict(self) -> dict[str, Any]:
        return {"pending": list(self.pending)}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pending = deque(state.get("pending", []))

    def close(self) -> None:
        pass
