"""The leave-one-out study and the recipe comparison on the tiny model, timed (docs/study.md).

    .venv/bin/python benchmarks/study_tiny.py                        # both, 1 seed, 400 steps: ~3.5 h on 2 shared cores
    .venv/bin/python benchmarks/study_tiny.py --families loo --seeds 2
    .venv/bin/python benchmarks/study_tiny.py --output runs/bench    # continue an interrupted benchmark

Each family runs ``scalerl study configs/studies/<family>.yaml`` into ``<output>/study-<family>``
(a killed benchmark continues where it stopped: finished runs are skipped), then prints the wall
time and the study's tables. Wall times on a shared machine are noisy; the tables are not timing.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--families", nargs="+", default=["loo", "recipes"], help="spec files in configs/studies/")
    parser.add_argument("--seeds", type=int, help="seeds per variant (default: the spec's, 1)")
    parser.add_argument("--steps", type=int, help="steps per run (default: the spec's, 400)")
    parser.add_argument("--output", default="runs/bench", help="where the study directories go")
    args = parser.parse_args()
    scalerl = [sys.executable, "-m", "scalerl.cli"]
    for family in args.families:
        out = Path(args.output) / f"study-{family}"
        cmd = [*scalerl, "study", str(ROOT / "configs" / "studies" / f"{family}.yaml"), "--output", str(out),
               "--no-progress", "--no-report"]
        if args.seeds:
            cmd += ["--seeds", str(args.seeds)]
        if args.steps:
            cmd += ["--steps", str(args.steps)]
        print("$ " + " ".join(cmd[2:]), flush=True)
        t0 = time.perf_counter()
        code = subprocess.call(cmd)
        runs = time.perf_counter() - t0
        t1 = time.perf_counter()
        subprocess.check_call([*scalerl, "report", str(out)])
        print(f"\n{family}: runs {runs / 60:.1f} min, fits and report {time.perf_counter() - t1:.0f} s "
              f"(exit {code}); report: {out / 'report.html'}\n", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
