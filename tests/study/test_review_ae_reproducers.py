"""Review ae reproducers (strict xfail): a lowered compute budget the study.yaml check lets through."""

import pytest

from scalerl.errors import InputError
from scalerl.study.plan import Budget
from scalerl.study.run_state import check_existing

from .test_budget import _growing_spec, _trained, _write


@pytest.mark.xfail(strict=True, reason="review ae: _lowered skips the compute term when --x changes")
def test_a_compute_budget_in_another_x_column_met_long_before_the_runs_end_is_refused(tmp_path):
    """Runs trained under 1e12 FLOPs (first stretch 100, 1e9 FLOPs a step) end at step 1000. The study is then
    given `--x step --compute 210`: met at step 210, yet the runs (at 1000) are taken as done -- _lowered compares
    compute only where x is the same, so the report fits 1000-step curves under a 210-step budget's name. A
    `--steps 210` over the same runs is refused."""
    spec = _growing_spec(compute=1e12)
    b = Budget.of(spec)
    plans = _write(tmp_path, spec, lambda p: [{**r} for r in _trained(b, lambda s: 1e9)])
    with pytest.raises(InputError, match="a study does not shorten its runs"):
        check_existing(plans, Budget.of(_growing_spec(compute=None, steps=210)))  # the steps twin: refused
    with pytest.raises(InputError, match="a study does not shorten its runs"):
        check_existing(plans, Budget.of(_growing_spec(compute=210, x="step")))
