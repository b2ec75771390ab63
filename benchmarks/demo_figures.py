"""The demo's promises, measured: wall and CPU time, evaluation points, the fitted ceiling A with
its 95% interval, and how close the forecast made from the first half of the compute lands on
the final evaluation and on the end level (the mean of the last quarter of the held-out
evaluations, as ``scalerl backtest`` scores it: one evaluation can catch the policy
mid-oscillation).

Runs ``scalerl demo`` (the exact command of the README, in a subprocess so that model loading
-- and, with an empty cache, the tiny-m warm start -- count) once per seed. Targets: <= 6
minutes on 2 cores, >= 8 evaluations, A's 95% upper bound below 0.98, the half-budget forecast
of the final point within 0.03 in at least 4 of 5 seeds.

    python benchmarks/demo_figures.py [--seeds 0 1 2 3 4] [--output runs/demo-bench] [-- DEMO ARGS]
    python benchmarks/demo_figures.py --report-only --seeds 0 1 2 3 4     # the table from finished runs
    python benchmarks/demo_figures.py --ends 200 240 260 280 300 --runs runs/demo-bench/seed*   # shorter demos
    python benchmarks/demo_figures.py --paired runs/demo-bench runs/demo-beta95 --seeds 0 1 2 3 4  # two settings

``--paired A B``: no runs: the same seeds' finished demos in two output directories (two settings), seed by
seed -- how often each meets the forecast and A targets, in which seeds one does and the other does not, and
the Wilcoxon signed-rank test of their absolute forecast errors paired by seed (scipy).

``--members RUN...``: no runs: each finished run's half-budget forecast of its final point, the forecast's
own error beside each member's (the sigmoid, the power law, the recent-phase sigmoid, the held level) and
their weights -- whether a miss is the forecast's make-up or a future no law in the window foresees.

``--ends``: the half-budget forecast error had each run ended at step E (its log cut there, the
report's fit on the first half of that compute, the error against the evaluation at E) -- how much
of the error is the choice of the end and how much a bias, without training anything.
"""

from __future__ import annotations

import argparse
import json
import os
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
    ap.add_argument("--report-only", action="store_true", help="no runs: the table from the runs in --output")
    ap.add_argument("demo_args", nargs="*", help="extra arguments for scalerl demo (after --), e.g. -- --steps 400")
    ap.add_argument("--ends", type=int, nargs="+", help="no runs: forecast errors of --runs cut at these steps")
    ap.add_argument("--runs", nargs="+", default=[], help="run directories for --ends")
    ap.add_argument("--paired", nargs=2, metavar=("A", "B"), help="no runs: compare two --output directories seed by seed")
    ap.add_argument("--members", nargs="+", metavar="RUN", help="no runs: each member's forecast error on these runs")
    args = ap.parse_args()
    if args.members:
        return member_errors(args.members)
    if args.ends:
        return cut_errors(args.runs, args.ends)
    if args.paired:
        return paired(*args.paired, args.seeds)
    rows = []
    for seed in args.seeds:
        out = Path(args.output) / f"seed{seed}"
        cost = out.parent / f"seed{seed}.cost.json"
        if not args.report_only:
            shutil.rmtree(out, ignore_errors=True)
            t0 = time.perf_counter()
            proc = subprocess.Popen([sys.executable, "-m", "scalerl.cli", "demo", "--output", str(out), "--seed",
                                     str(seed), "--no-progress", *args.demo_args], stdout=subprocess.DEVNULL)
            _, status, usage = os.wait4(proc.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                raise SystemExit(f"scalerl demo failed for seed {seed}")
            cost.write_text(json.dumps({"wall_s": time.perf_counter() - t0, "cpu_s": usage.ru_utime + usage.ru_stime}))
        f = write_run_report(out).facts
        rows.append({"seed": seed, **json.loads(cost.read_text()), **{k: f.get(k) for k in (
            "evaluations", "start", "final", "gain", "forecast_final", "forecast_error", "forecast_mae",
            "power_law_final", "fit_A", "fit_A_interval", "forecast_end_level", "forecast_end_error")}})
        print(json.dumps(rows[-1]), flush=True)
    print(f"\n{'seed':>4} {'wall s':>7} {'CPU s':>6} {'evals':>5} {'start':>6} {'final':>6} {'gain':>6} "
          f"{'A [95%]':>21} {'half-budget forecast':>20} {'error':>7} {'end level':>9} {'error':>7} {'held-out MAE':>12} "
          f"{'power law':>9}")
    for r in rows:
        lo, hi = r["fit_A_interval"]
        print(f"{r['seed']:>4} {r['wall_s']:>7.0f} {r['cpu_s']:>6.0f} {r['evaluations']:>5} {r['start']:>6.3f} "
              f"{r['final']:>6.3f} {r['gain']:>+6.3f} {r['fit_A']:>6.3f} [{lo:.3f}, {hi:.3f}] "
              f"{r['forecast_final']:>20.3f} {r['forecast_error']:>+7.3f} {r['forecast_end_level']:>9.3f} "
              f"{r['forecast_end_error']:>+7.3f} {r['forecast_mae']:>12.3f} "
              f"{_number(r['power_law_final'], 9)}")
    errors = sorted(abs(r["forecast_error"]) for r in rows)
    walls = sorted(r["wall_s"] for r in rows)
    print(f"\nmedian wall {statistics.median(walls):.0f} s; |forecast error| median {statistics.median(errors):.3f}, "
          f"within 0.03 in {sum(e <= 0.03 for e in errors)} of {len(errors)} seeds; "
          f"the end level (mean of the last quarter of the held-out evaluations) within 0.03 in "
          f"{sum(abs(r['forecast_end_error']) <= 0.03 for r in rows)} of {len(rows)}; "
          f"A's upper bound below 0.98 in {sum(r['fit_A_interval'][1] < 0.98 for r in rows)} of {len(rows)}; "
          f"held-out MAE median {statistics.median(r['forecast_mae'] for r in rows):.3f}")
    print("targets: wall <= 360 s on 2 cores, >= 8 evaluations, A's 95% upper bound < 0.98, "
          "|error| <= 0.03 in >= 4 of 5 seeds")


def paired(a: str, b: str, seeds: list[int]) -> None:
    """Two settings' demos of the same seeds, seed by seed (``--paired``)."""
    from scipy.stats import wilcoxon

    def facts(directory: str) -> dict[int, dict]:
        return {s: write_run_report(Path(directory) / f"seed{s}").facts for s in seeds}

    fa, fb = facts(a), facts(b)
    meets = {name: {s: (abs(f[s]["forecast_error"]) <= 0.03, f[s]["fit_A_interval"][1] < 0.98) for s in seeds}
             for name, f in ((a, fa), (b, fb))}
    for name, f in ((a, fa), (b, fb)):
        errors = [abs(f[s]["forecast_error"]) for s in seeds]
        print(f"{name}: forecast within 0.03 in {sum(m[0] for m in meets[name].values())} of {len(seeds)}, A's upper "
              f"bound < 0.98 in {sum(m[1] for m in meets[name].values())} of {len(seeds)}; |error| median "
              f"{statistics.median(errors):.3f}, mean {statistics.mean(errors):.3f}")
    for i, target in enumerate(("forecast within 0.03", "A's upper bound < 0.98")):
        only = {name: [s for s in seeds if meets[name][s][i] and not meets[other][s][i]]
                for name, other in ((a, b), (b, a))}
        print(f"{target}: only {a} in seeds {only[a] or '-'}; only {b} in seeds {only[b] or '-'}")
    diffs = [abs(fa[s]["forecast_error"]) - abs(fb[s]["forecast_error"]) for s in seeds]
    if len(seeds) >= 6 and any(diffs):
        print(f"|error| paired by seed, Wilcoxon signed-rank (two-sided): p = {wilcoxon(diffs).pvalue:.2f}")


def _number(value: float | None, width: int) -> str:
    """``value`` to 3 decimals in ``width`` columns; a dash where the report had none (the power law's
    forecast where its fit failed on the first half)."""
    return f"{value:>{width}.3f}" if value is not None else f"{'-':>{width}}"


def member_errors(runs: list[str]) -> None:
    """The half-budget forecast of each run's final point, and each ensemble member's (``--members``)."""
    from scalerl.curves import forecast, read_curve

    errors: dict[str, list[float]] = {}
    for run in runs:
        curve = read_curve(str(Path(run) / "runlog.jsonl"), "flops", "val/pass_rate")
        end, final = float(curve.x[-1]), float(curve.y[-1])
        fc = forecast(curve, fit_until=end / 2, n_boot=0)  # (the report's cut: half the compute)
        ens = fc.ensemble
        row = {"forecast": float(fc.mean([end])[0]) - final,
               **{k: float(v) - final for k, v in zip(ens.laws, ens.member_values([end])[:, 0])}}
        for k, e in row.items():
            errors.setdefault(k, []).append(e)
        print(f"{run}: final {final:.3f}; errors " + ", ".join(f"{k} {e:+.3f}" for k, e in row.items())
              + "; weights " + ", ".join(f"{k} {w:.2f}" for k, w in ens.weights.items()))
    for k, es in errors.items():
        print(f"{k:>16}: within 0.03 in {sum(abs(e) <= 0.03 for e in es)} of {len(es)}; median |error| "
              f"{statistics.median(abs(e) for e in es):.3f}; mean error {statistics.mean(es):+.3f}")


def cut_errors(runs: list[str], ends: list[int]) -> None:
    import numpy as np

    from scalerl.curves import Curve
    from scalerl.curves.backtest import backtest

    for end in ends:
        errors = []
        for run in runs:
            evals = [r for r in map(json.loads, open(Path(run) / "runlog.jsonl")) if r.get("type") == "eval"]
            if evals[-1]["step"] < end:
                continue  # the run is shorter than this end
            evals = [r for r in evals if r["step"] <= end]
            xs = np.array([r["flops"] for r in evals], dtype=float)
            ys = np.array([r["val/pass_rate"] for r in evals], dtype=float)
            bt = backtest(Curve.from_arrays(xs, ys, name=run, x_name="flops", y_name="val/pass_rate"), cut_fraction=0.5,
                          n_boot=200)
            (pred,) = bt.forecast.predict([xs[-1]])
            errors.append(float(pred.R - ys[-1]))
        if errors:
            print(f"end {end:>4}: errors {' '.join(f'{e:+.3f}' for e in errors)}; within 0.03 in "
                  f"{sum(abs(e) <= 0.03 for e in errors)} of {len(errors)}; mean {statistics.mean(errors):+.3f}")


if __name__ == "__main__":
    main()
