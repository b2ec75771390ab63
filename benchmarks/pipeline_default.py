"""The default configuration against the best synchronous one, side by side, in one run.

    .venv/bin/python benchmarks/pipeline_default.py                       # 40 steps, 3 interleaved repeats
    .venv/bin/python benchmarks/pipeline_default.py --steps 40 --repeats 5 --configs sync-default default

The question (issue 12): is the default recipe -- PipelineRL-8, as ``scalerl train --model tiny``
runs it with no flags -- at least as fast as the fastest synchronous set-up on this machine?
Each configuration is a fresh ``scalerl train`` process on the tiny model (16 prompts x 8
generations per step), run ``--repeats`` times, interleaved (every repeat runs each configuration
once, in turn, so that they share the machine's load). Reported per configuration, median
[min-max] over repeats:

* **samples/s (train clock)** -- samples trained on / the run log's training clock (evaluation
  and start-up excluded): what the forecast's wall-clock axis sees;
* **samples/s (wall)** -- samples / the whole process's wall time (start-up, tiny warm-start
  cache read and the evaluations included);
* **CPU-s / 1k samples** -- user + system CPU seconds of the whole process per 1,000 samples: less
  sensitive than wall time to other jobs on a shared machine;
* **x best sync** -- the per-repeat ratio of train-clock samples/s to the fastest sync
  configuration of the same repeat (the issue's comparison);
* **generators waiting** -- seeded updates: the share of generator time spent waiting for the
  weights a plan names (what determinism costs);
* the pass rate at the last evaluation (mean@2 on 64 problems: a sanity check, not a learning
  comparison -- see benchmarks/pipeline_modes.py for that).

Configurations (``--configs``):

  sync-default     pipeline=sync, torch's default threads (every core) -- the fastest sync on 2 cores
  sync-1           pipeline=sync, --threads 1
  default          no flags: PipelineRL-8, seeded (deterministic) in-flight updates, thread placement
                   chosen by scalerl (trainer: cores - generators; each generator thread: 1)
  timing           PipelineRL-8 with backend.updates=timing (not reproducible), same placement
  default-2x2      PipelineRL-8 seeded, --threads 2 and 2 torch threads per generator (no placement)
"""

from __future__ import annotations

import argparse
import os
import statistics

from pipeline_common import spread, table, train

CONFIGS: dict[str, tuple[list[str], int | None]] = {
    "sync-default": (["pipeline=sync", "k=1"], None),
    "sync-1": (["pipeline=sync", "k=1"], 1),
    "default": ([], None),
    "timing": (["backend.updates=timing"], None),
    "default-2x2": (["backend.generator_threads=2"], 2),
}
SYNC = ("sync-default", "sync-1")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=40)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--configs", nargs="+", default=["sync-default", "sync-1", "default", "timing"],
                        choices=list(CONFIGS))
    args = parser.parse_args()
    runs: dict[str, list[dict]] = {c: [] for c in args.configs}
    for rep in range(args.repeats):
        for name in args.configs:
            overrides, threads = CONFIGS[name]
            run = train([*overrides, "eval.problems=64", "eval.samples_per_problem=2"], steps=args.steps,
                        eval_every=args.steps, seed=args.seed + rep, threads=threads)
            last = run["evals"][-1]
            samples = last["samples"]
            m = {"train_s": samples / (last["gpu_hours"] * 3600), "wall_s": samples / run["wall"],
                 "cpu_per_k": 1000 * run["cpu"] / samples, "pass": last["val/pass_rate"],
                 "wait": last.get("pipeline/trainer_wait_frac", 0.0),
                 "gen_wait": last.get("pipeline/generator_wait_frac", 0.0)}
            runs[name].append(m)
            print(f"repeat {rep} {name:13s} {m['train_s']:6.1f} samples/s (train clock), {m['wall_s']:6.1f} (wall), "
                  f"{m['cpu_per_k']:5.2f} CPU-s/1k samples, trainer waited {m['wait']:.2f}, generators waited for "
                  f"weights {m['gen_wait']:.2f}, pass {m['pass']:.3f}",
                  flush=True)
    syncs = [c for c in args.configs if c in SYNC]
    best = [max(runs[c][i]["train_s"] for c in syncs) for i in range(args.repeats)] if syncs else None
    rows = []
    for name in args.configs:
        r = runs[name]
        ratio = spread([x["train_s"] / b for x, b in zip(r, best)], "{:.2f}") if best else "-"
        rows.append([name, spread([x["train_s"] for x in r], "{:.0f}"), spread([x["wall_s"] for x in r], "{:.0f}"),
                     spread([x["cpu_per_k"] for x in r], "{:.2f}"), ratio, spread([x["wait"] for x in r], "{:.2f}"),
                     spread([x["gen_wait"] for x in r], "{:.2f}"), spread([x["pass"] for x in r], "{:.3f}")])
    load = os.getloadavg()
    print(f"\ntiny model, {args.steps} steps of 16 x 8 samples, {args.repeats} interleaved repeats, median [min-max]; "
          f"{os.cpu_count()} CPUs, load average at the end {load[0]:.1f} / {load[1]:.1f} / {load[2]:.1f}\n")
    print(table(["config", "samples/s (train clock)", "samples/s (wall)", "CPU-s / 1k samples", "x best sync",
                 "trainer idle", "generators waiting", "pass rate"], rows))
    if best:
        print(f"\nbest sync per repeat: {', '.join(f'{b:.0f}' for b in best)} samples/s; "
              f"median {statistics.median(best):.0f}")


if __name__ == "__main__":
    main()
