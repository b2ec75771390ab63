"""Do a variant's own intervals cover its configuration's A, B and C_mid when it has a few seeds?

Each trial draws K seeds of one configuration (R0 0.3, A 0.70, B 1.5, C_mid 5e11, 21 evaluations over 4x
C_mid), each seed's A and ln C_mid drawn around the configuration's with ``--seed-sd-A`` / ``--seed-sd-logC``
and Gaussian evaluation noise ``--noise``, fits them pooled (:func:`scalerl.curves.fit_seeds`, the
hierarchical bootstrap: seeds, then residuals) and asks whether each parameter's 95% interval -- the one
``compare``'s Fits table and the study's variant table print -- holds the configuration's value. Printed
beside it: the bootstrap's plain percentiles, the interval before the few-seeds stretch
(:func:`scalerl.curves.seed_dof.few_seeds_stretch`).

    python benchmarks/seed_intervals.py                            # 2 and 3 seeds, 200 trials each (~1 min)
    python benchmarks/seed_intervals.py --seeds 2 5 --seed-sd-A 0.02 --trials 100
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from scalerl.curves import Curve, fit_seeds
from scalerl.curves.uncertainty import PARAMS

TRUTH = {"A": 0.70, "B": 1.5, "C_mid": 5e11}
R0 = 0.3


def sigmoid(C: np.ndarray, A: float, B: float, C_mid: float) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.where(C > 0, R0 + (A - R0) / (1 + (C_mid / np.where(C > 0, C, 1.0)) ** B), R0)


def trial(t: int, k: int, args) -> dict[str, tuple[tuple[float, float], tuple[float, float]]]:
    """One configuration's k seeds: per parameter, (the interval printed, the plain percentiles)."""
    rng = np.random.default_rng(t)
    x = np.linspace(0, 200, 21).round() * 1e10
    curves = []
    for s in range(k):
        A = TRUTH["A"] + rng.normal(0, args.seed_sd_A)
        C = TRUTH["C_mid"] * math.exp(rng.normal(0, args.seed_sd_logC))
        y = sigmoid(x, A, TRUTH["B"], C) + rng.normal(0, args.noise, len(x))
        y[0] = R0
        curves.append(Curve.from_arrays(x, y, name=f"v/seed{s}", x_name="flops", y_name="val/pass_rate"))
    boot = fit_seeds(curves, n_boot=args.n_boot, seed=t).boot
    q = (100 * (1 - boot.level) / 2, 100 * (1 + boot.level) / 2)
    out = {}
    for p in TRUTH:
        col = boot.samples[:, PARAMS.index(p)]
        out[p] = (boot.interval(p), tuple(float(v) for v in np.percentile(col, q)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seeds", type=int, nargs="+", default=[2, 3], help="seeds per variant (each a row)")
    ap.add_argument("--trials", type=int, default=200, help="configurations drawn per row")
    ap.add_argument("--n-boot", type=int, default=200, help="bootstrap replicates per fit")
    ap.add_argument("--noise", type=float, default=0.01, help="sd of each evaluation")
    ap.add_argument("--seed-sd-A", type=float, default=0.0, help="sd of a seed's A about the configuration's")
    ap.add_argument("--seed-sd-logC", type=float, default=0.15, help="sd of a seed's ln C_mid about the configuration's")
    args = ap.parse_args()
    print(f"{args.trials} configurations a row, {args.n_boot} replicates, noise {args.noise}, seed sd A "
          f"{args.seed_sd_A}, ln C_mid {args.seed_sd_logC}; covered / trials (median width; B, C_mid: of ln)")
    print("| seeds | interval | A | B | C_mid |\n|---|---|---|---|---|")
    for k in args.seeds:
        t0 = time.perf_counter()
        rows = [trial(t, k, args) for t in range(args.trials)]
        for which, name in ((1, "bootstrap percentiles"), (0, "as printed (few-seeds stretch)")):
            cells = []
            for p, truth in TRUTH.items():
                ivs = [r[p][which] for r in rows]
                covered = sum(lo <= truth <= hi for lo, hi in ivs)
                logp = p != "A"
                width = np.median([(math.log(hi) - math.log(lo)) if logp else hi - lo for lo, hi in ivs])
                cells.append(f"{100 * covered / len(ivs):.1f}% ({width:.3f})")
            print(f"| {k} | {name} | " + " | ".join(cells) + " |")
        print(f"<!-- {k} seeds: {time.perf_counter() - t0:.0f} s -->")


if __name__ == "__main__":
    main()
