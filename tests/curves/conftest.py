import json
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import Curve, Sigmoid

REPO = Path(__file__).resolve().parents[2]
REAL_CSV = REPO / "examples" / "data" / "real_rl_curves.csv"
QWEN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
DEEPSEEK = "verl_training_log__grpo_run_deepseek7b_llm"

# The paper's 8B ScaleRL fit (docs/paper.md), with a pass rate of 0.3 before RL.
PAPER_LAW = Sigmoid(A=0.610, B=1.92, C_mid=2542.0, R0=0.30)


def synthetic(law=PAPER_LAW, *, n=40, c_max=8000.0, noise=0.01, seed=0, zero=True) -> Curve:
    rng = np.random.default_rng(seed)
    x = np.linspace(c_max / n, c_max, n)
    y = law(x) + rng.normal(0.0, noise, n)
    if zero:
        x = np.r_[0.0, x]
        y = np.r_[law.R0, y]
    return Curve.from_arrays(x, np.clip(y, 0, 1), name=f"synthetic-{seed}")


@pytest.fixture
def paper_curve() -> Curve:
    return synthetic()


CORPUS_CSV = REPO / "examples" / "data" / "rl_curve_corpus.csv"
CORPUS_RUNS = REPO / "examples" / "data" / "rl_curve_corpus_runs.csv"


def jump_then_drift(*, seed=0, noise=0.008) -> Curve:
    """The shape of a real verl run (Qwen2.5-0.5B, PPO, responses <= 512): 0.001 at the start,
    a format-learning jump to ~0.46 within the first 0.6 hours, then a slow drift to ~0.55 at
    8.6 hours; 44 evaluations, as in that run's log."""
    rng = np.random.default_rng(seed)
    x = np.r_[0.0, np.linspace(0.2, 8.6, 43)]
    jump = 1.0 / (1.0 + (0.45 / np.maximum(x, 1e-9)) ** 8)  # 0 -> 1 between 0.3 and 0.7 hours
    drift = 0.56 - 0.10 * (np.maximum(x, 0.6) / 0.6) ** -0.9  # 0.46 at 0.6 h, 0.55 at 8.6 h
    y = np.where(x > 0, jump * drift + rng.normal(0.0, noise, x.size), 0.001)
    return Curve.from_arrays(x, np.clip(y, 0, 1), name=f"jump-then-drift-{seed}", x_name="hours")


def collapsing(*, seed=0, kind="collapse", n=30, noise=0.01) -> Curve:
    """A run that rises to ~0.25 and then collapses to 0 (clipping off) or declines to ~0.19
    (no baseline) -- the two unstable runs of the issue."""
    rng = np.random.default_rng(seed)
    x = np.r_[0.0, np.linspace(10, 300, n)]
    base = 0.05 + 0.20 * (1 - np.exp(-x / 40))
    if kind == "collapse":
        y = np.where(x > 150, base * np.exp(-(x - 150) / 40), base)
    else:
        y = np.where(x > 150, base - 0.07 * (x - 150) / 150, base)
    return Curve.from_arrays(x, np.clip(y + rng.normal(0, noise, x.size), 0, 1), name=f"{kind}-{seed}")


def write_jsonl(path: Path, rows: list[dict]) -> Path:
    """``rows`` as a JSON-lines log at ``path`` (returned)."""
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def paper_runs(n=6, seed=1) -> dict:
    """``{name: (steps, acc)}``: n stable runs of known truth -- the paper's sigmoid (R0 0.3, C_mid 300
    steps, B 1.5) with ceilings 0.60, 0.63, ..., evaluated every 50 steps to step 1000 with noise of sd
    0.008 (review aa's logs)."""
    rng = np.random.default_rng(seed)
    steps = np.arange(0, 1001, 50)

    def law(A):
        s = np.maximum(steps.astype(float), 1e-9)
        return 0.3 + (A - 0.3) / (1 + (300.0 / s) ** 1.5)

    return {f"r{i}": (steps, law(0.6 + 0.03 * i) + rng.normal(0, 0.008, steps.size)) for i in range(n)}


def long_csv(path, runs: dict, *, cells=None):
    """``runs`` as a CSV with a run column (``run,step,acc``); ``cells`` replaces the acc cell of (run, step)."""
    import csv

    cells = cells or {}
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "step", "acc"])
        for name, (steps, acc) in runs.items():
            for s, a in zip(steps, acc):
                w.writerow([name, int(s), cells.get((name, int(s)), f"{a:.5f}")])
    return path
