"""The local backend: a study's runs one after another in this process, or ``parallel`` at once in
spawned worker processes (one run per worker; a worker dies with the driver, so a killed study
leaves no run training behind to race its resumption)."""

from __future__ import annotations

import shlex
import sys
from dataclasses import asdict
from typing import Any, Callable, NamedTuple

from scalerl.config import to_dict
from scalerl.stop_signals import StopLatch, sigterm_when_set
from scalerl.study.one_run import Echo, Outcome, collect, describe, execute_dict, execute_run, skip_finished
from scalerl.study.plan import Budget, RunPlan
from scalerl.study.run_state import run_status
from scalerl.study.spec import StudySpec


def run_local(plans: list[RunPlan], budget: Budget, spec: StudySpec, echo: Echo, record: Callable[[Outcome], None]) -> list[Outcome]:
    if spec.parallel > 1:
        return run_parallel(plans, budget, spec, echo, record)
    outcomes, times = [], []
    # Each run's status read once, up front: only the run being trained changes it here (asking
    # every remaining run's at each run read n^2 / 2 run logs for the time estimate).
    to_train = [run_status(p.directory, budget) in ("new", "partial") for p in plans]
    for i, p in enumerate(plans, 1):
        status = run_status(p.directory, budget)
        if status in ("new", "partial"):  # (a damaged run is not touched: its outcome says so)
            eta = ""
            todo = sum(to_train[i - 1:])
            if times:
                eta = f"; about {todo * sum(times) / len(times) / 60:.0f} min left for {todo} run(s)"
            echo(f"[{i}/{len(plans)}] {p.name}: {'starting' if status == 'new' else 'resuming'}{eta}")
        o = collect(lambda: asdict(execute_run(to_dict(p.config), budget)), p)  # a crash fails this run only
        if o.status in ("trained", "resumed"):
            times.append(o.seconds)
        echo(f"[{i}/{len(plans)}] {p.name}: {describe(o, budget.x)}")
        record(o)
        outcomes.append(o)
    return outcomes


class _Stops(NamedTuple):
    """What a parallel study's driver tells its worker processes when it stops."""

    start_none: StopLatch
    """Set: a run not started yet does not start (the pool hands a run it had already queued to a
    fresh worker even after its shutdown, one run per worker, which trained it whole)."""
    stop_runs: StopLatch
    """Set: the running runs stop as on Ctrl-C -- each worker sends itself SIGTERM (_init_worker)."""


#: In a worker process: the driver's :class:`_Stops`.
_STOPS: Any = None


def _init_worker(stops: _Stops) -> None:
    """Worker initializer: on Linux, be killed when the driver dies (even by kill -9), so that a
    resumed study never races a run an orphaned worker is still training. SIGTERM stops the
    worker's run as Ctrl-C does (:func:`_unless_stopped`) and is ignored between runs; the worker
    sends it itself when the driver sets ``stops.stop_runs`` (:func:`_stop_workers`)."""
    import multiprocessing
    import signal

    from scalerl.parent_death import die_with_parent

    global _STOPS
    _STOPS = stops
    # Ignored outside a run: a SIGTERM raised in an idle worker (waiting for its next run) made it
    # exit with a traceback; the pool, broken, then killed every other worker with a second
    # SIGTERM, which cut their runs' clean-up (the first one's handler had put back the default).
    # (The driver does not signal its workers, see sigterm_when_set; `kill -- -PGID` reaches them all.)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    sigterm_when_set(stops.stop_runs)
    driver = multiprocessing.parent_process()
    die_with_parent(driver.pid if driver is not None else None)  # (a driver gone before this line: exit)


def _unless_stopped(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` in a worker, SIGTERM stopping it as Ctrl-C does, unless the study has stopped."""
    import signal

    from scalerl.errors import Terminated
    from scalerl.stop_signals import raise_terminated

    # The handler first: a stop the check below misses (set just after it) is a SIGTERM it catches.
    signal.signal(signal.SIGTERM, raise_terminated)
    try:
        if _STOPS is not None and _STOPS.start_none.is_set():
            raise Terminated("the study stopped before this run started")
        return fn(*args)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)


def _worker_pool(parallel: int, stops: _Stops) -> Any:
    """``parallel`` spawned worker processes (fresh torch state), one run each (Python >= 3.11;
    3.10 reuses workers, and every run still sets its own seeds and threads)."""
    import multiprocessing
    from concurrent.futures import ProcessPoolExecutor

    fresh = {"max_tasks_per_child": 1} if sys.version_info >= (3, 11) else {}
    return ProcessPoolExecutor(max_workers=parallel, mp_context=multiprocessing.get_context("spawn"),
                               initializer=_init_worker, initargs=(stops,), **fresh)


def _stop_workers(futures: Any, stops: _Stops, exc: BaseException) -> None:
    """The driver stops -- Ctrl-C, SIGTERM, or an error of its own (its output closed, a disk full):
    start no queued run, and stop the running ones as Ctrl-C does. Leaving the pool waited for every
    run, queued ones too, to finish: the study trained on for as long as its runs took (a failed
    driver raised its error only then, with none of them recorded in progress.jsonl)."""
    from scalerl.errors import Terminated

    stops.start_none.set()  # a run already in the pool's call queue (not cancellable) stops as it starts
    for fut in futures:
        fut.cancel()
    # Ctrl-C reached the workers already (it goes to the whole process group), and a second stop
    # would cut their clean-up; anything else -- `kill PID`, an error of the driver's -- reaches the
    # driver alone.
    if isinstance(exc, Terminated) or not isinstance(exc, KeyboardInterrupt):
        stops.stop_runs.set()


def run_parallel(plans: list[RunPlan], budget: Budget, spec: StudySpec, echo: Echo,
                    record: Callable[[Outcome], None]) -> list[Outcome]:
    """``spec.parallel`` runs at once, each in a spawned worker process (fresh torch state, one
    run per worker process so that nothing carries over), in plan order."""
    from concurrent.futures import FIRST_COMPLETED, wait

    outcomes, todo = skip_finished(plans, budget, record)
    if not todo:
        return outcomes
    echo(f"{len(todo)} run(s) to train, {spec.parallel} at once, {todo[0].config.run.threads} torch thread(s) each")
    stops = _Stops(StopLatch(), StopLatch())
    with _worker_pool(spec.parallel, stops) as pool:
        running: dict[Any, RunPlan] = {}
        try:
            for p in todo:
                running[pool.submit(_unless_stopped, execute_dict, to_dict(p.config), asdict(budget))] = p
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    p = running.pop(fut)
                    o = collect(lambda fut=fut, p=p: _worker_result(fut, p), p)
                    echo(f"[{len(outcomes) + 1}/{len(plans)}] {p.name}: {describe(o, budget.x)}")
                    record(o)
                    outcomes.append(o)
        except BaseException as exc:  # a stop, or the driver failed: the runs under way stop too
            _stop_workers(running, stops, exc)
            raise
    return outcomes


def _worker_result(fut: Any, p: RunPlan) -> dict:
    """A worker's result. A worker process that died (the kernel's out-of-memory killer, a ``kill -9``)
    broke the pool, which fails every run under way or waiting with "A process in the process pool
    was terminated abruptly": not which, nor what to do."""
    from concurrent.futures.process import BrokenProcessPool

    try:
        return fut.result()
    except BrokenProcessPool:
        study = p.directory.parents[2]
        return asdict(Outcome(p.variant.label, p.seed, "failed", error=(
            "a worker process of the study died (killed by a signal: out of memory? kill -9?), which stops "
            "every run under way or waiting; nothing before a run's last checkpoint is lost -- continue with: "
            f"scalerl study --output {shlex.quote(str(study))} --resume")))
