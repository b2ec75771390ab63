"""The Ray backend: a study's runs as Ray tasks on a cluster (``--ray-address``), ``parallel`` at
once; a stopped study cancels them as Ctrl-C stops a run, and waits for their clean-up."""

from __future__ import annotations

import os
import time
from dataclasses import asdict
from typing import Any, Callable

from scalerl.config import to_dict
from scalerl.errors import InputError
from scalerl.stop_signals import interrupted_until_stopping, terminated_stays_terminated
from scalerl.study.one_run import Echo, Outcome, collect, describe, execute_dict, skip_finished
from scalerl.study.plan import Budget, RunPlan
from scalerl.study.spec import StudySpec


def _execute_ray_task(execute: Callable[..., dict[str, Any]], cfg_dict: dict[str, Any],
                      budget: dict[str, Any]) -> dict[str, Any]:
    """``execute`` (:func:`execute_dict`) as a Ray task, stoppable by ``ray.cancel`` (the study's stop), which
    raises KeyboardInterrupt through Python's SIGINT handler: a Ray worker inherits SIGINT ignored
    from a driver started in the background (``cmd &`` in a script, nohup; a pytest-xdist worker),
    and the cancel then did nothing -- the run trained on to its end. ``execute`` travels with the
    task rather than being looked up in the worker, so that the driver's (a test's stand-in) runs."""
    with interrupted_until_stopping():  # repeated cancels (_stop_ray_runs) do not cut the run's clean-up
        return execute(cfg_dict, budget)


def _check_cpus(ray: Any, cpus: int) -> None:
    """Refuse a run's task wider than every node of the cluster: Ray would hold it for ever, and say so only in
    the worker logs a study does not stream (review dd: it sat at "submitted" until killed)."""
    from scalerl.pipeline.ray_cluster import nodes_hold

    if nodes_hold(ray, cpus) < 1:
        raise InputError(f"--threads {cpus}: each run is a Ray task of {cpus} CPU, but no node of the Ray cluster has "
                         "that many; lower --threads, or add a machine with more (ray start --address ...)")


def check_ray_address(spec: StudySpec) -> None:
    """Refuse, before the study builds or loads a model, an address where no Ray cluster answers (the study
    waited for its models, a warm start of minutes, then said so)."""
    from scalerl.pipeline.ray_cluster import check_reachable

    check_reachable(spec.ray_address or os.environ.get("RAY_ADDRESS") or None, "--ray-address")


def run_on_ray(plans: list[RunPlan], budget: Budget, spec: StudySpec, echo: Echo, record: Callable[[Outcome], None]) -> list[Outcome]:
    try:
        import ray
    except ImportError:
        raise InputError("backend ray needs the ray package: pip install 'scalerl[ray]'") from None
    from scalerl.pipeline.ray_cluster import init_ray

    # Finished runs first, here: skipped at once (but for the report of a run stopped while it was
    # written), and a resumed study with nothing left to train starts no cluster (~16 s for nothing).
    total = len(plans)
    outcomes, plans = skip_finished(plans, budget, record, echo)
    if not plans:
        return outcomes
    env = {k: os.environ[k] for k in ("SCALERL_CACHE", "HF_HOME") if k in os.environ}
    started = not ray.is_initialized()
    if started:
        # SIGTERM kept (Ray's own handler aborted the driver on `kill PID`: exit 1, a C++ stack dump);
        # an address where nothing answers is one line at once (Ray retried for minutes).
        init_ray(spec.ray_address, name="--ray-address",
                 runtime_env={"env_vars": env} if env else None, log_to_driver=False)
    running: dict[Any, RunPlan] = {}
    try:
        cpus = max(1, spec.threads)
        _check_cpus(ray, cpus)
        task = ray.remote(num_cpus=cpus)(_execute_ray_task)
        queue = [p for p in plans]
        limit = spec.parallel or len(queue)
        while queue or running:
            while queue and len(running) < limit:
                p = queue.pop(0)
                running[task.remote(execute_dict, to_dict(p.config), asdict(budget))] = p
                echo(f"submitted {p.name} ({len(running)} running, {len(queue)} waiting)")
            with terminated_stays_terminated():  # (ray.wait raises a plain KeyboardInterrupt for our Terminated)
                (ref,), _ = ray.wait(list(running), num_returns=1)
            p = running.pop(ref)
            o = collect(lambda: ray.get(ref), p)
            echo(f"[{len(outcomes) + 1}/{total}] {p.name}: {describe(o, budget.x)}")
            record(o)
            outcomes.append(o)
        return outcomes
    except KeyboardInterrupt:  # Ctrl-C, SIGTERM: the runs under way stop as they would on their own
        _stop_ray_runs(ray, list(running))
        raise
    finally:
        if started:
            ray.shutdown()


#: Seconds a stopped study waits for its Ray tasks' runs to stop (a checkpoint being written is
#: finished first) before it shuts Ray down, which kills them.
RAY_STOP_WAIT_S = 30


#: Seconds between two cancels of a run that has not stopped: one that lands while the task starts
#: (before the run, in Ray's or a library's code) can be lost.
RAY_CANCEL_EVERY_S = 5


def _stop_ray_runs(ray: Any, refs: list[Any]) -> None:
    """Stop the runs of ``refs`` as Ctrl-C stops a run (``ray.cancel``: a KeyboardInterrupt in the
    task, by Python's SIGINT handler), and wait for them: killed by ``ray.shutdown`` instead, a run
    was cut anywhere. The queue's runs were never submitted; a task Ray had not started yet is
    cancelled. A cancel sent while the task was starting was lost (the run trained on), so a run
    still going is cancelled again every :data:`RAY_CANCEL_EVERY_S`."""
    deadline = time.monotonic() + RAY_STOP_WAIT_S
    while refs and time.monotonic() < deadline:
        for ref in refs:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 -- finished meanwhile, or the cluster is gone
                pass
        try:
            _, refs = ray.wait(refs, num_returns=len(refs),
                               timeout=min(RAY_CANCEL_EVERY_S, max(0.1, deadline - time.monotonic())))
        except Exception:  # noqa: BLE001
            return
