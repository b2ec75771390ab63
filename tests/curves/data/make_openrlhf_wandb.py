"""Make ``openrlhf_async_wandb.wandb.gz``, read by tests/curves/test_framework_logs.py: a W&B run file
written (offline, wandb 0.31.0) the way OpenRLHF's ``WandbLogger`` logs
(openrlhf/utils/logging_utils.py: ``define_metric("train/*", step_metric="train/global_step")``,
``define_metric("eval/*", step_metric="eval/epoch")``; ``log_train`` logs ``train/<k>`` and
``train/global_step``, ``log_eval`` ``eval/<k>`` and ``eval/global_step``, neither passing a step, so
W&B's ``_step`` counts the calls), with its asynchronous trainer's timing
(openrlhf/trainer/ppo_trainer_async.py: an evaluation comes back through the rollout queue, here
two steps after the step it evaluated).

100 training steps of 10 s (``train/timing/step_total``); the evaluation of every 10th step,
``eval/eval_gsm8k_pass1`` = 0.2 + 0.5 / (1 + exp(-(step - 40) / 15)), logged after step + 2
(the evaluation of step 100 never: the run ends first).

    python make_openrlhf_wandb.py OUT_DIR
"""

import gzip
import math
import shutil
import sys
import tempfile
from pathlib import Path

import wandb


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        run = wandb.init(project="openrlhf", name="async-grpo", dir=tmp, mode="offline",
                         settings=wandb.Settings(console="off"))
        wandb.define_metric("train/global_step")
        wandb.define_metric("train/*", step_metric="train/global_step", step_sync=True)
        wandb.define_metric("eval/epoch")
        wandb.define_metric("eval/*", step_metric="eval/epoch", step_sync=True)
        pending = []
        for step in range(1, 101):
            run.log({"train/policy_loss": 0.01, "train/reward": 0.3, "train/timing/step_total": 10.0,
                     "train/global_step": step})
            if step % 10 == 0:
                pending.append(step)
            for p in [p for p in pending if step - p >= 2]:
                score = 0.2 + 0.5 / (1 + math.exp(-(p - 40) / 15))
                run.log({"eval/eval_gsm8k_pass1": score, "eval/global_step": p})
                pending.remove(p)
        run.finish()
        wandb.teardown()  # W&B's service writes the file's end as it closes, after finish() returns
        (file,) = Path(tmp).rglob("run-*.wandb")
        with open(file, "rb") as src, gzip.open(out / "openrlhf_async_wandb.wandb.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
