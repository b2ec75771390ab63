"""Recovery of the paper's fitted curves from noisy synthetic data.

For every row of the paper's table (docs/paper.md), draw curves with Gaussian noise of 0.01 at
evaluation points that reach past C_mid, fit with the default method, bootstrap a 95%
interval, and report how often the true A lies inside it and the median |A error|.

    python benchmarks/forecast_recovery.py [--seeds 50] [--boot 400]
"""

from __future__ import annotations

import argparse
import time
import zlib

import numpy as np

from scalerl.curves import Curve, Sigmoid, bootstrap, fit_sigmoid

# (C_mid, B, A) from the paper (docs/paper.md, "Fitted values"), GB200 GPU-hours.
PAPER = {
    "ScaleRL 8B": (2542, 1.92, 0.610),
    "32k gen length": (11272, 1.89, 0.645),
    "batch 512": (2818, 1.77, 0.605),
    "batch 2048": (10909, 1.70, 0.645),
    "8 gens/prompt": (2542, 2.44, 0.585),
    "24 gens/prompt": (3054, 2.22, 0.590),
    "32 gens/prompt": (2936, 2.07, 0.595),
    "Scout MoE": (4242, 1.65, 0.710),
    "math curve": (2896, 2.05, 0.595),
    "code curve": (1675, 1.09, 0.615),
}
R0 = 0.30


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=50)
    ap.add_argument("--boot", type=int, default=400)
    ap.add_argument("--points", type=int, default=100)
    ap.add_argument("--reach", type=float, default=3.0, help="last evaluation at REACH x C_mid")
    ap.add_argument("--noise", type=float, default=0.01)
    args = ap.parse_args()
    print(f"noise sd {args.noise}, {args.points} evaluations up to {args.reach:g} x C_mid plus one at C=0, "
          f"{args.seeds} seeds, {args.boot}-resample residual bootstrap, 95% intervals\n")
    print(f"{'curve':<16} {'A':>6} {'B':>5} {'C_mid':>6}  {'A in 95% CI':>11}  {'median |A err|':>14}  {'median |B err|/B':>16}  {'CI width':>8}")
    t0 = time.perf_counter()
    all_cover, all_err = [], []
    for name, (cm, B, A) in PAPER.items():
        law = Sigmoid(A=A, B=B, C_mid=cm, R0=R0)
        cover, errs, berrs, widths = [], [], [], []
        for s in range(args.seeds):
            rng = np.random.default_rng([zlib.crc32(name.encode()), s])
            x = np.r_[0.0, np.linspace(args.reach * cm / args.points, args.reach * cm, args.points)]
            y = np.clip(law(x) + rng.normal(0.0, args.noise, x.size), 0, 1)
            fit = fit_sigmoid(Curve.from_arrays(x, y))
            lo, hi = bootstrap(fit, args.boot, seed=s).interval("A")
            cover.append(lo <= A <= hi)
            errs.append(abs(fit.A - A))
            berrs.append(abs(fit.B - B) / B)
            widths.append(hi - lo)
        all_cover += cover
        all_err += errs
        print(f"{name:<16} {A:>6.3f} {B:>5.2f} {cm:>6d}  {np.mean(cover):>11.0%}  {np.median(errs):>14.4f}  "
              f"{np.median(berrs):>16.2f}  {np.median(widths):>8.3f}")
    print(f"\nall curves: A inside its 95% interval in {np.mean(all_cover):.0%} of {len(all_cover)} fits; "
          f"median |A error| {np.median(all_err):.4f}  ({time.perf_counter() - t0:.0f} s)")


if __name__ == "__main__":
    main()
