"""Generation speed of the Hugging Face backend on the tiny model: tokens/s and samples/s.

    .venv/bin/python benchmarks/generation_speed.py                      # batch 256, tiny model
    .venv/bin/python benchmarks/generation_speed.py --threads 1 --compact 0.25 1.0

Prompts are arithmetic training problems; sampling at temperature 1 up to --max-new-tokens.
Each setting is timed --repeats times after one warm-up call; the best run is reported
(the least disturbed by other processes). ``--compact`` compares dropping finished rows from
the batch (and the KV cache) once that share of rows has finished (1.0: never drop them).
"""

from __future__ import annotations

import argparse
import time

import torch

from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.models.loading import load_model
from scalerl.tasks.arithmetic import ArithmeticTask
from scalerl.tasks.encoding import encode_prompts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", default="tiny")
    parser.add_argument("--batch", type=int, default=256)
    parser.add_argument("--max-new-tokens", type=int, default=64)
    parser.add_argument("--temperature", type=float, default=1.0)
    parser.add_argument("--threads", type=int, default=None, help="torch.set_num_threads (default: torch's)")
    parser.add_argument("--compact", type=float, nargs="+", default=[0.25])
    parser.add_argument("--repeats", type=int, default=5)
    args = parser.parse_args()

    if args.threads:
        torch.set_num_threads(args.threads)
    model, tokenizer = load_model(args.model)
    task = ArithmeticTask()
    problems = task.train_problems()[: args.batch]
    prompts = encode_prompts(tokenizer, [p.prompt for p in problems])
    params = SamplingParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature, seed=0)
    print(
        f"model={args.model} params={sum(p.numel() for p in model.parameters()):,} batch={args.batch} "
        f"max_new_tokens={args.max_new_tokens} T={args.temperature} threads={torch.get_num_threads()}"
    )
    for compact in args.compact:
        gen = HFGenerator(model, tokenizer, compact_fraction=compact)
        gen.generate(prompts, params)  # warm-up
        best = None
        for _ in range(args.repeats):
            start = time.perf_counter()
            completions = gen.generate(prompts, params)
            seconds = time.perf_counter() - start
            if best is None or seconds < best[0]:
                best = (seconds, completions)
        seconds, completions = best
        tokens = sum(len(c.token_ids) for c in completions)
        passed = sum(task.reward(p, c.text) > 0 for p, c in zip(problems, completions)) / len(problems)
        print(
            f"compact_fraction={compact:<5} {seconds * 1e3:7.1f} ms/batch  {tokens / seconds:9.0f} tokens/s  "
            f"{len(completions) / seconds:7.0f} samples/s  mean_len={tokens / len(completions):.1f}  "
            f"max_len={max(len(c.token_ids) for c in completions)}  pass={passed:.3f}"
        )


if __name__ == "__main__":
    main()
