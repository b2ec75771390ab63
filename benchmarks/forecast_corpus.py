"""The forecaster on every real run we ship, with leave-one-source-out (LOSO) calibration.

Runs: ``examples/data/real_rl_curves.csv`` (source verl, 2 runs) and
``examples/data/rl_curve_corpus.csv`` (sources Deep-GRPO, 18 runs, and TinyZero, 22 runs;
see examples/data/README.md). Each run is cut at 30%, 50% and 70% of its compute, forecast
from the points up to the cut, and scored on the rest: MAE, end-level error (mean of the last
quarter of held-out evaluations), coverage of the end level by the confidence band and of
each held-out evaluation by the prediction band, the bands' half-widths; the default forecast
against the plain sigmoid (every point, R0 = first evaluation) and the power law.

Every tuned constant -- the ensemble temperature and the two bands' conformal factors -- is
chosen on the other sources and scored on the held-out one: those are the figures to quote.
Runs that are unstable over their whole length (they peak and fall) are not "stable runs":
they are listed apart, with what the forecaster said about them at each cut.

    python benchmarks/forecast_corpus.py                      # the LOSO table (a few minutes)
    python benchmarks/forecast_corpus.py --stability          # + the evidence for the instability rule
    python benchmarks/forecast_corpus.py --write-calibration  # refit the shipped calibration on all sources
    python benchmarks/forecast_corpus.py --extra runs.csv --x step --y acc   # score other runs (all-source calibration)
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import subprocess
import time
import warnings
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from scalerl.curves import Curve, backtest, check_stability, read_curves
from scalerl.curves.backtest import END_TARGET, MAE_TARGET, Backtest, _end_slice
from scalerl.curves.bands import CALIBRATION_FILE, Calibration, conformal_quantile
from scalerl.curves.forecast import Forecast

REPO = Path(__file__).resolve().parents[1]
DATA = REPO / "examples" / "data"
CUTS = (0.3, 0.5, 0.7)
TEMPERATURES = (0.25, 1.0, 4.0, 16.0)
LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99)
LEVEL = 0.95


def load_runs() -> list[tuple[str, Curve]]:
    """(source, curve) for every shipped real run."""
    runs = [("verl", c) for c in read_curves(DATA / "real_rl_curves.csv", "cum_wall_hours", "val_score")]
    with open(DATA / "rl_curve_corpus_runs.csv", newline="") as f:
        source = {r["run"]: r["source"] for r in csv.DictReader(f)}
    runs += [(source[c.name], c) for c in read_curves(DATA / "rl_curve_corpus.csv", "x", "val_score")]
    return runs


@dataclass
class Case:
    """One run cut at one fraction: the fitted forecast and what it is scored against."""

    source: str
    run: str
    cut: float
    bt: Backtest
    stable_run: bool
    """The whole run is stable (the population the targets are about)."""

    @property
    def fc(self) -> Forecast:
        return self.bt.forecast

    def parts(self, temperature: float) -> dict[str, np.ndarray]:
        """Forecast and band scale at the held-out points for an ensemble temperature (the
        library's own band scale, so the calibration is of exactly what users get)."""
        fc = replace(self.fc, ensemble=self.fc.ensemble.reweighted(temperature))
        x = np.asarray(self.bt.test_x)
        return {"R": fc.mean(x), "s": fc.scale(x), "sigma": fc.bands.sigma, "h": fc.bands.horizon(x)}


def build_cases(runs, cuts=CUTS, log=print) -> list[Case]:
    cases = []
    t0 = time.process_time()
    for source, curve in runs:
        stable = not check_stability(curve.x, curve.y).unstable
        for f in cuts:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                bt = backtest(curve, cut_fraction=f, n_boot=0)
            cases.append(Case(source, curve.name, f, bt, stable))
        log(f"  {source:<9} {curve.name[:58]:<58} {len(curve):>5} points  ({time.process_time() - t0:.0f} CPU-s)")
    return cases


def scored(cases: list[Case]) -> list[Case]:
    """The cases the targets are about: stable runs, not flagged at the cut."""
    return [c for c in cases if c.stable_run and not c.fc.unstable]


def mean_mae(cases: list[Case], temperature: float) -> float:
    return float(np.mean([np.mean(np.abs(c.parts(temperature)["R"] - c.bt.test_y)) for c in cases]))


def calibrate(cases: list[Case], temperature: float) -> Calibration:
    """Conformal factors from ``cases`` at ``temperature`` (see scalerl.curves.bands)."""
    conf, pts, wts, hs = [], [], [], []
    for c in cases:
        p = c.parts(temperature)
        y = np.asarray(c.bt.test_y)
        end = _end_slice(y.size)
        conf.append(abs(p["R"][end].mean() - y[end].mean()) / p["s"][end].mean())
        sc = np.abs(p["R"] - y) / np.sqrt(p["s"] ** 2 + p["sigma"] ** 2)
        pts.append(sc)
        wts.append(np.full(sc.size, 1.0 / sc.size))
        hs.append(p["h"].max())
    pts, wts = np.concatenate(pts), np.concatenate(wts)
    return Calibration(
        levels=LEVELS,
        q_confidence=tuple(conformal_quantile(conf, lv) for lv in LEVELS),
        q_prediction=tuple(conformal_quantile(pts, lv, weights=wts, n_units=len(cases)) for lv in LEVELS),
        h_max=float(max(hs)),
        temperature=temperature,
    )


def choose(cases: list[Case]) -> Calibration:
    """Temperature by the mean MAE over ``cases``, then the conformal factors at it."""
    t = min(TEMPERATURES, key=lambda t: mean_mae(cases, t))
    return calibrate(cases, t)


@dataclass
class Scores:
    n: int
    mae_ok: float
    median_mae: float
    end_ok: float
    end_cover: float
    end_hw: float
    point_cover: float
    no_worse: float
    no_worse_tol: float
    plain_mae_ok: float
    plain_end_ok: float
    pl_mae_ok: float
    pl_end_ok: float
    median_gap: float
    """Median of (forecast MAE - the better of plain sigmoid's and power law's)."""
    worse_than_both: float


def score(cases: list[Case], cal: Calibration, tolerance: float) -> Scores:
    """Held-out figures of ``cases`` under calibration ``cal``."""
    rows = []
    qc, qp = cal.q(LEVEL, "confidence"), cal.q(LEVEL, "prediction")
    for c in cases:
        p = c.parts(cal.temperature)
        y = np.asarray(c.bt.test_y)
        end = _end_slice(y.size)
        stretch = np.maximum(1.0, p["h"] / cal.h_max)
        mae = float(np.mean(np.abs(p["R"] - y)))
        end_err = float(p["R"][end].mean() - y[end].mean())
        hw = float((qc * p["s"] * stretch)[end].mean())
        pw = qp * np.sqrt(p["s"] ** 2 + p["sigma"] ** 2) * stretch
        refs = [s.mae for s in (c.bt.plain_sigmoid, c.bt.power_law) if s is not None]
        ref = min(refs)
        rows.append((mae, abs(end_err) <= END_TARGET, abs(end_err) <= hw, hw, float(np.mean(np.abs(p["R"] - y) <= pw)),
                     mae <= ref, mae <= ref + tolerance, mae - ref, mae > max(refs),
                     c.bt.plain_sigmoid.mae if c.bt.plain_sigmoid else math.inf,
                     abs(c.bt.plain_sigmoid.end_error) if c.bt.plain_sigmoid else math.inf,
                     c.bt.power_law.mae if c.bt.power_law else math.inf,
                     abs(c.bt.power_law.end_error) if c.bt.power_law else math.inf))
    a = np.array(rows, dtype=float)
    return Scores(len(rows), float(np.mean(a[:, 0] <= MAE_TARGET)), float(np.median(a[:, 0])), float(a[:, 1].mean()),
                  float(a[:, 2].mean()), float(np.median(a[:, 3])), float(a[:, 4].mean()), float(a[:, 5].mean()),
                  float(a[:, 6].mean()), float(np.mean(a[:, 9] <= MAE_TARGET)), float(np.mean(a[:, 10] <= END_TARGET)),
                  float(np.mean(a[:, 11] <= MAE_TARGET)), float(np.mean(a[:, 12] <= END_TARGET)),
                  float(np.median(a[:, 7])), float(a[:, 8].mean()))


def table(rows: list[list[str]], header: list[str]) -> str:
    cols = [header, *rows]
    w = [max(len(r[i]) for r in cols) for i in range(len(header))]
    fmt = lambda r: "  ".join(v.rjust(w[i]) if i else v.ljust(w[i]) for i, v in enumerate(r))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * x for x in w]), *(fmt(r) for r in rows)])


def pct(v: float) -> str:
    return "-" if math.isnan(v) else f"{100 * v:.0f}%"


def loso(cases: list[Case], sources: list[str], tolerance: float) -> None:
    print(f"\nLeave-one-source-out: constants chosen on the other sources, scored on the held-out one "
          f"(stable runs; {int(LEVEL * 100)}% bands; targets: MAE <= {MAE_TARGET} and |end error| <= {END_TARGET} "
          f"in >= 70% of runs, end-level coverage 90-97% with median half-width <= 0.03, no worse than the better "
          f"of plain sigmoid and power law in >= 85%; median gap: forecast MAE minus that better one's)\n")
    header = ["held-out source", "cut", "runs", "T", "q conf", "q pred", "MAE<=.015", "median MAE", "end<=.02",
              "end covered", "end half-width", "points covered", "no worse", f"no worse +{tolerance:g}",
              "median gap", "worse than both", "plain sig MAE<=.015 / end", "power law MAE<=.015 / end"]
    rows = []
    for src in sources:
        cal = choose(scored([c for c in cases if c.source != src]))
        held = scored([c for c in cases if c.source == src])
        for cut in (*CUTS, "all"):
            part = [c for c in held if cut == "all" or c.cut == cut]
            if not part:
                continue
            s = score(part, cal, tolerance)
            rows.append([src, str(cut), str(s.n), f"{cal.temperature:g}", f"{cal.q(LEVEL, 'confidence'):.2f}",
                         f"{cal.q(LEVEL, 'prediction'):.2f}", pct(s.mae_ok), f"{s.median_mae:.4f}", pct(s.end_ok),
                         pct(s.end_cover), f"{s.end_hw:.3f}", pct(s.point_cover), pct(s.no_worse), pct(s.no_worse_tol),
                         f"{s.median_gap:+.4f}", pct(s.worse_than_both),
                         f"{pct(s.plain_mae_ok)} / {pct(s.plain_end_ok)}", f"{pct(s.pl_mae_ok)} / {pct(s.pl_end_ok)}"])
    print(table(rows, header))
    horizon_coverage(cases, sources)


HORIZONS = (0.0, 0.2, 0.4, 0.7, 1.3)


def horizon_coverage(cases: list[Case], sources: list[str]) -> None:
    """Share of held-out evaluations inside the prediction band by horizon h = ln(C / C_end):
    calibrated across horizons means flat in h."""
    rows = []
    for src in sources:
        cal = choose(scored([c for c in cases if c.source != src]))
        qp = cal.q(LEVEL, "prediction")
        inside = {b: [] for b in HORIZONS[:-1]}
        for c in scored([c for c in cases if c.source == src]):
            p = c.parts(cal.temperature)
            ok = np.abs(p["R"] - np.asarray(c.bt.test_y)) <= qp * np.sqrt(p["s"] ** 2 + p["sigma"] ** 2)
            for lo, hi in zip(HORIZONS, HORIZONS[1:]):
                sel = (p["h"] > lo) & (p["h"] <= hi)
                if sel.any():
                    inside[lo].append(ok[sel].mean())  # each run-cut counts once per bin
        rows.append([src] + [pct(float(np.mean(v))) if v else "-" for v in inside.values()])
    print(f"\nHeld-out evaluations inside the {int(LEVEL * 100)}% prediction band, by horizon h = ln(C / C_end) "
          "(mean over run-cuts; LOSO):")
    print(table(rows, ["held-out source"] + [f"h in ({a:g}, {b:g}]" for a, b in zip(HORIZONS, HORIZONS[1:])]))


def report_unstable(cases: list[Case]) -> None:
    flagged = sorted({(c.source, c.run) for c in cases if not c.stable_run})
    print(f"\nUnstable over their whole length (not scored): {len(flagged)}")
    for src, run in flagged:
        said = ", ".join(f"{int(c.cut * 100)}%: {'flagged' if c.fc.unstable else 'not yet'}"
                         for c in cases if c.run == run)
        print(f"  {src}/{run} -- at the cuts: {said}")
    fp = [c for c in cases if c.stable_run and c.fc.unstable]
    n_stable = sum(c.stable_run for c in cases)
    print(f"Stable runs flagged at a cut (false alarms): {len(fp)} of {n_stable} run-cuts"
          + (": " + ", ".join(f"{c.run}@{c.cut}" for c in fp) if fp else ""))


def report_stability(runs) -> None:
    print("\nInstability evidence, whole runs (fall: best bin mean - last bin mean; late: drop of a line in ln C "
          "through the last third; share = / gain at the best bin; z = / standard error; sd = / evaluation noise):")
    from scalerl.curves.window import noise_sd

    rows = []
    for src, c in runs:
        st = check_stability(c.x, c.y)
        sd = noise_sd(c.y[c.x > 0])
        g = max(st.gain, 1e-12)
        rows.append([f"{src}/{c.name}"[:60], st.kind, f"{st.fall:.4f}", f"{st.fall / g:.2f}",
                     f"{st.fall / st.fall_se if st.fall_se else 0:.1f}", f"{st.fall / sd if sd else 0:.1f}",
                     f"{st.late_drop:+.4f}", f"{st.late_drop / g:+.2f}",
                     f"{st.late_drop / st.late_drop_se if st.late_drop_se else 0:+.1f}", f"{st.late_drop / sd if sd else 0:+.1f}"])
    print(table(rows, ["run", "verdict", "fall", "share", "z", "sd", "late drop", "share", "z", "sd"]))
    synthetic_stability()


def synthetic_stability() -> None:
    """False alarms on noisy sigmoids, detections of a collapse and of a decline."""
    from scalerl.curves import Sigmoid

    law = Sigmoid(A=0.61, B=1.9, C_mid=2542, R0=0.3)
    alarms = total = 0
    for n in (12, 25, 50, 200):
        for noise in (0.005, 0.01, 0.02):
            for seed in range(100):
                x = np.r_[0.0, np.linspace(8000 / n, 8000, n)]
                y = np.clip(law(x) + np.random.default_rng(seed).normal(0, noise, x.size), 0, 1)
                alarms += check_stability(x, y).unstable
                total += 1
    found = {"collapse to 0": 0, "decline to 0.18": 0}
    x = np.r_[0.0, np.linspace(10, 300, 30)]
    base = 0.05 + 0.20 * (1 - np.exp(-x / 40))
    shapes = {"collapse to 0": np.where(x > 150, base * np.exp(-(x - 150) / 40), base),
              "decline to 0.18": np.where(x > 150, base - 0.07 * (x - 150) / 150, base)}
    for seed in range(200):
        noise = np.random.default_rng(seed).normal(0, 0.01, x.size)
        for name, y in shapes.items():
            found[name] += check_stability(x, np.clip(y + noise, 0, 1)).unstable
    print(f"\nSynthetic: {alarms} of {total} noisy sigmoids flagged (12-200 points, noise 0.005-0.02); a rise to "
          f"0.25 that then ({', '.join(f'{k}: flagged {v} of 200' for k, v in found.items())}; 30 points, noise 0.01)")


def write_calibration(cases: list[Case]) -> None:
    cal = choose(scored(cases))
    runs = sorted({c.run for c in scored(cases)})
    sources = sorted({c.source for c in scored(cases)})
    try:
        commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
    except OSError:
        commit = "?"
    prov = (f"benchmarks/forecast_corpus.py --write-calibration at commit {commit}: {len(runs)} stable real runs "
            f"({', '.join(sources)}) cut at {', '.join(f'{int(f * 100)}%' for f in CUTS)} of their compute; "
            f"temperature chosen from {list(TEMPERATURES)} by mean MAE")
    cal = Calibration(cal.levels, cal.q_confidence, cal.q_prediction, cal.h_max, cal.temperature, prov)
    CALIBRATION_FILE.write_text(json.dumps(cal.as_dict(), indent=2) + "\n")
    print(f"\nwrote {CALIBRATION_FILE.relative_to(REPO)}: T {cal.temperature:g}, "
          f"q95 confidence {cal.q(LEVEL, 'confidence'):.3f}, prediction {cal.q(LEVEL, 'prediction'):.3f}, "
          f"h_max {cal.h_max:.2f}")


def extra(cases: list[Case], path: str, x: str, y: str, tolerance: float) -> None:
    """Score other runs (not shipped) with the calibration chosen on all shipped sources."""
    cal = choose(scored(cases))
    runs = [("extra", c) for c in read_curves(path, x, y)]
    ex = build_cases(runs, log=lambda *_: None)
    print(f"\nOther runs ({path}; calibration from all shipped sources: T {cal.temperature:g}):")
    rows = []
    for cut in (*CUTS, "all"):
        part = [c for c in scored(ex) if cut == "all" or c.cut == cut]
        if part:
            s = score(part, cal, tolerance)
            rows.append([str(cut), str(s.n), pct(s.mae_ok), f"{s.median_mae:.4f}", pct(s.end_ok), pct(s.end_cover),
                         f"{s.end_hw:.3f}", pct(s.point_cover), pct(s.no_worse), pct(s.no_worse_tol)])
    print(table(rows, ["cut", "runs", "MAE<=.015", "median MAE", "end<=.02", "end covered", "end half-width",
                       "points covered", "no worse", f"no worse +{tolerance:g}"]))
    for c in ex:
        p = c.parts(cal.temperature)
        print(f"  {c.run[:50]:<50} cut {c.cut}: MAE {np.mean(np.abs(p['R'] - c.bt.test_y)):.4f} "
              f"(plain sigmoid {c.bt.plain_sigmoid.mae if c.bt.plain_sigmoid else math.nan:.4f}, power law "
              f"{c.bt.power_law.mae if c.bt.power_law else math.nan:.4f}){' UNSTABLE' if c.fc.unstable else ''}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--stability", action="store_true", help="print the evidence behind the instability rule")
    ap.add_argument("--write-calibration", action="store_true", help="refit calibration.json on all sources")
    ap.add_argument("--tolerance", type=float, default=0.001,
                    help="'no worse' with this MAE margin, beside the strict count (default 0.001)")
    ap.add_argument("--extra", metavar="PATH", help="also score the runs in PATH (needs --x and --y)")
    ap.add_argument("--x", help="compute column of --extra")
    ap.add_argument("--y", help="metric column of --extra")
    args = ap.parse_args()
    t0 = time.process_time()
    runs = load_runs()
    sources = list(dict.fromkeys(s for s, _ in runs))
    print(f"{len(runs)} real runs ({', '.join(f'{s}: {sum(1 for r, _ in runs if r == s)}' for s in sources)}), "
          f"cut at {', '.join(f'{int(f * 100)}%' for f in CUTS)} of their compute:")
    cases = build_cases(runs)
    loso(cases, sources, args.tolerance)
    for name in ("verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538", "verl_training_log__grpo_run_deepseek7b_llm"):
        cal = choose(scored([c for c in cases if c.source != "verl"]))
        half = next(c for c in cases if c.run == name and c.cut == 0.5)
        print(f"verl run {name[:40]} at the 50% cut (LOSO): MAE {score([half], cal, 0).median_mae:.4f}")
    report_unstable(cases)
    if args.stability:
        report_stability(runs)
    if args.extra:
        extra(cases, args.extra, args.x, args.y, args.tolerance)
    if args.write_calibration:
        write_calibration(cases)
    print(f"\n{time.process_time() - t0:.0f} CPU-seconds")


if __name__ == "__main__":
    main()
