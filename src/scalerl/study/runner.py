"""Plan a study's runs, then run or resume each one, locally or on Ray.

A study directory:

    STUDY/study.yaml                 the spec (what ``scalerl report STUDY`` re-reads)
    STUDY/progress.jsonl             one line per finished run (wall time, status), written
                                     by the driver process only
    STUDY/runs/<label>/seed<k>/      an ordinary run directory per (variant, seed): runlog.jsonl,
                                     config.yaml, checkpoints/, final/, the run's report
    STUDY/report.md, report.html, *.png, analysis.json     (scalerl.study.report)

Runs share nothing mutable: each writes only inside its own directory; the one shared thing,
the cached warm-started tiny model, is built before any run starts and only read afterwards
(and its builder renames a finished directory into place, so even a race is harmless).

Runs execute locally one after another in this process, locally ``parallel`` at once in worker
processes (spawned, one run per task; a worker dies with the driver, so a killed study leaves no
run training behind to race its resumption), or as Ray tasks. Every outcome records the CPU
seconds its run took (``time.process_time`` of the process that ran it: the trainer's and the
generator threads' time together), so a study's cost is known in CPU time whatever the machine's
load.

Resuming: a run whose ``final/`` exists and whose last evaluation meets the budget is
skipped; one with a ``config.yaml`` but not finished is continued with ``Trainer.resumed``
(exactly, in the sync and PPO-off-policy modes; see train/checkpoint.py); the rest start.
A run directory whose configuration differs from the plan is refused, so a study directory
never mixes two studies. A compute budget (``spec.compute``) is met by extending each run
with ``Trainer.resumed(steps=...)`` in whole evaluation intervals until its last
evaluation's compute reaches the budget.
"""

from __future__ import annotations

import copy
import json
import math
import os
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, NamedTuple

from scalerl.config import from_dict, load_yaml, save_yaml, to_dict
from scalerl.errors import ConfigError, InputError, ScaleRLError
from scalerl.runlog import RUNLOG, eval_rows, has_final_model
from scalerl.stop_signals import (StopLatch, interrupted_until_stopping, sigterm_when_set,
                                  terminated_stays_terminated)
from scalerl.study.families import TINY_SIZES, Variant, family_variants
from scalerl.study.spec import SPEC_FILE, StudySpec

if TYPE_CHECKING:  # imported where runs are planned: the study's --list needs no trainer config
    from scalerl.train.config import TrainConfig

RUNS, PROGRESS = "runs", "progress.jsonl"


@dataclass(frozen=True)
class Budget:
    """How long each run trains (see :class:`StudySpec`: steps, compute, max_steps)."""

    steps: int
    compute: float | None
    max_steps: int
    x: str
    eval_every: int

    @classmethod
    def of(cls, spec: StudySpec) -> "Budget":
        return cls(spec.steps, spec.compute, spec.max_steps, spec.x, spec.eval_every)

    def reached(self, last: dict[str, Any] | None) -> bool:
        """Whether a run whose last evaluation row is ``last`` has trained enough."""
        if last is None:
            return False
        if self.compute is None:
            return last["step"] >= self.steps
        return (last.get(self.x) or 0.0) >= self.compute or last["step"] >= self.max_steps

    def next_target(self, last: dict[str, Any] | None) -> int:
        """Steps to train to next: the budget's steps, or (compute budget) enough whole
        evaluation intervals to reach the compute at the rate measured so far."""
        if self.compute is None or last is None or not last.get("step") or not last.get(self.x):
            return self.steps
        step, done = int(last["step"]), float(last[self.x])
        per_step = done / step
        need = math.ceil(max(self.compute - done, 0.0) / per_step)
        intervals = max(1, math.ceil(need / self.eval_every))
        return min(self.max_steps, step + intervals * self.eval_every)


@dataclass
class RunPlan:
    """One run of a study: a variant and a seed, its directory and resolved config."""

    variant: Variant
    seed: int
    directory: Path
    config: TrainConfig
    """The resolved training config of the run."""

    @property
    def name(self) -> str:
        return f"{self.variant.label}/seed{self.seed}"


@dataclass
class Outcome:
    label: str
    seed: int
    status: str
    """skipped (already finished), trained, resumed, or failed."""
    seconds: float = 0.0
    cpu_seconds: float = 0.0
    """CPU time of this execution (all threads of the process that ran it; 0 when skipped)."""
    step: int = 0
    x: float | None = None
    start: float | None = None
    final: float | None = None
    error: str = ""


# ----------------------------------------------------------------------------- planning


def run_directory(study_dir: Path, label: str, seed: int) -> Path:
    return Path(study_dir) / RUNS / label / f"seed{seed}"


def tiny_size_dir(arch_name: str, warm_start_steps: int) -> Path:
    """Where the warm-started tiny model of this size is cached (built by :func:`prepare_models`)."""
    from scalerl.models.tiny import TinySpec, cache_root

    spec = TinySpec(architecture=TINY_SIZES[arch_name], warm_start_steps=warm_start_steps)
    return cache_root() / "tiny" / spec.key()


def _start_config(spec: StudySpec, recipe: str, recipe_name: str):
    from scalerl.train.config import TrainConfig, with_recipe

    cfg = with_recipe(TrainConfig(), recipe)
    cfg.recipe_name = recipe_name
    cfg.model.name_or_path = spec.model
    cfg.task.name = spec.task
    cfg.eval.every = spec.eval_every
    cfg.forecast.x = spec.x
    local_parallel = spec.backend == "local" and spec.parallel > 1
    cfg.log.progress = spec.progress and spec.backend == "local" and not local_parallel
    # Several local runs at once and threads left to us: the cores divided among them (torch's
    # default would give every run every core, and OpenMP threads spin when oversubscribed).
    cfg.run.threads = spec.threads or (max(1, (os.cpu_count() or 1) // spec.parallel) if local_parallel else 0)
    return cfg


def base_config(spec: StudySpec):
    """The base recipe's resolved config (the profile and the study's overrides applied)."""
    from scalerl.train.config import resolve

    return resolve(_start_config(spec, spec.base, spec.base), list(spec.overrides))


#: Run settings the study sets from its own fields: an override of one would train something other
#: than what the spec (and the report) says -- or, for seed/steps/output, be silently replaced.
SPEC_OWNED = {
    "run.seed": "seeds", "run.steps": "steps (or compute)", "run.output": "--output", "eval.every": "eval_every",
    "forecast.x": "x", "model.name_or_path": "model", "task.name": "task", "run.threads": "threads",
    "log.progress": "--no-progress",
}


def check_overrides(overrides: list[str]) -> None:
    """Refuse an override of a setting the study owns (:data:`SPEC_OWNED`), naming the field to use."""
    from scalerl.config import resolve_key
    from scalerl.train.config import TrainConfig

    for item in overrides:
        path = resolve_key(TrainConfig, item.partition("=")[0].strip())  # a bad key: its own did-you-mean
        if path in SPEC_OWNED:
            raise ConfigError(f"overrides: {item!r} sets {path}, which the study sets from its {SPEC_OWNED[path]} "
                              "field (so the spec and the report would say otherwise); give that instead")


def plan_study(spec: StudySpec, study_dir: str | Path) -> list[RunPlan]:
    """Every (variant, seed) run of ``spec`` with its directory and resolved config.

    Every config is resolved and validated here, before anything runs, so a bad override or
    an impossible variant fails the whole study at once with one message.
    """
    from scalerl.train.config import resolve

    spec.validate()
    check_overrides(spec.overrides)
    study_dir = Path(study_dir)
    plans = []
    resolved: dict[str, Any] = {}
    for v in family_variants(spec, base_config(spec)):
        cfg = _start_config(spec, v.recipe, v.recipe_name)
        if v.arch is not None and v.arch != "tiny":
            # Another architecture: its own warm start, cached; the cpu-tiny profile still applies.
            cfg.model.name_or_path = str(tiny_size_dir(v.arch, cfg.model.tiny_warm_start_steps))
            cfg.profile = "cpu-tiny"
        try:
            cfg = resolve(cfg, [*spec.overrides, *v.overrides])
        except ScaleRLError as exc:
            raise type(exc)(f"variant {v.label}: {exc}") from None
        resolved[v.label] = cfg
        for seed in range(spec.seeds):
            run_cfg = from_dict(type(cfg), to_dict(cfg))
            run_cfg.run.seed = seed
            run_cfg.run.steps = spec.steps
            run_cfg.run.output = str(run_directory(study_dir, v.label, seed))
            plans.append(RunPlan(v, seed, run_directory(study_dir, v.label, seed), run_cfg))
    check_variants_differ(resolved, next(p.variant.label for p in plans if p.variant.is_base), spec.overrides)
    return plans


def _as_run(cfg: TrainConfig) -> dict[str, Any]:
    """What a resolved config trains, without its name and where it writes."""
    d = _comparable(to_dict(cfg))
    d.pop("recipe_name", None)
    return d


def check_variants_differ(configs: dict[str, Any], base: str, overrides: list[str]) -> None:
    """Refuse a variant whose resolved config is the base's: the study's overrides set the very thing
    it changes (``--set loss.name=dapo`` in a leave-one-out study makes ``loo-loss-dapo`` the base
    itself), and the report would compare a run with itself under the variant's name."""
    same = [label for label, cfg in configs.items() if label != base and _as_run(cfg) == _as_run(configs[base])]
    if same:
        raise ConfigError(f"variant(s) {', '.join(same)} would train the same run as the base {base} once the "
                          f"study's overrides ({', '.join(overrides) or 'none'}) are applied -- an override sets what "
                          "the variant changes: drop that override, or leave the variant out with --only")


def _tiny_spec(p: RunPlan):
    """The TinySpec a plan's model is built from, or None for a model that is not a tiny one."""
    from scalerl.models.tiny import TinySpec, tiny_spec

    steps = p.config.model.tiny_warm_start_steps
    if p.variant.arch is not None:  # an architecture of TINY_SIZES, warm-started like tiny
        return TinySpec(architecture=TINY_SIZES[p.variant.arch], warm_start_steps=steps)
    if p.config.model.name_or_path == "tiny":
        return TinySpec(warm_start_steps=steps)
    return tiny_spec(p.config.model.name_or_path)  # a ladder size (fixed warm start), or None


def prepare_models(plans: list[RunPlan], progress: bool = False) -> None:
    """Build (or find cached) every tiny model a plan needs, before any run starts, so that runs
    only ever read the shared cache; ``progress``: a bar over each warm start built here."""
    from scalerl.models.tiny import tiny_model_dir

    done = set()
    for p in plans:
        spec = _tiny_spec(p)
        if spec is None or spec.key() in done:
            continue
        tiny_model_dir(spec, progress=progress)
        done.add(spec.key())


# ----------------------------------------------------------------------------- state of a run


#: A run whose log cannot be read (a malformed line before its end: not a kill, which only tears the
#: last line). The study leaves it alone -- resuming or retraining it could overwrite what it holds --
#: reports it as failed and goes on with the others.
DAMAGED = "damaged"


def read_log(directory: Path) -> tuple[list[dict[str, Any]], str]:
    """``(evaluation rows, "")`` of the run log in ``directory`` (no rows when there is none yet), or
    ``([], why)`` when it cannot be read. Read once and passed on: a log holds every step's row."""
    try:
        return eval_rows(directory), ""
    except InputError as exc:
        return [], str(exc)


def run_status(directory: Path, budget: Budget, log: tuple[list[dict[str, Any]], str] | None = None) -> str:
    """done (finished: final model saved, budget met), partial (a run to resume), new, or damaged
    (its log cannot be read: see :data:`DAMAGED`). ``log``: :func:`read_log`'s answer, where the
    caller has it."""
    directory = Path(directory)
    if not (directory / "config.yaml").exists():
        return "new"
    rows, problem = log if log is not None else read_log(directory)
    if problem:
        return DAMAGED
    if has_final_model(directory) and budget.reached(rows[-1] if rows else None):
        return "done"
    return "partial"


#: Fields that may differ between a run on disk and the plan without it being another run.
_FREE = (("run", "output"), ("run", "steps"), ("run", "threads"), ("log", "progress"))


def _comparable(cfg_dict: dict[str, Any]) -> dict[str, Any]:
    d = copy.deepcopy(cfg_dict)
    for section, key in _FREE:
        d.get(section, {}).pop(key, None)
    model = d.get("model", {}).get("name_or_path", "")
    if "/tiny/" in model:  # a cached tiny size: the same key is the same model wherever the cache is
        d["model"]["name_or_path"] = "tiny-cache:" + Path(model).name
    return d


def _first_difference(a: Any, b: Any, path: str = "") -> str | None:
    if isinstance(a, dict) and isinstance(b, dict):
        for k in sorted(set(a) | set(b)):
            diff = _first_difference(a.get(k), b.get(k), f"{path}.{k}" if path else k)
            if diff:
                return diff
        return None
    return None if a == b else f"{path}: {a!r} on disk, {b!r} planned"


def check_existing(plans: list[RunPlan], budget: Budget | None = None) -> None:
    """Refuse to continue into run directories that hold a differently configured run, or (with a
    steps ``budget``) one that has trained past the budget."""
    from scalerl.train.config import TrainConfig

    for p in plans:
        if budget is not None:
            _check_not_past(p, budget)
        saved = p.directory / "config.yaml"
        if not saved.exists():
            if (p.directory / "runlog.jsonl").exists():
                raise InputError(f"{p.directory} holds a run log but no config.yaml; it is not a run this study "
                                 "can resume -- remove it or use another --output")
            continue
        if not saved.read_text(errors="replace").strip():  # read as every default: "configured differently"
            raise InputError(f"{saved} is empty (the run was stopped while writing it?), so what the run trained "
                             f"is unknown; remove {p.directory} to train it again, or use another --output")
        diff = _first_difference(_comparable(to_dict(load_yaml(TrainConfig, saved))), _comparable(to_dict(p.config)))
        if diff:
            raise InputError(f"{p.directory} holds a run configured differently from this study ({diff}); "
                             "continue it with the spec that made it (scalerl study --output DIR --resume) or use another --output")


def _check_not_past(p: RunPlan, budget: Budget) -> None:
    """A steps budget below what a run on disk has trained: the run would count as done, and the
    report would fit its longer curve under the shorter budget's name. (A compute budget's runs go
    past ``steps`` by design, and a run's log that cannot be read is reported as damaged elsewhere.)"""
    if budget.compute is not None:
        return
    rows, _ = read_log(p.directory)
    if rows and rows[-1]["step"] > budget.steps:
        raise InputError(f"{p.directory} has trained to step {rows[-1]['step']}, past this study's {budget.steps} "
                         f"steps; a study does not shorten its runs (the report would fit the longer curves) -- "
                         f"keep steps >= {rows[-1]['step']}, or use another --output")


# ----------------------------------------------------------------------------- one run


def execute_run(cfg_dict: dict[str, Any], budget: Budget) -> Outcome:
    """Run, resume or skip one run; returns what happened. Runs in this process or a Ray worker."""
    from scalerl.train.config import TrainConfig
    from scalerl.train.trainer import Trainer

    cfg = from_dict(TrainConfig, cfg_dict)
    out = Path(cfg.run.output)
    label, seed = out.parent.name, cfg.run.seed
    t0, cpu0 = time.perf_counter(), time.process_time()
    log = read_log(out)
    status = run_status(out, budget, log)
    if status == "done":
        if not _report_written(out):  # a stop between the final model's save and the end of the run's report
            _run_report(out)
        return _outcome(label, seed, "skipped", 0.0, out)
    if status == DAMAGED:
        return _outcome(label, seed, "failed", 0.0, out, error=f"{log[1]} -- left untouched: repair that "
                        f"line, or remove {out} to train the run again")
    progress = cfg.log.progress
    try:
        if status == "new":
            Trainer(cfg.validate()).run()
        else:
            rows = eval_rows(out)
            Trainer.resumed(out, steps=budget.next_target(rows[-1] if rows else None), progress=progress).run()
        # A compute budget: extend until the last evaluation reaches it (each pass re-measures the rate).
        rows = eval_rows(out)
        while not budget.reached(rows[-1] if rows else None):
            Trainer.resumed(out, steps=_extension(budget, rows), progress=progress).run()
            rows = eval_rows(out)
    except ScaleRLError as exc:
        return _outcome(label, seed, "failed", time.perf_counter() - t0, out, error=str(exc),
                        cpu=time.process_time() - cpu0)
    _run_report(out)
    return _outcome(label, seed, "trained" if status == "new" else "resumed", time.perf_counter() - t0, out,
                    cpu=time.process_time() - cpu0)


def _extension(budget: Budget, rows: list[dict[str, Any]]) -> int:
    """The step to extend a run to, short of its budget after ``rows``; :class:`InputError` when that
    would not move it (no evaluation yet, or a last evaluation without the compute column to measure
    a rate by), which would otherwise resume the run to where it is, over and over, forever."""
    last = rows[-1] if rows else None
    target = budget.next_target(last)
    if last is None or target <= int(last.get("step") or 0):
        where = "no evaluation was logged" if last is None else \
            f"its last evaluation (step {last.get('step')}) has {budget.x} = {last.get(budget.x)!r}"
        raise InputError(f"the run cannot be extended to the budget ({_budget_text(budget)}): {where} -- check that "
                         f"its log records {budget.x}, or give the study a steps budget")
    return target


def _budget_text(budget: Budget) -> str:
    return f"{budget.compute:g} {budget.x}" if budget.compute is not None else f"{budget.steps} steps"


def _report_written(out: Path) -> bool:
    """Whether the run's own report is written, after its log's last row. A study stopped while it
    wrote a finished run's report (``final/`` saved) left the run without one -- or with the one of a
    shorter budget, and a dead figure temporary -- and skipped the run from then on, as done."""
    from scalerl.train.report import REPORT_FILES, REPORT_HTML

    try:
        return all((out / name).exists() for name in REPORT_FILES) and \
            (out / REPORT_HTML).stat().st_mtime_ns >= (out / RUNLOG).stat().st_mtime_ns
    except OSError:
        return False


def _run_report(out: Path) -> None:
    """The run's own report (as ``scalerl train`` writes it), inside the run's directory."""
    from scalerl.train.report import write_run_report

    try:
        write_run_report(out)
    except ScaleRLError:
        pass  # e.g. too few evaluations for a forecast: the study's report says what it can


def _outcome(label: str, seed: int, status: str, seconds: float, out: Path, error: str = "",
             cpu: float = 0.0) -> Outcome:
    rows, _ = read_log(out)  # a damaged log: the outcome says so, without rows
    o = Outcome(label, seed, status, seconds, cpu_seconds=cpu, error=error)
    if rows:
        from scalerl.train.config import TrainConfig

        cfg = load_yaml(TrainConfig, out / "config.yaml")
        y = f"{cfg.eval.sets[0]}/pass_rate"
        o.step, o.x = int(rows[-1]["step"]), rows[-1].get(cfg.forecast.x)
        o.start, o.final = rows[0].get(y), rows[-1].get(y)
    return o


def _execute_dict(cfg_dict: dict[str, Any], budget: dict[str, Any]) -> dict[str, Any]:
    """Plain-dict wrapper for Ray (no dataclasses of ours cross the process boundary)."""
    return asdict(execute_run(cfg_dict, Budget(**budget)))


def _execute_ray_task(execute: Callable[..., dict[str, Any]], cfg_dict: dict[str, Any],
                      budget: dict[str, Any]) -> dict[str, Any]:
    """``execute`` (:func:`_execute_dict`) as a Ray task, stoppable by ``ray.cancel`` (the study's stop), which
    raises KeyboardInterrupt through Python's SIGINT handler: a Ray worker inherits SIGINT ignored
    from a driver started in the background (``cmd &`` in a script, nohup; a pytest-xdist worker),
    and the cancel then did nothing -- the run trained on to its end. ``execute`` travels with the
    task rather than being looked up in the worker, so that the driver's (a test's stand-in) runs."""
    with interrupted_until_stopping():  # repeated cancels (_stop_ray_runs) do not cut the run's clean-up
        return execute(cfg_dict, budget)


# ----------------------------------------------------------------------------- backends


Echo = Callable[[str], None]


def _describe(o: Outcome, x: str) -> str:
    if o.status == "failed":
        return f"FAILED after {o.seconds:.0f} s: {o.error}"
    what = "already finished" if o.status == "skipped" else f"{o.status} in {o.seconds:.0f} s ({o.cpu_seconds:.0f} CPU-s)"
    if o.start is None:
        return what
    return f"{what}; pass rate {o.start:.3f} -> {o.final:.3f} at step {o.step} ({x} {o.x:.3g})"


def _local(plans: list[RunPlan], budget: Budget, spec: StudySpec, echo: Echo, record: Callable[[Outcome], None]) -> list[Outcome]:
    if spec.parallel > 1:
        return _local_parallel(plans, budget, spec, echo, record)
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
        o = _collect(lambda: asdict(execute_run(to_dict(p.config), budget)), p)  # a crash fails this run only
        if o.status in ("trained", "resumed"):
            times.append(o.seconds)
        echo(f"[{i}/{len(plans)}] {p.name}: {_describe(o, budget.x)}")
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


def _local_parallel(plans: list[RunPlan], budget: Budget, spec: StudySpec, echo: Echo,
                    record: Callable[[Outcome], None]) -> list[Outcome]:
    """``spec.parallel`` runs at once, each in a spawned worker process (fresh torch state, one
    run per worker process so that nothing carries over), in plan order."""
    from concurrent.futures import FIRST_COMPLETED, wait

    todo = [p for p in plans if run_status(p.directory, budget) != "done"]
    # Skipped (done): instant, but for the report of a run stopped while it was written.
    outcomes = [_collect(lambda p=p: asdict(execute_run(to_dict(p.config), budget)), p) for p in plans if p not in todo]
    for o in outcomes:
        record(o)
    if not todo:
        return outcomes
    echo(f"{len(todo)} run(s) to train, {spec.parallel} at once, {todo[0].config.run.threads} torch thread(s) each")
    stops = _Stops(StopLatch(), StopLatch())
    with _worker_pool(spec.parallel, stops) as pool:
        running: dict[Any, RunPlan] = {}
        try:
            for p in todo:
                running[pool.submit(_unless_stopped, _execute_dict, to_dict(p.config), asdict(budget))] = p
            while running:
                finished, _ = wait(running, return_when=FIRST_COMPLETED)
                for fut in finished:
                    p = running.pop(fut)
                    o = _collect(lambda fut=fut, p=p: _worker_result(fut, p), p)
                    echo(f"[{len(outcomes) + 1}/{len(plans)}] {p.name}: {_describe(o, budget.x)}")
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
            f"scalerl study --output {study} --resume")))


def _collect(result: Callable[[], dict], p: RunPlan) -> Outcome:
    """The outcome of a run trained here, in a worker process or in a Ray task. A crash (an error
    that is not a :class:`ScaleRLError`, which the run reports itself) is recorded like a failed
    run, on every backend alike, so the rest of the study goes on; Ctrl-C still stops the study."""
    try:
        return Outcome(**result())
    except Exception as exc:
        return Outcome(p.variant.label, p.seed, "failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0])


def _ray(plans: list[RunPlan], budget: Budget, spec: StudySpec, echo: Echo, record: Callable[[Outcome], None]) -> list[Outcome]:
    try:
        import ray
    except ImportError:
        raise InputError("backend ray needs the ray package: pip install 'scalerl[ray]'") from None
    from scalerl.pipeline.ray_cluster import init_ray

    env = {k: os.environ[k] for k in ("SCALERL_CACHE", "HF_HOME") if k in os.environ}
    started = not ray.is_initialized()
    if started:
        # SIGTERM kept (Ray's own handler aborted the driver on `kill PID`: exit 1, a C++ stack dump);
        # an address where nothing answers is one line at once (Ray retried for minutes).
        init_ray(spec.ray_address, name="--ray-address",
                 runtime_env={"env_vars": env} if env else None, log_to_driver=False)
    running: dict[Any, RunPlan] = {}
    try:
        task = ray.remote(num_cpus=max(1, spec.threads))(_execute_ray_task)
        queue = [p for p in plans]
        limit = spec.parallel or len(queue)
        outcomes = []
        while queue or running:
            while queue and len(running) < limit:
                p = queue.pop(0)
                running[task.remote(_execute_dict, to_dict(p.config), asdict(budget))] = p
                echo(f"submitted {p.name} ({len(running)} running, {len(queue)} waiting)")
            with terminated_stays_terminated():  # (ray.wait raises a plain KeyboardInterrupt for our Terminated)
                (ref,), _ = ray.wait(list(running), num_returns=1)
            p = running.pop(ref)
            o = _collect(lambda: ray.get(ref), p)
            echo(f"[{len(plans) - len(queue) - len(running)}/{len(plans)}] {p.name}: {_describe(o, budget.x)}")
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


#: backend name -> runner(plans, budget, spec, echo, record) -> outcomes.
BACKENDS = {"local": _local, "ray": _ray}


# ----------------------------------------------------------------------------- the study


@dataclass
class StudyRun:
    directory: Path
    plans: list[RunPlan]
    outcomes: list[Outcome] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def failed(self) -> list[Outcome]:
        return [o for o in self.outcomes if o.status == "failed"]

    @property
    def cpu_seconds(self) -> float:
        """CPU time of the runs this invocation trained or resumed (skipped runs cost nothing)."""
        return sum(o.cpu_seconds for o in self.outcomes)


def save_spec(spec: StudySpec, study_dir: Path) -> None:
    """Write ``study.yaml`` (atomically: a kill mid-write leaves the previous one)."""
    save_yaml(spec, study_dir / SPEC_FILE, header="scalerl study spec (scalerl report DIR re-reads it)")


#: Files at the top of a directory that make it a training run's (scalerl train / demo), not a study's.
_RUN_FILES = ("runlog.jsonl", "config.yaml", "checkpoints")


def check_study_output(study_dir: Path) -> None:
    """Refuse a study directory that cannot be one: a file, a training run's directory (a study
    written into it would hide the run from ``scalerl report``), or one that cannot be written."""
    study_dir = Path(study_dir)
    if study_dir.exists() and not study_dir.is_dir():
        raise InputError(f"--output {study_dir} is a file, not a directory; give a directory for the study")
    if not (study_dir / SPEC_FILE).exists():
        run_files = [name for name in _RUN_FILES if (study_dir / name).exists()]
        if run_files:
            raise InputError(f"--output {study_dir} holds a training run ({', '.join(run_files)}), not a study; "
                             "give the study a directory of its own")
    from scalerl.train.preflight import check_writable  # also: a file where a parent directory should be

    check_writable(study_dir)


def run_study(spec: StudySpec, study_dir: str | Path, *, echo: Echo | None = None) -> StudyRun:
    """Plan, check, then run or resume every run of ``spec`` into ``study_dir``."""
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    study_dir = Path(study_dir)
    check_study_output(study_dir)
    plans = plan_study(spec, study_dir)
    check_existing(plans, Budget.of(spec))
    study_dir.mkdir(parents=True, exist_ok=True)
    save_spec(spec, study_dir)
    prepare_models(plans, progress=spec.progress)
    budget = Budget.of(spec)
    t0 = time.perf_counter()

    def record(o: Outcome) -> None:
        with open(study_dir / PROGRESS, "a", encoding="utf-8") as f:
            f.write(json.dumps({**asdict(o), "time": time.strftime("%Y-%m-%dT%H:%M:%S")}) + "\n")

    outcomes = BACKENDS[spec.backend](plans, budget, spec, echo, record)
    return StudyRun(study_dir, plans, outcomes, time.perf_counter() - t0)
