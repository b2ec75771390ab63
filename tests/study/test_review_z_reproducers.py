"""Review z (study / compare verdicts as a user reads them): reproducers of defects found, not fixed.

Each test is strict-xfail: it fails on the code it was written against and asserts what should happen;
the fix turns it into a pass (and the strict marker then fails the run until the marker is removed).
"""

import json

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.runlog import FINAL_STEP_FILE
from scalerl.study.plan import Budget
from scalerl.study.report import write_study_report
from scalerl.study.run_state import check_existing, run_status
from scalerl.study.spec import StudySpec

from .synthetic import sigmoid, write_study

LAWS = {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.70, 1.5, 5e11)}


def _spec(**kw) -> StudySpec:
    return StudySpec(**{"family": "loo", "only": ["loo-loss-dapo"], "steps": 200, "eval_every": 10,
                        "bootstrap": 50, **kw})


@pytest.mark.xfail(strict=True, reason="review z: a run whose final/ is an earlier end's counts as done")
def test_an_extended_run_killed_before_its_final_save_is_not_done(tmp_path):
    """A study extended from 100 to 200 steps, killed after the run's step-200 evaluation row was written but
    before its new final/ was renamed into place: final/ is the model of step 100 (scalerl_final.json says
    so) and the log reaches step 200. The study skips the run as "already finished" -- its final/ stays step
    100's for good -- while the run's own report says "unfinished ... final/ holds the model of step 100"."""
    spec = _spec()
    plans = write_study(tmp_path, spec, LAWS)
    run = plans[0].directory
    (run / "final" / FINAL_STEP_FILE).write_text(json.dumps({"step": 100}) + "\n")  # the earlier end's final/
    assert run_status(run, Budget.of(spec)) == "partial"  # resumed: the trainer saves final/ again


@pytest.mark.xfail(strict=True, reason="review z: a lowered compute budget is taken over runs trained past it")
def test_a_compute_budget_below_what_the_runs_trained_is_refused_as_a_lower_steps_budget_is(tmp_path):
    """A finished study's runs reached 2e12 FLOPs (200 steps x 1e10). `scalerl study --output DIR --steps 100`
    is refused ("a study does not shorten its runs (the report would fit the longer curves)"); the same with
    `--compute 5e11` (a quarter of what the runs trained; their evaluations passed it at step 50) is taken: every
    run counts as done and the report says "budget: 5e+11 flops per run" over curves to 2e12."""
    spec = _spec()
    plans = write_study(tmp_path, spec, LAWS)
    with pytest.raises(Exception, match="past"):
        check_existing(plans, Budget.of(_spec(steps=100)))  # (what the steps budget does: passes today)
    with pytest.raises(Exception, match="past"):
        check_existing(plans, Budget.of(_spec(compute=5e11)))


@pytest.mark.xfail(strict=True, reason="review z: a resumed compute-budget run ends short of its first stretch")
def test_a_compute_budget_run_resumed_after_a_kill_trains_its_first_stretch_as_an_uninterrupted_one():
    """Compute budget 1e12 FLOPs, steps 200 (the first stretch every run trains), eval every 10. A run that
    reaches 1e12 at step 100 trains to step 200 uninterrupted (execute_run: Trainer(cfg).run() to run.steps,
    then the budget is met). Killed at step 100 and resumed, it is resumed to budget.next_target(last) = 110
    and then counts as done: the same run ends at step 110 or 200 depending on whether the study was killed,
    and the study's curves (and verdicts) with it."""
    b = Budget(steps=200, compute=1e12, max_steps=5000, x="flops", eval_every=10)
    assert b.next_target({"step": 100, "flops": 1e12}) >= 200


@pytest.mark.xfail(strict=True, reason="review z: a run capped by max_steps short of the compute budget is unsaid")
def test_a_variant_stopped_by_max_steps_short_of_the_compute_budget_is_said(tmp_path):
    """compute 4e12 FLOPs, max_steps 200: every run here stops at 200 steps = 2e12, half the budget, and
    counts as finished (Budget.reached). The report says "budget: 4e+12 flops per run (runs extended to reach
    it)", "2 finished run(s) of 2", and nothing of the cap."""
    spec = _spec(compute=4e12, max_steps=200)
    write_study(tmp_path, spec, LAWS)
    a = write_study_report(tmp_path).analysis
    assert any("max_steps" in n for n in a.notes), a.notes


def _csv(path, x_name, per_point, A, seed):
    rng = np.random.default_rng(seed)
    x = np.arange(21) * per_point
    y = sigmoid(np.arange(21) * 1e11, A, 1.5, 5e11, 0.3) + rng.normal(0, 0.006, size=21)  # to 4x C_mid
    y[0] = 0.3
    path.write_text(f"{x_name},score\n" + "".join(f"{a},{b}\n" for a, b in zip(x, y)))
    return str(path)


@pytest.mark.xfail(strict=True, reason="review z: seeds with different compute columns pooled into one fit")
def test_compare_does_not_pool_seeds_of_one_label_whose_compute_columns_differ(capsys, tmp_path):
    """Four curves of one law (A 0.70); the second seed of 'agg' is read against its step column instead of
    FLOPs (`--x flops flops flops step`). compare pooled the two units into one fit and said "agg: ceiling
    raised" (A 0.90 or so), with a note that only speaks of C_mid and compute ratios between runs. It should
    refuse to pool them (or at least say that agg's seeds were pooled across different compute columns)."""
    paths = [_csv(tmp_path / "b0.csv", "flops", 1e11, 0.70, 0), _csv(tmp_path / "b1.csv", "flops", 1e11, 0.70, 1),
             _csv(tmp_path / "a0.csv", "flops", 1e11, 0.70, 2), _csv(tmp_path / "a1.csv", "step", 1, 0.70, 3)]
    code = main(["compare", *paths, "--x", "flops", "flops", "flops", "step", "--y", "score", "--labels",
                 "base", "base", "agg", "agg", "--bootstrap", "50", "--json"])
    out, err = capsys.readouterr()
    if code != 0:
        return  # refused: fine
    obj = json.loads(out)
    (c,) = obj["classifications"]
    assert any("agg" in n for n in obj["notes"]) and c["kind"] != "ceiling", (c["explanation"], obj["notes"])
