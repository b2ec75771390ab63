"""Backtests on the two real verl runs of examples/data/real_rl_curves.csv: fit on the first
part of the compute, score the rest -- the default forecast (ensemble, with its 95% bands),
the paper's sigmoid on the default window, the plain sigmoid (every point) and the power law.

Targets for the default forecast at the half-budget cut: MAE <= 0.015 over the held-out
half and |end-level error| <= 0.02 (end level: mean of the last quarter of held-out points).
Every shipped real run, with leave-one-source-out calibration: benchmarks/forecast_corpus.py.

    python benchmarks/forecast_real_backtests.py [--cuts 0.3 0.4 0.5 0.6 0.7]
"""

from __future__ import annotations

import argparse
from pathlib import Path

from scalerl.curves import backtest, read_curves

DATA = Path(__file__).resolve().parents[1] / "examples" / "data" / "real_rl_curves.csv"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--cuts", type=float, nargs="+", default=[0.3, 0.4, 0.5, 0.6, 0.7])
    args = ap.parse_args()
    curves = read_curves(DATA, "cum_wall_hours", "val_score")
    print(f"{'run':<24} {'cut':>4}  {'forecast MAE':>12} {'end err':>8} {'end in band':>11} {'half-width':>10}  "
          f"{'sigmoid MAE':>11}  {'plain MAE':>9}  {'power MAE':>9}")
    for c in curves:
        for f in args.cuts:
            bt = backtest(c, cut_fraction=f, n_boot=0)
            mark = " <- target" if f == 0.5 else ""
            print(f"{c.name[:24]:<24} {f:>4.1f}  {bt.default.mae:>12.4f} {bt.default.end_error:>+8.4f} "
                  f"{'yes' if bt.bands.end_covered else 'NO':>11} {bt.bands.end_half_width:>10.3f}  {bt.sigmoid.mae:>11.4f}  "
                  f"{bt.plain_sigmoid.mae:>9.4f}  {bt.power_law.mae:>9.4f}{mark}")


if __name__ == "__main__":
    main()
