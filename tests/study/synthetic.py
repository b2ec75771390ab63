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


def write_study(directory: Path, spec: StudySpec, laws: dict, *, R0: float = 0.3, noise: float = 0.006,
                points: int = 21, per_step: float = 1e10, seed: int | None = None, mutate=None, finished=None) -> list:
    """Write ``spec``'s study into ``directory``: each planned run gets a config, a run log whose
    evaluations follow ``laws[label] = (A, B, C_mid)`` -- or ``{seed: (A, B, C_mid)}``, a law per seed --
    (C = flops) plus noise, and a final model marker. ``seed``: one noise stream for the whole study (else
    one per run, from its seed and label); ``mutate(plan, rows)`` edits a run's evaluation rows;
    ``finished(plan)`` False leaves a run unfinished (its log cut at half the steps, no final/)."""
    plans = plan_study(spec, directory)
    directory.mkdir(parents=True, exist_ok=True)
    save_spec(spec, directory)
    steps = np.linspace(0, spec.steps, points).round().astype(int)
    study_rng = None if seed is None else np.random.default_rng(seed)
    for p in plans:
        law = laws[p.variant.label]
        A, B, C_mid = law[p.seed] if isinstance(law, dict) else law
        rng = study_rng or np.random.default_rng(1000 * p.seed + len(p.variant.label))
        flops = steps * per_step
        y = sigmoid(flops, A, B, C_mid, R0) + rng.normal(0, noise, size=len(steps))
        y[0] = R0  # the same model and evaluation seed: every variant starts at the same R0
        rows = [{"type": "eval", "step": int(s), "flops": float(c), "val/pass_rate": float(v)}
                for s, c, v in zip(steps, flops, y)]
        if mutate is not None:
            rows = mutate(p, rows)
        done = finished is None or finished(p)
        if not done:
            rows = [r for r in rows if r["step"] <= spec.steps // 2]
        p.directory.mkdir(parents=True)
        save_yaml(p.config, p.directory / "config.yaml")
        with open(p.directory / "runlog.jsonl", "w") as f:
            f.write(json.dumps({"type": "header", "run": p.directory.name, "recipe": p.config.recipe_name}) + "\n")
            for r in rows:
                f.write(json.dumps(r) + "\n")
        if done:
            (p.directory / "final").mkdir()
            (p.directory / "final" / "config.json").write_text("{}")
    return plans
