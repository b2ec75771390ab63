"""PipelineRL-8 vs synchronous vs PPO-off-policy-8 on the tiny model, side by side in one run.

    .venv/bin/python benchmarks/pipeline_modes.py                     # 150 steps, seeds 0 1; speed 4 x 30 steps
    .venv/bin/python benchmarks/pipeline_modes.py --steps 100 --seeds 0 1 2 --speed-repeats 6

Two parts, because on a shared machine wall-clock speed and learning need different designs:

* **speed** -- short runs (--speed-steps) of the three modes, interleaved --speed-repeats
  times so that the three runs of a repeat see the same load; per repeat, each mode's
  samples/s over the training clock (evaluation excluded) is divided by sync's. Also logged:
  the share of the training clock the trainer waited for data ("trainer idle") and the share
  generators had no work.
* **learning** -- full runs (--steps, evaluating mean@4 on 200 held-out problems every
  --eval-every steps) from the same seeds: the pass rate after the same number of steps, i.e.
  the same samples and FLOPs.

Then "the pass rate reached for the same compute" on this machine, where all modes get the same
2 cores: give every mode the wall-clock time sync needs for --steps steps; each mode gets
through time x (its steps/s, from the speed part) steps, and its pass rate there is read off
its learning curve (mean over seeds, linear between evaluations).

Every process uses one torch thread: on this shared 2-core machine two threads made a sync
step 4-7x slower (measured), so the synchronous modes run on one core, and PipelineRL-k runs
its trainer on one core and a generator process on the other -- which is the point of it.
"""

from __future__ import annotations

import argparse
import statistics

from pipeline_common import interpolate, spread, table, train

MODES = {
    "sync": ["pipeline=sync", "k=1"],
    "ppo-off-policy-8": ["pipeline=ppo-off-policy-k", "k=8"],
    "pipeline-rl-8": ["pipeline=pipeline-rl-k", "k=8", "backend.workers=threads"],  # seeded updates (the default)
    "pipeline-rl-8-timing": ["pipeline=pipeline-rl-k", "k=8", "backend.workers=threads", "backend.updates=timing"],
    "pipeline-rl-8-processes": ["pipeline=pipeline-rl-k", "k=8", "backend.workers=processes"],
}
DEFAULT_MODES = ["sync", "ppo-off-policy-8", "pipeline-rl-8"]


def speed(args) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {m: [] for m in args.modes}
    for rep in range(args.speed_repeats):
        for mode in args.modes:
            run = train([*MODES[mode], "eval.problems=16", "eval.samples_per_problem=1"], steps=args.speed_steps,
                        eval_every=args.speed_steps, seed=100 + rep, threads=args.threads)
            last = run["evals"][-1]
            seconds = last["gpu_hours"] * 3600
            m = {"steps_s": args.speed_steps / seconds, "samples_s": last["samples"] / seconds,
                 "wait": last["pipeline/trainer_wait_frac"], "idle": last["pipeline/generator_idle_frac"]}
            out[mode].append(m)
            print(f"speed repeat {rep} {mode:17s} {m['samples_s']:.1f} samples/s, trainer idle {m['wait']:.2f}, "
                  f"generator idle {m['idle']:.2f}", flush=True)
    return out


def learning(args) -> dict[str, list[dict]]:
    out: dict[str, list[dict]] = {m: [] for m in args.modes}
    for seed in args.seeds:
        for mode in args.modes:
            run = train(MODES[mode], steps=args.steps, eval_every=args.eval_every, seed=seed, threads=args.threads)
            evals = run["evals"]
            run["lag"] = max(r.get("lag_max_since_eval", 0) for r in evals)
            out[mode].append(run)
            print(f"learning seed {seed} {mode:17s} pass rate " + " ".join(f"{r['val/pass_rate']:.3f}" for r in evals),
                  flush=True)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--steps", type=int, default=150)
    parser.add_argument("--eval-every", type=int, default=25)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--speed-steps", type=int, default=30)
    parser.add_argument("--speed-repeats", type=int, default=4)
    parser.add_argument("--threads", type=int, default=1)
    parser.add_argument("--modes", nargs="+", default=DEFAULT_MODES, choices=list(MODES))
    parser.add_argument("--part", choices=["speed", "both"], default="both",
                        help="speed: only the interleaved speed runs (no learning curves)")
    args = parser.parse_args()
    assert args.modes[0] == "sync", "ratios are to sync: list it first"

    fast = speed(args)
    ratio = {m: [a["samples_s"] / b["samples_s"] for a, b in zip(fast[m], fast["sync"])] for m in args.modes}
    if args.part == "speed":
        print(f"\nspeed: {args.speed_repeats} interleaved repeats of {args.speed_steps} steps, median [min-max]\n")
        print(table(["mode", "samples/s", "x sync", "trainer idle", "generator idle"],
                    [[m, spread([r["samples_s"] for r in fast[m]], "{:.0f}"), spread(ratio[m], "{:.2f}"),
                      spread([r["wait"] for r in fast[m]], "{:.2f}"), spread([r["idle"] for r in fast[m]], "{:.2f}")]
                     for m in args.modes]))
        return
    learn = learning(args)

    steps = [r["step"] for r in learn["sync"][0]["evals"]]
    curve = {m: [statistics.mean(run["evals"][j]["val/pass_rate"] for run in learn[m]) for j in range(len(steps))]
             for m in args.modes}
    start = curve["sync"][0]
    # The same wall-clock time for every mode: what sync needs for args.steps steps.
    reach = {m: min(args.steps * statistics.median(ratio[m]), args.steps) for m in args.modes}
    at_time = {m: interpolate(steps, curve[m], reach[m]) for m in args.modes}

    print(f"\ntiny model, 128 samples per step, {args.threads} torch thread per process. Speed: {args.speed_repeats} "
          f"interleaved repeats of {args.speed_steps} steps, median [min-max]. Learning: {args.steps} steps, "
          f"seeds {args.seeds}, mean.\n")
    rows = []
    for m in args.modes:
        rows.append([m, spread([r["samples_s"] for r in fast[m]], "{:.0f}"), spread(ratio[m], "{:.2f}"),
                     spread([r["wait"] for r in fast[m]], "{:.2f}"), spread([r["idle"] for r in fast[m]], "{:.2f}"),
                     max(run["lag"] for run in learn[m]), f"{curve[m][-1]:.3f}",
                     f"{reach[m]:.0f}", f"{at_time[m]:.3f}"])
    print(table(["mode", "samples/s", "x sync", "trainer idle", "generator idle", "max lag",
                 f"pass @ {args.steps} steps", "steps in sync's time", "pass @ equal time"], rows))
    print("\npass-rate gain over the start, relative to sync's:")
    for m in args.modes[1:]:
        g_steps = (curve[m][-1] - start) / max(curve["sync"][-1] - start, 1e-9)
        g_time = (at_time[m] - start) / max(at_time["sync"] - start, 1e-9)
        print(f"  {m:17s} at equal steps x{g_steps:.2f}, at equal wall-clock time x{g_time:.2f}")
    print("\nval/pass_rate by step (mean over seeds):")
    print(table(["step", *args.modes], [[s, *(f"{curve[m][j]:.3f}" for m in args.modes)] for j, s in enumerate(steps)]))


if __name__ == "__main__":
    main()
