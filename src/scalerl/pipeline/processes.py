"""Generator processes on the trainer's machine (``backend.workers=processes``).

Each process (``spawn``-ed: forking a process that already runs torch threads is unsafe)
rebuilds the policy from a :class:`~scalerl.pipeline.work.WorkerSpec` and runs its own
interpreter, so generation and training never contend for one GIL. On the 2-core development
machine this measured no faster than threads (benchmarks/pipeline_workers.py), which are the
default; processes are the choice when the generator's Python work is what limits it (many
generators, a model small enough that per-token overhead dominates, free cores).

Weights travel through **shared memory**: one set of shared tensors and a shared version
number, written together by the trainer under a cross-process lock after every update; then
a wake-up goes down each process's notification queue. A listener thread in the process
copies tensors and version under the same lock (never half-written, and the version always
names the values copied) into its generator's update queue; the decode loop applies them
between two steps (in-flight). A listener that falls behind skips straight to the newest.

Requests go down one shared queue (an idle process takes the next) and results come back on
another, read by a thread in the trainer's process that hands them to the scheduler. A
process that dies is an error of the run (locally there is no cluster manager to restart it;
the Ray backend restarts actors).
"""

from __future__ import annotations

import atexit
import os
import pickle
import queue
import signal
import threading
import time
import traceback
from typing import Any

from scalerl.errors import ScaleRLError
from scalerl.parent_death import die_with_parent, from_lasting_thread
from scalerl.pipeline.context import PipelineContext
from scalerl.pipeline.pool import RESUME_COMMAND, Deliver, Fail, Refresh, reporting, undone_if_raised
from scalerl.pipeline.scheduler import PipelineError
from scalerl.pipeline.weights import Weights, weight_source
from scalerl.pipeline.work import WorkerSpec, build_worker
from scalerl.stop_signals import ignore_stops


#: Seconds :meth:`ProcessPool.close` waits for a generator process to finish its request and exit
#: before it kills it.
CLOSE_GRACE_S = 2.0


class GeneratorExited(PipelineError, ScaleRLError):
    """A generator process died (killed, out of memory, or crashed with its traceback printed):
    one line on the command line, not the trainer's traceback, which says nothing more."""


def exited_message(index: int, code: int | None) -> str:
    """Why generator process ``index`` is gone (``code``: its exit code, negative for a signal)
    and how the run continues: from its last checkpoint."""
    if code is not None and code < 0:
        how = f"killed by signal {-code} ({signal.Signals(-code).name}: kill, or the out-of-memory killer?)"
    else:
        how = f"exit code {code}; see its output above"
    return (f"generator process {index} exited unexpectedly ({how}); the run continues from its last checkpoint "
            f"with {RESUME_COMMAND}")


def _exit_with_parent() -> None:
    """A generator process must not outlive its trainer (killed with -9, say): it would wait on
    its request queue forever. On Linux the kernel kills it with its trainer
    (:func:`~scalerl.parent_death.die_with_parent`; the pool starts it from a thread that lasts),
    even while its main thread is stuck in C code that holds the GIL -- which a thread watching the
    parent, the fallback elsewhere, cannot run through: it exits when the parent's sentinel fires."""
    import multiprocessing
    from multiprocessing.connection import wait

    parent = multiprocessing.parent_process()
    if parent is None or die_with_parent(parent.pid):
        return

    def watch() -> None:
        wait([parent.sentinel])
        os._exit(0)

    threading.Thread(target=watch, name="scalerl-parent-watch", daemon=True).start()


def _failure(worker_id: int, exc: BaseException) -> tuple[str, int, Any]:
    """What a generator process reports of the error that stopped it: a user-facing one as itself (one line for
    the trainer to raise: a reward function its own check found hung, a device this machine lacks -- review dd: a
    page of this process's traceback), anything else as its traceback."""
    if isinstance(exc, ScaleRLError):
        try:
            pickle.loads(pickle.dumps(exc))
            return ("said", worker_id, exc)
        except Exception:  # noqa: BLE001 -- an error class that does not pickle: its text, still one line
            return ("said", worker_id, ScaleRLError(str(exc)))
    return ("error", worker_id, traceback.format_exc())


def _process_main(spec: WorkerSpec, shared: dict, shared_version: Any, lock: Any, requests: Any, results: Any,
                  notify: Any, stop: Any, worker_id: int, up: Any) -> None:
    _exit_with_parent()
    ignore_stops()  # the trainer handles Ctrl-C and SIGTERM and closes the pool, which kills this process
    try:
        with lock:
            state = {k: v.clone() for k, v in shared.items()}
            version = shared_version.value
        worker = build_worker(spec, state, version, worker_id)
        del state
    except BaseException as exc:
        results.put(_failure(worker_id, exc))
        # Said done too: a report over the pipe's 64 KiB keeps this process alive until the reader drains it, and
        # the reader starts after wait_ready (review cn: it waited for ever).
        up.release()
        return
    results.put(("ready", worker_id, None))
    up.release()  # (for ProcessPool.wait_ready, which cannot read the results before the reader starts)
    latest = [version]
    synced = threading.Condition()

    def listen() -> None:
        while True:
            if notify.get() is None:
                return
            with lock:
                v = shared_version.value
                if v <= latest[0]:
                    continue  # an earlier wake-up already copied these
                worker.generator.update_weights(shared, v)
            with synced:
                latest[0] = max(latest[0], v)
                synced.notify_all()

    threading.Thread(target=listen, name="scalerl-weights", daemon=True).start()
    try:
        while True:
            request = requests.get()
            if request is None or stop.is_set():
                return
            with synced:  # the staleness bound: never start on weights older than asked
                synced.wait_for(lambda: latest[0] >= request.min_version)
            result = worker.run(request)
            results.put(("result", worker_id, result))
    except BaseException as exc:
        results.put(_failure(worker_id, exc))
    finally:
        worker.close()


class ProcessPool:
    def __init__(self, spec: WorkerSpec, weights: Weights, version: int, size: int) -> None:
        import torch.multiprocessing as mp

        ctx = mp.get_context("spawn")
        self.size = size
        self.devices = 1 + size  # the trainer and each generator process (compute.py: a CPU run's devices)
        self._shared = {k: v.detach().to("cpu", copy=True).share_memory_() for k, v in weight_source(weights).tensors()}
        self._version = ctx.Value("q", version, lock=False)  # guarded by self._lock, with the tensors
        self._lock = ctx.Lock()
        self._requests = ctx.Queue()
        self._results = ctx.Queue()
        self._notify = [ctx.SimpleQueue() for _ in range(size)]
        self._stop_all = ctx.Event()
        self._up = ctx.Semaphore(0)  # released by each process once its model is built
        self._waiting = size  # processes not yet seen up by wait_ready
        self._procs = [
            ctx.Process(target=_process_main, name=f"scalerl-generator-{i}", daemon=True,
                        args=(spec, self._shared, self._version, self._lock, self._requests, self._results,
                              self._notify[i], self._stop_all, i, self._up))
            for i in range(size)
        ]
        self._reader: threading.Thread | None = None
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self.ready = 0
        # They ignore SIGTERM: multiprocessing's own exit handler (terminate, then join) would wait
        # on them for ever if the pool were never closed.
        atexit.register(self._kill)
        # Started now, not on the first batch: loading torch and the model overlaps the trainer's
        # first evaluation. A start that fails (or Ctrl-C) kills those already started.
        with undone_if_raised(self._abandon):
            for p in self._procs:  # (from a thread that lasts: a process dies with the thread that started it)
                from_lasting_thread(p.start)

    @classmethod
    def for_context(cls, ctx: PipelineContext) -> "ProcessPool":
        return cls(WorkerSpec.from_context(ctx), ctx.generator_weights, ctx.version, ctx.backend.generators)

    def wait_ready(self) -> None:
        """Until every process has built its model (spawn, import torch, load: seconds, which the trainer's clock
        counted as its first step's, and again at every resume -- review cl) or failed to. A process that failed or
        died ends the wait: the reader says why once the pool starts."""
        while self._waiting:
            if self._up.acquire(timeout=0.5):
                self._waiting -= 1
            elif any(not p.is_alive() for p in self._procs):
                return

    def start(self, deliver: Deliver, fail: Fail, *, refresh: Refresh | None = None) -> None:
        self._reader = threading.Thread(target=reporting(self._read, fail), args=(deliver, fail),
                                        name="scalerl-results",
                                        daemon=True)
        self._reader.start()

    def _read(self, deliver: Deliver, fail: Fail) -> None:
        while not self._stop.is_set():
            try:
                kind, worker_id, payload = self._results.get(timeout=0.5)
            except queue.Empty:
                dead = [(i, p.exitcode) for i, p in enumerate(self._procs) if not p.is_alive()]
                if dead and not self._stop.is_set():
                    i, code = dead[0]
                    self._error = GeneratorExited(exited_message(i, code))
                    fail(self._error)
                    return
                continue
            if kind == "result":
                deliver(payload)
            elif kind == "ready":
                self.ready += 1
            elif kind == "said":
                self._error = payload
                fail(payload)
                return
            else:
                self._error = PipelineError(f"generator process {worker_id} failed:\n{payload}")
                fail(self._error)
                return

    def submit(self, request: Any) -> None:
        self._requests.put(request)

    def push_weights(self, weights: Weights, version: int) -> None:
        state = dict(weight_source(weights).tensors())  # LoRA merged: the generators hold plain models
        with self._lock:
            for name, target in self._shared.items():
                target.copy_(state[name].detach())
            self._version.value = version
        for q in self._notify:
            q.put(True)

    def check(self) -> None:
        if self._error is not None:
            raise self._error

    def stats(self) -> dict[str, float]:
        return {}

    def generator(self) -> None:
        return None  # generator processes share the trainer's machine: its own model is as fast

    def _kill(self) -> None:
        for p in self._procs:
            if p.is_alive():
                p.kill()
                p.join(timeout=5)

    def close(self) -> None:
        """Stop the generator processes: idle ones exit when told, the others are killed after
        :data:`CLOSE_GRACE_S` (a stop -- Ctrl-C, SIGTERM -- waits no longer than that)."""
        self._stop.set()
        self._stop_all.set()
        while True:  # queued requests are not worth finishing
            try:
                self._requests.get_nowait()
            except (queue.Empty, OSError, ValueError):
                break
        for _ in self._procs:
            self._requests.put(None)
        for q in self._notify:
            q.put(None)
        deadline = time.monotonic() + CLOSE_GRACE_S
        for p in self._procs:
            p.join(timeout=max(0.1, deadline - time.monotonic()))
        self._release()  # the rest are in a generate call not worth waiting for (and ignore SIGTERM)

    def _abandon(self) -> None:
        """Undo a constructor that failed part-way: kill the processes it had started, at once
        (none has a request to finish), and release the queues."""
        # A start that Ctrl-C stopped the constructor waiting for still runs in the lasting thread;
        # a call queued behind it returns once it is done, so that process is killed too.
        from_lasting_thread(lambda: None)
        self._release()

    def _release(self) -> None:
        """Kill the processes still running, and close the queues once the results reader (if
        started) is done with them."""
        self._kill()
        atexit.unregister(self._kill)
        if self._reader is not None:
            self._reader.join(timeout=5)
        self._requests.close()
        self._results.close()
