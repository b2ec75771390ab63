"""Shared study runs killed inside their extension after the budget was met end where the uninterrupted run ends
(review em: one_run.interrupted_end), at whatever step the kill fell.

The trainer is test_killed_runs' stand-in, checkpointing between evaluations (``run.checkpoint_every``) here."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from scalerl.config import load_yaml, save_yaml
from scalerl.runlog import copied_at, eval_rows
from scalerl.study.plan import Budget
from scalerl.study.run_state import run_status
from scalerl.train.checkpoint import checkpoint_step, latest_checkpoint

from .test_killed_runs import _end, _execute, _install, _plan, _shared, _Sim


# --------------------------------------------------------- _resume_stretch's stale-final branch: the attempt's end


def test_shared_run_killed_after_a_checkpointed_evaluation_past_its_compute_ends_where_uninterrupted(
        tmp_path, monkeypatch):
    """Base run of 300 steps shared into a compute study (stretch 150, 6e11 FLOPs): the extension goes 300 -> 360
    (config.yaml's run.steps 360); the compute is met at the evaluation of step 340. Uninterrupted, the run ends at
    360 (evaluations 320, 340, 360). Killed right after step 340's checkpoint, the study resumes it "to" step 340
    (next_evaluation's "the checkpoint's own") -- the trainer shortens run.steps to 340, saves final/ there, and the
    run counts as done at 340: the same run ends at 340 or 360 depending on whether the study was killed."""
    budget = Budget(steps=150, compute=6e11, max_steps=800, x="flops", eval_every=20)
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _shared(tmp_path, sim, "reference", 300)
    assert _execute(reference, budget, sim).status == "resumed"
    assert _end(reference) == ([*range(0, 380, 20)], 360)
    plan = _shared(tmp_path, sim, "study", 300)
    assert _execute(plan, budget, sim, kill=(1, 340, "ckpt")) is None
    assert budget.reached(eval_rows(plan.directory)[-1]) and run_status(plan.directory, budget) == "partial"
    assert _execute(plan, budget, sim).status == "resumed"
    assert _end(plan) == _end(reference), (sim.calls, _end(plan)[0][-3:])


def test_shared_run_killed_between_evaluations_past_its_compute_ends_at_its_extension_end(tmp_path, monkeypatch):
    """As tests/study/test_killed_runs.py's review-el tests, with an extension longer than one evaluation interval
    past the point the compute is met: 7e11 FLOPs, extension 300 -> 420, compute met at step 380. Uninterrupted, the
    run ends at 420. Killed at step 387 (run.checkpoint_every=5: a checkpoint at 385), it is resumed to 400 -- the
    next multiple of eval_every, which next_evaluation prefers to the attempt's end (config.yaml's run.steps 420) --
    and counts as done there: it ends at 400, killed at 380 at 380, and never killed at 420."""
    budget = Budget(steps=150, compute=7e11, max_steps=800, x="flops", eval_every=20)
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _shared(tmp_path, sim, "reference", 300)
    assert _execute(reference, budget, sim).status == "resumed"
    assert sim.calls == [("resume", 420)] and _end(reference)[1] == 420
    plan = _shared(tmp_path, sim, "study", 300, checkpoint_every=5)
    assert _execute(plan, budget, sim, kill=(1, 387, "train")) is None
    assert checkpoint_step(latest_checkpoint(plan.directory / "checkpoints")) == 385
    rows = eval_rows(plan.directory)
    assert rows[-1]["step"] == 380 and budget.reached(rows[-1])
    assert _execute(plan, budget, sim).status == "resumed"
    assert _end(plan) == _end(reference), (sim.calls, _end(plan)[0][-3:])


# ------------------------------------------------------------------ reviews ER, ET: a shared run's budget raised

_OLD = Budget(steps=150, compute=6e11, max_steps=800, x="flops", eval_every=20)
_RAISED = Budget(steps=150, compute=7e11, max_steps=800, x="flops", eval_every=20)


def _raised_reference(tmp_path, sim):
    """The shared run (the base run of 300 steps copied into a compute study, stretch 150) never stopped, under the
    raised budget: measured from the copy's end, 300 -> 420."""
    reference = _shared(tmp_path, sim, "reference", 300)
    assert _execute(reference, _RAISED, sim).status == "resumed"
    assert _end(reference)[1] == 420
    return reference


def _extended_under_the_old_budget(tmp_path, sim, root=None):
    """The same shared run in a study of its own, extended under the old budget (6e11: 300 -> 360)."""
    plan = _shared(tmp_path if root is None else root, sim, "study", 300)
    _execute(plan, _OLD, sim)
    assert _end(plan)[1] == 360
    return plan


def test_shared_run_finished_then_raised_ends_where_the_uninterrupted_shared_run_does(tmp_path, monkeypatch):
    """Review ER: a shared run (copied at 300) extended under 6e11 to 360, then given 7e11, was walked on from its
    final/ (360, to 380); the uninterrupted shared run under 7e11 is measured from the copy's end: 300 -> 420."""
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _raised_reference(tmp_path, sim)
    plan = _extended_under_the_old_budget(tmp_path, sim)
    assert copied_at(plan.directory) == 300
    _execute(plan, _RAISED, sim)
    assert _end(plan) == _end(reference), (sim.calls, _end(plan)[0][-3:])


def test_moved_shared_copy_raised_after_its_extension_ends_where_the_uninterrupted_one_does(tmp_path, monkeypatch):
    """Review ET: copied_at compared resume rows with the copy's own path; moved, it was walked on from final/."""
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _raised_reference(tmp_path, sim)
    _extended_under_the_old_budget(tmp_path, sim)
    shutil.move(str(tmp_path / "study"), str(tmp_path / "moved"))  # mv study moved; scalerl study --output moved
    moved = _plan(tmp_path / "moved")
    _execute(moved, _RAISED, sim)
    assert _end(moved)[1] == _end(reference)[1], sim.calls


def test_shared_copy_of_a_study_started_with_a_relative_output_is_anchored_from_any_working_directory(
        tmp_path, monkeypatch):
    """Review ET: the copy's resume rows name it as --output gave it (relative); read from another directory they
    matched nothing."""
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _raised_reference(tmp_path, sim)
    monkeypatch.chdir(tmp_path)
    plan = _extended_under_the_old_budget(tmp_path, sim, root=Path("."))  # `scalerl study --output study`
    assert not plan.directory.is_absolute()
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # `scalerl study --output /abs/.../study --compute 7e11`
    again = _plan(tmp_path / "study")
    _execute(again, _RAISED, sim)
    assert _end(again)[1] == _end(reference)[1], sim.calls


def test_shared_copy_extended_before_resume_rows_had_output_raised_ends_where_the_uninterrupted_one_does(
        tmp_path, monkeypatch):
    """Review ET: a copy extended by a trainer whose resume rows did not say where: measured from the source's own
    final/ (the copy's end), not from the copy's."""
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _raised_reference(tmp_path, sim)
    plan = _extended_under_the_old_budget(tmp_path, sim)
    log = plan.directory / "runlog.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for r in rows:  # (the log as the trainer wrote it before its header and resume rows said where)
        if r.get("type") in ("header", "resume"):
            r.pop("directory")
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    _execute(plan, _RAISED, sim)
    assert _end(plan)[1] == _end(reference)[1], sim.calls


# ------------------------------------------------------------------ review EV: copied_at


def _log_rows(log: Path) -> list[dict]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _write_log(log: Path, rows: list[dict]) -> None:
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))


def test_copy_of_a_source_resumed_with_an_absolute_output_is_anchored_at_its_copy(tmp_path, monkeypatch):
    """Review EV: the source's own resume row, naming it in another spelling, was taken for the copy's."""
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _raised_reference(tmp_path, sim)
    monkeypatch.chdir(tmp_path)
    plan = _shared(tmp_path, sim, "study", 300)
    # The source as a user trains it: `scalerl train --output source-study/... ` (relative, as typed: the header),
    # killed, then `scalerl train --output $PWD/source-study/... --resume` (absolute: its resume row) -- one directory.
    log = plan.directory / "runlog.jsonl"
    rows = _log_rows(log)
    source = rows[0]["config"]["run"]["output"]
    rows[0]["config"]["run"]["output"] = os.path.relpath(source, tmp_path)
    at = next(i for i, r in enumerate(rows) if r.get("step") == 100)
    rows.insert(at + 1, {"type": "resume", "from_step": 100, "output": source})
    _write_log(log, rows)
    assert copied_at(plan.directory) == 300, "the copy was made at 300; 100 is a resume inside the source"
    _execute(plan, _OLD, sim)
    assert _end(plan)[1] == 360
    _execute(plan, _RAISED, sim)
    assert _end(plan)[1] == _end(reference)[1], sim.calls  # (was: 380)


def test_own_run_with_a_relative_output_is_no_copy_from_another_working_directory(tmp_path, monkeypatch):
    """Review EV: read from another working directory, a relative header named no directory of the run's."""
    run = tmp_path / "study" / "r"
    run.mkdir(parents=True)
    rows = [{"type": "header", "run": "r", "directory": str(run.resolve()),
             "config": {"run": {"output": "study/r"}}}]  # started from tmp_path: run.output as given, relative
    rows += [{"type": "eval", "step": s, "flops": s * 1e9} for s in range(0, 120, 20)]
    rows.insert(4, {"type": "resume", "from_step": 40, "directory": str(run.resolve())})  # --output $PWD/study/r
    _write_log(run / "runlog.jsonl", rows)
    (run / "final").mkdir()
    (run / "final" / "scalerl_final.json").write_text('{"step": 100}\n')
    monkeypatch.chdir(tmp_path)
    assert copied_at(run) is None
    (tmp_path / "elsewhere").mkdir()
    monkeypatch.chdir(tmp_path / "elsewhere")  # `scalerl study --output /abs/study --resume` from elsewhere
    assert copied_at(run) is None  # (was: 40)


def test_unresumed_copy_of_an_old_log_is_anchored_at_its_own_final_not_the_sources_later_one(tmp_path, monkeypatch):
    """Review EV: the fallback for old logs read the source's final/, which its own study had moved on since."""
    sim = _Sim()
    _install(monkeypatch, sim)
    plan = _shared(tmp_path, sim, "study", 300)  # cp -r of the source's finished run (300 steps)
    log = plan.directory / "runlog.jsonl"
    rows = _log_rows(log)
    source = Path(rows[0]["config"]["run"]["output"])
    at = next(i for i, r in enumerate(rows) if r.get("step") == 100)
    rows.insert(at + 1, {"type": "resume", "from_step": 100})  # the source's resume, by a scalerl before beee908
    _write_log(log, rows)
    (source / "final" / "scalerl_final.json").write_text('{"step": 400}\n')  # the source's own study extended it since
    assert max(r["step"] for r in rows if r.get("type") == "eval") == 300
    assert copied_at(plan.directory) == 300  # (was: 40)0, the source's new end


# ------------------------------------------------------------------ review EW: studies of one name


def _shared_from(sim, source_root: Path, copy_root: Path, base_steps: int = 300, relative_to: Path | None = None):
    """tests/study's _shared, with the source's and the copy's study roots given; ``relative_to``: the source was
    started with a relative --output from there (its header names it relative, as typed)."""
    source = _plan(source_root, steps=base_steps)
    _execute(source, Budget(base_steps, None, base_steps, "flops", 20), sim)
    if relative_to is not None:
        log = source.directory / "runlog.jsonl"
        rows = _log_rows(log)
        rows[0]["config"]["run"]["output"] = os.path.relpath(source.directory, relative_to)
        _write_log(log, rows)
    plan = _plan(copy_root)
    shutil.copytree(source.directory, plan.directory)
    cfg = load_yaml(type(plan.config), plan.directory / "config.yaml")
    cfg.run.output = str(plan.directory)
    save_yaml(cfg, plan.directory / "config.yaml")
    return plan


# ------------------------------------------------------------------------------ (1) copied_at


def test_copy_between_two_studies_of_one_name_is_a_copy(tmp_path, monkeypatch):
    """Review EW: a relative run.output that ended the copy's own path read the copy as a run trained there (the
    header now says where it trained, resolved)."""
    sim = _Sim()
    _install(monkeypatch, sim)
    # `cd exp-a && scalerl study --output study` trained the base run; it was shared into exp-b/study
    (tmp_path / "exp-a").mkdir()
    (tmp_path / "exp-b").mkdir()
    plan = _shared_from(sim, tmp_path / "exp-a" / "study", tmp_path / "exp-b" / "study",
                        relative_to=tmp_path / "exp-a")
    header = _log_rows(plan.directory / "runlog.jsonl")[0]["config"]["run"]["output"]
    assert not os.path.isabs(header) and header.startswith("study" + os.sep)
    monkeypatch.chdir(tmp_path)  # read from neither experiment's directory
    assert copied_at(plan.directory) == 300  # (was: None -- the copy read as a run trained where it is)


def test_copy_between_two_studies_of_one_name_raised_ends_where_the_uninterrupted_copy_does(tmp_path, monkeypatch):
    sim = _Sim()
    _install(monkeypatch, sim)
    (tmp_path / "ref-a").mkdir()
    reference = _shared_from(sim, tmp_path / "ref-a" / "source", tmp_path / "ref-b" / "copy")  # (absolute: a copy)
    _execute(reference, _RAISED, sim)
    assert _end(reference)[1] == 420
    (tmp_path / "exp-a").mkdir()
    (tmp_path / "exp-b").mkdir()
    plan = _shared_from(sim, tmp_path / "exp-a" / "study", tmp_path / "exp-b" / "study",
                        relative_to=tmp_path / "exp-a")
    monkeypatch.chdir(tmp_path / "exp-b")  # `cd exp-b && scalerl study --output study`
    _execute(plan, _OLD, sim)
    assert _end(plan)[1] == 360
    _execute(plan, _RAISED, sim)
    assert _end(plan)[1] == _end(reference)[1], sim.calls  # (was: 380)
