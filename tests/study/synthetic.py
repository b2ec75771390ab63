"""A study directory whose run logs come from known sigmoids: the analysis and the report can be
checked against the truth, in a second, without training anything."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from scalerl.config import save_yaml
from scalerl.study.plan import plan_study
from scalerl.study.runner import save_spec
from scalerl.study.spec import StudySpec


def sigmoid(C, A, B, C_mid, R0):
    C = np.asarray(C, dtype=float)
    with np.errstate(divide="ignore"):
        return np.where(C > 0, R0 + (A - R0) / (1 + (C_mid / np.where(C > 0, C, 1.0)) ** B), R0)


def write_study(directory: Path, spec: StudySpec, laws: dict[str, tuple[float, float, float]], *,
                R0: float = 0.3, noise: float = 0.006, points: int = 21, per_step: float = 1e10) -> list:
    """Write ``spec``'s study into ``directory``: each planned run gets a config, a run log whose
    evaluations follow ``laws[label] = (A, B, C_mid)`` (C = flops) plus noise, and a final model marker."""
    plans = plan_study(spec, directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_spec(spec, directory)
    steps = np.linspace(0, spec.steps, points).round().astype(int)
    for p in plans:
        A, B, C_mid = laws[p.variant.label]
        rng = np.random.default_rng(1000 * p.seed + len(p.variant.label))
        flops = steps * per_step
        y = sigmoid(flops, A, B, C_mid, R0) + rng.normal(0, noise, size=len(steps))
        y[0] = R0  # the same model and evaluation seed: every variant starts at the same R0
        p.directory.mkdir(parents=True)
        save_yaml(p.config, p.directory / "config.yaml")
        with open(p.directory / "runlog.jsonl", "w") as f:
            f.write(json.dumps({"type": "header", "run": p.directory.name, "recipe": p.config.recipe_name}) + "\n")
            for s, c, v in zip(steps, flops, y):
                f.write(json.dumps({"type": "eval", "step": int(s), "flops": float(c), "val/pass_rate": float(v)}) + "\n")
        (p.directory / "final").mkdir()
        (p.directory / "final" / "config.json").write_text("{}")
    return plans
