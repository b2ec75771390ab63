"""Samples/s of ``scalerl train --nproc 1`` vs ``--nproc 2`` on the tiny model (CPU, gloo, FSDP2).

    python benchmarks/nproc_speed.py [--steps 10] [--nproc 1 2] [--pipelines sync pipeline-rl-k] [--repeats 1] [--threads N]

Each configuration is a real ``scalerl train`` run (tiny model, the cpu-tiny profile: 16 prompts x 8
samples a step). Printed per run: samples/s over the training steps (generation + update; the
meter's clock, evaluations excluded), the wall time of the whole command (process start-up and
evaluations included), and the CPU-seconds all its processes used. Re-run it on a quiet machine:
the wall-clock figures move with whatever else runs.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path


def one_run(out: Path, nproc: int, pipeline: str, steps: int, threads: int | None = None) -> dict[str, float]:
    cmd = [sys.executable, "-m", "scalerl.cli", "train", "--model", "tiny", "--output", str(out), "--no-progress",
           "--steps", str(steps), "--eval-every", str(steps), "--nproc", str(nproc),
           "--set", f"pipeline={pipeline}", "--set", "k=1" if pipeline == "sync" else "k=8",
           "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2", "--set", "forecast.enabled=false"]
    if threads:  # the trainer's torch threads (--nproc N: split between the ranks, at least 1 each)
        cmd += ["--threads", str(threads)]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    rows = [json.loads(line) for line in open(out / "runlog.jsonl")][1:]
    last = [r for r in rows if r.get("type") == "eval"][-1]
    # gpu_hours counts train-step time x devices (1 + nproc - 1 trainer ranks on the local backend).
    train_s = last["gpu_hours"] * 3600.0 / nproc
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"samples_per_s": last["samples"] / train_s, "wall_s": wall, "cpu_s": cpu, "train_s": train_s}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--nproc", type=int, nargs="+", default=[1, 2])
    p.add_argument("--pipelines", nargs="+", default=["sync", "pipeline-rl-k"])
    p.add_argument("--repeats", type=int, default=1)
    p.add_argument("--threads", type=int, default=None,
                   help="pass --threads N to every run (default: scalerl's choice: torch's default for one "
                        "synchronous process, the cores split between ranks)")
    args = p.parse_args()
    print(f"cores: {os.cpu_count()}, steps: {args.steps}, 128 samples a step (cpu-tiny profile)")
    print(f"{'pipeline':<15} {'nproc':>5} {'samples/s (train steps)':>24} {'train s':>8} {'wall s':>7} {'CPU s':>7}")
    with tempfile.TemporaryDirectory() as tmp:
        for pipeline in args.pipelines:
            for nproc in args.nproc:
                runs = [one_run(Path(tmp) / f"{pipeline}-{nproc}-{i}", nproc, pipeline, args.steps, args.threads)
                        for i in range(args.repeats)]
                med = {k: statistics.median(r[k] for r in runs) for k in runs[0]}
                spread = f" [{min(r['samples_per_s'] for r in runs):.0f}-{max(r['samples_per_s'] for r in runs):.0f}]" \
                    if len(runs) > 1 else ""
                print(f"{pipeline:<15} {nproc:>5} {med['samples_per_s']:>15.0f}{spread:>9} {med['train_s']:>8.1f} "
                      f"{med['wall_s']:>7.1f} {med['cpu_s']:>7.1f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
