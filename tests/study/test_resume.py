"""A study resumed: which runs count as done (final/ saved at the run's end, the budget met), and where a
run resumed after a kill ends -- where it would have ended had it not been killed."""

import json
import os
import subprocess
import sys

import pytest

from scalerl.cli import main
from scalerl.runlog import FINAL_STEP_FILE
from scalerl.study.plan import Budget
from scalerl.study.run_state import run_status
from scalerl.study.spec import StudySpec, load_spec
from scalerl.train.report import write_run_report

from .conftest import kill_when_logged, micro_args
from .synthetic import write_study

LAWS = {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.70, 1.5, 5e11)}


def _final_step(run, step):
    (run / "final" / FINAL_STEP_FILE).write_text(json.dumps({"step": step}) + "\n")


def test_an_extended_run_killed_before_its_final_save_is_not_done(tmp_path):
    """Review z: a study extended from 100 to 200 steps, killed after the run's step-200 evaluation row was
    written but before its new final/ was renamed into place: final/ is the model of step 100 (scalerl_final.json
    says so) and the log reaches step 200. The study skipped the run as "already finished" -- its final/ stayed
    step 100's for good -- while the run's own report said "unfinished ... final/ holds the model of step 100".
    Both now read it by one rule: resumed, the trainer saves final/ again."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50)
    plans = write_study(tmp_path, spec, LAWS)
    run = plans[0].directory
    _final_step(run, 100)  # the earlier end's final/
    assert run_status(run, Budget.of(spec)) == "partial"
    write_run_report(run)
    assert "final/ holds the model of step 100, an earlier end" in (run / "report.md").read_text()
    _final_step(run, 200)  # final/ saved at the run's end: done
    assert run_status(run, Budget.of(spec)) == "done"
    (run / "final" / FINAL_STEP_FILE).unlink()  # an older scalerl's final/ (no step): cannot be told, done as before
    assert run_status(run, Budget.of(spec)) == "done"


@pytest.mark.slow
def test_a_compute_budget_run_killed_and_resumed_ends_where_an_uninterrupted_one_does(study_cache, tmp_path, capsys):
    """Review z: under a compute budget met at the first evaluation (--compute 1 FLOP), a run trains its first
    stretch (--steps 4) whole. Killed after an evaluation inside that stretch and resumed, it was resumed to
    one evaluation interval past its last row (Budget.next_target) and counted as done there: the killed run
    ended at step 2 or 3, the uninterrupted one at 4. Both end at step 4 now, evaluated at every step."""
    out = tmp_path / "study"
    args = micro_args(out, "--family", "loo", "--only", "loo-aggregation-sample", "--set", "pipeline=sync",
                      "--set", "k=1", "--compute", "1")
    proc = subprocess.Popen([sys.executable, "-m", "scalerl.cli", *args], stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, env=dict(os.environ))
    second = out / "runs" / "loo-aggregation-sample" / "seed0"
    # killed inside its second run, after its step-1 evaluation
    kill_when_logged(proc, second / "runlog.jsonl", lambda line: '"type":"eval"' in line and '"step":1,' in line,
                     "the second run's step-1 evaluation")
    budget = Budget.of(load_spec(out / "study.yaml"))
    assert run_status(second, budget) == "partial"  # inside its first stretch: not done, however much compute

    assert main([*args, "--no-report"]) == 0
    capsys.readouterr()
    first = out / "runs" / "scalerl" / "seed0"
    for run in (first, second):
        rows = [json.loads(line) for line in (run / "runlog.jsonl").read_text().splitlines()[1:]]
        assert [r["step"] for r in rows if r["type"] == "eval"] == [0, 1, 2, 3, 4], run
        assert json.loads((run / "final" / FINAL_STEP_FILE).read_text())["step"] == 4
        assert run_status(run, budget) == "done"
