"""Reproducers from review "reviewaf" (forecaster on logs from other trainers): strict xfails.

Each is a silent wrong answer found by pointing ``scalerl fit`` at a log written the way a user's
trainer writes it; the test asserts what a user would expect and fails on the current code.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from scalerl.curves.excursions import excursion_mask
from scalerl.curves.io import read_curve


def _sig(c, a=0.7, r0=0.2, b=1.5, cmid=60.0):
    return r0 + (a - r0) / (1 + (cmid / c) ** b)






@pytest.mark.xfail(strict=True, reason="reviewaf: TRL eval_steps < logging_steps: evaluations take the "
                   "num_tokens of the latest training row, several at one x, noted as 'several tasks'")
def test_trl_eval_between_logging_rows_gets_its_own_compute(tmp_path):
    history, tokens = [], 0
    for step in range(1, 201):
        tokens += 4096
        if step % 10 == 0:  # GRPOConfig's default logging_steps=10
            history.append({"loss": 0.01, "num_tokens": float(tokens), "epoch": step / 200, "step": step})
        if step % 5 == 0:  # the user's eval_steps=5; the Trainer logs first, then evaluates
            history.append({"eval_loss": 0.5, "eval_reward": round(_sig(step), 4), "epoch": step / 200,
                            "step": step})
    path = tmp_path / "trainer_state.json"
    path.write_text(json.dumps({"global_step": 200, "log_history": history}))
    curve = read_curve(path, "num_tokens", "eval_reward")
    # Expected: each evaluation at its own step gets its own compute (interpolated by step, as the
    # mlx-lm reader does for trained_tokens) -- or, if stale values stay, a note that says x is
    # logged less often than the evaluations (--x step), not "several tasks, sets or runs in one
    # column" with --run-column as the remedy (what it says now).
    assert np.all(np.diff(curve.x) > 0), (curve.x[:6], curve.notes)


def _csv(path, steps):
    lines = ["step,gpu_hours,val_acc"] + [f"{s},{s * 0.5:g},{_sig(s):.4f}" for s in steps]
    path.write_text("\n".join(lines) + "\n")
    return str(path)


@pytest.mark.xfail(strict=True, reason="reviewaf: compare prints none of a run's reading notes (rows dropped as "
                   "a resume, stale x, several evaluations at one x), in text or --json; fit and backtest do")
def test_compare_says_what_reading_a_run_dropped(capsys, tmp_path):
    from scalerl.cli import main

    steps = list(range(10, 310, 10))
    clean = _csv(tmp_path / "clean.csv", steps)
    # The same run with its rows in text order (10, 100, ..., 190, 20, 200, ...): read as a resume,
    # 21 of its 30 rows dropped -- `fit` and `backtest` say so in a note, `compare` says nothing.
    text_order = _csv(tmp_path / "text_order.csv", sorted(steps, key=str))
    assert main(["compare", clean, text_order, "--x", "gpu_hours", "--y", "val_acc", "--bootstrap", "20"]) == 0
    out = capsys.readouterr().out
    assert "dropped" in out, out
