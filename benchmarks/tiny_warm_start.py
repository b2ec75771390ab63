"""Build tiny models from scratch and measure where RL starts: warm-start cost, pass rates.

    python benchmarks/tiny_warm_start.py                                  # tiny, its default spec
    python benchmarks/tiny_warm_start.py --steps 150 200 --k 8            # tiny at other warm-start lengths
    python benchmarks/tiny_warm_start.py --models tiny-s tiny-m tiny-l    # the arithmetic-mix ladder

For each model (a name of ``scalerl.models.tiny.TINY_MODELS``) and warm-start length: build it in
a temporary cache (nothing is reused), then mean@k on every evaluation set of the task it was
warm-started on (for arithmetic-mix: ``val`` and one set per length), greedy (k = 1) and sampled
at temperature 1 (the RL setting), without length control (every scratchpad may finish). The
build's CPU-seconds are process time (the warm start always runs on two torch threads:
``scalerl.models.warmstart.WARM_START_THREADS``); ``warm_start_wall_s`` is its wall time.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import tempfile
import time

import torch

from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.models.loading import load_model
from scalerl.models.tiny import TINY_MODELS, tiny_model_dir
from scalerl.tasks.registry import get_task
from scalerl.train.evaluate import evaluate


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--models", nargs="+", default=["tiny"], choices=list(TINY_MODELS))
    parser.add_argument("--steps", type=int, nargs="+", default=None, help="warm-start steps (default: each model's)")
    parser.add_argument("--k", type=int, default=8, help="samples per problem at temperature 1")
    parser.add_argument("--problems", type=int, default=200, help="problems per evaluation set")
    parser.add_argument("--threads", type=int, default=1, help="torch threads for the evaluation")
    parser.add_argument("--use-cache", action="store_true",
                        help="evaluate the cached model (built there if missing); build_cpu_s is then not measured")
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    for name in args.models:
        base = TINY_MODELS[name]
        for steps in args.steps or [base.warm_start_steps]:
            spec = dataclasses.replace(base, warm_start_steps=steps)
            with tempfile.TemporaryDirectory() as cache:
                start = time.process_time()
                path = tiny_model_dir(spec, cache_dir=None if args.use_cache else cache)
                build = float("nan") if args.use_cache else time.process_time() - start
                info = json.loads((path / "scalerl_tiny.json").read_text())
                model, tokenizer = load_model(str(path))
            task = get_task(spec.task, **spec.task_settings)
            gen = HFGenerator(model, tokenizer)
            row = {"model": name, "steps": steps, "parameters": info["parameters"], "build_cpu_s": round(build, 1),
                   "warm_start_wall_s": round(info["warm_start"]["seconds"], 1),
                   "final_loss": round(info["warm_start"]["final_loss"], 3)}
            for set_name, problems in task.eval_sets().items():
                for label, temperature, k in (("greedy", 0.0, 1), ("sampled", 1.0, args.k)):
                    params = SamplingParams(max_new_tokens=64, temperature=temperature, seed=1)
                    m = evaluate(gen, tokenizer, task, list(problems)[: args.problems], k, params, batch_size=512)
                    row[f"{set_name}/{label}"] = round(m["pass_rate"], 3)
            print(json.dumps(row), flush=True)


if __name__ == "__main__":
    main()
