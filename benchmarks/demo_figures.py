"""The demo's promises, measured: wall time, pass-rate gain, evaluation points, and how close
the forecast made from the first half of the compute lands on the final evaluation.

Runs ``scalerl demo`` (the exact command of the README, in a subprocess so that model loading
and the tiny model's warm start count) once per seed.

    python benchmarks/demo_figures.py [--seeds 0 1 2 3 4] [--output runs/demo-bench] [-- DEMO ARGS]
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

from scalerl.train.report import write_run_report


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, nargs="+", default=[0])
    ap.add_argument("--output", default="runs/demo-bench")
    ap.add_argument("demo_args", nargs="*", help="extra arguments for scalerl demo (after --), e.g. -- --steps 400")
    args = ap.parse_args()
    rows = []
    for seed in args.seeds:
        out = Path(args.output) / f"seed{seed}"
        shutil.rmtree(out, ignore_errors=True)
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "scalerl.cli", "demo", "--output", str(out), "--seed", str(seed),
                        "--no-progress", *args.demo_args], check=True, stdout=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        f = write_run_report(out).facts
        rows.append({"seed": seed, "wall_s": wall, **{k: f.get(k) for k in (
            "evaluations", "start", "final", "gain", "forecast_final", "forecast_error", "forecast_mae",
            "power_law_final", "fit_A")}})
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'seed':>4} {'wall s':>7} {'evals':>5} {'start':>6} {'final':>6} {'gain':>6} "
          f"{'half-budget forecast':>20} {'error':>7} {'held-out MAE':>12} {'power law':>9}")
    for r in rows:
        print(f"{r['seed']:>4} {r['wall_s']:>7.0f} {r['evaluations']:>5} {r['start']:>6.3f} {r['final']:>6.3f} "
              f"{r['gain']:>+6.3f} {r['forecast_final']:>20.3f} {r['forecast_error']:>+7.3f} "
              f"{r['forecast_mae']:>12.3f} {r['power_law_final']:>9.3f}")
    errors = sorted(abs(r["forecast_error"]) for r in rows)
    walls = sorted(r["wall_s"] for r in rows)
    print(f"\nmedian wall {statistics.median(walls):.0f} s; |forecast error| median {statistics.median(errors):.3f}, "
          f"within 0.05 in {sum(e <= 0.05 for e in errors)} of {len(errors)} seeds; "
          f"held-out MAE median {statistics.median(r['forecast_mae'] for r in rows):.3f}")
    print("targets: wall <= ~360 s on 2 cores, gain >= 0.3, >= 8 evaluations, |error| <= 0.05")


if __name__ == "__main__":
    main()
