"""How trl_grpo_trainer_state.json was made: TRL 1.16's GRPOTrainer on the tiny model (CPU, one
thread), 6 steps of 16 completions, evaluated every 2 steps on 32 held-out additions, a checkpoint
every 3 steps; the file is the last checkpoint's trainer_state.json, as TRL wrote it.

    python tests/curves/data/make_trl_trainer_state.py runs/trl-grpo-tiny
    cp runs/trl-grpo-tiny/checkpoint-6/trainer_state.json tests/curves/data/trl_grpo_trainer_state.json

trl_grpo_console.log is the console of the same run with TRL's default progress bars, stdout and
stderr in one file, as ``> log 2>&1`` leaves it (warnings, bars, and a printed metrics dict per
logging step):

    python tests/curves/data/make_trl_trainer_state.py runs/trl-grpo-tiny-bars --progress \
        > tests/curves/data/trl_grpo_console.log 2>&1

(the virtual environment's absolute path in its warnings then shortened to ``.venv/``).
"""

import sys
from pathlib import Path

import torch
from datasets import Dataset
from transformers import AutoModelForCausalLM, AutoTokenizer
from trl import GRPOConfig, GRPOTrainer

from scalerl.tasks.arithmetic import ArithmeticTask

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))
from vs_trl import tiny_dir  # noqa: E402  (the cached, warm-started tiny model)


def main(out: str, progress: bool = False) -> None:
    torch.set_num_threads(1)
    task = ArithmeticTask()
    train = list(task.train_problems())[:200]
    held_out = list(next(iter(task.eval_sets().values())))[:32]
    by_prompt = {p.prompt: p for p in train + held_out}

    def accuracy(prompts, completions, **_):
        return [float(task.reward(by_prompt[p], c) > 0) for p, c in zip(prompts, completions)]

    args = GRPOConfig(output_dir=out, max_steps=6, use_cpu=True, per_device_train_batch_size=16,
                      per_device_eval_batch_size=16, num_generations=4, max_completion_length=24,
                      eval_strategy="steps", eval_steps=2, save_strategy="steps", save_steps=3,
                      report_to="none", logging_steps=1, disable_tqdm=not progress, beta=0.0)
    trainer = GRPOTrainer(model=AutoModelForCausalLM.from_pretrained(tiny_dir(), dtype=torch.float32),
                          reward_funcs=accuracy, args=args,
                          train_dataset=Dataset.from_dict({"prompt": [p.prompt for p in train]}),
                          eval_dataset=Dataset.from_dict({"prompt": [p.prompt for p in held_out]}),
                          processing_class=AutoTokenizer.from_pretrained(tiny_dir()))
    trainer.train()


if __name__ == "__main__":
    args = [a for a in sys.argv[1:] if a != "--progress"]
    main(args[0] if args else "runs/trl-grpo-tiny", progress="--progress" in sys.argv[1:])
