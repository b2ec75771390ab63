"""Build the tiny model from scratch and measure where RL starts: warm-start time, pass rates.

    .venv/bin/python benchmarks/tiny_warm_start.py                 # default spec, temporary cache
    .venv/bin/python benchmarks/tiny_warm_start.py --steps 150 200 --k 8

For each warm-start length: build (no cache), then mean@k on every evaluation set of the
arithmetic task, greedy (k = 1) and sampled at temperature 1 (the RL setting).
"""

from __future__ import annotations

import argparse
import dataclasses
import tempfile
import time

import torch

from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.models.loading import load_model
from scalerl.models.tiny import TinySpec, tiny_model_dir
from scalerl.tasks.arithmetic import ArithmeticTask
from scalerl.train.evaluate import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, nargs="+", default=[TinySpec().warm_start_steps])
    parser.add_argument("--k", type=int, default=8, help="samples per problem at temperature 1")
    parser.add_argument("--threads", type=int, default=None)
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    task = ArithmeticTask()
    for steps in args.steps:
        spec = dataclasses.replace(TinySpec(), warm_start_steps=steps)
        with tempfile.TemporaryDirectory() as cache:
            start = time.perf_counter()
            path = tiny_model_dir(spec, cache_dir=cache)
            build = time.perf_counter() - start
            model, tokenizer = load_model(str(path))
        gen = HFGenerator(model, tokenizer)
        row = [f"steps={steps} threads={torch.get_num_threads()} build={build:.1f}s"]
        for name, problems in task.eval_sets().items():
            for label, temperature, k in (("greedy", 0.0, 1), ("sampled", 1.0, args.k)):
                params = SamplingParams(max_new_tokens=64, temperature=temperature, seed=1)
                m = evaluate(gen, tokenizer, task, problems, k, params)
                row.append(f"{name}/{label}={m['pass_rate']:.3f}")
        print("  ".join(row), flush=True)


if __name__ == "__main__":
    main()
