"""A real TRL GRPO run logged to Trackio, W&B or TensorBoard, stopped after step 9 and resumed from
its step-6 checkpoint to step 12 in a second process: what TRL users' logs hold after a resume.

    TRACKIO_DIR=OUT python make_trl_logged_run.py MODEL_DIR WORK_DIR trackio first
    TRACKIO_DIR=OUT python make_trl_logged_run.py MODEL_DIR WORK_DIR trackio resume
    python make_trl_logged_run.py MODEL_DIR WORK_DIR wandb first     # W&B offline, run id grpotrl1,
    python make_trl_logged_run.py MODEL_DIR WORK_DIR wandb resume    # WANDB_RESUME=allow: one run
    python make_trl_logged_run.py MODEL_DIR WORK_DIR tensorboard first   # WORK_DIR/runs/<date>_<host>,
    python make_trl_logged_run.py MODEL_DIR WORK_DIR tensorboard resume  # one directory per attempt
    MLFLOW_ALLOW_FILE_STORE=true MLFLOW_TRACKING_URI=file://WORK_DIR/mlruns \
        python make_trl_logged_run.py MODEL_DIR WORK_DIR mlflow first|resume  # one MLflow run per attempt

Fixtures: trackio_runs.tar.gz (trackio/trl-grpo.db), wandb_trl_resumed.tar.gz (the two attempts'
run files), trl_tensorboard_resumed.tar.gz (runs/, both attempts' event directories),
trl_mlflow_resumed.tar.gz (mlruns/, without params and artifacts), trl_grpo_console_resumed.log
(the trackio attempts' stdout and stderr, one after the other, as ``tee -a`` leaves them).

MODEL_DIR: any small causal LM saved locally (the fixtures used scalerl's tiny arithmetic model,
``scalerl.models.tiny.tiny_model_dir()``). Made with trl 1.16.0, transformers 5.24.0, trackio 0.43.0,
wandb 0.31.0, tensorboard 2.21.0, mlflow-skinny 3.17.2 (and datasets).
"""

import os
import random
import re
import sys

from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

model_dir, work, logger, attempt = sys.argv[1:5]
if logger == "wandb":  # offline (no account, no network); the resumed process joins the same run
    os.environ.update(WANDB_MODE="offline", WANDB_RUN_ID="grpotrl1", WANDB_RESUME="allow",
                      WANDB_PROJECT="trl-grpo", WANDB_DIR=work)
rng = random.Random(0)
pairs = [(rng.randint(10, 99), rng.randint(10, 99)) for _ in range(200)]
data = Dataset.from_dict({"prompt": [f"{a}+{b}=" for a, b in pairs], "answer": [str(a + b) for a, b in pairs]})
train, evaluation = data.select(range(160)), data.select(range(160, 200))


def correct(prompts, completions, answer, **_):
    # The tiny model answers '<think>scratchpad</think>174<eos>': the digits after </think>.
    found = [re.search(r"</think>\s*(\d+)", c) for c in completions]
    return [float(m is not None and m.group(1) == a) for m, a in zip(found, answer)]


args = GRPOConfig(
    output_dir=work, run_name="grpo-tiny", project="trl-grpo", report_to=logger,
    max_steps=9 if attempt == "first" else 12, use_cpu=True, seed=0, per_device_train_batch_size=8,
    per_device_eval_batch_size=8, num_generations=4, max_completion_length=40, learning_rate=3e-5,
    logging_steps=1, eval_strategy="steps", eval_steps=3, save_strategy="steps", save_steps=6,
    disable_tqdm=True, beta=0.0,
)
trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(model_dir), reward_funcs=correct, args=args,
                      train_dataset=train, eval_dataset=evaluation,
                      processing_class=AutoTokenizer.from_pretrained(model_dir))
# The first attempt stops at step 9 (as if killed after its step-9 evaluation); the second resumes
# from the step-6 checkpoint and logs steps 7-12 (and the step-9 evaluation) again.
trainer.train(resume_from_checkpoint=None if attempt == "first" else f"{work}/checkpoint-6")
