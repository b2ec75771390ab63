"""A study's runs shared from another family (benchmarks/study_workload.py copies the workload's base run into every
family's study): resumed and extended under the family's compute budget as a run of its own would be (review ei: a
shared run past its first stretch, killed before its extension's final/ save, was never given final/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalerl.config import save_yaml, to_dict
from scalerl.study.plan import Budget, plan_study
from scalerl.study.spec import StudySpec


# ----------------------------------------------------------------------------------------- study runs (one_run.py)


def _shared_run(tmp_path: Path, rows: list[dict], *, final_step: int, run_steps: int):
    """A study run directory as benchmarks/study_workload.py leaves one it shared from another family and a study
    then extended: its config (run.steps = ``run_steps``, as an extension records it), its log's evaluation
    ``rows`` and a final/ of step ``final_step``. Returns the run's plan."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=80, eval_every=20)
    plan = plan_study(spec, tmp_path / "study")[0]
    plan.config.run.steps = run_steps
    plan.directory.mkdir(parents=True)
    save_yaml(plan.config, plan.directory / "config.yaml")
    with open(plan.directory / "runlog.jsonl", "w") as f:
        f.write(json.dumps({"type": "header", "run": plan.directory.name, "recipe": plan.config.recipe_name}) + "\n")
        for r in rows:
            f.write(json.dumps({"type": "eval", "val/pass_rate": 0.5, **r}) + "\n")
    _save_final(plan.directory, final_step)
    return plan


def _save_final(directory: Path, step: int) -> None:
    final = directory / "final"
    final.mkdir(exist_ok=True)
    (final / "config.json").write_text("{}")
    (final / "scalerl_final.json").write_text(json.dumps({"step": step}) + "\n")


def _fake_trainer(monkeypatch, resumes: list[int]):
    """Trainer.resumed(...).run() as the real one does where the run's checkpoint is at its log's last evaluation
    (nothing to train, or nothing this stand-in trains): final/ saved again at that step. Logs nothing new."""
    from scalerl.runlog import eval_rows
    from scalerl.train import trainer

    class Resumed:
        def __init__(self, out):
            self.out = Path(out)

        @classmethod
        def resumed(cls, out, steps, progress=None):
            resumes.append(steps)
            return cls(out)

        def run(self):
            _save_final(self.out, int(eval_rows(self.out)[-1]["step"]))

    monkeypatch.setattr(trainer, "Trainer", Resumed)
    monkeypatch.setattr("scalerl.study.one_run._run_report", lambda out: None)  # (the run's own report: seconds)


def test_shared_run_killed_before_its_extensions_final_save_gets_final(tmp_path, monkeypatch):
    """The workload's base run shared at step 100 (evaluated every 20 steps: none at the study's 50-step stretch end)
    into a compute study, extended to step 120 -- where the budget is met -- and killed after that evaluation and its
    checkpoint, before final/ landed: final/ is still the shared copy's, of step 100. run_status says "partial" (final/
    of an earlier end), and the previous execute_run resumed it to the stretch end ("nothing to train"), which saves
    final/ again from the last checkpoint. Now nothing is resumed: the study records the run "resumed", final/ stays
    at step 100 and the run is partial at every study command from then on (its report: unfinished)."""
    from scalerl.study.one_run import execute_run
    from scalerl.study.run_state import run_status

    rows = [{"step": s, "flops": s * 1e10} for s in range(0, 140, 20)]  # 0 .. 120: met 1.15e12 at 120
    plan = _shared_run(tmp_path, rows, final_step=100, run_steps=120)
    budget = Budget(steps=50, compute=1.15e12, max_steps=400, x="flops", eval_every=20)
    assert run_status(plan.directory, budget) == "partial"
    resumes: list[int] = []
    _fake_trainer(monkeypatch, resumes)
    outcome = execute_run(to_dict(plan.config), budget)
    assert outcome.status != "failed", outcome.error
    assert run_status(plan.directory, budget) == "done", (resumes, outcome)


def test_shared_run_killed_inside_its_extension_resumes_to_that_extensions_end(tmp_path, monkeypatch):
    """As tests/study/test_budget.py's run killed inside an extension, but shared (evaluated every 20 steps to step
    300, no evaluation at the study's 150-step stretch end): the extension from step 300 (1.2e12 FLOPs, 4e9 a step:
    200 more steps, 10 intervals) goes to step 500; killed at step 400 after cheaper steps, the study must go on to
    500 as the uninterrupted run does -- it measures again from step 400 (3.5e9 a step on average) and goes to 580,
    so the same run ends elsewhere depending on whether the study was killed."""
    from scalerl.study.one_run import execute_run

    rows = [{"step": s, "flops": s * 4e9} for s in range(0, 320, 20)]
    rows += [{"step": s, "flops": 1.2e12 + (s - 300) * 2e9} for s in range(320, 420, 20)]
    plan = _shared_run(tmp_path, rows, final_step=300, run_steps=500)
    ckpt = plan.directory / "checkpoints" / "step_000400"  # the checkpoint after step 400's evaluation
    ckpt.mkdir(parents=True)
    (ckpt / "state.pt").write_text("{}")
    budget = Budget(steps=150, compute=2e12, max_steps=1000, x="flops", eval_every=20)
    assert budget.next_target(rows[15]) == 500 and rows[15]["step"] == 300  # the uninterrupted extension's end
    resumes: list[int] = []
    _fake_trainer(monkeypatch, resumes)
    execute_run(to_dict(plan.config), budget)  # (fails after the first resume: the stand-in logs nothing new)
    assert resumes and resumes[0] == 500, resumes
