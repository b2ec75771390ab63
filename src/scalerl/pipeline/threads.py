"""Generator threads in the trainer's process (``backend.workers=threads``, the local default).

Each thread owns a :class:`~scalerl.pipeline.work.RolloutWorker` with its own copy of the
model and of the tokenizer. New weights are handed to each generator's
:meth:`~scalerl.generate.hf.HFGenerator.update_weights`, which snapshots them at once (the
trainer keeps training its own tensors) and applies them between two decode steps. Nothing to
start, one copy of the weights per update. Generation and training share one Python
interpreter, so the generator's per-token Python work takes turns with the trainer's on the
GIL (torch releases it inside its kernels); measured on the 2-core development machine this
costs less than a process's extra copies and scheduling (benchmarks/pipeline_workers.py).
"""

from __future__ import annotations

import queue
import threading
from typing import Any

from scalerl.models.lora import generator_state_dict
from scalerl.pipeline.pool import Deliver, Fail
from scalerl.pipeline.work import RolloutWorker, RoundRequest


class ThreadPool:
    def __init__(self, workers: list[RolloutWorker]) -> None:
        self.workers = workers
        self.size = len(workers)
        self._requests: queue.Queue[RoundRequest | None] = queue.Queue()
        self._threads: list[threading.Thread] = []
        self._stop = threading.Event()

    @classmethod
    def for_trainer(cls, trainer: Any) -> "ThreadPool":
        from scalerl.pipeline.work import thread_worker

        return cls([thread_worker(trainer, i) for i in range(trainer.cfg.backend.generators)])

    def start(self, deliver: Deliver, fail: Fail) -> None:
        self._threads = [
            threading.Thread(target=self._loop, args=(w, deliver, fail), name=f"scalerl-generator-{w.worker_id}",
                             daemon=True)
            for w in self.workers
        ]
        for t in self._threads:
            t.start()

    def _loop(self, worker: RolloutWorker, deliver: Deliver, fail: Fail) -> None:
        while True:
            request = self._requests.get()
            if request is None or self._stop.is_set():
                return
            # push_weights runs in the trainer's thread before it submits, so the weights are
            # already queued in the generator (applied when generate starts).
            assert worker.generator.latest_version >= request.min_version
            try:
                result = worker.run(request)
            except BaseException as exc:  # surfaced in the trainer's thread
                fail(exc)
                return
            deliver(result)

    def submit(self, request: RoundRequest) -> None:
        self._requests.put(request)

    def push_weights(self, model: Any, version: int) -> None:
        state = generator_state_dict(model)  # LoRA merged: the generators hold plain models
        for w in self.workers:
            w.generator.update_weights(state, version)

    def check(self) -> None:
        pass  # a failing thread reports through fail() before it exits

    def stats(self) -> dict[str, float]:
        return {}

    def close(self) -> None:
        self._stop.set()
        while True:  # queued requests are not worth finishing
            try:
                self._requests.get_nowait()
            except queue.Empty:
                break
        for _ in self._threads:
            self._requests.put(None)
        for t in self._threads:
            t.join(timeout=60)
