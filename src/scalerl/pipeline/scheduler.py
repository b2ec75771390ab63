"""The driver side of every pooled pipeline: what to generate, when, and what the trainer may take.

One scheduler serves PipelineRL-k (and, on Ray, PPO-off-policy-k and sync) over any
:class:`~scalerl.pipeline.pool.WorkerPool` -- generator threads, processes or Ray actors.
The pool only runs requests; everything that decides the content and the staleness of a
batch happens here, in the trainer's process:

* **What.** Batch ``index`` gets its prompts from the prompt sampler *when it is dispatched*,
  in index order, and its sampling seed from the index. The request is kept until the batch
  is consumed; if a generator dies, the same request is sent again -- same prompts, same
  seed -- so a crash neither skips prompts nor draws extra ones.
* **Exactly once.** Results are keyed by (index, round); a second result for a key already
  received is dropped and counted (``pipeline/duplicates_ignored``), so an at-least-once
  pool still trains on every batch exactly once, in index order (step s consumes batch s).
  The sampler's pass-rate history is updated when a batch is consumed (refill rounds of
  dynamic sampling: when they are drawn, as in the synchronous loop), once per group.
* **When (the staleness bound).** A batch dispatched at policy version v can only start on
  weights >= v: the trainer pushes its weights *before* it dispatches, and each request
  carries ``min_version = v`` which a worker honours before starting. PipelineRL-k keeps
  ``slots = min(k, generators) + 1`` batches dispatched-and-not-yet-released (queued, in
  flight, or being trained on); batch ``j`` is dispatched when batch ``j - slots`` is
  released, i.e. after ``j - slots + 1`` updates, and consumed after ``j`` updates, so every
  token it holds is at most ``slots - 1 <= k`` updates old. Why not always k + 1 slots:
  when generation is faster than training (a small model on a CPU) a deeper queue buys no
  throughput -- the trainer still consumes one batch per step -- and only makes every batch
  k updates stale (measured: the tiny model's PipelineRL-8 with k + 1 slots at lr 1e-4 fell
  from 0.32 to 0.05 pass rate; with these slots it learns like sync). When generation is the
  bottleneck (the paper's regime) the queue is empty anyway and in-flight sequences carry
  the lag, which k bounds. The bound is also *checked* at consumption: a batch that would
  exceed it (a bug elsewhere) is regenerated from the same request, never trained on, and
  counted (``pipeline/stale_regenerated``) -- the trainer waits instead.
* **PPO-off-policy-k** on a pool: k batches dispatched together at one version, served one
  per step once all k are in (data up to k - 1 updates old); sync is k = 1.

Everything the trainer needs to resume exactly is in :meth:`state_dict`: the requests of the
batches dispatched but not consumed, re-sent on resume (the sampler state saved beside it
already counts their prompts as drawn).
"""

from __future__ import annotations

import dataclasses
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from scalerl.pipeline.work import RoundRequest, RoundResult
from scalerl.rl.filters import DynamicSamplingBuffer
from scalerl.train.rollout import RolloutBatch, completion_lags, round_params


class PipelineError(RuntimeError):
    """A generator failed in a way the pipeline cannot recover from; the message says which and why."""


class LockedSampler:
    """The prompt sampler, shared by the trainer's thread (draws, records, checkpoints) and the
    pool's delivery threads (dynamic-sampling refills)."""

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


# ----------------------------------------------------------------------------- schedules


@dataclass(frozen=True)
class PipelineSchedule:
    """PipelineRL-k: keep ``slots`` batches going; serve each as soon as it is complete."""

    k: int
    slots: int
    wait_all: bool = False

    @classmethod
    def for_generators(cls, k: int, generators: int) -> "PipelineSchedule":
        return cls(k=k, slots=min(k, generators) + 1)

    @property
    def bound(self) -> int:
        """The largest lag a consumed token may have."""
        return self.k

    def to_dispatch(self, outstanding: int) -> int:
        return self.slots - outstanding


@dataclass(frozen=True)
class OffPolicySchedule:
    """PPO-off-policy-k (sync: k = 1): k batches at one version, then k steps on them."""

    k: int
    wait_all: bool = True

    @property
    def bound(self) -> int:
        return self.k - 1

    def to_dispatch(self, outstanding: int) -> int:
        return self.k if outstanding == 0 else 0


# ----------------------------------------------------------------------------- one batch


@dataclass
class _Assembly:
    """The rounds of one batch, as requested and as received."""

    index: int
    requests: list[RoundRequest]
    results: dict[int, RoundResult] = field(default_factory=dict)
    buffer: DynamicSamplingBuffer | None = None
    recorded: set[int] = field(default_factory=set)
    """Rounds whose groups are already in the sampler's history."""
    done: bool = False

    def batch(self) -> RolloutBatch:
        rounds = [self.results[r] for r in sorted(self.results)]
        batch = RolloutBatch(groups=[], samples=sum(r.samples for r in rounds), tokens=sum(r.tokens for r in rounds),
                             prompt_tokens=sum(r.prompt_tokens for r in rounds))
        if self.buffer is None:
            batch.groups = [g for r in rounds for g in r.groups]
        else:
            batch.groups = self.buffer.take()
            batch.stats["dynamic_rounds"] = self.buffer.rounds
            batch.stats["dynamic_dropped_groups"] = self.buffer.dropped_groups
        return batch


def token_lags(batch: RolloutBatch, version: int) -> list[int]:
    """How many updates the trainer (at ``version``) is ahead of each sampled token of ``batch``."""
    return completion_lags(batch.completions, version)


# ----------------------------------------------------------------------------- the scheduler


class PooledSource:
    """A :class:`~scalerl.pipeline.sources.RolloutSource` over a worker pool (see the module docstring).

    ``plan`` supplies the batch contents: ``plan.sampler`` (thread-safe), ``plan.problems_by_id``,
    ``plan.recipe`` and ``plan.sampling_params(index)``.
    """

    def __init__(self, pool: Any, plan: Any, schedule: Any, *, version: int = 0) -> None:
        self.pool = pool
        self.devices = getattr(pool, "devices", 1)
        self.plan = plan
        self.schedule = schedule
        self.version = version
        self._pushed = version
        self._cond = threading.Condition()
        self._batches: dict[int, _Assembly] = {}
        self._next_index = 0
        self._head = 0
        self._outstanding = 0  # dispatched and not yet released
        self._holding = False
        self._started = False
        self._closed = False
        self._error: BaseException | None = None
        self._resend: list[_Assembly] = []  # from a checkpoint
        self._t0 = time.perf_counter()
        self._t_first: float | None = None
        self.first_batch_s = 0.0
        """Seconds from the first request to the first batch (generator start-up, pipeline fill)."""
        self.trainer_wait = 0.0
        self.samples = 0
        self.busy = 0.0
        self.stale_regenerated = 0
        self.duplicates_ignored = 0
        self.remote_reward_stats = {"errors": 0, "timeouts": 0}

    # ------------------------------------------------------------------ dispatch
    def _new_batch(self, index: int) -> _Assembly:
        """Draw batch ``index``'s first round (prompts from the sampler, seed from the index)."""
        recipe = self.plan.recipe
        dynamic = recipe.filtering.dynamic_sampling
        n = recipe.batch.prompts_per_step
        request = self._request(index, 0, self.plan.sampler.sample(n))
        buffer = DynamicSamplingBuffer(n, recipe.filtering.max_generation_rounds) if dynamic else None
        return _Assembly(index, [request], buffer=buffer)

    def _request(self, index: int, round_: int, prompt_ids: list[Any]) -> RoundRequest:
        params = round_params(self.plan.sampling_params(index), round_)
        problems = [self.plan.problems_by_id[i] for i in prompt_ids]
        return RoundRequest(index, round_, problems, params, min_version=self.version)

    def _dispatch(self, asm: _Assembly) -> None:
        with self._cond:
            self._batches[asm.index] = asm
            self._outstanding += 1
        for request in asm.requests:
            self.pool.submit(request)

    def _start(self, step: int) -> None:
        # Started on the first request, not at construction: a resumed trainer restores its
        # weights, version and sampler first (and tells us through weights_updated).
        self._head = self._next_index = step
        self._t0 = time.perf_counter()
        self.pool.start(self._deliver, self._fail)
        self._started = True
        for asm in self._resend:
            asm.requests = [dataclasses.replace(r, min_version=self.version) for r in asm.requests]
            self._dispatch(asm)
            self._next_index = max(self._next_index, asm.index + 1)
        self._resend = []

    def _fill(self) -> None:
        for _ in range(self.schedule.to_dispatch(self._outstanding)):
            asm = self._new_batch(self._next_index)
            self._next_index += 1
            self._dispatch(asm)

    # ------------------------------------------------------------------ delivery (pool threads)
    def _deliver(self, result: RoundResult) -> None:
        refill: RoundRequest | None = None
        with self._cond:
            asm = self._batches.get(result.index)
            if asm is None or result.round in asm.results or result.round >= len(asm.requests):
                self.duplicates_ignored += 1  # already consumed, already received, or superseded
                return
            asm.results[result.round] = result
            self.busy += result.busy_s
            for key, value in result.reward_stats.items():
                self.remote_reward_stats[key] = self.remote_reward_stats.get(key, 0) + value
            if asm.buffer is None:
                asm.done = True
            else:
                asm.buffer.add_round(result.groups, [g.shaped for g in result.groups])
                if asm.buffer.done:
                    asm.done = True
                else:
                    # The refill's draw must see this round's pass rates, as in the synchronous loop.
                    self._record(asm, result.round)
                    refill = self._request(asm.index, result.round + 1,
                                           self.plan.sampler.sample(max(asm.buffer.missing, 1)))
                    asm.requests.append(refill)
            self._cond.notify_all()
        if refill is not None:
            self.pool.submit(refill)

    def _fail(self, error: BaseException) -> None:
        with self._cond:
            if self._error is None:
                self._error = error
            self._cond.notify_all()

    def _record(self, asm: _Assembly, round_: int) -> None:
        if round_ in asm.recorded:
            return
        asm.recorded.add(round_)
        for group in asm.results[round_].groups:
            self.plan.sampler.record(group.problem.id, group.rewards)

    # ------------------------------------------------------------------ the trainer's side
    def next_batch(self, step: int) -> RolloutBatch:
        if not self._started:
            self._start(step)
        if self._holding:  # the previous batch's update is done and its weights pushed
            self._holding = False
            with self._cond:
                self._outstanding -= 1
        self._fill()
        while True:
            asm = self._wait_for_head()
            batch = asm.batch()
            lags = token_lags(batch, self.version)
            if lags and max(lags) > self.schedule.bound:
                self._regenerate(asm)
                continue
            with self._cond:
                del self._batches[asm.index]
                for round_ in sorted(asm.results):
                    self._record(asm, round_)
            self._head += 1
            self._holding = True
            if self._t_first is None:  # the pipeline is full from here on: steady-state clocks start
                self._t_first = time.perf_counter()
                self.first_batch_s = self._t_first - self._t0
                with self._cond:
                    self.busy = 0.0
            else:
                self.samples += batch.samples
            batch.stats["lag_batch"] = max(lags, default=0)
            batch.stats["batch_index"] = asm.index  # in the train rows: every index once, in order
            return batch

    def _wait_for_head(self) -> _Assembly:
        t = time.perf_counter()
        with self._cond:
            while True:
                if self._error is not None:
                    raise self._error
                asm = self._batches.get(self._head)
                if asm is None:
                    raise PipelineError(f"batch {self._head} was never dispatched (scheduler bug)")
                ready = asm.done and (not self.schedule.wait_all or all(b.done for b in self._batches.values()))
                if ready:
                    break
                self._cond.wait(timeout=1.0)
                self.pool.check()  # raises if the pool can no longer make progress
        if self._t_first is not None:
            self.trainer_wait += time.perf_counter() - t
        return asm

    def _regenerate(self, asm: _Assembly) -> None:
        """Re-run a too-stale batch from its own requests (same prompts, same seeds), on current weights."""
        self.stale_regenerated += 1
        with self._cond:
            first = dataclasses.replace(asm.requests[0], min_version=self.version)
            fresh = _Assembly(asm.index, [first], buffer=None if asm.buffer is None else
                              DynamicSamplingBuffer(asm.buffer.target_groups, asm.buffer.max_rounds))
            fresh.recorded = set(asm.recorded)
            self._batches[asm.index] = fresh
        self.pool.submit(first)

    def weights_updated(self, model: Any, version: int) -> None:
        self.version = version
        if version == self._pushed:  # a skipped step: the weights did not change
            return
        self._pushed = version
        self.pool.push_weights(model, version)

    # ------------------------------------------------------------------ logs and checkpoints
    def stats(self) -> dict[str, float]:
        """Steady-state figures, from the first batch on (start-up is ``pipeline/first_batch_s``):
        the share of the time the trainer waited for a batch, the share of generator time spent
        idle (no free slot), and the samples per second the trainer received."""
        running = self._t_first is not None
        elapsed = max(time.perf_counter() - self._t_first, 1e-9) if running else 1e-9
        with self._cond:
            busy = self.busy
        out = {
            "pipeline/trainer_wait_frac": self.trainer_wait / elapsed if running else 0.0,
            "pipeline/generator_idle_frac": max(0.0, 1.0 - busy / (elapsed * self.pool.size)) if running else 0.0,
            "pipeline/samples_per_s": self.samples / elapsed if running else 0.0,
            "pipeline/first_batch_s": self.first_batch_s,
            "pipeline/stale_regenerated": self.stale_regenerated,
            "pipeline/duplicates_ignored": self.duplicates_ignored,
        }
        out.update({f"pipeline/{k}": v for k, v in self.pool.stats().items()})
        return out

    def reward_stats(self) -> dict[str, int]:
        """User-reward errors and timeouts counted in generator processes (not in the trainer's task)."""
        with self._cond:
            return dict(self.remote_reward_stats)

    def state_dict(self) -> dict[str, Any]:
        # Batches dispatched but not consumed: their requests, to re-send on resume. Results are
        # not kept -- a resumed run regenerates them (from the same prompts and seeds).
        with self._cond:
            pending = sorted((a for a in self._batches.values() if a.index >= self._head), key=lambda a: a.index)
            return {"pending": [{"index": a.index, "requests": list(a.requests), "recorded": sorted(a.recorded)}
                                for a in pending]}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        recipe = self.plan.recipe
        self._resend = []
        for item in state.get("pending", []):
            buffer = None
            if recipe.filtering.dynamic_sampling:
                buffer = DynamicSamplingBuffer(recipe.batch.prompts_per_step, recipe.filtering.max_generation_rounds)
            # Only the first round is re-sent: refill rounds depend on its (regenerated) results.
            asm = _Assembly(item["index"], list(item["requests"][:1]), buffer=buffer)
            asm.recorded = set(item["recorded"]) & {0}
            self._resend.append(asm)

    def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self.pool.close()


@dataclass
class BatchPlan:
    """What the scheduler draws batches from: the trainer's sampler, problems, recipe and seeds."""

    sampler: Any
    problems_by_id: dict[str, Any]
    recipe: Any
    sampling_params: Callable[[int], Any]

    @classmethod
    def from_trainer(cls, trainer: Any) -> "BatchPlan":
        if not isinstance(trainer.sampler, LockedSampler):
            trainer.sampler = LockedSampler(trainer.sampler)
        return cls(trainer.sampler, trainer.problems_by_id, trainer.cfg.recipe, trainer.sampling_params)
