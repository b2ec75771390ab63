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


# ---- a DAPO batch's rounds (review ei) ---------------------------------------------------------------------------


DAPO_JUDGE = '''
def judge(completion):
    if "boom" in completion:
        raise RuntimeError("judge unreachable")
    return -5.0 if "wrong" in completion else 1.0  # the judge's scale: a wrong answer is -5
'''


class _RoundsGenerator:
    """Round 0: the first prompt's two completions are a right answer and a failed call (kept: they differ), the
    second prompt's both right (flat: dropped, so DAPO refills); every later round: a wrong answer and a right one."""

    def __init__(self) -> None:
        self.calls = 0

    def generate(self, prompts, params, length_control=None, **_):
        from scalerl.generate.base import Completion

        self.calls += 1
        out = []
        for i, p in enumerate(prompts):
            prompt_no, j = divmod(i, 2)
            if self.calls == 1:
                text = ("right", "boom")[j] if prompt_no == 0 else "right"
            else:
                text = ("wrong", "right")[j]
            n = len(text)
            out.append(Completion(list(p), [5] * n, [0.0] * n, [1] * n, [0] * n, "stop", text=text))
        return out


def test_a_failure_never_scores_above_a_wrong_answer_of_its_dapo_batch(tmp_path, monkeypatch):
    """docs/tasks.md: a failure "scores -1, as a wrong answer (or the lowest score your function has returned ...) -- a
    failure never pays better than a wrong answer"; RewardWorkers.score_many: "A failed call scores no better than any
    score of the batch" (review cg), and tests/pipeline/test_reward_state.py says the synchronous loop "never" scores
    a refill's failures above the batch's -5. Under DAPO a batch is several rounds, each scored on its own: round 0's
    failed call is floored at -1 (no -5 seen yet), the refill round returns the judge's -5, and the batch trains on a
    failure at -1 beside a wrong answer at -5 -- on the synchronous loop, one task copy, no processes involved."""
    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.rl.components import resolve_recipe
    from scalerl.rl.recipe import RecipeConfig
    from scalerl.rl.sampler import PromptSampler
    from scalerl.rollout.context import RolloutContext, RoundContext
    from scalerl.rollout.produce import make_batch
    from scalerl.tasks.base import Problem
    from scalerl.tasks.rewards import RewardWorkers, UserRewardTask

    (tmp_path / "ei_dapo_judge.py").write_text(textwrap.dedent(DAPO_JUDGE))
    monkeypatch.syspath_prepend(str(tmp_path))
    recipe = RecipeConfig()
    recipe.filtering.dynamic_sampling = True
    recipe.batch.prompts_per_step = 2
    recipe.batch.generations_per_prompt = 2
    problems = {f"p{i}": Problem(f"p{i}", f"{i}+1=", "x") for i in range(20)}

    class Base:  # the problems come from the context here; the task only scores
        name = "ei"

    with RewardWorkers("ei_dapo_judge:judge", timeout=20) as reward:
        task = UserRewardTask(Base(), reward)
        rnd = RoundContext(tokenizer=build_char_tokenizer(), task=task, components=resolve_recipe(recipe),
                           length_control=None)
        ctx = RolloutContext(rnd, problems, PromptSampler(list(problems), seed=0, no_positive_resampling=False),
                             temperature=1.0, top_p=1.0, seed=0)
        batch = make_batch(ctx, _RoundsGenerator(), 0)
    scored = [(c.text, r) for g in batch.groups for c, r in zip(g.completions, g.rewards)]
    assert batch.stats["dynamic_rounds"] >= 2 and any(t == "boom" for t, _ in scored), scored  # the scenario
    returned = min(r for t, r in scored if t != "boom")
    assert returned == -5.0, scored
    assert all(r <= returned for t, r in scored if t == "boom"), scored


def test_a_training_batch_scores_its_failures_at_its_own_lowest_answer_whatever_floor_they_came_with():
    """rollout.produce.floor_failures (review FN): a batch's failed calls score -1 or the lowest score of a call that
    answered in the batch -- not the floor the function's copy had reached when it scored them, which depends on when
    that was (an evaluation's -5 learnt before a regenerated batch's scoring after ``--resume``, not before the
    uninterrupted run's)."""
    from scalerl.generate.base import Completion
    from scalerl.models.char_tokenizer import build_char_tokenizer
    from scalerl.rl.components import resolve_recipe
    from scalerl.rl.recipe import RecipeConfig
    from scalerl.rollout.context import RoundContext
    from scalerl.rollout.groups import Group
    from scalerl.rollout.produce import floor_failures

    ctx = RoundContext(tokenizer=build_char_tokenizer(), task=None, components=resolve_recipe(RecipeConfig()),
                       length_control=None)

    def group(rewards, failed):
        return Group(_PROBLEM, [Completion([1], [2], [0.0], [1], [0], "stop") for _ in rewards], list(rewards), list(rewards), list(failed))

    late = group([-5.0, 0.5], [True, False])  # scored after the function's -5 elsewhere: floored at -5 by its copy
    answered = group([0.0, 1.0], [False, False])
    floor_failures(ctx, [late, answered], [late, answered])
    assert late.rewards == [-1.0, 0.5] and late.shaped == [-1.0, 0.5], late.rewards  # the batch's lowest answer is 0
    wrong = group([-1.0, -3.0], [True, False])  # a wrong answer at -3 in the batch: a failure scores no better
    floor_failures(ctx, [wrong], [wrong, answered])
    assert wrong.rewards == [-3.0, -3.0], wrong.rewards
