"""Starting a multi-process trainer group (``scalerl train --nproc N``, or under ``torchrun``).

    summary = launch(cfg, resume=False)       # run.nproc processes on this machine, torch's spawn
    summary = run_rank(cfg, resume=False)     # one rank of a torchrun-launched group (its env vars)

``launch`` starts ``run.nproc`` processes with ``torch.multiprocessing.start_processes``
(spawn), which joins them and stops the others when one fails; each joins the process group
(gloo on the CPU, NCCL on GPUs, each rank's GPU bound to it; a free TCP port on 127.0.0.1) and a
gloo group for objects and waits (:mod:`scalerl.train.collectives`), and runs :func:`run_rank`:
rank 0 the :class:`~scalerl.train.trainer.Trainer`, the others
:func:`scalerl.train.distributed.follow`. A user-facing error in a rank (bad data, a budget the
model cannot hold) comes back as the same one-line error in the launching process. SIGTERM to
the launching process (``kill PID``, a scheduler's stop) is passed on to the ranks, which stop as
on their own SIGTERM; rank 0's "interrupted at step N ...; resume with" line then comes back. So is
a SIGINT: Ctrl-C at the terminal, or one to the launching process alone (a notebook's "interrupt
kernel", ``timeout -s INT``, ``kill -INT PID``), which the ranks never heard of. A
rank killed by a signal (``kill -9``, the out-of-memory killer) is named, with the signal, before
that line (torch stops the other ranks with SIGTERM, so rank 0's own line alone looked like a stop).

Across machines, torchrun starts the ranks instead (``torchrun --nnodes 2 --nproc-per-node 8
--rdzv-endpoint HOST:PORT -m scalerl.cli train ...``, docs/distributed.md); :func:`run_rank`
reads ``RANK`` / ``WORLD_SIZE`` / ``LOCAL_RANK`` and the rendezvous from the environment.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import os
import shlex
import signal
import socket
import sys
import threading
import traceback
from pathlib import Path
from typing import Any, Iterator

import torch
import torch.distributed as dist

from scalerl import errors
from scalerl.errors import RunInterrupted, ScaleRLError, interrupt_status
from scalerl.parent_death import die_with_parent, from_lasting_thread
from scalerl.stop_signals import StopLatch, raise_terminated, sigterm_when_set
from scalerl.train.closing import close_each
from scalerl.train.collectives import WAIT_TIMEOUT, barrier, forget_object_group, open_object_group
from scalerl.train.config import TrainConfig, group_problems
from scalerl.train.distributed import Rank, backend_for, device_for, follow, make_group, rank_threads
from scalerl.train.torchrun_env import env_rank


class TrainerGroupError(ScaleRLError):
    """A rank of the trainer group failed (its message says which and why)."""


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def leave_group(*, clean: bool) -> None:
    """Leave the default process group; ``clean``: every rank got here without an error.

    On a clean exit the ranks leave together: a gloo rank that tore its group down and exited
    while another was still computing aborted once in CI (SIGABRT, "terminate called without an
    active exception"; 50 runs of that test here did not repeat it). The objects that hold the group
    (FSDP's device mesh) are then collected here, while the interpreter is whole: a process
    group destroyed during the interpreter's finalization can abort the same way. After an error
    nobody waits, since the failed rank never arrives.
    """
    if clean:
        barrier()
    dist.destroy_process_group()  # every group, the object group's too
    forget_object_group()
    gc.collect()


def _follow(cfg: TrainConfig, rank: Rank) -> None:
    """Ranks > 0: the sharded policy and nothing else; rank 0's orders from then on."""
    from scalerl.pipeline.registry import trainer_threads
    from scalerl.train.policy import load_policy

    threads = rank_threads(cfg.run.threads or trainer_threads(cfg.recipe.off_policy.pipeline, cfg.backend), rank)
    if threads:
        torch.set_num_threads(threads)
    torch.manual_seed(cfg.run.seed)
    barrier()  # rank 0 has loaded the model (and built any cache it needed)
    # The architecture only: this rank's shard of the weights comes from rank 0 (make_group).
    follow(make_group(cfg, load_policy(cfg, rank.device, placement="meta"), rank))


def run_rank(cfg: TrainConfig, *, resume: bool, rank: int | None = None, world: int | None = None,
             local_rank: int | None = None, init_method: str = "env://", hold_directory: bool = False,
             directory_held: bool = False) -> Any:
    """Join the process group and run this rank; returns rank 0's RunSummary (None elsewhere).
    ``hold_directory``: rank 0's summary holds the run directory (``Trainer.run``), for the caller's report;
    ``directory_held``: the process that spawned the ranks holds it (:func:`launch`)."""
    from scalerl.train.trainer import Trainer

    if rank is None:
        found = env_rank()
        if found is None:
            raise TrainerGroupError("run_rank: no RANK / WORLD_SIZE in the environment (start it with torchrun)")
        rank, world, local_rank = found
    assert world is not None
    problems = group_problems(cfg, world)  # before the group: NCCL refuses some (one GPU named for every rank) at once
    if problems:
        raise errors.ConfigError("; ".join(problems))
    device = device_for(cfg.run.device, local_rank or 0)  # (a GPU selected before the group: NCCL binds to it)
    _join_group(device, init_method, rank, world)
    me = Rank(rank, world, device)
    clean = False
    try:
        summary = None
        if me.leader:
            trainer = Trainer(cfg, resume=resume, rank=me, directory_held=directory_held)
            summary = trainer.run(hold_directory=hold_directory)
        else:
            _follow(cfg, me)
        clean = True
        return summary
    finally:
        _leave_after(clean)


def _leave_after(clean: bool) -> None:
    """:func:`leave_group` at a rank's end. After an error, a stop that lands while the rank leaves (the launcher's
    SIGTERM to the survivors of a killed rank) is not the rank's news: the error already on its way out -- the
    trainer's "interrupted at step N ...; resume with" -- goes on (review ay: a bare "terminated (SIGTERM)"
    replaced it, and the launcher's line said neither the step nor how to resume)."""
    try:
        leave_group(clean=clean)
    except KeyboardInterrupt:
        if clean:
            raise


GROUP_WAIT_NOTE_S = 60.0
"""Seconds a rank waits for a group to form before it says so (ranks of a large model start seconds
apart): rank 0, for a rank > 0 of the default group; any rank, for the gloo group's connections."""


@contextlib.contextmanager
def _note_if_longer(seconds: float, note: str, *, enabled: bool = True) -> Iterator[None]:
    """Print ``note`` on stderr once if the block is still running after ``seconds``: torch's joins
    wait in silence for as long as their timeout."""
    waiting = threading.Timer(seconds, lambda: print(note, file=sys.stderr, flush=True))
    waiting.daemon = True  # (never keeps a stopped rank alive)
    if enabled:
        waiting.start()
    try:
        yield
    finally:
        waiting.cancel()


def _join_group(device: torch.device, init_method: str, rank: int, world: int, *,
                note_after_s: float | None = None) -> None:
    """``dist.init_process_group`` on ``device``'s backend (:func:`group_options`), then the gloo group
    for objects and waits (:func:`_open_object_group`). A port that cannot be listened on
    (another program holds it) said in one line with what to do, not torch's DistNetworkError
    traceback. A rank > 0 that has waited ``note_after_s`` (default :data:`GROUP_WAIT_NOTE_S`) for
    rank 0 says so once: torch retries in silence for its default timeout, 30 minutes (10 under
    NCCL) (a rank 0 that never started, a MASTER_ADDR this machine cannot reach)."""
    note_after_s = GROUP_WAIT_NOTE_S if note_after_s is None else note_after_s
    where = init_method if init_method != "env://" else \
        f"MASTER_ADDR:MASTER_PORT {os.environ.get('MASTER_ADDR')}:{os.environ.get('MASTER_PORT')}"
    options = group_options(device)
    note = (f"note: trainer rank {rank} of {world} has waited {note_after_s:g} s for rank 0 at {where}; check "
            f"that rank 0 runs and that this machine reaches it (torch gives up after "
            f"{_join_timeout(options['backend']).total_seconds() / 60:g} minutes)")
    try:
        with _note_if_longer(note_after_s, note, enabled=rank > 0):
            dist.init_process_group(init_method=init_method, rank=rank, world_size=world, **options)
    except dist.DistNetworkError as exc:
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        taken = "EADDRINUSE" in first or "address already in use" in first
        if init_method != "env://":  # scalerl train --nproc: a free port chosen, then taken by another program
            fix = "run the command again (it chooses another free port)"
        else:  # torchrun, or a scheduler's MASTER_ADDR / MASTER_PORT
            fix = ("another program holds the port: set MASTER_PORT to a free one (torchrun: --master-port, or the "
                   "port of --rdzv-endpoint)" if taken else
                   "check that rank 0 runs and that this machine reaches MASTER_ADDR:MASTER_PORT")
        raise TrainerGroupError(f"trainer rank {rank} of {world} could not open the process group at {where}: "
                                f"{first}; {fix}") from None
    _open_object_group(rank, world, note_after_s)


def group_options(device: torch.device) -> dict[str, Any]:
    """``init_process_group``'s backend, and on a GPU its ``device_id``: the rank's own GPU, bound to
    the group. NCCL then forms its communicator at once on that GPU (an NCCL problem shows at the
    start, not at the first update), and a collective with no tensor of its own (a barrier) uses
    that GPU: torch's last guess otherwise is the global rank modulo the GPUs visible, another
    rank's GPU where a machine runs fewer ranks than it has GPUs (4 ranks a machine on 8-GPU
    machines: rank 5, the second machine's second, would take GPU 5)."""
    options: dict[str, Any] = {"backend": backend_for(device)}
    if device.type == "cuda":
        options["device_id"] = device
    return options


def _join_timeout(backend: str) -> Any:
    """How long torch waits for the group's rendezvous: its default timeout, NCCL's (10 minutes) or
    the others' (30)."""
    nccl = dist.constants.default_pg_nccl_timeout if backend == "nccl" else None
    return nccl or dist.constants.default_pg_timeout


def _open_object_group(rank: int, world: int, note_after_s: float) -> None:
    """The gloo group beside the default one. Across machines gloo connects over the address each
    machine's host name resolves to, which can be a loopback one (127.0.1.1 in many /etc/hosts), or
    a firewall may drop its ports: its connections are then bounded only by the group's timeout,
    :data:`~scalerl.train.collectives.WAIT_TIMEOUT` (7 days, which the collectives need), so a rank
    still connecting after ``note_after_s`` says what to check. A join that fails is said in one
    line, and leaves no group open: an in-process caller (the Python API, a test) may join again."""
    days = WAIT_TIMEOUT.total_seconds() / 86400
    note = (f"note: trainer rank {rank} of {world} joined the process group but has waited {note_after_s:g} s to "
            "connect its gloo group (Python objects and waits, on every backend) to the other ranks; check that "
            "every rank has started it, and across machines that each machine's host name resolves to an address "
            "the others reach (not a loopback one such as 127.0.1.1; or set GLOO_SOCKET_IFNAME to the network "
            f"interface they share) and that no firewall blocks the ports between them (gloo waits {days:g} days)")
    try:
        with _note_if_longer(note_after_s, note):
            open_object_group()
    except BaseException as exc:  # a Ctrl-C in the wait too: nothing of the group left behind
        # The failure is what the caller must see; a teardown that fails as well is a note (close_each).
        close_each([dist.destroy_process_group, forget_object_group], failing=True)
        if not isinstance(exc, (RuntimeError, dist.DistError)):
            raise
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        raise TrainerGroupError(f"trainer rank {rank} of {world} joined the process group but not its gloo group "
                                f"(Python objects and waits go through gloo, on every backend): {first}; check that "
                                "every rank is running, and across machines set GLOO_SOCKET_IFNAME to the network "
                                "interface the machines reach each other on") from None


def prepare_rank(stop: StopLatch) -> None:
    """A spawned rank's stops, set first thing: SIGTERM stops it as it stops a rank under torchrun
    (the command line's handler there), and the launcher's SIGTERM comes as one when it sets
    ``stop``.

    SIGINT is ignored: the launcher passes every stop on through ``stop``, Ctrl-C's too. A SIGINT
    sent to the launcher alone never reached the ranks, which trained on to the run's end while it
    waited; and one that reached the whole group (Ctrl-C) as well as through ``stop`` came twice to
    a rank, the second cutting its clean stop.

    And the rank dies with the launcher. torch asks the kernel for a SIGINT to a spawned process
    when its parent dies -- which the rank ignores (above): after a ``kill -9`` of the launcher the
    ranks trained on in the background, rank 0 writing checkpoints and the run log while the
    resume started on the same directory. A SIGKILL instead (nobody is left to hear a clean stop's
    result), as for every other process the trainer starts (:mod:`scalerl.parent_death`)."""
    import multiprocessing

    parent = multiprocessing.parent_process()
    die_with_parent(parent.pid if parent is not None else None)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, raise_terminated)
    sigterm_when_set(stop)


def _spawned(index: int, cfg: TrainConfig, resume: bool, world: int, port: int, box: Any, stop: StopLatch) -> None:
    """One spawned rank (its stops: :func:`prepare_rank`): its result (rank 0) or its user-facing
    error go back through ``box``."""
    prepare_rank(stop)
    try:
        summary = run_rank(cfg, resume=resume, rank=index, world=world, local_rank=index,
                           init_method=f"tcp://127.0.0.1:{port}", directory_held=True)
        if index == 0:
            box.put(("ok", summary))
    except ScaleRLError as exc:
        box.put(("error", (type(exc).__name__, str(exc))))
        raise SystemExit(2) from None
    except KeyboardInterrupt as exc:  # Ctrl-C, or SIGTERM: a clean stop, which exits 0
        if index == 0:  # where it stopped and how to resume (the other ranks only follow it)
            box.put(("stopped", (str(exc), interrupt_status(exc))))
    except BaseException:
        box.put(("crash", (index, traceback.format_exc())))
        raise


def _check_devices(name: str, world: int) -> str:
    """:func:`device_for`'s checks for ``world`` ranks, without selecting a GPU in the launching
    process; the device type the ranks will run on."""
    from scalerl.models.devices import run_device

    device = run_device(name)
    if device.type == "cuda" and device.index is None and world > torch.cuda.device_count():
        raise errors.ConfigError(f"run.device={name}: --nproc {world} needs a GPU per process, but "
                                 f"{torch.cuda.device_count()} are visible; lower --nproc")
    return device.type


def ranks_cores_note(world: int, device_type: str, cores: int, *, on_shards: bool = False) -> str | None:
    """A note when ``world`` CPU ranks outnumber the cores this process may use: they run, taking
    turns (each holds one torch thread at least), only slower than ``--nproc`` at most the cores
    -- and ``--nproc 100000`` started interpreters without a word. Not an error: a resume under
    another machine's ``--nproc`` must run. None where they fit, or on GPUs. What a resume may change
    is :func:`scalerl.train.checkpoint.refuse_other_nproc`'s rule: another number of ranks above one, except
    where they generate on their shards (``on_shards``), which keep theirs."""
    if device_type != "cpu" or world <= cores:
        return None
    resume = ("a run that generates on its shards keeps its --nproc: a resume must give the same" if on_shards else
              f"a resume may give another --nproc of 2 or more, --nproc {cores} on this machine")
    return (f"note: --nproc {world} trainer processes on {cores} CPU core(s): they take turns, slower than "
            f"--nproc {cores} ({resume})")


def _drain(box: Any, results: list[tuple[str, Any]]) -> None:
    # While waiting: a put larger than a pipe's buffer blocks until it is read.
    while not box.empty():
        results.append(box.get())


def launch(cfg: TrainConfig, *, resume: bool = False) -> Any:
    """Run ``cfg`` over ``cfg.run.nproc`` processes on this machine; rank 0's RunSummary, which holds
    the run directory (``summary.held``) for the caller's report: this process locks it before the
    ranks start (rank 0 takes no lock of its own, :class:`HeldByLauncher`), so it is never free between
    rank 0's exit and the report. Any other ending lets it go."""
    from scalerl.pipeline.registry import cpu_cores
    from scalerl.train.run_directory import CHECKPOINTS, RunDirectoryLock, make_run_directory

    world = cfg.run.nproc
    # Refusals before the run directory is made (a refused run leaves no empty --output behind) and before
    # any process starts: a device this machine lacks; a run of one process resumed with --nproc N (it was
    # refused only after N ranks started, ~12 s).
    device_type = _check_devices(cfg.run.device, world)
    output = Path(cfg.run.output)
    if resume:
        from scalerl.train.checkpoint import latest_checkpoint, refuse_other_nproc, written_by

        ckpt = latest_checkpoint(output / CHECKPOINTS)
        if ckpt is not None:
            refuse_other_nproc(ckpt, written_by(ckpt), grouped=True, now=world, exact=cfg.run.generate_on_shards)
    note = ranks_cores_note(world, device_type, cpu_cores(), on_shards=cfg.run.generate_on_shards)
    if note:
        print(note, file=sys.stderr)
    make_run_directory(output)
    lock = RunDirectoryLock(output)
    try:
        summary = _run_group(cfg, resume)
    except BaseException:
        lock.release()
        raise
    summary.held = lock
    return summary


def _torch_stops_said_by_us(record: logging.LogRecord) -> bool:
    """A filter for torch's spawn logger: its "Terminating process N via signal SIGTERM" (the other ranks, once one
    ended with an error) came before the launcher's one-line error as if it were news (review cj); what stopped the
    run -- the rank's error, or a rank killed from outside -- is the launcher's line."""
    return not record.getMessage().startswith("Terminating process")


def _run_group(cfg: TrainConfig, resume: bool) -> Any:
    """:func:`launch`'s ranks, started and awaited: rank 0's RunSummary, or its error raised here."""
    spawn_log = logging.getLogger("torch.multiprocessing.spawn")
    spawn_log.addFilter(_torch_stops_said_by_us)
    try:
        return _await_group(cfg, resume)
    finally:
        spawn_log.removeFilter(_torch_stops_said_by_us)


def _await_group(cfg: TrainConfig, resume: bool) -> Any:
    import torch.multiprocessing as mp

    world = cfg.run.nproc
    ctx = mp.get_context("spawn")
    box = ctx.SimpleQueue()
    stop = StopLatch()
    results: list[tuple[str, Any]] = []
    stopped: KeyboardInterrupt | None = None
    killed: tuple[int, int] | None = None  # (rank, signal): a rank killed from outside (kill -9, out of memory)
    # From the thread that lasts as long as this process: a rank dies with the thread that started
    # it (prepare_rank), and launch() may run in a thread that ends first.
    context = from_lasting_thread(mp.start_processes, _spawned, args=(cfg, resume, world, _free_port(), box, stop),
                                  nprocs=world, join=False, start_method="spawn")
    try:
        while True:
            _drain(box, results)
            try:
                if context.join(timeout=0.5):
                    break
            except (mp.ProcessExitedException, mp.ProcessRaisedException) as exc:
                # A rank that died of a signal said nothing; torch then stopped the others with
                # SIGTERM, and rank 0's "interrupted ... resume with" made it look like a user's stop.
                if isinstance(exc, mp.ProcessExitedException) and exc.exit_code < 0:
                    killed = (exc.error_index, -exc.exit_code)
                break  # else what went wrong is in the box (a user-facing error exits with status 2)
    except KeyboardInterrupt as exc:
        # Passed on to the ranks, whatever it was: SIGTERM (`kill PID`, a scheduler's stop) and a
        # SIGINT sent to this process alone reach no rank, which then trained the run to its end
        # while this process waited; the ranks ignore Ctrl-C's own SIGINT (_spawned) and stop on this.
        stopped = exc
        stop.set()
        # Each rank's own end, not torch's join: that kills the other ranks (a second SIGTERM,
        # which cuts a clean stop) as soon as one exits with an error.
        for process in context.processes:
            while process.exitcode is None:
                _drain(box, results)
                process.join(0.5)
    _drain(box, results)
    for kind, value in results:
        if kind == "ok":
            return value  # (a stop that came as the run finished)
    if killed is not None:  # the cause, before its consequences (rank 0's stop, or its crash in a collective)
        where = next((value[0] for kind, value in results if kind == "stopped"), None)
        raise TrainerGroupError(killed_rank_message(*killed, world, cfg.run.output, where))
    for kind, value in results:
        if kind == "stopped":
            message, status = value
            interrupted = RunInterrupted(message)
            # The launcher's own stop says the status: a Ctrl-C reaches the ranks as a SIGTERM.
            interrupted.status = interrupt_status(stopped) if stopped is not None else status
            raise interrupted
    if stopped is not None:
        raise stopped  # before rank 0 could say where the run stopped (a rank's error then is the stop's)
    for kind, value in results:
        if kind == "error":
            name, message = value
            cls = getattr(errors, name, None)
            raise (cls if isinstance(cls, type) and issubclass(cls, ScaleRLError) else TrainerGroupError)(message)
    crashes = [value for kind, value in results if kind == "crash"]
    if crashes:
        index, text = crashes[0]
        raise RuntimeError(f"trainer rank {index} failed:\n{text}")
    raise TrainerGroupError(lost_rank_message(world, cfg.run.output))


def killed_rank_message(rank: int, signum: int, world: int, output: Any, where: str | None) -> str:
    """A rank killed by a signal (``where``: rank 0's "interrupted at step N, last checkpoint at
    step C; resume with ..." when it got to say it): which rank, which signal, how to go on."""
    try:
        name = signal.Signals(signum).name
    except ValueError:
        name = f"signal {signum}"
    why = "kill -9, or the out-of-memory killer?" if signum == signal.SIGKILL else "killed, or a crash in native code"
    head = f"trainer rank {rank} of {world} was killed by signal {signum} ({name}: {why}), so the group stopped"
    if where:
        return f"{head}: {where}"
    return f"{head}; continue from the last checkpoint with: scalerl train --output {shlex.quote(str(output))} --resume"


def lost_rank_message(world: int, output: Any) -> str:
    """What to say when a rank died without a word (``kill -9``, the OOM killer): what happened,
    and that the run continues from its last checkpoint."""
    return (f"the trainer group of {world} processes stopped without a result (a rank was killed: kill -9, or out "
            f"of memory?); continue from the last checkpoint with: scalerl train --output "
            f"{shlex.quote(str(output))} --resume")
