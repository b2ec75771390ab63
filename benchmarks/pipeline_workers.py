"""PipelineRL-k on one machine: generator threads vs generator processes (backend.workers).

    .venv/bin/python benchmarks/pipeline_workers.py                    # both parts, 3 interleaved repeats
    .venv/bin/python benchmarks/pipeline_workers.py --part overlap --repeats 5 --seconds 30
    .venv/bin/python benchmarks/pipeline_workers.py --part pipeline --steps 40

Part 1, ``overlap`` -- what each way of running a generator costs the trainer and gets done
itself. In one process the trainer loop takes optimizer steps on a fixed batch (cpu-tiny:
16 prompts x 8 generations) and pushes its weights after each, exactly as in a run, while one
generator -- a thread (ThreadPool) or a process (ProcessPool) -- is kept busy with batch
requests; for --seconds we count optimizer steps and generated samples. Each is compared with
the trainer alone and the generator alone, and the two shares are added: "combined" 2.0 would
mean both ran as fast as alone (two free cores), 1.0 no better than taking turns.

Part 2, ``pipeline`` -- whole runs: PipelineRL-8 for --steps steps from the same seed, in a
fresh process, with threads or processes and 1 or 2 generators (evaluation cut to 16 problems
at the start and the end). steps/s and samples/s over the training clock; trainer wait and
generator idle as logged (pipeline/*).

Every configuration runs --repeats times, interleaved (the machine is shared: its load
drifts); tables show median [min-max]. Every process uses one torch thread.
"""

from __future__ import annotations

import argparse
import tempfile
import threading
import time
from pathlib import Path

import torch

from pipeline_common import spread, table, train


def _trainer(workers: str):
    from scalerl.train.config import TrainConfig, resolve
    from scalerl.train.trainer import Trainer

    out = Path(tempfile.mkdtemp(prefix="scalerl-overlap-")) / "run"
    cfg = resolve(TrainConfig(), [f"run.output={out}", "log.progress=false", "run.threads=1", "pipeline=sync", "k=1",
                                  f"backend.workers={workers}"])
    return Trainer(cfg)


def overlap_once(mode: str, seconds: float) -> dict[str, float]:
    """mode: train (alone), generate (alone, a thread), threads or processes (both at once)."""
    from scalerl.pipeline.processes import ProcessPool
    from scalerl.pipeline.threads import ThreadPool
    from scalerl.pipeline.work import RoundRequest
    from scalerl.rollout.produce import make_batch
    from scalerl.train.update import policy_update

    torch.set_num_threads(1)
    trainer = _trainer("processes" if mode == "processes" else "threads")
    batch = make_batch(trainer.rollout, trainer.generator, 0)  # the fixed batch the trainer loop steps on
    recipe = trainer.cfg.recipe
    generated: list[tuple[float, int]] = []
    pool = None
    if mode != "train":
        pool = (ProcessPool if mode == "processes" else ThreadPool).for_context(trainer.pipeline)
        counter = [0]
        ready = threading.Event()

        def request():
            counter[0] += 1
            ids = trainer.sampler.sample(recipe.batch.prompts_per_step)
            return RoundRequest(counter[0], 0, [trainer.rollout.problems[i] for i in ids],
                                trainer.rollout.sampling_params(counter[0]), min_version=0)

        def deliver(result):
            generated.append((time.perf_counter(), result.samples))
            ready.set()
            pool.submit(request())  # keep the generator busy

        pool.submit(request())
        pool.submit(request())
        pool.start(deliver, lambda e: print("generator failed:", e))
        ready.wait(300)  # start-up (a process loads torch and the model) is not measured
    t0 = time.perf_counter()
    steps, version = 0, 0
    if mode == "generate":
        time.sleep(seconds)
    else:
        while time.perf_counter() - t0 < seconds:
            policy_update(trainer.model, trainer.optimizer, trainer.scheduler, batch.groups, trainer.components,
                          temperature=1.0, pad_token_id=trainer.pad_id, micro_batch_size=64, version=version)
            steps += 1
            version += 1
            if pool is not None:
                pool.push_weights(trainer.model, version)
    elapsed = time.perf_counter() - t0
    samples = sum(n for t, n in generated if t0 <= t <= t0 + elapsed)
    if pool is not None:
        pool.close()
    trainer.source.close()
    return {"steps_s": steps / elapsed, "samples_s": samples / elapsed}


def overlap(args) -> None:
    modes = ["train", "generate", "threads", "processes"]
    results: dict[str, list[dict[str, float]]] = {m: [] for m in modes}
    for rep in range(args.repeats):
        for mode in modes:
            m = overlap_once(mode, args.seconds)
            results[mode].append(m)
            print(f"repeat {rep} {mode:9s}: {m['steps_s']:.3f} steps/s, {m['samples_s']:.1f} samples/s", flush=True)
    rows = []
    for mode in ("threads", "processes"):
        combined = []
        for i, m in enumerate(results[mode]):
            # Shares of the alone-rates of the same repeat (adjacent in time, so under similar load).
            combined.append(m["steps_s"] / results["train"][i]["steps_s"]
                            + m["samples_s"] / results["generate"][i]["samples_s"])
        rows.append([mode, spread([m["steps_s"] for m in results[mode]]),
                     spread([m["samples_s"] for m in results[mode]], "{:.0f}"), spread(combined, "{:.2f}")])
    rows.insert(0, ["trainer alone", spread([m["steps_s"] for m in results["train"]]), "-", "1.00"])
    rows.insert(1, ["generator alone", "-", spread([m["samples_s"] for m in results["generate"]], "{:.0f}"), "1.00"])
    print(f"\nPart 1: trainer and one generator at once, {args.seconds:g} s each, {args.repeats} interleaved "
          f"repeats, median [min-max]\n")
    print(table(["", "trainer steps/s", "generator samples/s", "combined"], rows))


def pipeline(args) -> None:
    configs = [(w, g) for g in args.generators for w in ("threads", "processes")]
    results: dict[tuple[str, int], list[dict]] = {c: [] for c in configs}
    for rep in range(args.repeats):
        for workers, gens in configs:
            run = train(["pipeline=pipeline-rl-k", "k=8", f"backend.workers={workers}", f"backend.generators={gens}",
                         "eval.problems=16", "eval.samples_per_problem=1"],
                        steps=args.steps, eval_every=args.steps, seed=0, threads=1)
            last = run["evals"][-1]
            seconds = last["gpu_hours"] * 3600
            m = {"steps_s": args.steps / seconds, "samples_s": last["samples"] / seconds,
                 "wait": last["pipeline/trainer_wait_frac"], "idle": last["pipeline/generator_idle_frac"],
                 "first": last["pipeline/first_batch_s"]}
            results[(workers, gens)].append(m)
            print(f"repeat {rep} {workers:9s} generators={gens}: {m['steps_s']:.3f} steps/s, "
                  f"wait {m['wait']:.2f}, idle {m['idle']:.2f}, first batch {m['first']:.1f} s", flush=True)
    rows = []
    for workers, gens in configs:
        ms = results[(workers, gens)]
        rows.append([workers, gens, spread([m["steps_s"] for m in ms]), spread([m["samples_s"] for m in ms], "{:.0f}"),
                     spread([m["wait"] for m in ms], "{:.2f}"), spread([m["idle"] for m in ms], "{:.2f}"),
                     spread([m["first"] for m in ms], "{:.1f}")])
    print(f"\nPart 2: pipeline-rl-k (k=8), {args.steps} steps, {args.repeats} interleaved repeats, median [min-max]\n")
    print(table(["workers", "generators", "steps/s", "samples/s", "trainer wait", "generator idle", "first batch s"],
                rows))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--part", choices=["overlap", "pipeline", "both"], default="both")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=20.0)
    parser.add_argument("--steps", type=int, default=30)
    parser.add_argument("--generators", type=int, nargs="+", default=[1, 2])
    args = parser.parse_args()
    if args.part in ("overlap", "both"):
        overlap(args)
    if args.part in ("pipeline", "both"):
        pipeline(args)


if __name__ == "__main__":
    main()
