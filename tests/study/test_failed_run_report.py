"""A study run that failed is reported as failed, with its error, not as one that has not started (review j:
the analysis read only the run directories, and a failed run leaves its own as it found it)."""

import calendar
import json
import os
import shutil
import time
from dataclasses import asdict
from pathlib import Path

import pytest

from scalerl.cli import main

from .conftest import micro_args
from .synthetic import write_study

pytestmark = pytest.mark.slow

#: A reward that scores the first run's calls and raises in every call of the second run (each run
#: scores in its own worker process: the first call of a worker counts the runs).
REWARD = '''
import os
_raise = None
COUNT = {count!r}

def score(completion, answer):
    global _raise
    if _raise is None:
        n = int(open(COUNT).read()) + 1 if os.path.exists(COUNT) else 1
        open(COUNT, "w").write(str(n))
        _raise = n == 2
    if _raise:
        raise RuntimeError("this variant's reward is broken")
    return 1.0 if completion.strip().endswith(str(answer).strip()) else 0.0
'''


def test_the_report_says_a_run_failed(tmp_path, study_cache, capsys):
    reward = tmp_path / "reward.py"
    reward.write_text(REWARD.format(count=str(tmp_path / "count")))
    out = tmp_path / "study"
    status = main(micro_args(out, "--family", "loo", "--only", "loo-loss-dapo", "--threads", "1",
                             "--set", f"task.reward={reward}:score"))
    assert status == 1  # the study says the run failed, on the console and in its exit status
    report = (out / "report.md").read_text()
    assert "not started" not in report
    assert "failed" in report and "this variant's reward is broken" in report
    # The fits table's Seeds cell names the failure by its step; the error, which widened every row, is in the notes
    # with how to run it again.
    row = next(line for line in report.splitlines() if line.startswith("| loo-loss-dapo |") and "pending" in line)
    assert "(pending: seed0: failed before its first evaluation)" in row and "broken" not in row, row
    capsys.readouterr()
    assert main(["study", "--output", str(out), "--dry-run"]) == 0  # (it said "partial", as a run a kill stopped)
    assert f"failed   {out / 'runs' / 'loo-loss-dapo' / 'seed0'}" in capsys.readouterr().out
    assert "loo-loss-dapo seed0 failed: the reward function " in report and f"`scalerl study --output {out} --resume` runs it again" in report


# Review bj
@pytest.mark.extended  # (make test-all: the failed-run report tests beside it are in the default run)
def test_a_study_run_without_checkpoints_says_what_to_do_in_the_study(tmp_path, study_cache, capsys):
    out = tmp_path / "study"
    args = micro_args(out, "--family", "loo", "--only", "loo-loss-dapo", "--threads", "1")
    assert main(args) == 0
    # A user clears a run's checkpoints (disk space, or a damaged checkpoint the refusal told them to move)
    shutil.rmtree(out / "runs" / "loo-loss-dapo" / "seed0" / "checkpoints")
    capsys.readouterr()
    status = main([*args, "--steps", "5"])
    console = capsys.readouterr()
    text = console.out + console.err
    assert status == 1 and "loo-loss-dapo/seed0" in text  # the run is reported as failed ...
    # ... and what it tells the user to do can be done with `scalerl study`, which has no --overwrite
    assert "--overwrite" not in text
    assert "--overwrite" not in (out / "report.md").read_text()
    assert "run the same study command again to train it anew" in text


# Review bt: a failed run as the notes and the Seeds cell say it
def _study(tmp_path):
    from scalerl.study.spec import StudySpec

    laws = {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.55, 1.5, 5e11)}
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], seeds=2, steps=200, eval_every=10, bootstrap=50)
    plans = write_study(tmp_path, spec, laws)
    run = next(p for p in plans if p.variant.label == "loo-loss-dapo" and p.seed == 1)
    return spec, run


def _record(study: Path, outcome) -> None:
    """A line of progress.jsonl, as runner.run_study's ``record`` writes it."""
    with open(study / "progress.jsonl", "a", encoding="utf-8") as f:
        f.write(json.dumps({**asdict(outcome), "time": "2026-12-06T00:00:00"}) + "\n")


def test_a_damaged_runs_note_does_not_advise_resume(tmp_path):
    from scalerl.config import to_dict
    from scalerl.study.analysis import analyse_study
    from scalerl.study.one_run import execute_run
    from scalerl.study.plan import Budget

    spec, run = _study(tmp_path)
    log = run.directory / "runlog.jsonl"
    lines = log.read_text().splitlines()
    lines[3] = lines[3][:20]  # a malformed line before the log's end: not a kill's torn last line
    log.write_text("\n".join(lines) + "\n")
    before = log.read_text()
    outcome = execute_run(to_dict(run.config), Budget.of(spec))  # what the study (and its --resume) does with it
    assert outcome.status == "failed" and "left untouched" in outcome.error
    _record(tmp_path, outcome)
    again = execute_run(to_dict(run.config), Budget.of(spec))  # `--resume`: the same, nothing run again
    assert again.status == "failed" and log.read_text() == before
    analysis = analyse_study(tmp_path, n_boot=20)
    assert analysis.variant("loo-loss-dapo").left_out[0].startswith("seed1: damaged run log (")  # said as what it is
    assert not any("seed1" in n and "runs it again" in n for n in analysis.notes), analysis.notes


def test_a_crashed_runs_failure_names_the_step_it_reached(tmp_path):
    """one_run.collect / local_runs._worker_result record such a failure as ``Outcome(label, seed, "failed",
    error=...)``: step 0 whatever the run's log holds; the Seeds cell now says only that step."""
    import shutil

    from scalerl.study.analysis import analyse_study
    from scalerl.study.one_run import Outcome

    spec, run = _study(tmp_path)
    log = run.directory / "runlog.jsonl"
    kept = [line for line in log.read_text().splitlines()
            if json.loads(line).get("type") != "eval" or json.loads(line)["step"] <= 100]
    log.write_text("\n".join(kept) + "\n")  # the run trained to step 100 of 200 ...
    shutil.rmtree(run.directory / "final")
    # ... and crashed there (as collect() records an exception that is no ScaleRLError: CUDA out of memory, ...)
    _record(tmp_path, Outcome(run.variant.label, run.seed, "failed",
                              error="OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB"))
    analysis = analyse_study(tmp_path, n_boot=20)
    pending = analysis.variant("loo-loss-dapo").pending
    said = pending + [n for n in analysis.notes if "seed1" in n]
    assert any("seed1" in s for s in pending), pending
    assert not any("failed at step 0" in s for s in said), said


def test_a_failed_run_the_study_no_longer_plans_is_not_said_to_run_again(tmp_path):
    """`scalerl study --only loo-loss-dapo,loo-aggregation-sample`: the aggregation run fails as it starts (its
    directory left empty, so a narrower study is not refused as dropping it); the user runs the study again
    with `--only loo-loss-dapo` into the same --output, which saves that spec. The report's notes still say the
    aggregation run "failed ... -- `scalerl study --output DIR --resume` runs it again", which it does not."""
    from scalerl.study.analysis import analyse_study
    from scalerl.study.one_run import Outcome
    from scalerl.study.plan import plan_study
    from scalerl.study.spec import load_saved_spec

    _study(tmp_path)  # the saved spec: loo-loss-dapo (and the base), two seeds
    _record(tmp_path, Outcome("loo-aggregation-sample", 0, "failed", error="InputError: this variant's reward is broken"))
    planned = {(p.variant.label, p.seed) for p in plan_study(load_saved_spec(tmp_path / "study.yaml"), tmp_path)}
    assert ("loo-aggregation-sample", 0) not in planned  # what --resume runs: the saved spec's plan
    notes = [n for n in analyse_study(tmp_path, n_boot=20).notes if "loo-aggregation-sample" in n]
    assert not any("runs it again" in n for n in notes), notes


# Review bv
def test_an_old_failure_is_not_reported_after_a_later_attempt_went_on(tmp_path):
    from scalerl.study.analysis import analyse_study
    from scalerl.study.one_run import Outcome
    from scalerl.study.spec import StudySpec

    laws = {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.55, 1.5, 5e11)}
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], seeds=1, steps=200, eval_every=10, bootstrap=50)
    plans = write_study(tmp_path, spec, laws)
    run = next(p for p in plans if p.variant.label == "loo-loss-dapo")
    log = run.directory / "runlog.jsonl"
    lines = log.read_text().splitlines()
    header, evals = lines[0], [json.loads(line) for line in lines[1:]]
    shutil.rmtree(run.directory / "final")
    # 1. The run trained to step 50 and failed there: its reward raised (the study records it, time T).
    log.write_text("\n".join([header, *(json.dumps(e) for e in evals if e["step"] <= 50)]) + "\n")
    with open(tmp_path / "progress.jsonl", "a") as f:
        f.write(json.dumps({**asdict(Outcome("loo-loss-dapo", 0, "failed", step=50,
                                             error="the reward function raised RuntimeError: broken")),
                            "time": "2026-12-06T00:00:00", "utc": "2026-12-06T00:00:00Z"}) + "\n")
    # 2. The user fixed the reward and ran `scalerl study --output DIR --resume`: the run went on from its checkpoint
    # at 50 to step 150, where Ctrl-C stopped the study (an interruption writes no record).
    with open(log, "a") as f:
        f.write(json.dumps({"type": "resume", "from_step": 50, "utc": "2026-12-06T01:00:00Z"}) + "\n")
        f.writelines(json.dumps(e) + "\n" for e in evals if 50 < e["step"] <= 150)
    analysis = analyse_study(tmp_path, n_boot=20)
    pending = analysis.variant("loo-loss-dapo").pending
    # A run to resume, at the step its log reached (as one stopped by a kill is shown), not a failure
    assert len(pending) == 1 and "150" in pending[0] and "failed" not in pending[0], pending
    assert not any("broken" in n for n in analysis.notes), analysis.notes


# Review bx: a failure told from a later attempt by the times in the files, in UTC
def _study_with_a_failure(study: Path, failed_at: float) -> Path:
    """A study directory whose run failed at ``failed_at`` (epoch seconds), as the runner records it (its local time
    to the second), its log last written by the failed attempt 30 s before."""
    from scalerl.study.plan import run_directory

    run = run_directory(study, "loo-loss-dapo", 0)
    run.mkdir(parents=True)
    log = run / "runlog.jsonl"
    started = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(failed_at - 60))
    log.write_text(json.dumps({"type": "header", "run": "seed0", "utc": started}) + "\n"
                   + json.dumps({"type": "eval", "step": 10, "val/pass_rate": 0.3}) + "\n")
    os.utime(log, (failed_at - 30, failed_at - 30))
    record = {"label": "loo-loss-dapo", "seed": 0, "status": "failed", "step": 10,
              "error": "the reward function raised RuntimeError: broken",
              "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(failed_at)),
              "utc": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(failed_at))}
    (study / "progress.jsonl").write_text(json.dumps(record) + "\n")
    return log


def test_a_copied_study_still_reports_its_failed_run(tmp_path):
    from scalerl.study.run_state import failed_runs

    original = tmp_path / "study"
    _study_with_a_failure(original, time.time() - 3600)  # failed an hour ago; nothing ran since
    assert ("loo-loss-dapo", 0) in failed_runs(original)
    copy = tmp_path / "copy"
    shutil.copytree(original, copy, copy_function=shutil.copy)  # as `cp -r` copies: the times are the copy's
    assert ("loo-loss-dapo", 0) in failed_runs(copy), "the failure vanished from the copied study"


def test_a_study_read_in_another_time_zone_still_reports_its_failed_run(tmp_path, time_zone):
    from scalerl.study.run_state import failed_runs

    study = tmp_path / "study"
    time_zone("America/Los_Angeles")  # the machine the study ran on
    _study_with_a_failure(study, time.time() - 3600)
    assert ("loo-loss-dapo", 0) in failed_runs(study)
    time_zone("Europe/Berlin")  # the same files (times kept) read on a machine in Berlin
    assert ("loo-loss-dapo", 0) in failed_runs(study), "the failure vanished in another time zone"


def test_a_failure_in_the_repeated_hour_of_a_clock_change_is_reported(tmp_path, time_zone):
    from scalerl.study.run_state import failed_runs

    time_zone("America/New_York")
    failed_at = calendar.timegm((2026, 11, 1, 6, 30, 30, 0, 0, 0))  # 01:30:30 EST, the second 01:30 that night
    _study_with_a_failure(tmp_path, failed_at)
    assert ("loo-loss-dapo", 0) in failed_runs(tmp_path), "the failure recorded at 01:30 (EST) is not reported"


# Review by
def test_an_old_record_without_utc_is_not_reported_after_a_later_attempt_resumed(tmp_path):
    from scalerl.study.plan import run_directory
    from scalerl.study.run_state import failed_runs

    failed_at = time.time() - 3600
    run = run_directory(tmp_path, "loo-loss-dapo", 0)
    run.mkdir(parents=True)
    # The previous scalerl: its header without "utc", its failure record with the local "time" only.
    now_utc = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    (run / "runlog.jsonl").write_text(
        json.dumps({"type": "header", "run": "seed0"}) + "\n"
        + json.dumps({"type": "eval", "step": 10, "val/pass_rate": 0.3}) + "\n"
        # Upgraded, `scalerl study --output DIR --resume` went on from step 10 an hour later; Ctrl-C stopped it
        # (which records nothing). This scalerl's resume row says when, in UTC.
        + json.dumps({"type": "resume", "from_step": 10, "utc": now_utc}) + "\n"
        + json.dumps({"type": "eval", "step": 20, "val/pass_rate": 0.35}) + "\n")
    record = {"label": "loo-loss-dapo", "seed": 0, "status": "failed", "step": 10,
              "error": "the reward function raised RuntimeError: broken",
              "time": time.strftime("%Y-%m-%dT%H:%M:%S", time.localtime(failed_at))}
    (tmp_path / "progress.jsonl").write_text(json.dumps(record) + "\n")
    # Before bx (the log's mtime against the record's time) this run read as one to resume; now its old error stands.
    assert ("loo-loss-dapo", 0) not in failed_runs(tmp_path)
