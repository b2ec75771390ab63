"""Shared study runs killed inside their extension after the budget was met end where the uninterrupted run ends
(review em: one_run.interrupted_end), at whatever step the kill fell.

The trainer is a stand-in (as tests/study/test_killed_runs.py's) that does what the real one does where execute_run
depends on it: a resume goes on from the latest checkpoint (``checkpoints/step_NNNNNN/state.pt``), the run log cut
back to it; it records ``max(checkpoint, run.steps)`` as config.yaml's run.steps (Trainer._open_logs / record_steps);
it evaluates where ``step % eval.every == 0 or step == run.steps`` (Trainer._loop), a checkpoint after each
evaluation and, between evaluations, every ``run.checkpoint_every`` steps; a resume whose checkpoint is a due
evaluation step without its row evaluates it (Trainer._evaluation_missing); it saves final/ with its step. Step
costs (FLOPs) grow, deterministically."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from scalerl.config import load_yaml, save_yaml
from scalerl.runlog import eval_rows
from scalerl.study.plan import Budget
from scalerl.study.run_state import run_status
from scalerl.train.checkpoint import checkpoint_step, latest_checkpoint

from .test_killed_runs import Killed, _end, _execute, _flops, _install, _plan
from .test_killed_runs import _Sim as _BaseSim


class _Sim(_BaseSim):
    """test_killed_runs' stand-in Trainer, as the real one does two things more where execute_run depends on them:
    a checkpoint between evaluations every ``run.checkpoint_every`` steps, and a resume whose checkpoint is a due
    evaluation step without its row evaluates it (Trainer._evaluation_missing). ``kill``: (attempt, step, where) --
    "train" (after the step's training row), "eval" (after the evaluation row, before its checkpoint) or "ckpt"."""

    def _checkpoint(self, out: Path, step: int, attempt: int) -> None:
        ckpt = out / "checkpoints" / f"step_{step:06d}"
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / "state.pt").write_text("{}")
        if self.kill == (attempt, step, "ckpt"):
            raise Killed

    def _evaluate(self, out: Path, step: int, attempt: int) -> None:
        self._append(out, {"type": "eval", "step": step, "flops": _flops(step), "val/pass_rate": 0.5})
        if self.kill == (attempt, step, "eval"):
            raise Killed
        self._checkpoint(out, step, attempt)

    def run(self, out: Path, cfg, resume: bool) -> None:
        steps, every, attempt = cfg.run.steps, cfg.eval.every, self.attempt
        if not resume:
            out.mkdir(parents=True, exist_ok=True)
            save_yaml(cfg, out / "config.yaml")
        ckpt = latest_checkpoint(out / "checkpoints")
        step = checkpoint_step(ckpt) if resume and ckpt is not None else None
        if step is None:
            self._write(out, [{"type": "header", "run": out.name}])
            if resume:
                self._record_steps(out, steps)
            step = 0
            self._evaluate(out, 0, attempt)
        else:
            self._write(out, [r for r in self._rows(out) if r.get("type") == "header" or r.get("step", -1) <= step])
            self._record_steps(out, max(step, steps))
            due = step % every == 0 or step == steps
            if due and not any(r.get("type") == "eval" and r.get("step") == step for r in self._rows(out)):
                self._evaluate(out, step, attempt)
        while step < steps:
            step += 1
            self._append(out, {"type": "train", "step": step})
            if self.kill == (attempt, step, "train"):
                raise Killed
            if step % every == 0 or step == steps:
                self._evaluate(out, step, attempt)
            elif cfg.run.checkpoint_every and step % cfg.run.checkpoint_every == 0:
                self._checkpoint(out, step, attempt)
        final = out / "final"
        if final.exists():
            shutil.rmtree(final)
        final.mkdir()
        (final / "config.json").write_text("{}")
        (final / "scalerl_final.json").write_text(json.dumps({"step": step}) + "\n")


def _shared(tmp_path: Path, sim: _Sim, name: str, base_steps: int, checkpoint_every: int = 0):
    """The workload's base run (``base_steps``, evaluated every 20) shared into a compute study whose first stretch
    is 150 steps (benchmarks/study_workload.py copies it into every family's study)."""
    source = _plan(tmp_path / f"source-{name}", steps=base_steps)
    _execute(source, Budget(base_steps, None, base_steps, "flops", 20), sim)
    plan = _plan(tmp_path / name)
    shutil.copytree(source.directory, plan.directory)
    cfg = load_yaml(type(plan.config), plan.directory / "config.yaml")
    cfg.run.output = str(plan.directory)
    cfg.run.checkpoint_every = checkpoint_every
    save_yaml(cfg, plan.directory / "config.yaml")
    return plan


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
