"""PipelineRL-k on one machine: generator threads vs generator processes (backend.workers).

    .venv/bin/python benchmarks/pipeline_workers.py                   # 30 steps, 1 and 2 generators, 3 repeats
    .venv/bin/python benchmarks/pipeline_workers.py --steps 40 --generators 1 --repeats 5

Each configuration trains the tiny model (cpu-tiny profile: 16 prompts x 8 generations per
step) for --steps steps with pipeline-rl-k (k = 8) from the same seed, in a fresh process;
the trainer gets one torch thread (--threads) and each generator one. Evaluation is cut to
16 problems x 1 sample at the start and the end, so the clock measures the pipeline.
Configurations are interleaved across repeats (the machine is shared: its load drifts);
the table shows median [min-max].

Columns: steps/s and samples/s over the training clock (evaluation excluded); trainer wait =
share of the time the trainer waited for a batch; generator idle = share of generator time
spent waiting for a free slot; start = wall seconds to the end of the run minus the training
clock (process start-up, evaluations, saving).
"""

from __future__ import annotations

import argparse

from pipeline_common import spread, table, train


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--generators", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--workers", nargs="+", default=["threads", "processes"])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--threads", type=int, default=1, help="torch threads of the trainer")
    args = parser.parse_args()

    configs = [(w, g) for g in args.generators for w in args.workers]
    results: dict[tuple[str, int], list[dict]] = {c: [] for c in configs}
    for rep in range(args.repeats):
        for workers, gens in configs:
            run = train(["pipeline=pipeline-rl-k", "k=8", f"backend.workers={workers}", f"backend.generators={gens}",
                         "eval.problems=16", "eval.samples_per_problem=1"],
                        steps=args.steps, eval_every=args.steps, seed=0, threads=args.threads)
            last = run["evals"][-1]
            seconds = last["gpu_hours"] * 3600
            m = {"steps_s": args.steps / seconds, "samples_s": last["samples"] / seconds,
                 "wait": last["pipeline/trainer_wait_frac"], "idle": last["pipeline/generator_idle_frac"],
                 "overhead": run["wall"] - seconds}
            results[(workers, gens)].append(m)
            print(f"repeat {rep} {workers:9s} generators={gens}: {m['steps_s']:.3f} steps/s, "
                  f"{m['samples_s']:.1f} samples/s, wait {m['wait']:.2f}, idle {m['idle']:.2f}", flush=True)

    print(f"\npipeline-rl-k (k=8), tiny model, {args.steps} steps, trainer threads={args.threads}, "
          f"{args.repeats} interleaved repeats: median [min-max]\n")
    rows = []
    for workers, gens in configs:
        ms = results[(workers, gens)]
        rows.append([workers, gens, spread([m["steps_s"] for m in ms]), spread([m["samples_s"] for m in ms], "{:.1f}"),
                     spread([m["wait"] for m in ms], "{:.2f}"), spread([m["idle"] for m in ms], "{:.2f}"),
                     spread([m["overhead"] for m in ms], "{:.1f}")])
    print(table(["workers", "generators", "steps/s", "samples/s", "trainer wait", "generator idle", "start s"], rows))
    base = {g: [m["steps_s"] for m in results.get(("threads", g), [])] for g in args.generators}
    for g in args.generators:
        procs = [m["steps_s"] for m in results.get(("processes", g), [])]
        if base[g] and procs:
            ratios = [p / t for p, t in zip(procs, base[g])]
            print(f"processes / threads, generators={g}: steps/s ratio per repeat {', '.join(f'{r:.2f}' for r in ratios)}")


if __name__ == "__main__":
    main()
