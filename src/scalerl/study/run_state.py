"""The state of a study's run on disk: new, partial (to resume), done, or damaged -- and whether a
run directory holds the run the plan asks for, before the study touches it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scalerl.config import load_yaml, to_dict
from scalerl.errors import InputError
from scalerl.runlog import eval_rows, has_final_model
from scalerl.study.plan import Budget, RunPlan, comparable_config


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
        lines = (Path(study_dir) / PROGRESS).read_text(encoding="utf-8").splitlines()
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
    """``{(label, seed): "failed at step N: ERROR"}`` for the runs whose latest execution failed, from
    ``progress.jsonl``. A failed run leaves its directory as it found it (empty, or at its last
    checkpoint), so its directory alone read as a run "not started" in the study's report."""
    latest = {(o["label"], o.get("seed")): o for o in progress_records(study_dir)}
    out = {}
    for key, o in latest.items():
        if o.get("status") == "failed":
            error = str(o.get("error") or "no error recorded").strip().splitlines()
            out[key] = f"failed at step {o.get('step', '?')}: {error[-1] if error else ''}"[:300]
    return out


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
        diff = _first_difference(comparable_config(to_dict(load_yaml(TrainConfig, saved))), comparable_config(to_dict(p.config)))
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
