"""The forecaster on logs with a value at every step: time and peak memory of `scalerl fit` and `backtest`.

    python benchmarks/big_logs.py                       # 1,000, 10,000 and 100,000 points
    python benchmarks/big_logs.py --points 10000 --commands fit

Each log is a CSV of a noisy sigmoid (a pass rate logged at every step, as a per-step reward is read), written
to a temporary directory; each command runs in a fresh process (its defaults: 1000 bootstrap resamples for
`fit`), timed by the wall clock and by the process's own CPU time, with its peak resident memory
(``ru_maxrss``). One BLAS thread, so that the figures do not depend on how busy the other cores are.
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

#: Run in the child: the command, then its own CPU seconds and peak memory on the last line of stderr.
_CHILD = """
import json, resource, sys, time
from scalerl.cli import main
code = main(sys.argv[1:])
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"code": code, "cpu_s": usage.ru_utime + usage.ru_stime, "peak_mb": usage.ru_maxrss / 1024}),
      file=sys.stderr)
"""


def write_log(path: Path, n: int) -> None:
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["step", "flops", "acc"])
        for s in range(1, n + 1):
            y = 0.30 + 0.32 / (1.0 + (0.25 * n / s) ** 1.4) + 0.01 * math.sin(7.3 * s)  # deterministic "noise"
            out.writerow([s, s * 2.4e10, f"{y:.4f}"])


def measure(args: list[str]) -> dict[str, float]:
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    start = time.perf_counter()
    proc = subprocess.run([sys.executable, "-c", _CHILD, *args], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - start
    if proc.returncode != 0 and not proc.stderr.strip().splitlines()[-1:]:
        raise SystemExit(proc.stderr)
    usage = json.loads(proc.stderr.strip().splitlines()[-1])
    if usage["code"] != 0:
        raise SystemExit(f"{' '.join(args)} failed:\n{proc.stderr}")
    return {"wall_s": wall, **usage}


COMMANDS = {
    "fit": lambda log: ["fit", str(log), "--x", "flops", "--y", "acc"],
    "backtest": lambda log: ["backtest", str(log), "--x", "flops", "--y", "acc", "--cut-fraction", "0.5"],
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--points", type=int, nargs="+", default=[1_000, 10_000, 100_000])
    parser.add_argument("--commands", nargs="+", choices=list(COMMANDS), default=list(COMMANDS))
    args = parser.parse_args()
    print(f"{'points':>8} {'command':>9} {'wall s':>8} {'CPU s':>8} {'peak MB':>8}")
    with tempfile.TemporaryDirectory() as tmp:
        for n in args.points:
            log = Path(tmp) / f"every_step_{n}.csv"
            write_log(log, n)
            for name in args.commands:
                row = measure(COMMANDS[name](log))
                print(f"{n:8d} {name:>9} {row['wall_s']:8.1f} {row['cpu_s']:8.1f} {row['peak_mb']:8.0f}", flush=True)


if __name__ == "__main__":
    main()
