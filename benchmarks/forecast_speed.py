"""Speed of the fitting methods, side by side on the same data.

``paper``: the paper's grid (71 A values x 100 C_mid values, curve_fit for B in each cell).
``fast``: profile over A with the linearising transform, then a bounded least-squares refine.
Also: a full default fit plus a 1,000-resample bootstrap on 200 points.

    python benchmarks/forecast_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scalerl.curves import Curve, Sigmoid, bootstrap, fit_sigmoid


def best_time(fn, repeats: int) -> tuple[float, object]:
    out, best = None, float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    law = Sigmoid(A=0.610, B=1.92, C_mid=2542.0, R0=0.30)
    print(f"{'points':>6}  {'paper s':>8}  {'fast s':>8}  {'speed-up':>8}  {'paper SSE':>10}  {'fast SSE':>10}  {'paper A':>7}  {'fast A':>7}")
    for n in (25, 50, 100, 200):
        rng = np.random.default_rng(n)
        x = np.r_[0.0, np.linspace(8000 / n, 8000, n)]
        curve = Curve.from_arrays(x, np.clip(law(x) + rng.normal(0, 0.01, x.size), 0, 1))
        tp, fp = best_time(lambda: fit_sigmoid(curve, method="paper", fit_from=None), args.repeats)
        tf, ff = best_time(lambda: fit_sigmoid(curve, method="fast", fit_from=None), args.repeats)
        print(f"{n:>6}  {tp:>8.3f}  {tf:>8.4f}  {tp / tf:>7.0f}x  {fp.sse:>10.6f}  {ff.sse:>10.6f}  {fp.A:>7.3f}  {ff.A:>7.3f}")

    rng = np.random.default_rng(0)
    x = np.r_[0.0, np.linspace(40, 8000, 200)]
    curve = Curve.from_arrays(x, np.clip(law(x) + rng.normal(0, 0.01, x.size), 0, 1))

    def full():
        fit = fit_sigmoid(curve)  # default: fast, auto opening-plateau check
        return bootstrap(fit, 1000)

    t, boot = best_time(full, args.repeats)
    print(f"\nfull default fit + 1,000-resample bootstrap on 200 points: {t:.2f} s "
          f"(A 95% interval {boot.interval('A')[0]:.3f}..{boot.interval('A')[1]:.3f})")


if __name__ == "__main__":
    main()
