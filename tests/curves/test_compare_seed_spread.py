"""Several seeds a run in compare, as a review of the seed-share intervals found them: identical runs that stop
near C_mid are not a ceiling change, every verdict on t intervals says so, and the documented example prints
what its page shows."""

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import t

from scalerl.curves import Curve
from scalerl.curves.compare import EFFICIENCY, NONE, compare
from scalerl.curves.seed_dof import difference_spread as _spread

X = np.linspace(0, 200, 21).round() * 1e10
ROOT = Path(__file__).resolve().parents[2]


def _law(C, A=0.70, B=1.5, C_mid=5e11, R0=0.3):
    with np.errstate(divide="ignore"):
        return np.where(C > 0, R0 + (A - R0) / (1 + (C_mid / np.where(C > 0, C, 1.0)) ** B), R0)


def _pair(i: int, seeds: int, *, c_mid: float = 5e11, law_run=None) -> dict[str, list[Curve]]:
    """benchmarks/compare_verdicts.py's generator (A sd 0.02, ln C_mid sd 0.15 a seed, noise 0.01), pair ``i``,
    both runs of one configuration unless ``law_run`` (A, C_mid) moves the run."""
    rng = np.random.default_rng(i)
    runs = {}
    for label in ("base", "run"):
        A, C = (0.70, c_mid) if label == "base" or law_run is None else law_run
        runs[label] = []
        for _ in range(seeds):
            a = A + rng.normal(0, 0.02)
            c = C * math.exp(rng.normal(0, 0.15))
            y = _law(X, a, 1.5, c) + rng.normal(0, 0.01, X.size)
            y[0] = 0.3
            runs[label].append(Curve.from_arrays(X, y, name=label))
    return runs


def test_identical_runs_that_stop_near_c_mid_whose_seeds_agree_are_not_a_ceiling_change():
    """One configuration, 3 seeds a run, the runs stopping at ~1.3x C_mid (C_mid 1.5e12, the last evaluation
    2e12): A is poorly identified. The seeds' own A: base 0.720, 0.645, 0.862 and run 0.766, 0.738, 0.719 --
    equal means; Welch's test on them gives t ~ 0. But the run's seed
    share of the bootstrap is 12x smaller than var(seeds' A) / k for the base, and the residual share (80-88%
    of the whole variance) was dropped: "ceiling raised", dA +0.076 [+0.009, +0.143] (t with 3.6 df). Before
    seeds11 (the whole spread, z): no clear effect, dA interval -0.090 to +0.242."""
    result = compare(_pair(39, 3, c_mid=1.5e12), forecasts=False, seed=39)
    own = {label: [f.A for f in result.run(label).seeds.per_seed] for label in ("base", "run")}
    assert abs(np.mean(own["run"]) - np.mean(own["base"])) < 0.01  # the seeds' own estimates: no difference
    (c,) = result.classifications
    assert c.kind == NONE, c.explanation


def test_an_efficiency_verdict_from_t_intervals_says_so_as_a_ceiling_verdict_does():
    """With 3 seeds a run, dB and ln C_mid's intervals are t with a few degrees of freedom (Classification.dof),
    and a ceiling verdict says "t with N df: few seeds"; an efficiency verdict on the same kind of interval
    said nothing of it (scalerl compare's text and the study report's words print this explanation)."""
    result = compare(_pair(1, 3, law_run=(0.70, 1.5e12)), forecasts=False)
    (c,) = result.classifications
    assert c.kind == EFFICIENCY and c.dof["log_cmid_ratio"] is not None, (c.kind, c.dof)
    assert "df" in c.explanation, c.explanation


def test_docs_api_compare_example_prints_what_the_page_says():
    """docs/api.md's compare example (two runs of one seed each) shows "95% interval +0.229 to +0.285"; with
    each run bootstrapped on its own stream the same code prints +0.230 to +0.283."""
    page = (ROOT / "docs" / "api.md").read_text()
    shown = re.search(r"ceiling \| better: True \| (ceiling raised: A 0\.798[^\n]*)", page).group(1)
    code = (
        "from scalerl.curves import compare, read_curves\n"
        "by_name = {c.name: c for c in read_curves('examples/data/rl_curve_corpus.csv', x='x', y='val_score')}\n"
        "r = compare({'base PPO': [by_name['cogbeh_qwen_base_ppo']],\n"
        "             'primed: all strategies': [by_name['cogbeh_qwen_all_strategies']]})\n"
        "print(r.classifications[0].explanation)\n")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True).stdout
    assert out.strip() == shown


def _counts(rng, n, k):
    return np.array([np.bincount(rng.integers(0, k, k), minlength=k) for _ in range(n)])


def test_spread_never_exceeds_the_whole_variance_when_replicates_are_few():
    """(review) With few replicates for the seeds the shares' regression fits noise, their sum exceeded the
    whole variance and became the interval's (up to 766x with 10 + 10 seeds and 20 replicates)."""
    # Replicates that do not depend on the draw of seeds at all: 20 of them, 10 seeds a run.
    rng = np.random.default_rng(0)
    worst = 0.0
    for _ in range(50):
        values = rng.normal(size=20)
        sd, _ = _spread(values, [_counts(rng, 20, 10), _counts(rng, 20, 10)])
        worst = max(worst, sd * sd / values.var(ddof=1))
    assert worst <= 1 + 1e-9, f"interval variance {worst:.1f}x the bootstrap's whole variance"


def test_compare_dA_interval_is_the_whole_spread_with_t_at_a_small_bootstrap():
    # The benchmark's identical pair 2, 10 seeds a run, compare --bootstrap 20.
    res = compare(_pair(2, 10), n_boot=20, forecasts=False, seed=2)
    c = res.classifications[0]
    rb, bb = res.run("run").seeds.boot, res.run("base").seeds.boot
    m = min(len(rb.samples), len(bb.samples))
    whole_sd = float(np.std(rb.samples[:m, 0] - bb.samples[:m, 0], ddof=1))
    half = (c.dA_interval[1] - c.dA_interval[0]) / 2
    # The whole spread with Student's t on the reported df, no more.
    assert half == pytest.approx(t.ppf(0.975, c.dof["dA"]) * whole_sd, rel=0.02), (
        f"half-width {half:.4f} vs whole-spread t {t.ppf(0.975, c.dof['dA']) * whole_sd:.4f}")


def test_benchmark_refuses_base_seeds_zero():
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    try:
        import compare_verdicts
    finally:
        sys.path.pop(0)
    with pytest.raises(SystemExit) as exc:
        compare_verdicts.main(["--cases", "identical", "--pairs", "1", "--bootstrap", "20", "--base-seeds", "0"])
    assert exc.value.code == 2
