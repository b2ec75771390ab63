"""Review ac's strict-xfail reproducers: compute kinds told from column names that verl logs."""

import json

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.curves.compute_kind import compute_kind


def _csv(path, A, seed):
    """A run of one law against steps, with verl's seconds per step beside it (30 s each)."""
    rng = np.random.default_rng(seed)
    step = np.arange(21)
    with np.errstate(divide="ignore"):
        y = 0.3 + (A - 0.3) / (1 + (5.0 / step) ** 1.5) + rng.normal(0, 0.006, size=21)
    y[0] = 0.3
    path.write_text("step,perf/time_per_step,score\n" + "".join(f"{s},30.0,{v}\n" for s, v in zip(step, y)))
    return str(path)


@pytest.mark.xfail(strict=True, reason="review ac: verl's perf/time_per_step (seconds) is read as steps")
def test_verl_seconds_per_step_is_seconds():
    """verl's compute_throughout_metrics logs perf/time_per_step = timing_raw['step'], seconds; summed
    (cum:) it is the run's wall seconds, as cum:timing_s/step is. KINDS' 'step' pattern reads it as steps."""
    assert compute_kind("cum:perf/time_per_step") == compute_kind("cum:timing_s/step") == "seconds"


@pytest.mark.xfail(strict=True, reason="review ac: seeds against steps and verl's seconds per step are pooled")
def test_compare_does_not_pool_a_seed_against_steps_with_one_against_verl_seconds(capsys, tmp_path):
    """Four seeds of one law (A 0.70) against steps; the second seed of 'agg' is read against verl's summed
    seconds per step (--x step step step cum:perf/time_per_step). 247f570 refuses flops with step; this pair
    (steps 0..20 with seconds 30..630) is pooled into one fit without a word (exit 0, agg A ~0.58, no note).
    Before 247f570 it drew the "compute columns differ" note at least."""
    paths = [_csv(tmp_path / f"c{i}.csv", 0.70, i) for i in range(4)]
    code = main(["compare", *paths, "--x", "step", "step", "step", "cum:perf/time_per_step", "--y", "score",
                 "--labels", "base", "base", "agg", "agg", "--bootstrap", "50", "--json"])
    out, err = capsys.readouterr()
    if code == 0:
        obj = json.loads(out)
        print(obj["notes"], [(r["label"], r["seeds"], r["A"]) for r in obj["runs"]])
    assert code == 2 and "different kinds of compute" in err
