"""Shared study runs killed inside their extension after the budget was met end where the uninterrupted run ends
(review em: one_run.interrupted_end), at whatever step the kill fell.

The trainer is test_killed_runs' stand-in, checkpointing between evaluations (``run.checkpoint_every``) here."""

from __future__ import annotations

import shutil
from pathlib import Path

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


# ------------------------------------------------------ reviews ER, ET, EV, EW, EX: a shared run's budget raised

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
    """Review ET: an anchor read from the log's paths missed a moved copy, walked on from final/ (the copy is marked
    where it was shared: runlog.mark_copied)."""
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
    """Review ET: a relative --output, read from another working directory, named no directory of the copy's."""
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
