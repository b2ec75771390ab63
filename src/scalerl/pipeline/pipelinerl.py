"""PipelineRL-k on one machine: generator threads sample continuously while the trainer trains.

* Each generator worker owns a copy of the policy and an :class:`HFGenerator`; it loops:
  take a slot, make a batch (draw prompts, generate, score), queue it.
* After every optimizer step the trainer pushes its weights to every worker
  (``update_weights``): a worker in the middle of a batch applies them *between two decode
  steps* and keeps its KV cache (the in-flight update), so one sequence may hold tokens of
  several policy versions -- each token records its own, and the importance ratio uses the
  generator's own per-token log-probs, so mixed versions are handled exactly.
* Staleness bound: at most ``min(k, generators) + 1`` batches are queued, in flight or being
  trained on at once (a semaphore). A batch started at version v is therefore consumed at
  version <= v + k: the trainer is never more than k updates ahead of the oldest token it
  trains on. Why not always k + 1: when generation is faster than training (a small model on
  a CPU), a deeper queue buys no throughput -- the trainer consumes one batch per step
  whatever is queued -- and only makes every batch k updates stale. When generation is the
  bottleneck (the paper's regime: many generator GPUs, long sequences), the queue is empty
  anyway and the lag comes from in-flight sequences, which k bounds. As a second line of
  defence, a batch that would exceed the bound anyway is dropped (counted) and the trainer
  waits for the next one.

Not bit-for-bit reproducible (thread timing decides which weights each token saw); the
synchronous and PPO-off-policy modes are.
"""

from __future__ import annotations

import copy
import queue
import threading
import time
from typing import Any, Callable

from scalerl.train.rollout import RolloutBatch


class LockedSampler:
    """The prompt sampler shared by generator threads and the trainer's checkpoints."""

    def __init__(self, sampler: Any) -> None:
        self._sampler = sampler
        self._lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:  # read-only attributes (retired, ...)
        return getattr(self._sampler, name)

    def sample(self, n: int):
        with self._lock:
            return self._sampler.sample(n)

    def record(self, prompt_id, rewards) -> bool:
        with self._lock:
            return self._sampler.record(prompt_id, rewards)

    def state_dict(self):
        with self._lock:
            return self._sampler.state_dict()

    def load_state_dict(self, state) -> None:
        with self._lock:
            self._sampler.load_state_dict(state)


def batch_lag(batch: RolloutBatch, version: int) -> int:
    """How many updates the trainer (at ``version``) is ahead of the oldest token of ``batch``."""
    oldest = min((v for c in batch.completions for v in c.versions), default=version)
    return version - oldest


class PipelineRLSource:
    """PipelineRL-k with generator threads (see the module docstring)."""

    def __init__(
        self,
        generators: list[Any],
        make_batch: Callable[[int, Any], RolloutBatch],
        k: int,
        *,
        state_dict_fn: Callable[[], dict[str, Any]],
        version: int = 0,
    ) -> None:
        self.k = k
        self.generators = generators
        self._make_batch = make_batch
        self._state_dict_fn = state_dict_fn
        self._slots = threading.Semaphore(min(k, len(generators)) + 1)
        self._queue: queue.Queue[tuple[RolloutBatch | None, BaseException | None]] = queue.Queue()
        self._index = 0
        self._index_lock = threading.Lock()
        self._stop = threading.Event()
        self._holding = False  # the trainer holds a slot for the batch it is training on
        self.version = version
        self.stale_dropped = 0
        self.trainer_wait = 0.0
        self.generator_busy = [0.0] * len(generators)
        self.generator_idle = [0.0] * len(generators)
        self._t0 = time.perf_counter()
        self._threads = [
            threading.Thread(target=self._worker, args=(i, g), name=f"scalerl-generator-{i}", daemon=True)
            for i, g in enumerate(generators)
        ]
        self._started = False

    def _start(self, step: int) -> None:
        # Started on the first request, not at construction: a resumed trainer restores its
        # weights, version and sampler first (and tells us through weights_updated).
        self._index = step
        self._t0 = time.perf_counter()
        for t in self._threads:
            t.start()
        self._started = True

    @classmethod
    def for_trainer(cls, trainer: Any, k: int) -> "PipelineRLSource":
        """Generators as copies of the trainer's model (``backend.generators`` of them)."""
        from scalerl.generate.hf import HFGenerator

        trainer.sampler = LockedSampler(trainer.sampler)
        gens = []
        for i in range(trainer.cfg.backend.generators):
            model = copy.deepcopy(trainer.model).eval()
            for p in model.parameters():
                p.requires_grad_(False)
            gens.append(HFGenerator(model, trainer.tokenizer, seed=trainer.cfg.run.seed + 1000 * (i + 1)))
        return cls(gens, lambda index, gen: trainer.make_batch(index, generator=gen), k,
                   state_dict_fn=trainer.model.state_dict, version=trainer.version)

    # ------------------------------------------------------------------ generator side
    def _next_index(self) -> int:
        with self._index_lock:
            i = self._index
            self._index += 1
            return i

    def _worker(self, i: int, generator: Any) -> None:
        while not self._stop.is_set():
            t = time.perf_counter()
            while not self._slots.acquire(timeout=0.1):  # back-pressure (see the module docstring)
                if self._stop.is_set():
                    return
            self.generator_idle[i] += time.perf_counter() - t
            t = time.perf_counter()
            try:
                batch = self._make_batch(self._next_index(), generator)
            except BaseException as exc:  # surface it in the trainer's thread
                self._queue.put((None, exc))
                return
            self.generator_busy[i] += time.perf_counter() - t
            self._queue.put((batch, None))

    # ------------------------------------------------------------------ trainer side
    def next_batch(self, step: int) -> RolloutBatch:
        if not self._started:
            self._start(step)
        if self._holding:  # the previous step is done: its slot is free again
            self._slots.release()
            self._holding = False
        while True:
            t = time.perf_counter()
            batch, error = self._queue.get()
            self.trainer_wait += time.perf_counter() - t
            if error is not None:
                raise error
            assert batch is not None
            lag = batch_lag(batch, self.version)
            if lag > self.k:  # never expected with the slots; guarantees the bound regardless
                self.stale_dropped += 1
                self._slots.release()
                continue
            self._holding = True
            batch.stats["lag_batch"] = lag
            return batch

    def weights_updated(self, model: Any, version: int) -> None:
        self.version = version
        state = self._state_dict_fn()
        for g in self.generators:
            g.update_weights(state, version)

    def stats(self) -> dict[str, float]:
        elapsed = max(time.perf_counter() - self._t0, 1e-9)
        return {
            "pipeline/trainer_wait_frac": self.trainer_wait / elapsed,
            "pipeline/generator_idle_frac": sum(self.generator_idle) / (elapsed * len(self.generators)),
            "pipeline/stale_dropped": self.stale_dropped,
        }

    def state_dict(self) -> dict[str, Any]:
        # Batches in flight cannot be saved mid-sequence; a resumed run regenerates.
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        pass

    def close(self) -> None:
        self._stop.set()
        if not self._started:
            return
        for _ in self._threads:  # unblock workers waiting for a slot
            self._slots.release()
        for t in self._threads:
            t.join(timeout=30)
