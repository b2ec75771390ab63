"""Review ac's strict-xfail reproducers: a compute-budget study that the current scalerl refuses under a spec
that did not lower its budget (a study the previous scalerl killed and resumed; a raised first stretch)."""

import json
import math

import pytest

from scalerl.config import save_yaml
from scalerl.study.plan import Budget, plan_study
from scalerl.study.run_state import check_existing
from scalerl.study.runner import save_spec
from scalerl.study.spec import StudySpec


def _cost(step: int) -> float:
    """FLOPs of one step, growing as the completions lengthen (as they do in RL)."""
    return 1e9 * (1 + step / 200)


def _old_reached(b: Budget, last: dict) -> bool:  # Budget.reached before 9b95ecb
    return (last.get(b.x) or 0.0) >= b.compute or last["step"] >= b.max_steps


def _old_next_target(b: Budget, last: dict) -> int:  # Budget.next_target before 9b95ecb
    if not last.get("step") or not last.get(b.x):
        return b.steps
    step, done = int(last["step"]), float(last[b.x])
    need = math.ceil(max(b.compute - done, 0.0) / (done / step))
    return min(b.max_steps, step + max(1, math.ceil(need / b.eval_every)) * b.eval_every)


def _rows(b: Budget, *, old: bool = False, kill_after: int | None = None) -> list[dict]:
    """The evaluation rows of a study run (evaluated every eval_every steps and at each stretch's end): its first
    stretch, then extensions until the budget is met -- by today's Budget, or (``old``) by the previous
    scalerl's, killed after the evaluation at ``kill_after`` and resumed by the previous scalerl's execute_run
    (``Trainer.resumed(steps=next_target(rows[-1]))``)."""
    reached = (lambda r: _old_reached(b, r)) if old else b.reached
    target = (lambda r: _old_next_target(b, r)) if old else b.next_target
    rows, state = [{"step": 0, "flops": 0.0}], {"step": 0, "flops": 0.0}

    def train_to(end: int) -> None:
        while state["step"] < end:
            state["step"] += 1
            state["flops"] += _cost(state["step"])
            if state["step"] % b.eval_every == 0 or state["step"] == end:
                rows.append(dict(state))
                if state["step"] == kill_after:
                    raise KeyboardInterrupt

    try:
        train_to(b.steps)
        while not reached(rows[-1]):
            train_to(target(rows[-1]))
    except KeyboardInterrupt:  # the study killed, then `scalerl study --output DIR --resume`
        train_to(target(rows[-1]))
        while not reached(rows[-1]):
            train_to(target(rows[-1]))
    return rows


def _write(directory, spec: StudySpec, rows_of) -> list:
    plans = plan_study(spec, directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_spec(spec, directory)
    for p in plans:
        rows = rows_of(p)
        p.directory.mkdir(parents=True)
        p.config.run.steps = rows[-1]["step"]  # an extension saves its --steps in config.yaml
        save_yaml(p.config, p.directory / "config.yaml")
        with open(p.directory / "runlog.jsonl", "w") as f:
            f.write(json.dumps({"type": "header", "run": p.directory.name, "recipe": p.config.recipe_name}) + "\n")
            for r in rows:
                f.write(json.dumps({"type": "eval", **r, "val/pass_rate": 0.3 + 0.4 * r["flops"] / (r["flops"] + 8e10)}) + "\n")
        (p.directory / "final").mkdir()
        (p.directory / "final" / "config.json").write_text("{}")
        (p.directory / "final" / "scalerl_final.json").write_text(json.dumps({"step": rows[-1]["step"]}))
    return plans


def _spec(**kw) -> StudySpec:
    return StudySpec(**{"family": "loo", "only": ["loo-loss-dapo"], "steps": 100, "compute": 2e11,
                        "eval_every": 10, "bootstrap": 50, **kw})


@pytest.mark.xfail(strict=True, reason="review ac: _check_not_past refuses a study the previous scalerl killed and "
                                       "resumed, under the spec that made it")
def test_a_compute_study_the_previous_scalerl_killed_and_resumed_is_taken_under_its_own_spec(tmp_path):
    """A compute-budget study (2e11 FLOPs after a first stretch of 100 steps, per-step FLOPs growing) made by the
    previous scalerl: killed after the base run's step-50 evaluation and resumed (`scalerl study --output DIR
    --resume`, as docs/study.md says), which resumed the run to the previous Budget.next_target measured at step
    50 (180) and ended it there. Its own spec -- `--resume`, or `--seeds 2` to add a seed -- is now refused: "has
    trained to step 180 ..., past this study's budget (...) which ends it at step 160 ... keep the budget that
    trained them", which is the budget given; the previous scalerl took it (--dry-run: both runs done)."""
    spec = _spec()
    b = Budget.of(spec)
    plans = _write(tmp_path, spec, lambda p: _rows(b, old=True, kill_after=50 if p.variant.is_base else None))
    base = next(p for p in plans if p.variant.is_base)
    assert json.loads((base.directory / "runlog.jsonl").read_text().splitlines()[-1])["step"] == 180
    check_existing(plans, b)  # raises InputError today
    check_existing(plan_study(_spec(seeds=2), tmp_path), Budget.of(_spec(seeds=2)))


@pytest.mark.xfail(strict=True, reason="review ac: raising steps of a compute-budget study is refused as a "
                                       "shortened budget")
def test_raising_the_first_stretch_of_a_finished_compute_study_is_not_refused(tmp_path):
    """A finished compute-budget study (2e11 FLOPs, first stretch 50 steps; per-step FLOPs growing, so the
    extension measured at step 50 runs to 180, past where the compute is met) trained by today's scalerl.
    docs/study.md: "raising `steps` or `seeds` extends a finished one" and, of budgets, "More of each is taken".
    `--steps 100` (more) is refused: "has trained to step 180 ..., past this study's budget (2e+11 flops after a
    first stretch of 100 steps ...), which ends it at step 160 ... a study does not shorten its runs"."""
    spec = _spec(steps=50)
    plans = _write(tmp_path, spec, lambda p: _rows(Budget.of(spec)))
    check_existing(plans, Budget.of(spec))  # its own spec: taken
    check_existing(plans, Budget.of(_spec(steps=100)))  # raises InputError today
