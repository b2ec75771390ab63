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


def _cfg(out, reward, steps, pipeline=("pipeline=sync", "k=1")):
    return resolve(TrainConfig(), [
        f"run.output={out}", "log.progress=false", "run.threads=1", f"run.steps={steps}", "eval.every=2",
        "batch.prompts_per_step=4", "batch.generations_per_prompt=4", "eval.problems=16",
        "eval.samples_per_problem=2", "forecast.enabled=false", *pipeline, f"task.reward={reward}:flaky",
    ])


def _counts(summary):
    return [(r["step"], r["reward_errors"], r["reward_timeouts"]) for r in summary.evals]


@pytest.mark.parametrize("pipeline", [("pipeline=sync", "k=1"), ("pipeline=pipeline-rl-k", "k=4")],
                         ids=["sync", "pipeline-rl-4"])
def test_reward_failure_counts_carry_over_a_resume(tiny_dir, tmp_path, pipeline):
    """Resumed after step 2, a run logged reward_errors 38 at step 4 where the uninterrupted run
    logged 98: the resumed process counted from zero (and a kill -9 + --resume of the default
    recipe, 127 -> 59). Under pipeline-rl-k (seeded: bit-reproducible) the batches generated before
    the checkpoint and not yet trained on were scored again after the resume, and their failures
    counted twice (136 where the uninterrupted run had 127): a batch's failures now count once,
    when it is trained on."""
    reward = tmp_path / "rewards.py"
    reward.write_text(REWARD)
    whole = _counts(Trainer(_cfg(tmp_path / "whole", reward, 4, pipeline)).run())
    Trainer(_cfg(tmp_path / "cut", reward, 2, pipeline)).run()
    resumed = _counts(Trainer(_cfg(tmp_path / "cut", reward, 4, pipeline), resume=True).run())
    assert whole[-1][1] > whole[1][1] > 0  # the function failed after the checkpoint too
    assert resumed == whole
