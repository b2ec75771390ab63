"""A study's budget against the runs on disk: where a compute budget's runs end (their first stretch of
``steps`` whole, then extensions to the compute), and budgets below what the runs trained refused."""

import pytest

from scalerl.errors import InputError
from scalerl.study.plan import Budget
from scalerl.study.run_state import check_existing
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
                                         r"\(5e\+11 flops.*ends it at step 100 .*a study does not shorten its runs"):
        check_existing(plans, Budget.of(_spec(compute=5e11, steps=100)))
    with pytest.raises(InputError, match=r"ends it at step 150 \(flops 1\.5e\+12"):
        check_existing(plans, Budget.of(_spec(compute=1.5e12, steps=100)))
    # What a study of the budget trains: not past it. The first stretch (200 steps) is trained whole whatever
    # the compute, so a 5e11 budget after 200 steps is what a new study of that spec trains too; 2e12 from a
    # first stretch of 100 is met at step 200; a larger budget extends them.
    for budget in (_spec(compute=5e11), _spec(compute=2e12, steps=100), _spec(compute=4e12), _spec(steps=400)):
        check_existing(plans, Budget.of(budget))
    with pytest.raises(InputError, match=r"max_steps 150\), which ends it at step 150 \(flops 1.5e\+12: max_steps\)"):  # a lowered cap is a lowered budget too
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
