"""False alarms of the instability check (``scalerl.curves.stability``) on healthy curves.

    python benchmarks/stability_false_alarms.py            # shipped runs cut everywhere + simulations
    python benchmarks/stability_false_alarms.py --seeds 100

1. Every shipped real run (data/, examples/data/: benchmarks/forecast_corpus.py's corpus) cut at every
   evaluation from the 7th on: the cuts its check calls unstable, per run, for runs that are stable as a
   whole (a healthy run dipping for two evaluations and coming back must not be called unstable).
2. Healthy sigmoids (A 0.61, R0 0.3) under several kinds of evaluation noise -- binomial on 30/50/100
   problems (linear and log-spaced x), a flat plateau on such sets, Student-t (2 and 3 degrees of
   freedom) and Gaussian noise with an occasional bad evaluation -- at 6-60 points, ``--seeds`` each:
   how many are called unstable, by which test.
3. Runs that do fall (a rise, then a collapse to 0 or a decline to 0.18) at 8-60 points: how many are caught.
(Written from a review's scripts: the first version of the "fell in its last evaluations" test flagged
healthy dips on 7 shipped runs here.)
"""

from __future__ import annotations

import argparse
import collections
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from forecast_corpus import load_runs  # noqa: E402

from scalerl.curves import Sigmoid  # noqa: E402
from scalerl.curves.stability import STABLE, check_stability  # noqa: E402

LAW = Sigmoid(A=0.61, B=1.9, C_mid=2542, R0=0.3)
#: The check with its third test ("fell in its last evaluations") off: what the first two flag alone.
NO_END_TEST = dict(end_share=float("inf"))


def shipped_cuts() -> None:
    runs = load_runs()
    flagged = 0
    for source, c in runs:
        x, y = np.asarray(c.x, float), np.asarray(c.y, float)
        if check_stability(x, y).kind != STABLE:
            continue  # (TreeRL: unstable as a whole; its cuts are not false alarms to count)
        cuts = [k for k in range(7, x.size + 1) if check_stability(x[:k], y[:k]).kind != STABLE]
        by_end = [k for k in cuts if check_stability(x[:k], y[:k], **NO_END_TEST).kind == STABLE]
        if cuts:
            flagged += 1
            print(f"  {source}/{c.name}: {len(cuts)} cut(s) called unstable, at evaluations {cuts[:12]}; "
                  f"by the last-evaluations test alone: {len(by_end)}")
    print(f"shipped runs stable as a whole with a cut called unstable: {flagged} of {len(runs)}")


def _healthy(kind: str, n: int, rng: np.random.Generator, problems: int) -> tuple[np.ndarray, np.ndarray]:
    x = np.r_[0.0, np.geomspace(100, 8000, n) if kind == "binomial-logx" else np.linspace(8000 / n, 8000, n)]
    p = LAW(x)
    if kind == "plateau":
        p = np.full(x.size, 0.6)
        p[0] = 0.3
    if kind in ("binomial", "binomial-logx", "plateau"):
        y = rng.binomial(problems, p) / problems
    elif kind in ("t2", "t3"):
        y = p + 0.01 * rng.standard_t(int(kind[1]), x.size)
    else:  # "bad evaluations": Gaussian 0.01, one in ten evaluations 0.03-0.08 low
        y = p + rng.normal(0, 0.01, x.size)
        bad = rng.random(x.size) < 0.1
        y[bad] -= rng.uniform(0.03, 0.08, bad.sum())
    return x, np.clip(y, 0, 1)


def simulations(seeds: int) -> None:
    for kind in ("binomial", "binomial-logx", "plateau", "t2", "t3", "bad evaluations"):
        for problems in ((30, 50, 100) if kind in ("binomial", "binomial-logx", "plateau") else (0,)):
            for n in (6, 8, 10, 16, 30, 60):
                curves = [_healthy(kind, n, np.random.default_rng(s), problems) for s in range(seeds)]
                counts = collections.Counter(check_stability(*c).kind for c in curves)
                alarms = {k: v for k, v in counts.items() if k != STABLE}
                without = sum(check_stability(*c, **NO_END_TEST).kind != STABLE for c in curves)
                what = f"{kind}{f' ({problems} problems)' if problems else ''}, {n} points"
                print(f"  {what:<40} {sum(alarms.values()):4d} of {seeds} called unstable "
                      f"({without} with the last-evaluations test off) {alarms or ''}")


def _falling(kind: str, n: int, rng: np.random.Generator, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """A rise to 0.25 over the first half of the compute, then a collapse to 0 or a decline to 0.18
    (the shapes of benchmarks/forecast_corpus.py --stability), at ``n`` evaluations."""
    x = np.r_[0.0, np.linspace(300 / n, 300, n)]
    base = 0.05 + 0.20 * (1 - np.exp(-x / 40))
    y = (np.where(x > 150, base * np.exp(-(x - 150) / 40), base) if kind == "collapse"
         else np.where(x > 150, base - 0.07 * (x - 150) / 150, base))
    return x, np.clip(y + rng.normal(0, noise, x.size), 0, 1)


def _late_collapse(last: int, n: int, rng: np.random.Generator, noise: float) -> tuple[np.ndarray, np.ndarray]:
    """A rise from 0.2 towards 0.6 over ``n`` evaluations whose ``last`` ones fall back, evenly, to 0.2
    (review m: a short run that collapses in its last 2-3 evaluations)."""
    x = np.arange(n + 1) * 1e10
    y = 0.2 + 0.4 * (1 - np.exp(-np.arange(n + 1) / 3.0))
    y[-last:] = np.linspace(y[-last - 1], 0.2, last + 1)[1:]
    y[1:] += rng.normal(0, noise, n)
    return x, np.clip(y, 0, 1)


def detections(seeds: int) -> None:
    """What the check is for: the runs that do fall, at 7-60 evaluations -- the price of fewer false alarms."""
    for kind in ("collapse", "decline"):
        for noise in (0.01, 0.02):
            found = [sum(check_stability(*_falling(kind, n, np.random.default_rng(s), noise)).unstable
                         for s in range(seeds)) for n in (8, 12, 20, 30, 60)]
            print(f"  {kind} (noise {noise}): flagged at 8/12/20/30/60 points: {' / '.join(map(str, found))} of {seeds}")
    for last in (2, 3):
        found = [sum(check_stability(*_late_collapse(last, n, np.random.default_rng(s), 0.01)).unstable
                     for s in range(seeds)) for n in (7, 8, 9, 10, 11, 12, 16)]
        print(f"  back to the start in the last {last} evaluations (noise 0.01): flagged at 7/8/9/10/11/12/16 points: "
              f"{' / '.join(map(str, found))} of {seeds}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=400)
    args = ap.parse_args()
    print("1. shipped runs, cut at every evaluation:")
    shipped_cuts()
    print(f"2. healthy simulated runs ({args.seeds} seeds each):")
    simulations(args.seeds)
    print(f"3. runs that fall ({args.seeds} seeds each):")
    detections(args.seeds)


if __name__ == "__main__":
    main()
