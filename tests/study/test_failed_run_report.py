"""A study run that failed is reported as failed, with its error, not as one that has not started (review j:
the analysis read only the run directories, and a failed run leaves its own as it found it)."""

import shutil

import pytest

from scalerl.cli import main

from .conftest import micro_args

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
    assert "(pending: seed0: failed at step " in row and "broken" not in row, row
    capsys.readouterr()
    assert main(["study", "--output", str(out), "--dry-run"]) == 0  # (it said "partial", as a run a kill stopped)
    assert f"failed   {out / 'runs' / 'loo-loss-dapo' / 'seed0'}" in capsys.readouterr().out
    assert "loo-loss-dapo seed0 failed at step " in report and f"`scalerl study --output {out} --resume` runs it again" in report


# Review bj
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
