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
