"""Run a study: plan its runs, check its directory, then run or resume each one, locally or on Ray.

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

Resuming: a run whose ``final/`` was saved at its end and whose last evaluation meets the budget is
skipped; one with a ``config.yaml`` but not finished is continued with ``Trainer.resumed``
(exactly, in the sync and PPO-off-policy modes; see train/checkpoint.py); the rest start.
A run directory whose configuration differs from the plan is refused, so a study directory
never mixes two studies. A compute budget (``spec.compute``) is met by extending each run
with ``Trainer.resumed(steps=...)`` in whole evaluation intervals until its last
evaluation's compute reaches the budget.

Modules, in the order a study goes through them: :mod:`~scalerl.study.plan` (the runs and their
configs, the budget), :mod:`~scalerl.study.run_state` (each run directory's state, checked against
the plan), :mod:`~scalerl.study.one_run` (train / resume / extend / skip one run), and the backends
:mod:`~scalerl.study.local_runs` and :mod:`~scalerl.study.ray_runs`.
"""

from __future__ import annotations

import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from scalerl.config import save_yaml
from scalerl.errors import InputError
from scalerl.runlog import append_json_line
from scalerl.study.local_runs import run_local
from scalerl.study.one_run import Echo, Outcome
from scalerl.study.plan import Budget, RunPlan, plan_study, prepare_models, with_profile_pinned
from scalerl.study.ray_runs import check_ray_address, run_on_ray
from scalerl.study.run_state import PROGRESS, check_existing, run_status
from scalerl.study.spec import SPEC_FILE, StudySpec
from scalerl.train.run_directory import RunDirectoryLock

"""One line per finished run (wall time, status), written by the driver process only."""

#: backend name -> runner(plans, budget, spec, echo, record) -> outcomes.
BACKENDS = {"local": run_local, "ray": run_on_ray}
#: What each backend checks before the study prepares its models (minutes of warm start for a tiny model):
#: a Ray address where nothing answers is one line at once.
PREFLIGHTS = {"ray": check_ray_address}


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
    """Write ``study.yaml`` (atomically: a kill mid-write leaves the previous one), with the scale profile a user
    model's ``auto`` chose pinned (:func:`~scalerl.study.plan.with_profile_pinned`)."""
    save_yaml(with_profile_pinned(spec), study_dir / SPEC_FILE,
              header="scalerl study spec (scalerl report DIR re-reads it)")


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


def hold_study_directory(study_dir: str | Path) -> RunDirectoryLock:
    """Create ``study_dir`` and lock it for this process (:class:`RunDirectoryLock`), or refuse in one line
    (:class:`InputError`) where another study holds it. The study holds its directory while it runs: a second
    `study --resume` beside it took each run the first was training for a failure, and the first then took
    the second's: both exited 1. ``scalerl study`` takes it before it announces the study, and keeps it
    through the report (:func:`run_study`'s ``held``)."""
    study_dir = Path(study_dir)
    study_dir.mkdir(parents=True, exist_ok=True)
    return RunDirectoryLock(study_dir, "a study is running in it now, or writing its report (another process holds "
                                       "it); wait for it to end, or stop it (Ctrl-C), before --resume")


def run_study(spec: StudySpec, study_dir: str | Path, *, echo: Echo | None = None,
              held: RunDirectoryLock | None = None) -> StudyRun:
    """Plan, check, then run or resume every run of ``spec`` into ``study_dir``.

    ``held``: the caller's lock on ``study_dir`` (:func:`hold_study_directory`), which it lets go once it has
    written what follows the runs (the report: a second study let in before it was written rewrote the
    directory under it); without one the study takes the lock itself and lets it go as the runs end."""
    echo = echo or (lambda line: print(line, file=sys.stderr, flush=True))
    study_dir = Path(study_dir)
    check_study_output(study_dir)
    plans = plan_study(spec, study_dir)
    check_existing(plans, Budget.of(spec))
    lock = hold_study_directory(study_dir) if held is None else None
    try:
        save_spec(spec, study_dir)
        budget = Budget.of(spec)
        # (only where a run is left to train: a resumed study whose runs are done starts no cluster -- review dv)
        if spec.backend in PREFLIGHTS and any(run_status(p.directory, budget) != "done" for p in plans):
            PREFLIGHTS[spec.backend](spec)
        prepare_models(plans, progress=spec.progress)
        t0 = time.perf_counter()

        def record(o: Outcome) -> None:
            # ("utc" beside the local "time": what study.run_state compares with a run log's own times)
            append_json_line(study_dir / PROGRESS, {**asdict(o), "time": time.strftime("%Y-%m-%dT%H:%M:%S"),
                                                    "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())})

        outcomes = BACKENDS[spec.backend](plans, budget, spec, echo, record)
    finally:
        if lock is not None:
            lock.release()
    return StudyRun(study_dir, plans, outcomes, time.perf_counter() - t0)
