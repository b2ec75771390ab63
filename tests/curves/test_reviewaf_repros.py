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


