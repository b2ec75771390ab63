"""Several seeds a run in compare, as a review of the seed-share intervals found them: identical runs that stop
near C_mid are not a ceiling change, every verdict on t intervals says so, and the documented example prints
what its page shows."""

import math
import re
import subprocess
import sys
from pathlib import Path

import numpy as np

from scalerl.curves import Curve
from scalerl.curves.compare import EFFICIENCY, NONE, compare

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
