"""Generator threads in the trainer's process (``backend.workers=threads``, the local default).

Each thread owns a :class:`~scalerl.pipeline.work.RolloutWorker` with its own copy of the
model and of the tokenizer, and runs with its own number of torch threads
(``backend.generator_threads``; torch's thread count is per calling thread, so the trainer's
thread keeps its own). Weights reach the generators in one of two ways:

* **seeded** (deterministic PipelineRL-k, the default here): the trainer publishes its weights
  after every step into a :class:`~scalerl.pipeline.landing.WeightHistory`; each request carries
  its plan, and the generator loads the planned weights at the planned decode steps, waiting for
  them if the trainer has not produced them yet (:mod:`scalerl.pipeline.landing`).
* **timing**: new weights are handed to each generator's
  :meth:`~scalerl.generate.hf.HFGenerator.update_weights`, which snapshots them at once and
  applies them between the next two decode steps, whenever that is.

Generation and training share one Python interpreter, so the generator's per-token Python work
takes turns with the trainer's on the GIL (torch releases it inside its kernels); measured on
the 2-core development machine this costs less than a process's extra copies and scheduling
(benchmarks/pipeline_workers.py).
"""

from __future__ import annotations

import queue
import sys
import threading
import time

import torch

from scalerl.generate.base import GenerationCancelled
from scalerl.generate.hf import HFGenerator
from scalerl.pipeline.context import PipelineContext
from scalerl.pipeline.landing import HistoryClosed, WeightHistory
from scalerl.pipeline.pool import Deliver, Fail, Refresh, reporting
from scalerl.pipeline.weights import Weights, weight_source
from scalerl.pipeline.work import RolloutWorker, RoundRequest


#: Seconds :meth:`ThreadPool.close` waits, for all its threads together, for them to return. A
#: cancelled decode loop returns at its next step; a thread still running after this (a long
#: prompt pass) is left to end on its own -- threads cannot be killed, and these are daemons.
CLOSE_WAIT_S = 10.0


class ThreadPool:
    def __init__(self, workers: list[RolloutWorker], *, history: WeightHistory | None = None,
                 torch_threads: int | None = None) -> None:
        """``history``: seeded mode (workers read planned weights from it); None: timing mode.
        ``torch_threads``: intra-op threads of each generator thread (None: leave torch's)."""
        self.workers = workers
        self.size = len(workers)
        self.history = history
        self.torch_threads = torch_threads
        self._requests: queue.Queue[RoundRequest | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()
        # What close() stops mid-generation (thread workers hold HF generators; test fakes may not).
        self._cancels = [w.generator.cancel for w in workers if isinstance(w.generator, HFGenerator)]

    @classmethod
    def for_context(cls, ctx: PipelineContext, history: WeightHistory | None = None) -> "ThreadPool":
        from scalerl.pipeline.work import thread_worker

        workers = [thread_worker(ctx, i, history) for i in range(ctx.backend.generators)]
        return cls(workers, history=history, torch_threads=ctx.backend.generator_threads)

    def wait_ready(self) -> None:
        pass  # its workers were built with it

    def start(self, deliver: Deliver, fail: Fail, *, refresh: Refresh | None = None) -> None:
        self._threads = [
            threading.Thread(target=reporting(self._loop, fail), args=(w, deliver, fail),
                             name=f"scalerl-generator-{w.worker_id}",
                             daemon=True)
            for w in self.workers
        ]
        for t in self._threads:
            t.start()

    def _loop(self, worker: RolloutWorker, deliver: Deliver, fail: Fail) -> None:
        if self.torch_threads:
            torch.set_num_threads(self.torch_threads)  # this thread's only: the trainer keeps its own
        while True:
            request = self._requests.get()
            if request is None or self._stop.is_set():
                return
            if request.updates is None:
                # push_weights runs in the trainer's thread before it submits, so the weights are
                # already queued in the generator (applied when generate starts).
                assert worker.generator.latest_version >= request.min_version
            try:
                result = worker.run(request)
            except (HistoryClosed, GenerationCancelled):
                return  # the pool is closing (or another worker failed and said so)
            except BaseException as exc:  # surfaced in the trainer's thread
                if self.history is not None:
                    self.history.close(exc)  # wake the other workers waiting for weights
                fail(exc)
                return
            deliver(result)

    def submit(self, request: RoundRequest) -> None:
        self._requests.put(request)

    def push_weights(self, weights: Weights, version: int) -> None:
        """Timing mode: hand the new weights to every generator (applied at its next decode step)."""
        state = dict(weight_source(weights).tensors())  # LoRA merged: the generators hold plain models
        for w in self.workers:
            w.generator.update_weights(state, version)

    def check(self) -> None:
        pass  # a failing thread reports through fail() before it exits

    def stats(self) -> dict[str, float]:
        return {}

    def generator(self) -> None:
        return None  # the trainer's own model is as fast, on the same cores

    def close(self) -> None:
        self._stop.set()
        if self.history is not None:
            self.history.close()  # a worker waiting for weights that will never come returns
        while True:  # queued requests are not worth finishing
            try:
                self._requests.get_nowait()
            except queue.Empty:
                break
        for _ in self._threads:
            self._requests.put(None)
        # A generation in progress stops at its next decode step. Before, each thread was joined
        # for up to 60 s in turn while it finished its batch: N threads in long generations made a
        # stop wait N minutes.
        for cancel in self._cancels:
            cancel()
        deadline = time.monotonic() + CLOSE_WAIT_S
        for t in self._threads:
            t.join(timeout=max(0.0, deadline - time.monotonic()))
        left = [t.name for t in self._threads if t.is_alive()]
        if left:
            print(f"note: {', '.join(left)} still running {CLOSE_WAIT_S:.0f} s after the pipeline closed; "
                  "left to end in the background", file=sys.stderr)
