"""Where the CPU time of a synchronous step goes: cProfile over ``Trainer.run()`` of the side
``ours-grpo`` of ``benchmarks/vs_trl.py`` (the same algorithm as TRL's GRPOTrainer, one thread).

    .venv/bin/python benchmarks/profile_step.py --steps 20          # the top functions by own time
    .venv/bin/python benchmarks/profile_step.py --steps 20 --callees _generate   # inside the decode loop

Prints wall and CPU seconds of the run, then the functions with the most own time (``tottime``);
``--callees NAME`` also prints what functions matching NAME spend their time in. The figures are
per run: divide by ``--steps`` for a step.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vs_trl  # noqa: E402  (the benchmark's shared set-up: model, config of each side)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=20)
    ap.add_argument("--top", type=int, default=30, help="how many functions to print")
    ap.add_argument("--callees", help="also print the callees of functions matching this name")
    args = ap.parse_args()
    from scalerl.train.trainer import Trainer

    work = Path(tempfile.mkdtemp(prefix="scalerl-profile-"))
    try:
        shutil.copytree(vs_trl.tiny_dir(), work / "model")
        cfg = vs_trl.base_config(str(work / "model"), str(work / "run"), args.steps, 0, 1, vs_trl.MATCHED)
        trainer = Trainer(cfg)
        profile = cProfile.Profile()
        t, c = time.perf_counter(), time.process_time()
        profile.enable()
        trainer.run()
        profile.disable()
        print(f"{args.steps} steps: wall {time.perf_counter() - t:.2f} s, CPU {time.process_time() - c:.2f} s")
        stats = pstats.Stats(profile)
        stats.sort_stats("tottime").print_stats(args.top)
        if args.callees:
            stats.sort_stats("cumulative").print_callees(args.callees)
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    main()
