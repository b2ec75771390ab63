"""The live forecast's cost over a run: seconds a refit takes at n evaluations, and what a run spends fitting.

    python benchmarks/live_forecast_cost.py                       # refits at 10 ... 10,000 evaluations
    python benchmarks/live_forecast_cost.py --sizes 100 1000 10000

After each evaluation the trainer hands the evaluation rows so far to
``scalerl.train.live_forecast.live_forecast`` (the default 200 bootstrap resamples). Here the rows are a
noisy sigmoid (pass rate against FLOPs, deterministic "noise"); each size is timed ``--repeats`` times
(the median), by the process's CPU time, with one BLAS thread. A run's total is then the sum, over the
evaluations at which it refits, of the refit time at that size -- interpolated linearly between the
measured sizes (a refit's time grows about linearly with n; the printed per-size times show how
nearly), so the totals are estimates built from the measurements, labelled as such -- once for a refit
at every evaluation and once for the schedule ``forecast.refit_growth`` sets.
"""

from __future__ import annotations

import argparse
import math
import os
import time

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")

import numpy as np  # noqa: E402

from scalerl.train.config import ForecastConfig  # noqa: E402
from scalerl.train.live_forecast import live_forecast, refit_points  # noqa: E402


def rows(n: int) -> list[dict]:
    """n evaluation rows of a run that evaluates every step: a sigmoid in FLOPs plus a fixed wobble."""
    out = []
    for s in range(n):
        y = 0.10 + 0.50 / (1.0 + (0.3 * n / max(s, 0.5)) ** 1.3) + 0.01 * math.sin(7.3 * s)
        out.append({"step": s, "flops": s * 2.4e10, "val/pass_rate": round(y, 4)})
    return out


def refit_seconds(n: int, repeats: int) -> float:
    data = rows(n)
    times = []
    for _ in range(repeats):
        start = time.process_time()
        out = live_forecast(data, x="flops", y="val/pass_rate", total_steps=2 * n)
        times.append(time.process_time() - start)
        if out.get("forecast/status") != "ok":
            raise SystemExit(f"{n} evaluations: {out.get('forecast/status')}")
    return float(np.median(times))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[10, 100, 300, 1000, 3000, 10000])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--runs", type=int, nargs="+", default=[100, 1000, 10000],
                    help="run lengths (evaluations) whose total fitting time is estimated")
    args = ap.parse_args(argv)
    default_growth = ForecastConfig().refit_growth
    sizes = sorted(set(args.sizes))
    seconds = [refit_seconds(n, args.repeats) for n in sizes]
    print(f"live forecast refit (200 resamples, one BLAS thread, median of {args.repeats}, CPU seconds):")
    print("| evaluations | one refit (s) |\n|---:|---:|")
    for n, s in zip(sizes, seconds):
        print(f"| {n:,} | {s:.3f} |")
    # Beyond the largest size measured, extend the last segment's slope (marked "extrapolated").
    slope = (seconds[-1] - seconds[-2]) / (sizes[-1] - sizes[-2]) if len(sizes) > 1 else seconds[-1] / sizes[-1]

    def at(n: int) -> float:
        return float(np.interp(n, sizes, seconds)) if n <= sizes[-1] else seconds[-1] + slope * (n - sizes[-1])

    print(f"\nfitting time over a run (estimated from the refit times above; refit_growth {default_growth} is the default):")
    print("| evaluations | refits, every evaluation | fitting, every evaluation | refits, refit_growth "
          f"{default_growth} | fitting, refit_growth {default_growth} |\n|---:|---:|---:|---:|---:|")
    min_points = ForecastConfig().min_points
    for n in sorted(args.runs):
        every = range(min_points, n + 1)
        grown = refit_points(n, min_points=min_points, growth=default_growth)
        grown += [] if grown[-1] == n else [n]  # the run's last evaluation always refits
        note = " (extrapolated)" if n > sizes[-1] else ""
        print(f"| {n:,}{note} | {len(every):,} | {_duration(sum(at(k) for k in every))} | {len(grown):,} | "
              f"{_duration(sum(at(k) for k in grown))} |")
    return 0


def _duration(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 600 else f"{seconds / 60:.0f} min" if seconds < 7200 else f"{seconds / 3600:.1f} h"


if __name__ == "__main__":
    raise SystemExit(main())
