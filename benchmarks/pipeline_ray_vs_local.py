"""The Ray backend against the local one: same config, same seeds, matching pass-rate curves.

    .venv/bin/python benchmarks/pipeline_ray_vs_local.py                 # sync and pipeline-rl-8, seeds 0 1
    .venv/bin/python benchmarks/pipeline_ray_vs_local.py --steps 60 --modes sync

Each (mode, seed) trains the tiny model twice: ``--backend local`` and ``--backend ray`` (a
local Ray cluster started by the run: one generator actor on one CPU, the trainer in the driver
on the other). In sync mode with per-batch seeds both backends should train on identical
batches -- the curves must agree exactly. PipelineRL-k is not bit-reproducible on any backend
(thread timing decides which weights each token saw), so there the criterion is "within noise":
the Ray-vs-local gap is printed beside the seed-to-seed spread of the same backend.
"""

from __future__ import annotations

import argparse

from pipeline_common import table, train

MODES = {"sync": ["pipeline=sync", "k=1"], "pipeline-rl-8": ["pipeline=pipeline-rl-k", "k=8"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=100)
    parser.add_argument("--eval-every", type=int, default=20)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--modes", nargs="+", default=list(MODES))
    parser.add_argument("--threads", type=int, default=1)
    args = parser.parse_args()

    curves: dict[tuple[str, str, int], list[float]] = {}
    speed: dict[tuple[str, str, int], float] = {}
    steps: list[int] = []
    for mode in args.modes:
        for seed in args.seeds:
            for backend in ("local", "ray"):
                run = train(MODES[mode], steps=args.steps, eval_every=args.eval_every, seed=seed, threads=args.threads,
                            extra=["--backend", backend])
                steps = [r["step"] for r in run["evals"]]
                curves[(mode, backend, seed)] = [r["val/pass_rate"] for r in run["evals"]]
                last = run["evals"][-1]
                devices = 2 if backend == "ray" else 1  # Ray counts the trainer and its one generator actor
                speed[(mode, backend, seed)] = last["samples"] / (last["gpu_hours"] * 3600 / devices)
                print(f"{mode:14s} seed {seed} {backend:5s}: " + " ".join(f"{y:.3f}" for y in curves[(mode, backend, seed)]),
                      flush=True)

    for mode in args.modes:
        print(f"\n{mode}: val/pass_rate by step (local | ray per seed)\n")
        header = ["step"] + [f"s{s} {b}" for s in args.seeds for b in ("local", "ray")]
        rows = [[step] + [f"{curves[(mode, b, s)][j]:.3f}" for s in args.seeds for b in ("local", "ray")]
                for j, step in enumerate(steps)]
        print(table(header, rows))
        gap = max(abs(curves[(mode, "local", s)][j] - curves[(mode, "ray", s)][j])
                  for s in args.seeds for j in range(1, len(steps)))
        line = f"largest |ray - local| after step 0: {gap:.3f}"
        if len(args.seeds) > 1:
            spread = max(abs(curves[(mode, b, args.seeds[0])][j] - curves[(mode, b, args.seeds[1])][j])
                         for b in ("local", "ray") for j in range(1, len(steps)))
            line += f"; largest seed-to-seed gap on one backend: {spread:.3f}"
        print(line)
        for s in args.seeds:
            ratio = speed[(mode, "ray", s)] / speed[(mode, "local", s)]
            print(f"  seed {s}: ray / local training samples per wall-second x{ratio:.2f}")


if __name__ == "__main__":
    main()
