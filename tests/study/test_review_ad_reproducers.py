"""Strict-xfail reproducers from review ad (Budget.latest_end, bff3e27): a lowered compute budget taken over runs
that trained five times past it, and a study the previous scalerl resumed refused under its own spec."""

import math

import pytest

from scalerl.errors import InputError
from scalerl.runlog import eval_rows
from scalerl.study.plan import Budget
from scalerl.study.run_state import check_existing

from .test_budget import _growing_spec, _old_next_target, _write


def _trained(b: Budget, cost, *, old_kill_at_budget: bool = False) -> list[dict]:
    """Evaluation rows of a run trained by today's scalerl under ``b`` (per-step FLOPs ``cost(step)``), or (with
    ``old_kill_at_budget``) by the previous scalerl, killed after the evaluation that met the compute and before
    final/ landed, then resumed: its run_status read it partial (no final model) and resumed it to
    ``next_target(rows[-1])``, one evaluation interval on."""
    rows, state = [], {"step": 0, "flops": 0.0}

    def train_to(end: int) -> None:
        while state["step"] < end:
            state["step"] += 1
            state["flops"] += cost(state["step"])
            if state["step"] % b.eval_every == 0 or state["step"] == end:
                rows.append(dict(state))

    train_to(b.steps)
    while not b.reached(rows[-1]):
        train_to(b.next_target(rows[-1]))
    if old_kill_at_budget:
        train_to(_old_next_target(b, rows[-1]))
    return rows


@pytest.mark.xfail(strict=True, reason="review ad: latest_end takes a rate target from the first evaluation, "
                   "where the first steps were cheap, as the run's end: the lowered budget is taken")
def test_a_compute_budget_lowered_below_what_the_runs_trained_is_refused_when_the_first_steps_were_cheap(tmp_path):
    """Runs trained by today's scalerl to 1e12 FLOPs (first stretch 100 steps), 1e9 FLOPs a step but for the first
    10 (1e8: short early completions), end at step 1100 (1.09e12). The study is given `--compute 2e11`: met at step
    210 and an uninterrupted run under it ends at 220, yet Budget.latest_end is 2000 (the rate target from the
    step-10 evaluation, 1e9 FLOPs over 10 steps), so check_existing takes it, the runs count as done, and the report
    fits the 1.09e12 curves under the 2e11 budget's name. A lowered steps budget over such runs is refused."""
    spec = _growing_spec(compute=1e12)
    b = Budget.of(spec)
    plans = _write(tmp_path, spec, lambda p: _trained(b, lambda s: 1e8 if s <= 10 else 1e9))
    assert eval_rows(plans[0].directory)[-1]["step"] == 1100
    lowered = Budget.of(_growing_spec(compute=2e11))
    with pytest.raises(InputError, match="past this study's budget"):
        check_existing(plans, lowered)


@pytest.mark.xfail(strict=True, reason="review ad: latest_end stops at the evaluation that met the compute, "
                   "so the previous scalerl's one-interval resume past it reads as a lowered budget")
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
    assert b.stretch_end([r for r in rows if r["step"] <= 220]) == 220 and b.latest_end(rows) == 2000
