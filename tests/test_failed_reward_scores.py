"""What a failed reward call scores (tasks.rewards.LowestScore, RewardWorkers.score_many) and what eval and the run
report say of it: never better than a wrong answer, a judge's own lower score included (reviews cb, cf, cg)."""

from __future__ import annotations

import json
import textwrap

from scalerl.tasks.base import Problem

_PROBLEM = Problem(id="p", prompt="2+2=", answer="4")


# ---- rewards.LowestScore ---------------------------------------------------------------------------------------

JUDGE = '''
import time

def judge(completion):
    time.sleep(0.2)  # a slow judge: both workers of a two-worker pool take part in a batch of two
    if completion == "wrong":
        return -5.0  # the judge's scale: a wrong answer is -5
    if completion == "right":
        return 1.0
    raise RuntimeError("judge unreachable")
'''


def test_a_failed_call_never_scores_above_a_wrong_answer_of_its_own_batch(tmp_path, monkeypatch):
    from scalerl.tasks.rewards import RewardWorkers

    (tmp_path / "cg_judge.py").write_text(textwrap.dedent(JUDGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    with RewardWorkers("cg_judge:judge", timeout=20, workers=1) as reward:
        # one prompt's group: a failed call, a wrong answer (-5), a right one, another failed call
        scores = reward.score_many([(_PROBLEM, "boom"), (_PROBLEM, "wrong"), (_PROBLEM, "right"), (_PROBLEM, "boom")])
    assert reward.stats.errors == 2
    # docs/tasks.md: "a failure never pays better than a wrong answer" -- here it got [-1.0, -5.0, 1.0, -5.0]: the
    # first failure's advantage beats the wrong answer's, and the two failures of one group differ
    assert scores[0] <= scores[1] and scores[3] <= scores[1], scores


def test_a_failed_call_on_any_worker_scores_no_better_than_a_wrong_answer(tmp_path, monkeypatch):
    from scalerl.tasks.rewards import RewardWorkers

    (tmp_path / "cf_judge.py").write_text(textwrap.dedent(JUDGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    with RewardWorkers("cf_judge:judge", timeout=20, workers=2) as reward:
        first = reward.score_many([(_PROBLEM, "wrong"), (_PROBLEM, "right")])
        assert sorted(first) == [-5.0, 1.0]  # the function has returned -5: a wrong answer scores -5
        failed = reward.score_many([(_PROBLEM, "boom"), (_PROBLEM, "boom")])
        assert reward.stats.errors == 2
        # docs/tasks.md: a failure scores "the lowest score your function has returned" -- never better than -5
        assert max(failed) <= -5.0, failed


FIRST_FOUR_FAIL = '''
calls = 0

def judge(completion):
    global calls
    calls += 1
    if calls <= 4:  # the whole first evaluation set (2 problems x k 2): judge unreachable
        raise RuntimeError("judge unreachable")
    return -5.0  # the judge's scale: a wrong answer is -5
'''


def test_eval_summary_says_what_the_failed_calls_scored(tmp_path, capsys):
    from scalerl.cli import main

    judge = tmp_path / "cg_first_four_fail.py"
    judge.write_text(textwrap.dedent(FIRST_FOUR_FAIL))
    code = main(["eval", "--model", "tiny", "--reward", f"{judge}:judge", "--problems", "2", "--k", "2",
                 "--max-new-tokens", "4", "--no-progress", "--sets", "val", "hard"])
    out = capsys.readouterr().out
    assert code == 0, out
    line = next(l for l in out.splitlines() if "reward function" in l)
    assert "4 errors" in line, line
    # The val set's 4 calls all failed and scored -1 (its mean reward is -1); the summary said
    # "4 errors and 0 timeouts in 8 calls (each scored -5, as a wrong answer)".
    assert "each scored -5" not in line and "each scored as a wrong answer (-1, or the lowest score" in line, line


FLAKY_JUDGE = '''
calls = 0

def judge(completion):
    global calls
    calls += 1
    if calls % 2 == 0:
        raise RuntimeError("judge unreachable")
    return -5.0  # the judge's scale: a wrong answer is -5 (returned first: every failure scores -5)
'''


def test_train_report_says_what_the_failed_calls_scored(tmp_path, capsys):
    from scalerl.cli import main

    judge = tmp_path / "cg_flaky_judge.py"
    judge.write_text(textwrap.dedent(FLAKY_JUDGE))
    out_dir = tmp_path / "run"
    code = main(["train", "--model", "tiny", "--reward", f"{judge}:judge", "--steps", "2", "--eval-every", "2",
                 "--no-progress", "--set", "eval.problems=8", "--output", str(out_dir)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    failed = [json.loads(l) for l in (out_dir / "samples.jsonl").read_text().splitlines()]
    failed = [row["reward"] for row in failed if row.get("reward_failed")]
    assert failed and set(failed) == {-5.0}, failed  # what the failed calls really scored
    report = (out_dir / "report.md").read_text()
    line = next(l for l in report.splitlines() if "reward function failures" in l)
    assert "each scored -1" not in line and "each scored as a wrong answer (-1, or the lowest score" in line, line
    summary = next(l for l in printed.splitlines() if "reward function failures" in l)
    assert "each scored -1" not in summary and "each scored as a wrong answer" in summary, summary
