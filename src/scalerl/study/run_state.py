"""The state of a study's run on disk: new, partial (to resume), done, or damaged -- and whether a
run directory holds the run the plan asks for, before the study touches it."""

from __future__ import annotations

import datetime
import json
import re
from pathlib import Path
from typing import Any

from scalerl.config import load_yaml, to_dict
from scalerl.errors import InputError
from scalerl.runlog import RESUME, eval_rows, read_runlog
from scalerl.study.plan import Budget, RunPlan, comparable_config, run_directory


#: A run whose log cannot be read (a malformed line before its end: not a kill, which only tears the
#: last line). The study leaves it alone -- resuming or retraining it could overwrite what it holds --
#: reports it as failed and goes on with the others.
DAMAGED = "damaged"


#: The study's record of each execution of a run, a line each (``runner.run_study`` writes it).
PROGRESS = "progress.jsonl"


def progress_records(study_dir: Path) -> list[dict[str, Any]]:
    """The run records of ``progress.jsonl`` (none without one). A line that is not a run's record is
    skipped, as a torn one is (a kill mid-write): a hand-edited progress file must not cost the report."""
    try:
        # (utf-8-sig: a file saved by an editor behind a byte-order mark lost its first record: review ca)
        lines = (Path(study_dir) / PROGRESS).read_text(encoding="utf-8-sig").splitlines()
    except OSError:
        return []
    records = []
    for line in lines:
        try:
            o = json.loads(line)
        except json.JSONDecodeError:
            continue
        if isinstance(o, dict) and isinstance(o.get("label"), str):
            records.append(o)
    return records


def failed_runs(study_dir: Path) -> dict[tuple[str, int], str]:
    """``{(label, seed): ERROR}`` (its last line, at most 300 characters) for the runs whose latest execution
    failed, from ``progress.jsonl``. A failed run leaves its directory as it found it (empty, or at its last
    checkpoint), so its directory alone read as a run "not started" in the study's report. (The record's step
    is not said: a crash's record has none, and read 0.)"""
    latest = {(o["label"], o.get("seed")): o for o in progress_records(study_dir)}
    out = {}
    for key, o in latest.items():
        if o.get("status") == "failed" and not _went_on_after(study_dir, key, o):
            error = str(o.get("error") or "").strip().splitlines()
            why = error[-1] if error else "no error recorded"
            out[key] = why if len(why) <= 300 else why[:300].rsplit(" ", 1)[0] + " ..."  # (cut mid-word: "If yo")
    return out


def _went_on_after(study_dir: Path, key: tuple[str, Any], record: dict[str, Any]) -> bool:
    """Whether a later attempt of run ``key`` went on after its failure ``record``: its run log started, or resumed,
    after the failure was recorded (both times UTC, written in the files: a copy of the study, another time zone or a
    clock change cannot move them -- review bx: the log's mtime against the record's local time did). An attempt
    stopped by a kill or Ctrl-C records nothing (review bv: the old failure was reported, --dry-run said "failed" of
    a run to resume). A record an older scalerl wrote (no ``utc``) is compared by its local ``time`` with the log's
    last write, as then (review by: such a failure came back once the study was resumed by this scalerl)."""
    label, seed = key
    if not isinstance(seed, int):
        return False
    log = run_directory(study_dir, str(label), seed) / "runlog.jsonl"
    when = _utc(record.get("utc"))
    if when is None:  # (none, or one that is no time: review bz, compared as text it hid the failure or kept it)
        return _written_after_local_time(log, record.get("time"))
    try:
        header, rows, _ = read_runlog(log)
    except (OSError, InputError):  # no log, or one that cannot be read: the record stands
        return False
    started = [_utc(t) for t in [header.get("utc"), *(r.get("utc") for r in rows if r.get("type") == RESUME)]]
    return any(t is not None and t > when for t in started)


def _utc(text: Any) -> datetime.datetime | None:
    """A time as the run log and ``progress.jsonl`` write it (``2026-12-06T04:30:00Z``), None for anything else."""
    try:
        return datetime.datetime.strptime(str(text), "%Y-%m-%dT%H:%M:%SZ") if isinstance(text, str) else None
    except ValueError:
        return None


def _written_after_local_time(log: Path, when: Any) -> bool:
    """Whether ``log`` was written after ``when``, a local time to the second (an older record's only time): a
    failed attempt leaves its directory as it found it, so its log is no newer than its record."""
    import time

    try:
        parsed = time.strptime(str(when), "%Y-%m-%dT%H:%M:%S")
        # The readings that name this local time (mktime with the wrong DST flag shifts it an hour: review ca), the
        # later where two do -- the hour a clock change repeats (review bz: read as the first, the failed attempt's own
        # last write looked later); a time the clock skipped has none and keeps both.
        readings = [time.mktime((*parsed[:8], dst)) for dst in (0, 1)]
        named = [t for t in readings if time.localtime(t)[:6] == parsed[:6]]
        recorded = max(named or readings)
        return log.stat().st_mtime > recorded + 1  # (the record's second, rounded down)
    except (OSError, ValueError, OverflowError):  # no log, no time: the record stands
        return False


def read_log(directory: Path) -> tuple[list[dict[str, Any]], str]:
    """``(evaluation rows, "")`` of the run log in ``directory`` (no rows when there is none yet), or
    ``([], why)`` when it cannot be read. Read once and passed on: a log holds every step's row."""
    try:
        return eval_rows(directory), ""
    except InputError as exc:
        return [], str(exc)


def run_status(directory: Path, budget: Budget, log: tuple[list[dict[str, Any]], str] | None = None) -> str:
    """done (finished: final model saved at the run's end, budget met), partial (a run to resume), new, or
    damaged (its log cannot be read: see :data:`DAMAGED`). ``log``: :func:`read_log`'s answer, where the
    caller has it.

    A final/ of an earlier end (``final/scalerl_final.json`` names a step before the log's last: a run extended
    and stopped after its last evaluation but before its new final/ landed) is not done: resumed, the run
    saves final/ again. The run's own report tells it by the same rule (``run_finished``); a final/ that does
    not record its step (an older scalerl's) cannot be told, and counts as done as before."""
    from scalerl.train.run_directory import run_finished

    directory = Path(directory)
    if not (directory / "config.yaml").exists():
        return "new"
    rows, problem = log if log is not None else read_log(directory)
    if problem:
        return DAMAGED
    if budget.reached(rows[-1] if rows else None) and run_finished(directory, rows) is not False:
        return "done"
    return "partial"



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

    _check_none_dropped(plans)
    trained_by = _saved_budget(plans)
    for p in plans:
        if budget is not None:
            _check_not_past(p, budget, trained_by)
        saved = p.directory / "config.yaml"
        if not saved.exists():
            if (p.directory / "runlog.jsonl").exists():
                raise InputError(f"{p.directory} holds a run log but no config.yaml; it is not a run this study "
                                 "can resume -- remove it or use another --output")
            continue
        if not saved.read_text(errors="replace").strip():  # read as every default: "configured differently"
            raise InputError(f"{saved} is empty (the run was stopped while writing it?), so what the run trained "
                             f"is unknown; remove {p.directory} to train it again, or use another --output")
        diff = _first_difference(comparable_config(to_dict(load_yaml(TrainConfig, saved))), comparable_config(to_dict(p.config)))
        if diff:
            # Made by another spec -- or planned otherwise by this scalerl, or on this machine: a gen-length
            # variant's budgets count the interruption phrase with the model's tokenizer (review eg: a study made
            # before they did was told to --resume, the command just refused).
            raise InputError(f"{p.directory} holds a run configured differently from this study ({diff}): continue it "
                             "with the spec that made it (scalerl study --output DIR --resume); if that is this spec, "
                             "this scalerl or this machine plans the variant otherwise (a gen-length variant's budgets "
                             "count the interruption phrase with the model's tokenizer, which must be readable here) "
                             f"-- remove {p.directory.parent} to train it again under this plan, or use another --output")


def _check_none_dropped(plans: list[RunPlan]) -> None:
    """Refuse a plan that leaves out runs the study directory holds (fewer ``seeds``, a narrower ``only``,
    other sweep ``values``): the study saved the smaller spec and its report left those runs out from then
    on, without a word, though they were on disk -- as a lowered steps budget is refused, a study does not
    drop its runs."""
    if not plans:
        return
    runs = plans[0].directory.parent.parent  # STUDY/runs (plan.run_directory)
    planned = {p.directory.resolve() for p in plans}
    # Only the names a study gives its runs (seed<k>): a user's copy beside one (seed0-old) is not a run of it.
    dropped = sorted(f"{d.parent.name}/{d.name}" for d in runs.glob("*/seed*")
                     if re.fullmatch(r"seed\d+", d.name) and d.resolve() not in planned
                     and any((d / name).exists() for name in ("config.yaml", "runlog.jsonl")))
    if dropped:
        seeds = len({p.seed for p in plans})
        raise InputError(f"{runs} holds run(s) this study does not plan ({', '.join(dropped[:6])}"
                         f"{', ...' if len(dropped) > 6 else ''}; it plans {len(plans) // max(seeds, 1)} variant(s) x "
                         f"{seeds} seed(s)); a study does not drop its runs (the report would leave them out) -- keep "
                         "the seeds, variants (--only) and values that trained them, or use another --output")


def _saved_budget(plans: list[RunPlan]) -> Budget | None:
    """The budget of the spec the study directory was last run with (its ``study.yaml``), None where there is
    none to read: what trained the runs on disk."""
    from scalerl.study.spec import SPEC_FILE, load_saved_spec

    if not plans:
        return None
    path = plans[0].directory.parents[2] / SPEC_FILE  # STUDY/runs/<label>/seed<k>
    try:
        return Budget.of(load_saved_spec(path)) if path.exists() else None
    except InputError:  # lost or unreadable: the study's own check says so
        return None


def _lowered(budget: Budget, trained_by: Budget) -> bool:
    """Whether ``budget`` may end a compute-budget run sooner than ``trained_by`` did in any of its terms: a
    lower compute, a shorter first stretch, a lower max_steps (a steps budget, a shorter first stretch) -- or
    compute counted in another column, which cannot be compared (a budget of 210 steps over runs trained to 1e12
    FLOPs was taken without a word)."""
    if trained_by.compute is None:
        return budget.steps < trained_by.steps
    return budget.x != trained_by.x or budget.compute < trained_by.compute or budget.steps < trained_by.steps \
        or budget.max_steps < trained_by.max_steps


def _check_not_past(p: RunPlan, budget: Budget, trained_by: Budget | None = None) -> None:
    """A budget below what a run on disk has trained: the run would count as done, and the report would fit
    its longer curve under the shorter budget's name. A steps budget's end is ``steps``, read off the log. A
    compute budget's end cannot be read off the log -- an extension's target comes from the rate measured
    where it starts, which overshoots the compute where a step's cost grows, and the previous scalerl's resume
    placed it elsewhere again -- so it is judged against the budget that trained the runs (``trained_by``,
    the saved spec): refused where the new one is lower in a term (:func:`_lowered`) and a run went on past an
    evaluation at which the new one was met. Where no spec was saved, only the steps budget is checked. (A
    run's log that cannot be read is reported as damaged elsewhere.)"""
    rows, _ = read_log(p.directory)
    if not rows:
        return
    last = rows[-1]["step"]
    if budget.compute is None:
        if last > budget.steps:
            raise InputError(f"{p.directory} has trained to step {last}, past this study's {budget.steps} steps; a "
                             f"study does not shorten its runs (the report would fit the longer curves) -- keep "
                             f"steps >= {last}, or use another --output")
        return
    if trained_by is None or not _lowered(budget, trained_by):
        return
    met = next((r for r in rows if budget.reached(r)), None)
    if met is None or met["step"] >= last:
        return

    def x(row: dict[str, Any]) -> str:
        value = row.get(budget.x)
        return f"{budget.x} {value:.4g}" if isinstance(value, (int, float)) else f"{budget.x} {value!s}"

    def terms(b: Budget) -> str:
        return (f"{b.compute:g} {b.x} after a first stretch of {b.steps} steps, max_steps {b.max_steps}"
                if b.compute is not None else f"{b.steps} steps")

    raise InputError(f"{p.directory} has trained to step {last} ({x(rows[-1])}), past this study's budget "
                     f"({terms(budget)}), which it met at step {met['step']} ({x(met)}); the study's runs were "
                     f"trained under {terms(trained_by)}, and a study does not shorten its runs (the report would fit "
                     "the longer curves) -- keep that budget or a larger one, or use another --output")
