"""How often does ``scalerl compare`` call what it should? Verdict rates on curves of known truth.

Pairs of runs drawn from chosen sigmoids (R0 0.3, A 0.70, B 1.5, C_mid 5e11, 21 evaluations
over 4x C_mid, one seed each, Gaussian evaluation noise ``--noise``), the run against the base
with the default rule (``intervals``, 95%):

- ``identical``: the same law -- every verdict other than *no clear effect* is a false one (the
  ceiling test and the efficiency test are each meant to err 5% of the time at most);
- ``C_mid x1.5`` / ``C_mid x2.4`` / ``B 1.5 -> 2.2``: efficiency changes -- *efficiency* is right;
- ``A -0.05`` / ``A -0.15``: ceiling changes -- *ceiling* is right.

By default this measures the classifier under its own assumptions (independent evaluation noise,
one seed, both runs starting exactly at R0). The other sources of variation a user's runs have:

- ``--start-noise SD``: the evaluation before training is as noisy as the others (sampled
  evaluations of the same base model under different seeds): each run's R0 measured with that sd;
- ``--seeds K --seed-sd-A SD --seed-sd-logC SD``: K seeds a run, pooled, each seed's A and ln C_mid
  drawn around the case's law with those sds (seeds of one configuration do not end alike);
  ``--base-seeds K``: the base's own seed count (a one-seed base against a run of 3);
- ``--cmid-scale S``: both laws' C_mid times S (3: the runs end at ~1.3x C_mid, A poorly identified).

    python benchmarks/compare_verdicts.py                 # 100 pairs a case, noise 0.006 (~6 min)
    python benchmarks/compare_verdicts.py --pairs 40 --noise 0.015
    python benchmarks/compare_verdicts.py --pairs 50 --cases identical --start-noise 0.015 --noise 0.015
    python benchmarks/compare_verdicts.py --pairs 50 --cases identical --seeds 3 --seed-sd-A 0.02
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from scalerl.curves import Curve
from scalerl.curves.compare import CEILING, EFFICIENCY, NONE, compare

BASE = (0.70, 1.5, 5e11)

#: case -> (A, B, C_mid) of the run, and the verdict that is right
CASES = {
    "identical": ((0.70, 1.5, 5e11), NONE),
    "C_mid x1.5": ((0.70, 1.5, 7.5e11), EFFICIENCY),
    "C_mid x2.4": ((0.70, 1.5, 1.2e12), EFFICIENCY),
    "B 1.5 -> 2.2": ((0.70, 2.2, 5e11), EFFICIENCY),
    "A -0.05": ((0.65, 1.5, 5e11), CEILING),
    "A -0.15": ((0.55, 1.5, 5e11), CEILING),
}


def sigmoid(C: np.ndarray, A: float, B: float, C_mid: float, R0: float = 0.3) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(C > 0, R0 + (A - R0) / (1 + (C_mid / np.where(C > 0, C, 1.0)) ** B), R0)


def verdicts(law: tuple[float, float, float], pairs: int, noise: float, n_boot: int, *, start_noise: float = 0.0,
             seeds: int = 1, seed_sd_A: float = 0.0, seed_sd_logC: float = 0.0, base_seeds: int | None = None,
             cmid_scale: float = 1.0) -> dict[str, int]:
    """Counts of each verdict over ``pairs`` draws of (base, run); ``base_seeds``: the base's seeds (default
    ``seeds``); ``cmid_scale``: both laws' C_mid times this (3: the runs end at ~1.3x C_mid, A poorly known)."""
    x = np.linspace(0, 200, 21).round() * 1e10
    counts: dict[str, int] = {}
    for i in range(pairs):
        rng = np.random.default_rng(i)
        runs = {}
        for label, (A, B, C_mid), k in (("base", BASE, base_seeds or seeds), ("run", law, seeds)):
            runs[label] = []
            C_mid *= cmid_scale
            for _ in range(k):
                a = A + rng.normal(0, seed_sd_A) if seed_sd_A else A
                c = C_mid * math.exp(rng.normal(0, seed_sd_logC)) if seed_sd_logC else C_mid
                y = sigmoid(x, a, B, c) + rng.normal(0, noise, x.size)
                # Default: the same model and evaluation seed, so both start exactly at R0.
                y[0] = 0.3 + (rng.normal(0, start_noise) if start_noise else 0.0)
                runs[label].append(Curve.from_arrays(x, y, name=label))
        kind = compare(runs, n_boot=n_boot, forecasts=False, seed=i).classifications[0].kind
        counts[kind] = counts.get(kind, 0) + 1
    return counts


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pairs", type=int, default=100)
    ap.add_argument("--noise", type=float, default=0.006)
    ap.add_argument("--bootstrap", type=int, default=300, help="compare's bootstrap resamples (its default)")
    ap.add_argument("--cases", nargs="+", default=list(CASES), choices=list(CASES))
    ap.add_argument("--start-noise", type=float, default=0.0, help="sd of each run's evaluation before training")
    ap.add_argument("--seeds", type=int, default=1, help="seeds a run (pooled)")
    ap.add_argument("--seed-sd-A", type=float, default=0.0, help="sd of a seed's A around the case's")
    ap.add_argument("--seed-sd-logC", type=float, default=0.0, help="sd of a seed's ln C_mid around the case's")
    ap.add_argument("--base-seeds", type=int, default=None, help="seeds of the base run (default: --seeds)")
    ap.add_argument("--cmid-scale", type=float, default=1.0,
                    help="both laws' C_mid times this (3: the runs end near C_mid, A poorly identified)")
    args = ap.parse_args(argv)
    if (min(args.seeds, args.pairs, 1 if args.base_seeds is None else args.base_seeds) < 1 or args.cmid_scale <= 0
            or min(args.noise, args.start_noise, args.seed_sd_A, args.seed_sd_logC) < 0):
        ap.error("--seeds, --base-seeds and --pairs must be at least 1, --cmid-scale above 0, the noise and spread "
                 "sds at least 0")
    seeds = f"{args.seeds}" if args.base_seeds in (None, args.seeds) else f"{args.seeds} (the base: {args.base_seeds})"
    print(f"{args.pairs} pairs a case, noise sd {args.noise:g}, start noise sd {args.start_noise:g}, {seeds} "
          f"seed(s) a run (sd of A {args.seed_sd_A:g}, of ln C_mid {args.seed_sd_logC:g}), C_mid x{args.cmid_scale:g}, "
          "rule intervals (95%)\n")
    print(f"{'case':<14} {'right verdict':<16} {'ceiling':>8} {'efficiency':>10} {'no clear effect':>15}  {'right':>6}")
    t = time.perf_counter()
    for case in args.cases:
        law, right = CASES[case]
        c = verdicts(law, args.pairs, args.noise, args.bootstrap, start_noise=args.start_noise, seeds=args.seeds,
                     seed_sd_A=args.seed_sd_A, seed_sd_logC=args.seed_sd_logC, base_seeds=args.base_seeds,
                     cmid_scale=args.cmid_scale)
        share = {k: c.get(k, 0) / args.pairs for k in (CEILING, EFFICIENCY, NONE)}
        print(f"{case:<14} {right:<16} {share[CEILING]:>7.0%} {share[EFFICIENCY]:>10.0%} {share[NONE]:>15.0%}  "
              f"{share[right]:>6.0%}")
    print(f"\n{time.perf_counter() - t:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
