"""The one-evaluation excursion rule (``scalerl.curves.excursions``): false alarms, power, real runs.

1. **False alarms**: synthetic curves of the paper's 8B law (12-80 evaluations, Gaussian noise
   0.003-0.03, 100 seeds each): how many points each threshold leaves out. Every one is a false
   alarm.
2. **Power**: the same curves with one interior evaluation moved down by d noise levels: how
   often that point is left out (and nothing else).
3. **Real runs**: the shipped runs (verl, Deep-GRPO, TinyZero), each fit window of the 30/50/70%
   cuts: how many evaluations are left out.
4. ``--runs DIR...``: scalerl run directories (the demo's): what is left out of the whole-run fit,
   and A [95%] with and without the rule.

    python benchmarks/excursions.py
    python benchmarks/excursions.py --runs runs/demo-bench/seed*
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

from scalerl.curves import Curve, Sigmoid, forecast, read_curve
from scalerl.curves.excursions import EXCURSION_SD, excursion_mask
from scalerl.curves.window import noise_sd

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
from forecast_corpus import CUTS, load_runs  # noqa: E402

LAW = Sigmoid(A=0.610, B=1.92, C_mid=2542.0, R0=0.30)
SIZES, NOISES, SEEDS = (12, 20, 40, 80), (0.003, 0.01, 0.03), range(100)


def synthetic(n: int, noise: float, seed: int) -> Curve:
    rng = np.random.default_rng(seed)
    x = np.linspace(8000.0 / n, 8000.0, n)
    y = np.clip(LAW(x) + rng.normal(0.0, noise, n), 0, 1)
    return Curve.from_arrays(np.r_[0.0, x], np.r_[LAW.R0, y])


def false_alarms(ks) -> None:
    print("1. false alarms on Gaussian noise (1,200 curves, 45,600 evaluations):")
    for k in ks:
        flagged = curves = 0
        for n in SIZES:
            for noise in NOISES:
                for seed in SEEDS:
                    c = synthetic(n, noise, seed)
                    m = excursion_mask(c.x, c.y, k=k)
                    flagged += int(m.sum())
                    curves += bool(m.any())
        print(f"   threshold {k:g}: {flagged} evaluations left out, in {curves} curves")


def power(k: float) -> None:
    print(f"2. power at threshold {k:g}: one interior evaluation moved down by d noise levels (40 evaluations, "
          "noise 0.01, 100 seeds):")
    for d in (4, 6, 8, 12, 20):
        hit = extra = 0
        for seed in SEEDS:
            c = synthetic(40, 0.01, seed)
            i = 1 + int(np.random.default_rng(seed + 1000).integers(2, 38))
            y = c.y.copy()
            y[i] -= d * 0.01
            m = excursion_mask(c.x, y, k=k)
            hit += bool(m[i])
            extra += int(m.sum() - m[i])
        print(f"   d = {d:>2}: left out in {hit} of 100 curves ({extra} other evaluations left out)")


def real_runs(k: float) -> None:
    runs = load_runs()
    print(f"3. the shipped real runs at threshold {k:g} (fit windows of the {', '.join(f'{int(c * 100)}%' for c in CUTS)} "
          "cuts):")
    for source in dict.fromkeys(s for s, _ in runs):
        left = windows = 0
        for s, curve in runs:
            if s != source:
                continue
            for f in CUTS:
                w = curve.window(None, float(curve.x.max() * f))
                left += int(excursion_mask(w.x, w.y, k=k).sum())
                windows += 1
        print(f"   {source:<9} {left} evaluations left out in {windows} fit windows")


def run_dirs(paths) -> None:
    print("4. run directories: the whole-run fit (x = FLOPs), A [95%] with the rule and with every evaluation:")
    for p in (p for p in paths if Path(p).is_dir()):  # seed*: not the benchmark's *.cost.json beside them
        curve = read_curve(p, "flops", "val/pass_rate")
        fc = forecast(curve, n_boot=500)
        raw = forecast(curve, n_boot=500, excursions=False)
        a, (lo, hi) = fc.fit.A, fc.intervals()["A"]
        ra, (rlo, rhi) = raw.fit.A, raw.intervals()["A"]
        print(f"   {Path(p).name}: noise {noise_sd(curve.y[curve.x > 0]):.4f}; A {a:.3f} [{lo:.3f}, {hi:.3f}] "
              f"(every evaluation: {ra:.3f} [{rlo:.3f}, {rhi:.3f}]); {fc.excursions.describe('compute') or 'none left out'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", nargs="*", default=[], metavar="DIR", help="scalerl run directories to fit")
    args = ap.parse_args()
    t0 = time.process_time()
    false_alarms((4.0, 4.5, EXCURSION_SD))
    power(EXCURSION_SD)
    real_runs(EXCURSION_SD)
    if args.runs:
        run_dirs(args.runs)
    print(f"\n{time.process_time() - t0:.0f} CPU-seconds")


if __name__ == "__main__":
    main()
