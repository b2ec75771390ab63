"""Unstable runs: a curve that peaked and fell, or is falling, is called out; healthy ones never."""

import csv
import json

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.curves import check_stability, compare, forecast, read_curves

from .conftest import CORPUS_CSV, CORPUS_RUNS, PAPER_LAW, REAL_CSV, collapsing, jump_then_drift, synthetic


@pytest.mark.parametrize("n, noise", [(12, 0.02), (25, 0.01), (50, 0.02), (200, 0.005)])
def test_healthy_sigmoids_are_never_flagged(n, noise):
    for seed in range(40):
        c = synthetic(PAPER_LAW, n=n, noise=noise, seed=seed)
        st = check_stability(c.x, c.y)
        assert not st.unstable, (seed, st)


def test_jump_then_drift_is_healthy():
    for seed in range(20):
        c = jump_then_drift(seed=seed)
        assert not check_stability(c.x, c.y).unstable


@pytest.mark.parametrize("kind", ["collapse", "decline"])
def test_collapse_and_decline_are_flagged(kind):
    flagged = [check_stability(c.x, c.y) for c in (collapsing(seed=s, kind=kind) for s in range(20))]
    assert all(st.unstable for st in flagged)
    st = flagged[0]
    assert st.fall > 0.05 and st.gain > 0.15
    assert "not a forecast" in st.text()


def test_a_fall_that_only_starts_at_the_end_is_caught_by_the_late_slope():
    x = np.r_[0.0, np.linspace(10, 300, 60)]
    y = np.where(x < 250, 0.05 + 0.40 * (1 - np.exp(-x / 40)), 0.45 - 0.004 * (x - 250))
    y = y + np.random.default_rng(0).normal(0, 0.005, x.size)
    st = check_stability(x, y)
    assert st.unstable
    assert st.late_drop > 0.1


def test_too_few_points_count_as_stable():
    assert not check_stability([0, 1, 2, 3], [0.1, 0.5, 0.2, 0.0]).unstable


def test_on_the_real_corpus_only_treerl_is_flagged():
    """40 corpus runs + 2 verl runs: the one declining run (TreeRL) is flagged, none of the
    healthy ones -- including the Deep-GRPO runs that drift down slightly late."""
    with open(CORPUS_RUNS, newline="") as f:
        assert len(list(csv.DictReader(f))) == 40
    curves = read_curves(CORPUS_CSV, "x", "val_score") + read_curves(REAL_CSV, "cum_wall_hours", "val_score")
    assert len(curves) == 42
    flagged = {c.name for c in curves if check_stability(c.x, c.y).unstable}
    assert flagged == {"deepgrpo_q05b_treerl"}


def test_an_unstable_run_gets_no_forecast(capsys):
    c = collapsing(kind="collapse")
    fc = forecast(c, n_boot=50)
    assert fc.unstable and fc.fit.warnings[0].startswith("unstable run:")
    assert fc.verdict(100, 600).word == "no verdict (unstable run)"


def test_fit_command_says_no_forecast_for_an_unstable_run(capsys, tmp_path):
    c = collapsing(kind="decline")
    path = tmp_path / "run.csv"
    path.write_text("step,acc\n" + "\n".join(f"{x},{y}" for x, y in zip(c.x, c.y)) + "\n")
    assert main(["fit", str(path), "--x", "step", "--y", "acc", "--bootstrap", "50", "--target", "0.2"]) == 0
    out = capsys.readouterr().out
    assert "NO FORECAST -- unstable run" in out and "forecast: ensemble" not in out
    assert main(["fit", str(path), "--x", "step", "--y", "acc", "--bootstrap", "50", "--json"]) == 0
    obj = json.loads(capsys.readouterr().out)
    assert obj["status"] == "unstable" and obj["predictions"] == [] and obj["stability"]["unstable"]


def test_compare_does_not_classify_an_unstable_run():
    res = compare({"base": [synthetic(seed=1)], "falling": [collapsing(kind="collapse")]}, n_boot=60)
    (c,) = res.classifications
    assert c.kind == "unstable run" and c.better is None and "falling" in c.explanation
    preds = res.predictions()
    assert preds["falling"] is None and preds["base"] is not None
