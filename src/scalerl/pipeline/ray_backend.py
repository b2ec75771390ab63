"""The Ray backend: generator actors on a Ray cluster, the trainer in the driver process.

    ray start --head                                  # machine 1 (prints the address)
    ray start --address <head-ip>:6379                # every other machine
    scalerl train --backend ray --set backend.generators=8 ...   # on the head, or RAY_ADDRESS=...

Why the trainer stays in the driver: the :class:`~scalerl.train.trainer.Trainer` owns the
run directory (run log, checkpoints, resume, the live forecast, the progress bar) and one
optimizer; keeping it where the command runs means one code path for every backend and
nothing to ship back. The generators are what scale out, so they are the actors. (A
data-parallel trainer group would be actors; this trainer is one process.) Run the command
on a machine with the trainer's accelerator.

**Actors.** Each :class:`GeneratorActor` holds a policy copy and a generator (``hf`` on CPU or
GPU; ``vllm`` on a GPU) and runs one request at a time; it is *threaded*
(``max_concurrency=2``) so a weight update arrives while it generates, and the generator
applies it between two decode steps. Requests go to idle actors from a queue in the driver
(one dispatcher thread), so a slow actor never holds up the others.

**Weights.**
``object_store`` (CPU; the default with ``hf``): after each update the driver ``ray.put``-s the
state dict once and tells every actor the new version with a reference to it; each actor
pulls it (``ray.get``: one transfer per node, then shared memory). Versions only move forward
in an actor, whatever order the calls run in.
``nccl`` (GPU; the default with ``vllm``): the driver joins a NCCL group with the vLLM workers
(vLLM's ``StatelessProcessGroup`` + ``PyNcclCommunicator``, the pattern of vLLM's RLHF
examples) and broadcasts each tensor from the trainer's GPU; each actor receives between two
engine steps and loads with the model's ``load_weights`` (:mod:`scalerl.generate.vllm`).

**Restarts, with no lost or duplicated batch.** Actors are created with
``max_restarts = backend.max_restarts``; when one dies (killed, out of memory, its node gone)
Ray re-runs its constructor -- which loads no weights, so it depends on nothing that may be
gone -- and the dispatcher re-queues the request it was running: the *same* request, same
batch index, same prompts, same seed (:mod:`~scalerl.pipeline.scheduler` drew them once, at
dispatch). Every request carries a reference to the newest weights and an actor behind them
pulls first, so the restarted actor resumes on current weights (never older than the
request's ``min_version``). The scheduler accepts one result per (batch, round), so a batch
is trained on once even if a result were delivered twice. Restarts are counted by the
process id that answers (``pipeline/actor_restarts``); an actor Ray gave up on (restarts used
up) is dropped, and the run fails with a clear error only when none is left. In sync mode
with per-batch seeds the regenerated batch is the lost one, token for token, up to float
noise between processes (tests/pipeline/test_ray_backend.py checks the run against the local
backend). Starting or joining the cluster is :mod:`~scalerl.pipeline.ray_cluster`'s.
"""

from __future__ import annotations

import collections
import os
import socket
import sys
import threading
import time
from concurrent.futures import Future
from typing import Any, Sequence

from scalerl.errors import ConfigError, ScaleRLError
from scalerl.generate.base import Completion
from scalerl.pipeline.context import PipelineContext
from scalerl.pipeline.pool import RESUME_COMMAND, Deliver, Fail, Refresh, reporting, thread_error, undone_if_raised
from scalerl.pipeline.pool_generator import GenerateJob, PoolGenerator, QueuedJob
from scalerl.pipeline.ray_cluster import _ray, _without_trainer_gpu, init_ray, nodes_hold
from scalerl.pipeline.scheduler import PipelineError
from scalerl.pipeline.weights import Weights, WeightSource, weight_source
from scalerl.pipeline.work import RoundRequest, WorkerSpec
from scalerl.stop_signals import terminated_stays_terminated

class GeneratorActor:
    """One generator on the cluster (wrapped with ``ray.remote`` by :class:`RayPool`)."""

    def __init__(self, spec: WorkerSpec, worker_id: int) -> None:
        # No weights here: the constructor is what Ray re-runs on a restart, so it must not
        # depend on an object that may be gone by then. The first request (or update) brings a
        # reference to the newest weights, which _sync pulls before generating.
        from scalerl.pipeline.work import build_worker

        self._lock = threading.Lock()
        self._latest = NO_WEIGHTS
        # A user-facing error (vLLM not installed on this machine, ...) is kept and raised by every
        # call, ready() first. Raised here, Ray kills the actor and the driver gets an ActorDiedError
        # whose page of traceback (and the actor's own, streamed) buries the one line that says what
        # to do; raised by a call, it reaches the driver as itself (RayTaskError.cause).
        self._start_error: ScaleRLError | None = None
        try:
            self._worker = build_worker(spec, {}, NO_WEIGHTS, worker_id)
        except ScaleRLError as exc:
            self._start_error = exc

    @property
    def worker(self):
        """The generator worker; raises the error that stopped the constructor, if one did."""
        if self._start_error is not None:
            raise self._start_error
        return self._worker

    def ready(self) -> int:
        if self._start_error is not None:
            raise self._start_error
        return os.getpid()

    def node(self) -> str:
        """The Ray node this actor runs on."""
        import ray

        return ray.get_runtime_context().get_node_id()

    def run(self, request: RoundRequest, weights: list, version: int) -> tuple[int, Any]:
        """Generate one request; first catch up to ``version`` if behind (a restarted actor is).
        Returns (this process's id -- a new one after a restart --, the result)."""
        self._sync(weights, version)
        return os.getpid(), self.worker.run(request)

    def generate(self, job: GenerateJob, weights: list, version: int) -> tuple[int, Any]:
        """Sample ``job``'s prompts on the newest weights (the trainer's evaluation): the
        completions, unscored (the trainer scores them with its own task)."""
        self._sync(weights, version)
        length_control = self.worker.ctx.length_control if job.length_control else None
        return os.getpid(), self.worker.generator.generate(job.prompts, job.params, length_control)

    def update_weights(self, weights: list, version: int) -> None:
        """New weights (a reference into the object store, pulled here), applied in flight."""
        self._sync(weights, version)

    def _sync(self, weights: list, version: int) -> None:
        import ray

        with self._lock:  # two update calls may run at once on a threaded actor: newest wins
            if version <= self._latest or not weights:
                return
            self.worker.generator.update_weights(ray.get(weights[0]), version)
            self._latest = version

    # -- the nccl path (vllm generators on GPUs; see scalerl.generate.vllm)
    def init_weight_broadcast(self, master_address: str, master_port: int, rank: int, world_size: int) -> None:
        self.worker.generator.init_weight_broadcast(master_address, master_port, rank, world_size)

    def receive_weight_broadcast(self, names_dtypes_shapes: list, version: int) -> None:
        with self._lock:
            self.worker.generator.receive_weight_broadcast(names_dtypes_shapes, version)
            self._latest = max(self._latest, version)

    def close(self) -> None:
        if self._start_error is None:
            self._worker.close()


#: The version of an actor that holds no weights yet (so that any update, version 0 included, is newer).
NO_WEIGHTS = -1


def _cpu_state(weights: WeightSource) -> dict[str, Any]:
    # One tensor at a time into host memory: a stream off the trainer's shards never has a
    # whole copy on a device.
    return {k: v.detach().to("cpu") for k, v in weights.tensors()}


class _ObjectStoreSync:
    """Weights through Ray's object store: one ``ray.put`` per update, every actor pulls."""

    def __init__(self, pool: "RayPool", weights: WeightSource, version: int) -> None:
        self.pool = pool
        self.latest = (pool.ray.put(_cpu_state(weights)), version)

    def request_args(self) -> tuple[list, int]:
        ref, version = self.latest
        return [ref], version

    def push(self, weights: WeightSource, version: int) -> list:
        ref = self.pool.ray.put(_cpu_state(weights))
        self.latest = (ref, version)
        return [a.update_weights.remote([ref], version) for a in self.pool.live_actors()]


class _NcclSync:
    """Weights by NCCL broadcast from the trainer's GPU to every vLLM generator (GPU clusters only)."""

    def __init__(self, pool: "RayPool", weights: WeightSource, version: int) -> None:
        import torch
        from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
        from vllm.distributed.utils import StatelessProcessGroup

        ray = pool.ray
        self.pool = pool
        self.version = version
        device = weights.device  # on CUDA: RayPool checked it before any actor started
        address = ray.util.get_node_ip_address()
        port = _free_port()
        world = 1 + len(pool.actors)  # one vLLM worker per actor (tensor_parallel_size=1)
        joins = [a.init_weight_broadcast.remote(address, port, 1 + i, world) for i, a in enumerate(pool.actors)]
        group = StatelessProcessGroup.create(host=address, port=port, rank=0, world_size=world)
        self.comm = PyNcclCommunicator(group, device=device)
        ray.get(joins)
        self.stream = torch.cuda.current_stream
        # The first weights are waited for, not fired and forgotten as later pushes are: a receive
        # that fails (a name or shape the engine does not have) then fails the pool's start with
        # the actor's error; dropped, its error was never read.
        ray.get(self.push(weights, version))

    def request_args(self) -> tuple[list, int]:
        return [], self.version  # actors receive every broadcast; nothing to pull

    def push(self, weights: WeightSource, version: int) -> list:
        # Each actor posts its receives between two engine steps; the broadcasts below complete
        # once all have. A restarted actor cannot rejoin the group: with nccl a dead actor fails the run.
        meta = [(k, str(dtype).removeprefix("torch."), shape) for k, dtype, shape in weights.meta()]
        calls = [a.receive_weight_broadcast.remote(meta, version) for a in self.pool.live_actors()]
        for _, tensor in weights.tensors():  # sent as each arrives (a stream off the shards: one at a time)
            self.comm.broadcast(tensor.detach().contiguous(), src=0, stream=self.stream())
        self.version = version
        return calls


class ActorsLost(PipelineError, ScaleRLError):
    """Every generator actor died and Ray restarts none of them: one line on the command line, as a
    dead generator process is (:class:`~scalerl.pipeline.processes.GeneratorExited`), not the
    trainer's traceback around Ray's many-line error."""


def actors_lost_message(max_restarts: int, last: BaseException) -> str:
    """Why the pool has no actor left (``last``: the error of the last one lost; only its first line,
    Ray's runs to a dozen) and how the run continues: from its last checkpoint."""
    first = next((line.strip() for line in str(last).splitlines() if line.strip()), type(last).__name__)
    return (f"every generator actor died and backend.max_restarts={max_restarts} restarts are used up (last: "
            f"{first} -- killed, or out of memory? see the Ray logs); the run continues from its last checkpoint "
            f"with {RESUME_COMMAND}")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


#: backend.weight_sync -> how weights reach the actors ("auto" resolved by RayPool).
WEIGHT_SYNC = {"object_store": _ObjectStoreSync, "nccl": _NcclSync}


class RayPool:
    """Generator actors behind the :class:`~scalerl.pipeline.pool.WorkerPool` interface."""

    def __init__(self, spec: WorkerSpec, weights: Weights, version: int, size: int, *, address: str | None = None,
                 cpus: float = 1.0, gpus: float = 0.0, max_restarts: int = 3, weight_sync: str = "auto") -> None:
        weights = weight_source(weights)
        self.ray = _ray()
        self._owns_ray = False
        sync_name = weight_sync if weight_sync != "auto" else ("nccl" if spec.generator == "vllm" else "object_store")
        if sync_name == "nccl" and weights.device.type != "cuda":
            # Before the cluster and the actors: the vLLM actors take minutes to start, and the
            # broadcast that needs the trainer's GPU comes only after them.
            raise ConfigError("backend.weight_sync=nccl needs the trainer on a CUDA GPU (run.device=cuda); "
                              "use backend.weight_sync=object_store")
        if sync_name == "nccl":
            # A restarted process cannot rejoin a NCCL group (its membership is fixed at creation):
            # with nccl a dead generator ends the run, with a clear error, instead of a restart.
            max_restarts = 0
        self.size = size
        self.devices = 1 + size  # the trainer and each generator actor (for accelerator-hours)
        self.max_restarts = max_restarts
        self.actors: list = []
        self._init_dispatch_state()  # before the weight sync, which sends to the live actors
        # The caller never gets a pool whose constructor raised, so nobody else could close what it
        # had started when it failed: a cluster too small, an actor that cannot start, Ctrl-C.
        # A SIGTERM while the actors start (ray.get, which re-raises our Terminated as a plain
        # KeyboardInterrupt) stays one: it said "interrupted" and exited 130, as Ctrl-C does
        # (benchmarks/kill_fuzz.py --backend ray).
        with terminated_stays_terminated(), undone_if_raised(self._release):
            self._join_cluster(address, weights.device)
            self._check_resources(size, cpus, gpus)
            self._start_actors(spec, cpus, gpus)
            self._sync = WEIGHT_SYNC[sync_name](self, weights, version)
        self._pids: list[int | None] = list(self._pids_at_start)

    def _init_dispatch_state(self) -> None:
        """The dispatcher's bookkeeping: nothing started yet, every actor idle."""
        self._lock = threading.Condition()
        self._pending: collections.deque[RoundRequest | QueuedJob] = collections.deque()
        self._idle: collections.deque[int] = collections.deque(range(self.size))
        self._inflight: dict[Any, tuple[int, RoundRequest | QueuedJob]] = {}
        self._dead: set[int] = set()
        self._not_before: dict[int, float] = {}
        self.restarts = 0
        self._update_calls: list = []
        self._stop = threading.Event()
        self._error: BaseException | None = None
        self._jobs_error: BaseException | None = None
        self._thread: threading.Thread | None = None
        self._refresh: Refresh | None = None  # (start's)
        self.requeued = 0
        self.updates_failed = 0  # fire-and-forget weight updates that raised (made good by the next request)

    @classmethod
    def for_context(cls, ctx: PipelineContext) -> "RayPool":
        b = ctx.backend
        return cls(WorkerSpec.from_context(ctx), ctx.generator_weights, ctx.version, b.generators,
                   address=b.ray_address, cpus=b.generator_cpus, gpus=b.generator_gpus, max_restarts=b.max_restarts,
                   weight_sync=b.weight_sync)

    def _join_cluster(self, address: str | None, device: Any) -> None:
        """Use this process's Ray session if it has one; else connect to the cluster at ``address``
        (or ``RAY_ADDRESS``), or start a local one: a session this pool then owns, and ends on close
        (a local cluster with it)."""
        if self.ray.is_initialized():
            return
        address = address or os.environ.get("RAY_ADDRESS")
        self._owns_ray = True  # before: a start stopped part-way (Ctrl-C) may have left processes to end
        with _without_trainer_gpu(device, address):
            init_ray(address)

    def _start_actors(self, spec: WorkerSpec, cpus: float, gpus: float) -> None:
        """Create the generator actors and wait until each has built its generator."""
        cls = self.ray.remote(GeneratorActor).options(
            num_cpus=cpus, num_gpus=gpus, max_restarts=self.max_restarts, max_task_retries=0, max_concurrency=2,
        )
        for i in range(self.size):  # one at a time into the list: a Ctrl-C between two leaves none unknown
            self.actors.append(cls.remote(spec, i))
        self._wait_ready()

    def _check_resources(self, size: int, cpus: float, gpus: float) -> None:
        have = self.ray.cluster_resources()
        need = {"CPU": size * cpus, "GPU": size * gpus}
        for name, amount in need.items():
            if amount > have.get(name, 0.0) + 1e-9:
                raise ConfigError(
                    f"backend: {size} generator actors need {amount:g} {name} but the Ray cluster has "
                    f"{have.get(name, 0.0):g}; lower backend.generators or backend.generator_{name.lower()}s, "
                    "or add machines (ray start --address ...)"
                )
        held = nodes_hold(self.ray, cpus, gpus)  # (an actor on no node waited out the start's 600 s: reviews dd, dg)
        if held < size:
            raise ConfigError(
                f"backend: {size} generator actors of {cpus:g} CPU and {gpus:g} GPU each, but the nodes of the Ray "
                f"cluster hold {held:g} of them (an actor runs on one machine); lower backend.generators, "
                "backend.generator_cpus or backend.generator_gpus, or add machines (ray start --address ...)")

    def _wait_ready(self, timeout: float = 600.0) -> None:
        try:
            self._pids_at_start = self.ray.get([a.ready.remote() for a in self.actors], timeout=timeout)
            self.nodes = self.ray.get([a.node.remote() for a in self.actors], timeout=timeout)
        except self.ray.exceptions.GetTimeoutError:
            raise PipelineError(f"generator actors did not start within {timeout:g} s (see the Ray logs)") from None
        except self.ray.exceptions.RayTaskError as exc:  # an actor's own one-line error (GeneratorActor)
            if isinstance(exc.cause, ScaleRLError):  # (the constructor then kills the actors, alive but useless)
                raise exc.cause from None
            raise

    def live_actors(self) -> list:
        return [a for i, a in enumerate(self.actors) if i not in self._dead]

    # ------------------------------------------------------------------ the dispatcher thread
    def start(self, deliver: Deliver, fail: Fail, *, refresh: Refresh | None = None) -> None:
        # Applied to a request as it goes to an actor: it may wait in the queue for a free actor, or be re-queued
        # after its actor died, while the trainer learns more of the reward (review ef: a restarted actor re-ran a
        # request with the floor it had when first sent).
        self._refresh = refresh
        self._thread = threading.Thread(target=reporting(self._loop, fail), args=(deliver, fail),
                                        name="scalerl-ray-dispatch",
                                        daemon=True)
        self._thread.start()

    def submit(self, request: RoundRequest) -> None:
        with self._lock:
            self._pending.append(request)
            self._lock.notify_all()

    def submit_jobs(self, jobs: Sequence[GenerateJob]) -> list["Future[list[Completion]]"]:
        """Queue ``jobs`` ahead of every training request (the trainer is waiting on them); their results."""
        queued = [QueuedJob(job) for job in jobs]
        with self._lock:
            if self._jobs_error is not None:  # the dispatcher is gone: nothing would run them
                raise self._jobs_error
            self._pending.extendleft(reversed(queued))
            self._lock.notify_all()
        return [q.result for q in queued]

    @property
    def version(self) -> int:
        """The newest weights' version (what a request or job brings the actor to)."""
        return self._sync.request_args()[1]

    def generator(self) -> PoolGenerator:
        """The actors as one generator, for the trainer's evaluations (``eval.engine: generators``)."""
        return PoolGenerator(self)

    def _assign(self) -> None:
        now = time.monotonic()
        with self._lock:
            waiting = []
            while self._pending and self._idle:
                i = self._idle.popleft()
                if self._not_before.get(i, 0.0) > now:  # restarting: leave it alone a little longer
                    waiting.append(i)
                    continue
                request = self._pending.popleft()
                weights, version = self._sync.request_args()
                try:
                    if isinstance(request, QueuedJob):
                        ref = self.actors[i].generate.remote(request.job, weights, version)
                    else:
                        ref = self.actors[i].run.remote(self._refresh(request) if self._refresh else request,
                                                        weights, version)
                except BaseException:  # back in the queue: whoever waits on it hears of the failure
                    self._pending.appendleft(request)
                    self._idle.appendleft(i)
                    raise
                self._inflight[ref] = (i, request)
            self._idle.extendleft(reversed(waiting))

    def _loop(self, deliver: Deliver, fail: Fail) -> None:
        try:
            self._dispatch(deliver, fail)
        except BaseException as exc:  # (reporting() would say it to fail(), but the jobs must hear it too)
            self._error = thread_error(exc)
            fail(self._error)
        finally:  # stopped or failed: nobody will run the jobs the trainer waits on
            self._fail_jobs(self._error or PipelineError("the generator pool was closed"))

    def _fail_jobs(self, error: BaseException) -> None:
        with self._lock:
            self._jobs_error = error  # later submit_jobs calls raise it
            jobs = [r for r in self._pending if isinstance(r, QueuedJob)]
            jobs += [r for _, r in self._inflight.values() if isinstance(r, QueuedJob)]
        for job in jobs:
            if not job.result.done():
                job.result.set_exception(error)

    def _dispatch(self, deliver: Deliver, fail: Fail) -> None:
        ray = self.ray
        while not self._stop.is_set():
            self._assign()
            with self._lock:
                refs = list(self._inflight)
                if not refs:
                    self._lock.wait(timeout=0.1)
                    continue
            ready, _ = ray.wait(refs, num_returns=len(refs), timeout=0.05, fetch_local=True)
            for ref in ready:
                with self._lock:
                    i, request = self._inflight.pop(ref)
                try:
                    pid, result = ray.get(ref)
                except ray.exceptions.RayActorError as exc:
                    if not self._actor_lost(i, request, exc):
                        fail(self._error)
                        return
                    continue
                except Exception as exc:  # the generator itself raised: a bug or bad input, not a crash
                    if isinstance(request, QueuedJob):  # the trainer's own call: raised there
                        with self._lock:
                            self._idle.append(i)
                        request.result.set_exception(exc)
                        continue
                    # A user-facing error (a reward function found hung by its own check) as itself, one line;
                    # a bug with the actor's traceback (review dd: both were Ray's page of traceback).
                    cause = getattr(exc, "cause", None)
                    self._error = (cause if isinstance(cause, ScaleRLError) else
                                   PipelineError(f"generator actor {i} failed on batch {request.index}: {exc}"))
                    fail(self._error)
                    return
                with self._lock:
                    self._idle.append(i)
                    if self._pids[i] is not None and self._pids[i] != pid:
                        self.restarts += 1  # a new process answered for actor i
                    self._pids[i] = pid
                if isinstance(request, QueuedJob):
                    request.result.set_result(result)
                else:
                    deliver(result)
            self._reap_updates()

    def _actor_lost(self, i: int, request: RoundRequest, exc: BaseException) -> bool:
        """Re-queue the request of an actor that died; False when no actor is left.

        Ray reports a call to an actor it is restarting as ``ActorUnavailableError`` and one to an
        actor it gave up on (``max_restarts`` used up) as ``ActorDiedError``."""
        with self._lock:
            self._pending.appendleft(request)  # the same request: same index, prompts, seed
            self.requeued += 1
            if isinstance(exc, self.ray.exceptions.ActorDiedError):
                newly, alive = i not in self._dead, self.size - len(self._dead | {i})
                self._dead.add(i)
                if newly and alive:  # generation slows down: say so once, not only in pipeline/actors_lost
                    print(f"note: generator actor {i} died and backend.max_restarts={self.max_restarts} restarts are "
                          f"used up; the run goes on with {alive} of {self.size} actors", file=sys.stderr)
            else:  # restarting (or a network blip): try it again shortly
                self._not_before[i] = time.monotonic() + 0.5
                self._idle.append(i)
            if len(self._dead) == self.size:
                self._error = ActorsLost(actors_lost_message(self.max_restarts, exc))
                return False
        return True

    def _reap_updates(self) -> None:
        # Weight-update calls are fire-and-forget; collect the finished ones so that a call to an
        # actor that was dead at the time does not leak or print as an unhandled error.
        # ray.wait gets a list of its own: push_weights extends self._update_calls from the trainer's
        # thread, and a list that grows during ray.wait (which releases the GIL) makes Ray's core
        # worker raise an AssertionError -- which stopped this thread (tests/pipeline/test_ray_reap.py).
        with self._lock:
            calls, self._update_calls = self._update_calls, []
        if not calls:
            return
        done, waiting = self.ray.wait(calls, num_returns=len(calls), timeout=0)
        with self._lock:
            self._update_calls.extend(waiting)
        for ref in done:
            try:
                self.ray.get(ref)
            except self.ray.exceptions.RayError:
                # A dead actor restarts; any other failed update (an object gone, a task error) is
                # made good by the next request, which brings the newest weights and syncs first --
                # and raises there, through fail(), if the update itself is what fails.
                self.updates_failed += 1

    # ------------------------------------------------------------------ the trainer's side
    def push_weights(self, weights: Weights, version: int) -> None:
        calls = self._sync.push(weight_source(weights), version)
        with self._lock:
            self._update_calls.extend(calls)

    def wait_ready(self) -> None:
        pass  # its constructor waited for the actors

    def check(self) -> None:
        if self._error is not None:
            raise self._error

    def stats(self) -> dict[str, float]:
        return {"actor_restarts": self.restarts, "requeued": self.requeued, "actors_lost": len(self._dead),
                "generator_nodes": len(set(self.nodes)), "weight_updates_failed": self.updates_failed}

    def kill(self, worker: int) -> None:
        """Kill generator actor ``worker`` as a crash would (Ray restarts it): for tests and drills."""
        self.ray.kill(self.actors[worker], no_restart=False)

    def busy_workers(self) -> dict[int, int]:
        """actor -> batch index it is running now (an evaluation's share has none: not listed)."""
        with self._lock:
            return {i: request.index for i, request in self._inflight.values() if not isinstance(request, QueuedJob)}

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)
        try:  # let each actor stop its reward worker process, if it has one
            self.ray.get([a.close.remote() for a in self.live_actors()], timeout=10)
        except Exception:  # a dead or stuck actor: killed below anyway
            pass
        self._release()

    def _release(self) -> None:
        """Kill the actors, and shut down the Ray cluster if this pool started it: the end of
        :meth:`close`, and all a constructor that failed part-way needs (no actor has run anything)."""
        for a in self.actors:
            try:
                self.ray.kill(a, no_restart=True)
            except Exception:  # already gone
                pass
        self.actors = []
        if self._owns_ray:
            self.ray.shutdown()
