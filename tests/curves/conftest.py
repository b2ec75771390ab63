from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import Curve, Sigmoid

REPO = Path(__file__).resolve().parents[2]
REAL_CSV = REPO / "examples" / "data" / "real_rl_curves.csv"
QWEN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
DEEPSEEK = "verl_training_log__grpo_run_deepseek7b_llm"

# The paper's 8B ScaleRL fit (SPEC.md), with a pass rate of 0.3 before RL.
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
