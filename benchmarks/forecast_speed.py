"""Speed of the fitting methods, side by side on the same data.

``paper``: the paper's grid (71 A values x 100 C_mid values, curve_fit for B in each cell).
``fast``: profile over A with the linearising transform, then a bounded least-squares refine.
Also: the default forecast on 200 points -- sigmoid + 1,000-resample bootstrap (parameter
intervals), the ensemble with its rolling origins, both bands, the stability check, and the
forecast at three compute values -- which must stay under 1 s. Times are the best of
``--repeats`` runs, in CPU seconds (``time.process_time``: insensitive to other jobs on the
machine) and wall seconds.

    python benchmarks/forecast_speed.py [--repeats 3]
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from scalerl.curves import Curve, Sigmoid, bootstrap, fit_sigmoid, forecast


def best_time(fn, repeats: int, clock=time.perf_counter) -> tuple[float, object]:
    out, best = None, float("inf")
    for _ in range(repeats):
        t0 = clock()
        out = fn()
        best = min(best, clock() - t0)
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
    tc, _ = best_time(full, args.repeats, time.process_time)
    print(f"\nsigmoid fit + 1,000-resample bootstrap on 200 points: {tc:.2f} CPU-s, {t:.2f} s wall "
          f"(A 95% interval {boot.interval('A')[0]:.3f}..{boot.interval('A')[1]:.3f})")

    def default_forecast():
        fc = forecast(curve)  # everything `scalerl fit` does by default
        return fc, fc.predict([8000, 16000, 80000])

    t, (fc, preds) = best_time(default_forecast, args.repeats)
    tc, _ = best_time(default_forecast, args.repeats, time.process_time)
    p = preds[1]
    print(f"default forecast with both bands on 200 points: {tc:.2f} CPU-s, {t:.2f} s wall (target <= 1 s); "
          f"at 2x the last compute {p.R:.3f}, confidence [{p.lo:.3f}, {p.hi:.3f}], prediction "
          f"[{p.obs_lo:.3f}, {p.obs_hi:.3f}]")


if __name__ == "__main__":
    main()
