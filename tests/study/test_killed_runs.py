"""Study runs met by a study (or ``--resume``) in every state a kill can leave them in (review ej): a run is resumed
from the rows its latest checkpoint keeps -- not from an evaluation the resume throws away --, to the end of the
stretch the kill interrupted, and a run already past that stretch (one shared from another family) goes straight
to its extension without being told it has "nothing to train".

The trainer is a stand-in that does what the real one (train/trainer.py) does where execute_run depends on it: a
resume goes on from the latest checkpoint (``checkpoints/step_NNNNNN``, the run log cut back to it, as
RunLogWriter's resume_offset does); with ``run.steps`` below the checkpoint it says "past run.steps = N: nothing to
train" and saves final/ again there (Trainer.run); else it trains to ``run.steps``, evaluating where
``step % eval.every == 0 or step == run.steps`` (Trainer._loop), a checkpoint after each evaluation; it records its
run.steps in config.yaml (record_steps: at least its checkpoint's step, as Trainer._open_logs does) and saves final/ with
its step. Step costs grow (FLOPs per step rise as in
RL), deterministically."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from scalerl.config import load_yaml, save_yaml, to_dict
from scalerl.runlog import eval_rows, final_model_step, mark_copied
from scalerl.study.plan import Budget, plan_study
from scalerl.study.run_state import run_status
from scalerl.study.spec import StudySpec
from scalerl.train.checkpoint import checkpoint_step, latest_checkpoint


class Killed(BaseException):
    """kill -9 (or a full disk: the study records the run failed and --resume meets the same files)."""


def _flops(step: int) -> float:
    return sum(1e9 * (1 + s / 200) for s in range(step))


class _Sim:
    """The stand-in Trainer, and what it was asked and said. ``kill``: (attempt, step, where) -- "eval" (after the
    evaluation row, before its checkpoint: the checkpoint write is cut off), "ckpt" (after the checkpoint) or "train"
    (after the step's training row, between evaluations)."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, int]] = []
        self.notes: list[str] = []
        self.kill: tuple[int, int, str] | None = None
        self.attempt = 0

    def trainer(self):
        sim = self
        from scalerl.train.config import TrainConfig

        class Trainer:
            def __init__(self, cfg, resume=False):
                self.cfg, self.resume, self.out = cfg, resume, Path(cfg.run.output)

            @classmethod
            def resumed(cls, out, steps=None, progress=None, **_):
                cfg = load_yaml(TrainConfig, Path(out) / "config.yaml")
                cfg.run.output = str(out)
                if steps is not None:
                    cfg.run.steps = steps
                return cls(cfg, resume=True)

            def run(self):
                sim.attempt += 1
                sim.calls.append(("resume" if self.resume else "new", self.cfg.run.steps))
                sim.run(self.out, self.cfg, self.resume)

        return Trainer

    # -- the run directory
    @staticmethod
    def _rows(out: Path) -> list[dict]:
        return [json.loads(line) for line in (out / "runlog.jsonl").read_text().splitlines()]

    @staticmethod
    def _write(out: Path, rows: list[dict]) -> None:
        (out / "runlog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))

    @staticmethod
    def _append(out: Path, row: dict) -> None:
        with open(out / "runlog.jsonl", "a") as f:
            f.write(json.dumps(row) + "\n")

    @staticmethod
    def _record_steps(out: Path, steps: int) -> None:
        from scalerl.train.config import TrainConfig

        cfg = load_yaml(TrainConfig, out / "config.yaml")
        cfg.run.steps = steps
        save_yaml(cfg, out / "config.yaml")

    def run(self, out: Path, cfg, resume: bool) -> None:
        steps, every, attempt = cfg.run.steps, cfg.eval.every, self.attempt
        header = {"type": "header", "run": out.name}
        if not resume:
            out.mkdir(parents=True, exist_ok=True)
            save_yaml(cfg, out / "config.yaml")
            self._write(out, [header])
        ckpt = latest_checkpoint(out / "checkpoints")
        step = checkpoint_step(ckpt) if resume and ckpt is not None else None
        if step is None:
            self._write(out, [header])
            if resume:
                self._record_steps(out, steps)
            step = 0
            self._evaluate(out, 0, attempt)
        else:
            self._write(out, [r for r in self._rows(out) if r.get("type") in ("header", "resume")
                              or r.get("step", -1) <= step])
            self._record_steps(out, max(step, steps))
            if step > steps:
                self.notes.append(f"note: {out} is already at step {step}, past run.steps = {steps}: nothing to train")
            elif step == steps:
                self.notes.append(f"note: {out} is already at step {step} of run.steps = {steps}: the run is done")
            else:
                self.notes.append(f"note: resuming {out} from its checkpoint at step {step}, to step {steps}")
            # (Trainer._evaluation_missing: a checkpoint at a due evaluation step without its row evaluates it)
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

    def _evaluate(self, out: Path, step: int, attempt: int) -> None:
        self._append(out, {"type": "eval", "step": step, "flops": _flops(step), "val/pass_rate": 0.5})
        if self.kill == (attempt, step, "eval"):
            raise Killed
        self._checkpoint(out, step, attempt)

    def _checkpoint(self, out: Path, step: int, attempt: int) -> None:
        """After each evaluation, and every ``run.checkpoint_every`` steps between them."""
        ckpt = out / "checkpoints" / f"step_{step:06d}"  # (train/checkpoint.py's layout; its state a stand-in)
        ckpt.mkdir(parents=True, exist_ok=True)
        (ckpt / "state.pt").write_text("{}")
        if self.kill == (attempt, step, "ckpt"):
            raise Killed


def _install(monkeypatch, sim: _Sim) -> None:
    from scalerl.train import trainer

    monkeypatch.setattr(trainer, "Trainer", sim.trainer())
    monkeypatch.setattr("scalerl.study.one_run._run_report", lambda out: None)  # (the run's own report)


def _plan(root: Path, steps: int = 150, eval_every: int = 20):
    return plan_study(StudySpec(family="loo", only=["loo-loss-dapo"], steps=steps, eval_every=eval_every), root)[0]


def _execute(plan, budget: Budget, sim: _Sim, kill=None):
    """execute_run as a study (or --resume) does; a kill ends it part-way, as kill -9 would."""
    from scalerl.study.one_run import execute_run

    sim.attempt, sim.kill, sim.calls, sim.notes = 0, kill, [], []
    try:
        return execute_run(to_dict(plan.config), budget)
    except Killed:
        return None


def _end(plan) -> tuple[list[int], int | None]:
    return [int(r["step"]) for r in eval_rows(plan.directory)], final_model_step(plan.directory)


# The batch-size workload family's shape: a first stretch of 150 steps, evaluated every 20 (no multiple of 20).
BUDGET = Budget(steps=150, compute=6e11, max_steps=800, x="flops", eval_every=20)


# ------------------------------------------------------------------------------------- a shared run killed inside its extension


def test_a_shared_run_killed_inside_its_extension_is_not_told_it_has_nothing_to_train(tmp_path, monkeypatch):
    """The workload's base run (300 steps, evaluated every 20) shared into a compute study whose first stretch is
    150 steps; the study extends it from step 300 (the budget not met there) and is killed at step 310, before the
    extension's first evaluation: the log's last evaluation is still step 300, final/ the copy's (step 300),
    config.yaml's run.steps the extension's end. final/ is older than the extension (run_finished False), so the
    new condition resumes it to the stretch end first: the trainer prints "already at step 300, past run.steps =
    150: nothing to train" and saves final/ again (a whole model written for nothing), then the extension trains
    it on. Before 185cb29 the run was resumed to the extension's end only -- as the uninterrupted run is."""
    sim = _Sim()
    _install(monkeypatch, sim)
    source = _plan(tmp_path / "source", steps=300)
    _execute(source, Budget(300, None, 300, "flops", 20), sim)  # the base run, trained in its own family
    plan = _plan(tmp_path / "study")
    shutil.copytree(source.directory, plan.directory)
    cfg = load_yaml(type(plan.config), plan.directory / "config.yaml")
    cfg.run.output = str(plan.directory)
    save_yaml(cfg, plan.directory / "config.yaml")

    reference = _plan(tmp_path / "reference")  # the same shared run, never killed
    shutil.copytree(plan.directory, reference.directory)
    cfg.run.output = str(reference.directory)
    save_yaml(cfg, reference.directory / "config.yaml")
    assert _execute(reference, BUDGET, sim).status == "resumed"
    target = BUDGET.next_target(eval_rows(source.directory)[-1])
    assert sim.calls == [("resume", target)] and _end(reference)[1] == target, sim.calls

    assert _execute(plan, BUDGET, sim, kill=(1, 310, "train")) is None  # killed inside the extension
    assert final_model_step(plan.directory) == 300 and eval_rows(plan.directory)[-1]["step"] == 300
    outcome = _execute(plan, BUDGET, sim)
    assert outcome.status == "resumed" and _end(plan) == _end(reference)  # (it does end where it should)
    assert sim.calls == [("resume", target)], (sim.calls, sim.notes)
    assert not any("nothing to train" in n for n in sim.notes), sim.notes


# ------------------------------------------------- a stretch end whose evaluation is logged but not checkpointed


def _killed_in_its_stretch_end_checkpoint(tmp_path: Path, sim: _Sim):
    """A compute study's own run killed (kill -9; or a full disk, which fails the run) while it wrote the checkpoint
    of its first stretch's last step (150): the evaluation row of step 150 is in the log, the latest checkpoint is
    step 140's, no final/. Returns (its plan, the uninterrupted run's plan)."""
    reference = _plan(tmp_path / "reference")
    _execute(reference, BUDGET, sim)
    plan = _plan(tmp_path / "study")
    assert _execute(plan, BUDGET, sim, kill=(1, 150, "eval")) is None
    assert eval_rows(plan.directory)[-1]["step"] == 150 and final_model_step(plan.directory) is None
    return plan, reference


def test_a_run_killed_in_its_stretch_end_checkpoint_keeps_its_stretch_end_evaluation(tmp_path, monkeypatch):
    """Uninterrupted, the run trains to step 150, evaluates there (run.steps), saves final/, and the extension is
    measured from that row (to step 450). Killed while step 150's checkpoint was written, the study measures the
    extension from the row of step 150 (still in the log) and resumes the run from its checkpoint at step 140 to step
    450 at once: the resume cuts the log back to step 140, and with run.steps = 450 step 150 is no evaluation step
    (150 % 20 != 0). The run ends with one evaluation fewer than the uninterrupted run (its curve, its report, and
    the anchor every later resume measures its extension from: see the next test)."""
    sim = _Sim()
    _install(monkeypatch, sim)
    plan, reference = _killed_in_its_stretch_end_checkpoint(tmp_path, sim)
    assert 150 in _end(reference)[0]
    _execute(plan, BUDGET, sim)
    assert _end(plan) == _end(reference), (sim.calls, _end(plan)[0][:10])


def test_a_run_killed_in_its_stretch_end_checkpoint_and_again_in_its_extension_ends_where_it_would_have(
        tmp_path, monkeypatch):
    """As above, then killed once more inside the extension (after step 260's checkpoint). Budget.stretch_end walks
    from the first stretch's evaluation, which the log no longer has: the stretch end is 150 again, so the run
    (past it, with no final/) is resumed to 150 -- "already at step 260, past run.steps = 150: nothing to train" --
    and then extended to a target measured from step 260, at a rate that has risen since. The uninterrupted run
    ends at step 450; this one at step 380."""
    sim = _Sim()
    _install(monkeypatch, sim)
    plan, reference = _killed_in_its_stretch_end_checkpoint(tmp_path, sim)
    # (its resume now trains to step 150 first, attempt 1, then extends: attempt 2 is the extension)
    assert _execute(plan, BUDGET, sim, kill=(2, 260, "ckpt")) is None
    _execute(plan, BUDGET, sim)
    assert _end(plan)[1] == _end(reference)[1] == 450, (sim.calls, sim.notes)


# ------------------------------------------------- a checkpoint between evaluations (review ek)


def _shared_run_killed_past_its_compute(tmp_path, monkeypatch):
    """The workload's base run (300 steps, evaluated every 20, final/ at 300) shared into a compute study (stretch 150,
    6e11 flops): the extension goes to step 360 (measured from 300) and the compute is met at step 340 already. With
    run.checkpoint_every=5 the extension, killed at step 347, left a checkpoint at step 345 (past its last evaluation,
    340) -- written here by hand, as the stand-in trainer checkpoints at evaluations only."""
    sim = _Sim()
    _install(monkeypatch, sim)
    source = _plan(tmp_path / "source", steps=300)
    _execute(source, Budget(300, None, 300, "flops", 20), sim)
    plan = _plan(tmp_path / "study")
    shutil.copytree(source.directory, plan.directory)
    cfg = load_yaml(type(plan.config), plan.directory / "config.yaml")
    cfg.run.output = str(plan.directory)
    cfg.run.checkpoint_every = 5
    save_yaml(cfg, plan.directory / "config.yaml")
    assert BUDGET.next_target(eval_rows(plan.directory)[-1]) == 360
    assert _execute(plan, BUDGET, sim, kill=(1, 347, "train")) is None
    ckpt = plan.directory / "checkpoints" / "step_000345"
    ckpt.mkdir(exist_ok=True)  # (the stand-in writes it too: run.checkpoint_every)
    (ckpt / "state.pt").write_text("{}")
    rows = eval_rows(plan.directory)
    assert rows[-1]["step"] == 340 and BUDGET.reached(rows[-1]) and final_model_step(plan.directory) == 300
    return sim, plan


def test_a_run_resumed_to_a_checkpoint_between_evaluations_is_then_finished(tmp_path, monkeypatch):
    sim, plan = _shared_run_killed_past_its_compute(tmp_path, monkeypatch)
    first = _execute(plan, BUDGET, sim)
    assert first.status == "resumed", (first, sim.calls)
    # Resumed once, the run must be finished: the next study invocation skips it.
    assert run_status(plan.directory, BUDGET) == "done", (sim.calls, sim.notes, _end(plan))
    second = _execute(plan, BUDGET, sim)
    assert second.status == "skipped", (second, sim.calls, sim.notes)


# ------------------------------------------------- the stopped attempt's own end (review el): the trainer also evaluates at
# run.steps, so the evaluation after a checkpoint between evaluations is the next multiple of eval_every, or the
# attempt's end (max_steps, or an extension counted from a last evaluation that is no multiple) where that comes first


def _shared(tmp_path: Path, sim: _Sim, name: str, base_steps: int, checkpoint_every: int = 0):
    """The workload's base run (``base_steps``, evaluated every 20) shared into a compute study (stretch 150), as
    benchmarks/study_workload.py shares it: copied, marked (runlog.mark_copied), its config's run.output its own."""
    source = _plan(tmp_path / f"source-{name}", steps=base_steps)
    _execute(source, Budget(base_steps, None, base_steps, "flops", 20), sim)
    plan = _plan(tmp_path / name)
    shutil.copytree(source.directory, plan.directory)
    mark_copied(plan.directory, source.directory)
    cfg = load_yaml(type(plan.config), plan.directory / "config.yaml")
    cfg.run.output = str(plan.directory)
    cfg.run.checkpoint_every = checkpoint_every
    save_yaml(cfg, plan.directory / "config.yaml")
    return plan


def _killed_between_evaluations(tmp_path, monkeypatch, base_steps: int, budget: Budget):
    """The shared run extended (never killed: the reference), and the same run killed at step 347 of its
    extension with a checkpoint at step 345 (run.checkpoint_every=5, written by hand as in test_killed_runs)."""
    sim = _Sim()
    _install(monkeypatch, sim)
    reference = _shared(tmp_path, sim, "reference", base_steps)
    assert _execute(reference, budget, sim).status == "resumed"
    plan = _shared(tmp_path, sim, "study", base_steps, checkpoint_every=5)
    assert _execute(plan, budget, sim, kill=(1, 347, "train")) is None
    ckpt = plan.directory / "checkpoints" / "step_000345"
    ckpt.mkdir(exist_ok=True)  # (the stand-in writes it too: run.checkpoint_every)
    (ckpt / "state.pt").write_text("{}")
    rows = eval_rows(plan.directory)
    assert rows[-1]["step"] == 340 and budget.reached(rows[-1]) and final_model_step(plan.directory) == base_steps
    return sim, plan, reference


def test_a_resume_between_evaluations_does_not_train_past_max_steps(tmp_path, monkeypatch):
    budget = Budget(steps=150, compute=6e11, max_steps=350, x="flops", eval_every=20)
    sim, plan, reference = _killed_between_evaluations(tmp_path, monkeypatch, 300, budget)
    assert _end(reference)[1] == 350
    assert _execute(plan, budget, sim).status == "resumed"
    assert sim.calls[0][1] <= budget.max_steps, (sim.calls, sim.notes)
    assert _end(plan) == _end(reference), (sim.calls, _end(plan)[0][-4:], _end(reference)[0][-4:])


def test_a_resume_between_evaluations_ends_at_the_extension_end_when_eval_every_does_not_divide_it(
        tmp_path, monkeypatch):
    budget = Budget(steps=150, compute=6e11, max_steps=800, x="flops", eval_every=20)
    sim, plan, reference = _killed_between_evaluations(tmp_path, monkeypatch, 310, budget)
    assert _end(reference)[1] == 350  # evaluations 320, 340, 350 (run.steps)
    assert _execute(plan, budget, sim).status == "resumed"
    assert _end(plan) == _end(reference), (sim.calls, _end(plan)[0][-4:], _end(reference)[0][-4:])


def test_a_stopped_run_whose_budget_is_met_goes_on_to_the_end_its_attempt_set_out_for():
    from scalerl.study.one_run import interrupted_end

    budget = Budget(steps=150, compute=6e11, max_steps=350, x="flops", eval_every=20)
    assert interrupted_end(340, 340, 340, budget) == 340  # checkpointed at its end
    assert interrupted_end(325, 320, 330, budget) == 330  # the attempt's own end
    assert interrupted_end(340, 340, 360, budget) == 350  # max_steps first
    assert interrupted_end(345, 340, 330, budget) == 345  # never below the checkpoint
    assert interrupted_end(340, 340, None, budget) == 340  # no run.steps: the checkpoint's own evaluation
    assert interrupted_end(305, 300, None, budget) == 320  # ... or the next multiple of eval_every
