"""Backtests on the real RL runs shipped in examples/data: fit on the first part of the
compute, score the rest, for the sigmoid (default method) and the power law side by side.
The naive sigmoid (every point, R0 = first evaluation) is shown for reference.

Targets for the default method at the half-budget cut: MAE <= 0.015 over the held-out half
and |last-point error| <= 0.02.

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
    print(f"{'run':<24} {'cut':>4}  {'sigmoid MAE':>11} {'last err':>8}  {'power MAE':>9} {'last err':>8}  "
          f"{'naive MAE':>9} {'last err':>8}  dropped")
    for c in curves:
        for f in args.cuts:
            bt = backtest(c, cut_fraction=f, n_boot=0)
            naive = backtest(c, cut_fraction=f, n_boot=0, fit_from=None)
            pl = bt.power_law
            dropped = bt.forecast.fit.early_cut.dropped if bt.forecast.fit.early_cut else 0
            mark = " <- target" if f == 0.5 else ""
            print(f"{c.name[:24]:<24} {f:>4.1f}  {bt.sigmoid.mae:>11.4f} {bt.sigmoid.last_error:>+8.4f}  "
                  f"{pl.mae:>9.4f} {pl.last_error:>+8.4f}  {naive.sigmoid.mae:>9.4f} {naive.sigmoid.last_error:>+8.4f}  "
                  f"{dropped}{mark}")


if __name__ == "__main__":
    main()
