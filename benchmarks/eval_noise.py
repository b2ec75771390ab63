"""How noisy is one evaluation point, and what does it cost? Chooses the demo's evaluation.

Two measurements:

1. **Sampling noise**: one fixed model (a finished run's final model, evaluated with the run's
   length control, as the trainer does) evaluated ``--repeats`` times under different sampling
   seeds, for each evaluation design ``problems x k @ temperature``: the sd of the pass rate
   across seeds, beside the binomial prediction ``sqrt(sum_i p_i (1 - p_i) / k) / n`` from the
   per-problem pass rates, and the CPU-seconds one evaluation takes (process time, one thread).
2. **Plateau spread** (``--logs``): in run logs, the sd of the differences of consecutive
   evaluations divided by sqrt(2), over the second half of each run -- the noise a fitted
   curve sees, sampling noise and policy movement together (the trainer evaluates every point
   with the same seeds, so the draw itself does not move between rows).

    python benchmarks/eval_noise.py --run runs/demo                       # designs below, 5 seeds each
    python benchmarks/eval_noise.py --run runs/demo --designs 1000x1@1 500x2@1 --repeats 8
    python benchmarks/eval_noise.py --logs runs/demo-bench/seed*/runlog.jsonl
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from pathlib import Path

DEFAULT_DESIGNS = ["300x4@1", "1000x1@1", "1000x2@1", "1000x1@0"]


def parse_design(text: str) -> tuple[int, int, float]:
    """``"1000x2@1"`` -> (1000 problems, k = 2, temperature 1.0)."""
    size, _, temp = text.partition("@")
    n, _, k = size.partition("x")
    return int(n), int(k), float(temp or 1.0)


def sampling_noise(run: str, designs: list[str], repeats: int) -> list[dict]:
    import torch

    from scalerl.config import load_yaml
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.loading import load_model
    from scalerl.rl.length import length_controller
    from scalerl.tasks.registry import get_task
    from scalerl.train.config import TrainConfig
    from scalerl.train.evaluate import evaluate

    torch.set_num_threads(1)
    cfg = load_yaml(TrainConfig, Path(run) / "config.yaml")
    model, tokenizer = load_model(str(Path(run) / "final"))
    task = get_task(cfg.task.name, **cfg.task.settings)
    val = list(task.eval_sets()[cfg.eval.sets[0]])
    length = length_controller(cfg.recipe.length, tokenizer)
    gen = HFGenerator(model, tokenizer, seed=0)
    rows = []
    for design in designs:
        n, k, temperature = parse_design(design)
        problems = val[:n]
        rates, cpu = [], []
        for seed in range(repeats):
            params = SamplingParams(max_new_tokens=cfg.recipe.length.max_new_tokens, temperature=temperature,
                                    seed=1000 + seed)
            t0 = time.process_time()
            m = evaluate(gen, tokenizer, task, problems, k, params, length, batch_size=cfg.eval.batch_size)
            cpu.append(time.process_time() - t0)
            rates.append(m["pass_rate"])
        predicted = float("nan")
        if temperature > 0:  # per-problem pass rates from one 16-sample draw -> the binomial prediction
            params = SamplingParams(max_new_tokens=cfg.recipe.length.max_new_tokens, temperature=temperature, seed=99)
            p_i = per_problem_rates(gen, tokenizer, task, problems, 16, params, length)
            predicted = math.sqrt(sum(p * (1 - p) for p in p_i) / k) / len(problems)
        row = {"design": design, "problems": n, "k": k, "temperature": temperature, "repeats": repeats,
               "mean": statistics.mean(rates), "sd": statistics.stdev(rates) if repeats > 1 else float("nan"),
               "binomial_sd": predicted, "cpu_s_per_eval": statistics.median(cpu), "samples": n * k}
        rows.append(row)
        print(json.dumps(row), flush=True)
    return rows


def per_problem_rates(gen, tokenizer, task, problems, k, params, length) -> list[float]:
    from scalerl.tasks.encoding import encode_prompts

    prompts = encode_prompts(tokenizer, [p.prompt for p in problems])
    flat = [prompts[i] for i in range(len(problems)) for _ in range(k)]
    comps = []
    for start in range(0, len(flat), 2048):
        comps += gen.generate(flat[start:start + 2048], params, length)
    return [sum(task.reward(problems[i], comps[i * k + j].text) > 0 for j in range(k)) / k for i in range(len(problems))]


def plateau_spread(logs: list[str], y: str = "val/pass_rate") -> list[dict]:
    rows = []
    for path in logs:
        values = [r[y] for r in map(json.loads, Path(path).read_text().splitlines()) if y in r]
        half = values[len(values) // 2:]
        diffs = [b - a for a, b in zip(half, half[1:])]
        spread = statistics.stdev(diffs) / math.sqrt(2) if len(diffs) > 1 else float("nan")
        rows.append({"log": path, "points": len(values), "second_half": len(half), "spread_sd": spread,
                     "second_half_mean": statistics.mean(half)})
        print(json.dumps(rows[-1]), flush=True)
    return rows


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--run", help="a finished run directory (its final model and evaluation settings)")
    ap.add_argument("--designs", nargs="+", default=DEFAULT_DESIGNS, metavar="NxK@T")
    ap.add_argument("--repeats", type=int, default=5, help="sampling seeds per design")
    ap.add_argument("--logs", nargs="*", default=[], help="run logs for the plateau spread")
    args = ap.parse_args()
    if args.run:
        rows = sampling_noise(args.run, args.designs, args.repeats)
        print(f"\n{'design':>10} {'samples':>7} {'mean':>6} {'sd':>7} {'binomial':>8} {'CPU-s/eval':>10}")
        for r in rows:
            print(f"{r['design']:>10} {r['samples']:>7} {r['mean']:>6.3f} {r['sd']:>7.4f} {r['binomial_sd']:>8.4f} "
                  f"{r['cpu_s_per_eval']:>10.1f}")
    if args.logs:
        rows = plateau_spread(args.logs)
        print("\nplateau spread (sd of consecutive differences / sqrt 2, second half): "
              + ", ".join(f"{r['spread_sd']:.4f}" for r in rows))


if __name__ == "__main__":
    main()
