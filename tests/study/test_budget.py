"""A study's budget against the runs on disk: where a compute budget's runs end (their first stretch of
``steps`` whole, then extensions to the compute), and budgets below what the runs trained refused."""

import json
import math

import pytest

from scalerl.config import save_yaml
from scalerl.runlog import eval_rows
from scalerl.errors import InputError
from scalerl.study.plan import Budget, plan_study
from scalerl.study.run_state import check_existing
from scalerl.study.runner import save_spec
from scalerl.study.spec import StudySpec

from .synthetic import write_study

LAWS = {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.70, 1.5, 5e11)}


def _spec(**kw) -> StudySpec:
    return StudySpec(**{"family": "loo", "only": ["loo-loss-dapo"], "steps": 200, "eval_every": 10,
                        "bootstrap": 50, **kw})


def test_a_compute_budget_below_what_the_runs_trained_is_refused_as_a_lower_steps_budget_is(tmp_path):
    """Review z: a finished study's runs reached 2e12 FLOPs (200 steps x 1e10, evaluated every 10). `--steps 100`
    is refused ("a study does not shorten its runs"); a compute budget of 5e11 with a first stretch of 100 steps
    (met at step 100: a study of that budget ends its runs there) was taken -- every run counted as done and the
    report said "budget: 5e+11 flops per run" over curves to 2e12. So was 1.5e12 (met at step 150)."""
    plans = write_study(tmp_path, _spec(), LAWS)
    with pytest.raises(InputError, match="past this study's 100 steps; a study does not shorten its runs"):
        check_existing(plans, Budget.of(_spec(steps=100)))
    with pytest.raises(InputError, match=r"has trained to step 200 \(flops 2e\+12\), past this study's budget "
                                         r"\(5e\+11 flops.*which it met at step 100 .*trained under 200 steps, and a study does not shorten its runs"):
        check_existing(plans, Budget.of(_spec(compute=5e11, steps=100)))
    with pytest.raises(InputError, match=r"which it met at step 150 \(flops 1\.5e\+12"):
        check_existing(plans, Budget.of(_spec(compute=1.5e12, steps=100)))
    # What a study of the budget trains: not past it. The first stretch (200 steps) is trained whole whatever
    # the compute, so a 5e11 budget after 200 steps is what a new study of that spec trains too; 2e12 from a
    # first stretch of 100 is met at step 200; a larger budget extends them.
    for budget in (_spec(compute=5e11), _spec(compute=2e12, steps=100), _spec(compute=4e12), _spec(steps=400)):
        check_existing(plans, Budget.of(budget))
    with pytest.raises(InputError, match=r"max_steps 150\), which it met at step 150 \(flops 1.5e\+12\)"):  # a lowered cap is a lowered budget too
        check_existing(plans, Budget.of(_spec(compute=4e12, steps=100, max_steps=150)))


def test_a_compute_budget_run_resumed_after_a_kill_trains_its_first_stretch_as_an_uninterrupted_one():
    """Review z: compute budget 1e12 FLOPs, steps 200 (the first stretch every run trains), eval every 10. A run
    that reaches 1e12 at step 100 trains to step 200 uninterrupted (execute_run: Trainer(cfg).run() to
    run.steps, then the budget is met). Killed at step 100 and resumed, it was resumed to next_target(last) =
    110 and then counted as done: the same run ended at step 110 or 200 depending on whether the study was
    killed, and the study's curves (and verdicts) with it."""
    b = Budget(steps=200, compute=1e12, max_steps=5000, x="flops", eval_every=10)
    assert b.next_target({"step": 100, "flops": 1e12}) >= 200
    assert not b.reached({"step": 100, "flops": 1e12}) and b.reached({"step": 200, "flops": 2e12})
    rows = [{"step": s, "flops": s * 1e10} for s in range(0, 110, 10)]
    assert b.stretch_end(rows) == 200  # resumed: to the end of the stretch the kill interrupted


def test_a_run_killed_inside_an_extension_is_resumed_to_that_extension_s_end():
    """A run extended from its first stretch (100 steps, 4e11 FLOPs: 150 more steps at that rate, 8 intervals
    of 20 -> step 260) and killed at step 240 goes on to 260, the extension's end -- not to a target measured
    again from step 240 at a rate that has drifted since (here: cheaper steps later on, which measured from
    step 240, from the mean rate of all 240 steps, gives 360)."""
    b = Budget(steps=100, compute=1e12, max_steps=1000, x="flops", eval_every=20)
    rows = [{"step": s, "flops": s * 4e9} for s in range(0, 120, 20)]
    rows += [{"step": s, "flops": 4e11 + (s - 100) * 2e9} for s in range(120, 260, 20)]
    assert b.stretch_end(rows) == 260 and b.next_target(rows[-1]) == 360
    assert b.stretch_end(rows[:3]) == 100  # inside the first stretch
    assert Budget(100, None, 1000, "flops", 20).stretch_end(rows) == 100  # a steps budget: its steps


# A study whose step cost grows (review ac): the previous scalerl's resume and a raised first stretch.

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


def _rows(b: Budget, *, old: bool = False, kill_after: int | None = None, cost=None,
          old_kill_at_budget: bool = False) -> list[dict]:
    """The evaluation rows of a study run (evaluated every eval_every steps and at each stretch's end; per-step
    FLOPs ``cost(step)``, default :func:`_cost`): its first stretch, then extensions until the budget is met --
    by today's Budget, or (``old``) by the previous scalerl's, killed after the evaluation at ``kill_after`` and
    resumed by the previous scalerl's execute_run (``Trainer.resumed(steps=next_target(rows[-1]))``); with
    ``old_kill_at_budget``, by today's and then, as the previous scalerl resumed a run killed after the
    evaluation that met the compute and before final/ landed, one more ``next_target`` on."""
    cost = cost or _cost
    reached = (lambda r: _old_reached(b, r)) if old else b.reached
    target = (lambda r: _old_next_target(b, r)) if old else b.next_target
    rows, state = [{"step": 0, "flops": 0.0}], {"step": 0, "flops": 0.0}

    def train_to(end: int) -> None:
        while state["step"] < end:
            state["step"] += 1
            state["flops"] += cost(state["step"])
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
    if old_kill_at_budget:
        train_to(_old_next_target(b, rows[-1]))
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


def _growing_spec(**kw) -> StudySpec:
    return StudySpec(**{"family": "loo", "only": ["loo-loss-dapo"], "steps": 100, "compute": 2e11,
                        "eval_every": 10, "bootstrap": 50, **kw})


def test_a_compute_study_the_previous_scalerl_killed_and_resumed_is_taken_under_its_own_spec(tmp_path):
    """A compute-budget study (2e11 FLOPs after a first stretch of 100 steps, per-step FLOPs growing) made by the
    previous scalerl: killed after the base run's step-50 evaluation and resumed (`scalerl study --output DIR
    --resume`, as docs/study.md says), which resumed the run to the previous Budget.next_target measured at step
    50 (180) and ended it there. Its own spec -- `--resume`, or `--seeds 2` to add a seed -- is now refused: "has
    trained to step 180 ..., past this study's budget (...) which ends it at step 160 ... keep the budget that
    trained them", which is the budget given; the previous scalerl took it (--dry-run: both runs done)."""
    spec = _growing_spec()
    b = Budget.of(spec)
    plans = _write(tmp_path, spec, lambda p: _rows(b, old=True, kill_after=50 if p.variant.is_base else None))
    base = next(p for p in plans if p.variant.is_base)
    assert json.loads((base.directory / "runlog.jsonl").read_text().splitlines()[-1])["step"] == 180
    check_existing(plans, b)
    check_existing(plan_study(_growing_spec(seeds=2), tmp_path), Budget.of(_growing_spec(seeds=2)))


def test_raising_the_first_stretch_of_a_finished_compute_study_is_not_refused(tmp_path):
    """A finished compute-budget study (2e11 FLOPs, first stretch 50 steps; per-step FLOPs growing, so the
    extension measured at step 50 runs to 180, past where the compute is met) trained by today's scalerl.
    docs/study.md: "raising `steps` or `seeds` extends a finished one" and, of budgets, "More of each is taken".
    `--steps 100` (more) is refused: "has trained to step 180 ..., past this study's budget (2e+11 flops after a
    first stretch of 100 steps ...), which ends it at step 160 ... a study does not shorten its runs"."""
    spec = _growing_spec(steps=50)
    plans = _write(tmp_path, spec, lambda p: _rows(Budget.of(spec)))
    check_existing(plans, Budget.of(spec))  # its own spec: taken
    check_existing(plans, Budget.of(_growing_spec(steps=100)))


# Review ad: a lowered budget over runs whose first steps were cheap; the previous scalerl's resume past the budget.

def _trained(b: Budget, cost, *, old_kill_at_budget: bool = False) -> list[dict]:
    """Evaluation rows of a run trained by today's scalerl under ``b`` (per-step FLOPs ``cost(step)``), or (with
    ``old_kill_at_budget``) then resumed by the previous scalerl one evaluation interval on (see :func:`_rows`)."""
    return _rows(b, cost=cost, old_kill_at_budget=old_kill_at_budget)


def test_a_compute_budget_lowered_below_what_the_runs_trained_is_refused_when_the_first_steps_were_cheap(tmp_path):
    """Runs trained by today's scalerl to 1e12 FLOPs (first stretch 100 steps), 1e9 FLOPs a step but for the first
    10 (1e8: short early completions), end at step 1100 (1.09e12). The study is given `--compute 2e11`: met at step
    210 and an uninterrupted run under it ends at 220, yet bff3e27's Budget.latest_end was 2000 (the rate target from
    the step-10 evaluation, 1e9 FLOPs over 10 steps), so check_existing took it, the runs counted as done, and the report
    fitted the 1.09e12 curves under the 2e11 budget's name. A lowered steps budget over such runs is refused."""
    spec = _growing_spec(compute=1e12)
    b = Budget.of(spec)
    plans = _write(tmp_path, spec, lambda p: _trained(b, lambda s: 1e8 if s <= 10 else 1e9))
    assert eval_rows(plans[0].directory)[-1]["step"] == 1100
    lowered = Budget.of(_growing_spec(compute=2e11))
    with pytest.raises(InputError, match=r"past this study's budget \(2e\+11 flops .*which it met at step 210 .*trained "
                                         r"under 1e\+12 flops"):
        check_existing(plans, lowered)


def test_a_compute_study_the_previous_scalerl_resumed_after_a_kill_before_final_is_taken_under_its_own_spec(tmp_path):
    """A compute study (2e11 FLOPs, first stretch 100 steps, 1e9 FLOPs a step) by the previous scalerl, killed after
    the base run's step-200 evaluation (2e11: met) and before its final/ landed. The previous run_status read it
    partial (no final model) and resumed it to next_target(step 200) = 210 (one interval: need 0, at least one),
    where it ended. Its own spec (`--resume`, or `--seeds 2`) is refused: "has trained to step 210 ..., past this
    study's budget ..., which ends it at step 200 ... keep the budget that trained them", which is the one given."""
    spec = _growing_spec()
    b = Budget.of(spec)
    plans = _write(tmp_path, spec, lambda p: _trained(b, lambda s: 1e9, old_kill_at_budget=p.variant.is_base))
    check_existing(plans, b)


def test_the_reproducers_build_what_they_say():
    b = Budget(100, 2e11, 5000, "flops", 10)
    assert _trained(b, lambda s: 1e9)[-1]["step"] == 200
    assert _trained(b, lambda s: 1e9, old_kill_at_budget=True)[-1]["step"] == 210
    rows = _trained(Budget(100, 1e12, 5000, "flops", 10), lambda s: 1e8 if s <= 10 else 1e9)
    assert rows[-1]["step"] == 1100 and math.isclose(rows[-1]["flops"], 1.091e12)
    assert b.stretch_end([r for r in rows if r["step"] <= 220]) == 220


def test_a_compute_budget_in_another_x_column_met_long_before_the_runs_end_is_refused(tmp_path):
    """Runs trained under 1e12 FLOPs (first stretch 100, 1e9 FLOPs a step) end at step 1000. The study is then
    given `--x step --compute 210`: met at step 210, yet the runs (at 1000) were taken as done -- _lowered compared
    compute only where x was the same, so the report fitted 1000-step curves under a 210-step budget's name. A
    `--steps 210` over the same runs is refused (review ae)."""
    spec = _growing_spec(compute=1e12)
    b = Budget.of(spec)
    plans = _write(tmp_path, spec, lambda p: [{**r} for r in _trained(b, lambda s: 1e9)])
    with pytest.raises(InputError, match="a study does not shorten its runs"):
        check_existing(plans, Budget.of(_growing_spec(compute=None, steps=210)))  # the steps twin: refused
    with pytest.raises(InputError, match="a study does not shorten its runs"):
        check_existing(plans, Budget.of(_growing_spec(compute=210, x="step")))


def test_a_run_past_this_budgets_first_stretch_walks_on_from_the_stretch_it_finished():
    """Budget.stretch_end(rows, finished): a run shared from another study finished its own stretch at 300 (its
    final/), evaluated every 20 steps -- none at this study's 150 -- so the walk goes on from 300 with this
    budget, whatever budget the run was extended under before; a steps budget, or a final/ the rows do not hold
    (an older plan's, past the checkpoint), leaves the walk at ``steps``."""
    rows = [{"step": s, "flops": s * 4e9} for s in range(0, 420, 20)]
    compute = Budget(steps=150, compute=2e12, max_steps=1000, x="flops", eval_every=20)
    assert compute.stretch_end(rows, 300) == compute.next_target(rows[15]) == 500
    assert compute.stretch_end(rows) == 150  # no final/: the walk from steps (no evaluation at 150)
    assert compute.stretch_end(rows, 1000) == 150  # a final/ of a longer plan, not in the rows
    assert Budget(steps=150, compute=None, max_steps=1000, x="flops", eval_every=20).stretch_end(rows, 300) == 150
