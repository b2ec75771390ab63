"""A user reward's failure counts (``reward_errors``, ``reward_timeouts``: totals of the run) go on
counting across ``--resume`` instead of starting again from zero."""

from __future__ import annotations

import pytest

from scalerl.train.config import TrainConfig, resolve
from scalerl.train.trainer import Trainer

pytestmark = pytest.mark.slow

REWARD = '''
def flaky(completion, answer):
    if "1" in completion[-3:]:
        raise ValueError("boom")
    return completion.rsplit("</think>", 1)[-1].strip() == answer
'''


def _cfg(out, reward, steps):
    return resolve(TrainConfig(), [
        f"run.output={out}", "log.progress=false", "run.threads=1", f"run.steps={steps}", "eval.every=2",
        "batch.prompts_per_step=4", "batch.generations_per_prompt=4", "eval.problems=16",
        "eval.samples_per_problem=2", "forecast.enabled=false", "pipeline=sync", "k=1", f"task.reward={reward}:flaky",
    ])


def _counts(summary):
    return [(r["step"], r["reward_errors"], r["reward_timeouts"]) for r in summary.evals]


def test_reward_failure_counts_carry_over_a_resume(tiny_dir, tmp_path):
    """Resumed after step 2, a run logged reward_errors 38 at step 4 where the uninterrupted run
    logged 98: the resumed process counted from zero (and a kill -9 + --resume of the default
    recipe, 127 -> 59)."""
    reward = tmp_path / "rewards.py"
    reward.write_text(REWARD)
    whole = _counts(Trainer(_cfg(tmp_path / "whole", reward, 4)).run())
    Trainer(_cfg(tmp_path / "cut", reward, 2)).run()
    resumed = _counts(Trainer(_cfg(tmp_path / "cut", reward, 4), resume=True).run())
    assert whole[-1][1] > whole[1][1] > 0  # the function failed after the checkpoint too
    assert resumed == whole
