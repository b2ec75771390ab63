"""One run of a study: train, resume, extend to the budget or skip it, and say what happened
(:class:`Outcome`). The same function runs in the driver, in a worker process and in a Ray task."""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable

from scalerl.config import from_dict, load_yaml, to_dict
from scalerl.errors import CannotResume, InputError, ScaleRLError
from scalerl.runlog import RUNLOG, copied_at, eval_rows, final_model_step
from scalerl.study.plan import Budget, RunPlan
from scalerl.study.run_state import DAMAGED, read_log, run_status

Echo = Callable[[str], None]
"""Where a study's progress lines go (stderr, or a test's list)."""


@dataclass
class Outcome:
    """What became of one run of a study this time (a line of ``progress.jsonl``)."""

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
            rows = eval_rows(out)
        else:
            kept = _resumable_rows(out)
            resumed = _resume_stretch(out, budget, kept, progress)
            rows = kept if resumed is None else resumed
        # A compute budget: extend until the last evaluation reaches it (each pass re-measures the rate).
        while not budget.reached(rows[-1] if rows else None):
            target = _extension(budget, rows)
            Trainer.resumed(out, steps=target, progress=progress).run()
            before, rows = rows, eval_rows(out)
            if rows == before:  # (review ci: a run whose last evaluation was never logged was resumed for ever)
                raise InputError(f"the run was resumed to step {target} and logged no new evaluation: it cannot reach "
                                 f"the budget ({_budget_text(budget)}) this way -- look at {out / RUNLOG}; remove {out} "
                                 "and run the same study command again to train it anew")
    except CannotResume as exc:  # (train's remedy named --overwrite, which a study has not: review bj)
        return _outcome(label, seed, "failed", time.perf_counter() - t0, out, cpu=time.process_time() - cpu0,
                        error=f"{exc.problem}; remove {out} and run the same study command again to train it anew")
    except ScaleRLError as exc:
        return _outcome(label, seed, "failed", time.perf_counter() - t0, out, error=str(exc),
                        cpu=time.process_time() - cpu0)
    _run_report(out)
    return _outcome(label, seed, "trained" if status == "new" else "resumed", time.perf_counter() - t0, out,
                    cpu=time.process_time() - cpu0)


def _resumable_rows(out: Path) -> list[dict[str, Any]]:
    """The evaluation rows a resume of ``out`` keeps: those up to its latest checkpoint (a resume cuts the log back
    to it; none without one, as the run starts over). Targets are measured from them, not from a row the resume
    throws away (review ej: a run killed while writing its stretch-end checkpoint lost that evaluation, and its
    extension was measured from it)."""
    from scalerl.train.checkpoint import checkpoint_step, latest_checkpoint
    from scalerl.train.run_directory import CHECKPOINTS

    ckpt = latest_checkpoint(out / CHECKPOINTS)
    if ckpt is None:
        return []
    return [r for r in eval_rows(out) if int(r["step"]) <= checkpoint_step(ckpt)]


def _resume_stretch(out: Path, budget: Budget, rows: list[dict[str, Any]], progress: bool) -> list | None:
    """Resume a stopped run to the end of the stretch the stop interrupted, as if it had not been stopped
    (:meth:`Budget.stretch_end`); the evaluation rows after it, or None where nothing was resumed.

    A run already past that stretch -- the workload's base run at step 300 shared into a family whose stretch ends
    at 150 -- is left to the extension (told "past run.steps = 150: nothing to train", it was then trained on),
    unless its budget is met and its final/ is older than its log (killed before an extension's save: review ei),
    which a resume saves again at the end the stopped attempt set out for (:func:`interrupted_end`)."""
    from scalerl.train.checkpoint import checkpoint_step, latest_checkpoint
    from scalerl.train.run_directory import CHECKPOINTS, planned_steps, run_finished
    from scalerl.train.trainer import Trainer

    copied = copied_at(out)  # (a shared run: where its copy ended; else the end of the last stretch it finished)
    end = budget.stretch_end(rows, copied if copied is not None else final_model_step(out))
    if max((int(r["step"]) for r in rows), default=0) <= end:
        Trainer.resumed(out, steps=end, progress=progress).run()
    elif budget.reached(rows[-1]) and run_finished(out, rows) is False:
        ckpt = checkpoint_step(latest_checkpoint(out / CHECKPOINTS))  # (rows past end: a checkpoint keeps them)
        target = interrupted_end(ckpt, int(rows[-1]["step"]), planned_steps(out), budget)
        Trainer.resumed(out, steps=target, progress=progress).run()
    else:
        return None
    return eval_rows(out)


def interrupted_end(ckpt: int, last: int, planned: int | None, budget: Budget) -> int:
    """Where a stopped run checkpointed at ``ckpt`` (its last evaluation at ``last``), its budget met, goes on to:
    the end its attempt set out for (``planned``, config.yaml's run.steps), capped at ``max_steps``, never below the
    checkpoint -- an uninterrupted run trains to its run.steps though the budget is met before it (review em: resumed
    to its checkpoint's evaluation or to the next multiple of ``eval_every``, a run ended at 340, 400 or 420 as the
    kill fell). Without a readable run.steps: the checkpoint's own evaluation where it is the last, else the next
    evaluation, ``eval_every`` on (a checkpoint between evaluations, ``run.checkpoint_every``: the run's status,
    judged by its evaluations, never counted that step as reached -- review ek)."""
    if planned is not None:
        return max(ckpt, min(budget.max_steps, planned))
    if ckpt == last:
        return ckpt
    return max(ckpt, min(budget.max_steps, -(-ckpt // budget.eval_every) * budget.eval_every))


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
    from scalerl.train.report_files import REPORT_FILES, REPORT_HTML

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


def execute_dict(cfg_dict: dict[str, Any], budget: dict[str, Any]) -> dict[str, Any]:
    """Plain-dict wrapper for Ray (no dataclasses of ours cross the process boundary)."""
    return asdict(execute_run(cfg_dict, Budget(**budget)))


def describe(o: Outcome, x: str) -> str:
    if o.status == "failed":
        return f"FAILED after {o.seconds:.0f} s: {o.error}"
    what = "already finished" if o.status == "skipped" else f"{o.status} in {o.seconds:.0f} s ({o.cpu_seconds:.0f} CPU-s)"
    if o.start is None:
        return what
    return f"{what}; pass rate {o.start:.3f} -> {o.final:.3f} at step {o.step} ({x} {o.x:.3g})"


def collect(result: Callable[[], dict], p: RunPlan) -> Outcome:
    """The outcome of a run trained here, in a worker process or in a Ray task. A crash (an error
    that is not a :class:`ScaleRLError`, which the run reports itself) is recorded like a failed
    run, on every backend alike, so the rest of the study goes on; Ctrl-C still stops the study."""
    try:
        return Outcome(**result())
    except Exception as exc:
        # A Ray task's error says Ray's process title first (review dd: "RayTaskError(ValueError): ray::
        # _execute_ray_task() (pid=..., ip=...)"): the run's own error is its cause.
        exc = getattr(exc, "cause", None) or exc
        return Outcome(p.variant.label, p.seed, "failed", error=f"{type(exc).__name__}: {exc}".splitlines()[0])


def skip_finished(plans: list[RunPlan], budget: Budget, record: Callable[[Outcome], None],
                  echo: Echo | None = None) -> tuple[list[Outcome], list[RunPlan]]:
    """The finished runs of ``plans`` skipped here, in the driver (instant, but for the report of a
    run stopped while it was written), before a backend starts its workers or its cluster for the
    rest; returns their outcomes (recorded, and said through ``echo`` where given) and the rest."""
    done = [p for p in plans if run_status(p.directory, budget) == "done"]
    outcomes: list[Outcome] = []
    for p in done:
        o = collect(lambda: asdict(execute_run(to_dict(p.config), budget)), p)
        if echo is not None:
            echo(f"[{len(outcomes) + 1}/{len(plans)}] {p.name}: {describe(o, budget.x)}")
        record(o)
        outcomes.append(o)
    return outcomes, [p for p in plans if p not in done]
