"""The fit's own cautions (``sigmoid_fit.diagnose``): B on its lower bound is said -- a flat stretch of points
fitted as a sigmoid of no bend, whose C_mid and A mean nothing (review w: a 5-step run printed
``B = 0.00 [0.00, 50.00], C_mid = 1.11e+06`` on FLOPs of ~1e10 with no warning)."""

import numpy as np

from scalerl.curves import fit_sigmoid
from scalerl.curves.data import Curve
from scalerl.curves.solver import B_BOUNDS

X = np.array([0, 1, 2, 3, 4, 5.0]) * 2e9


def test_b_on_its_lower_bound_is_said():
    fit = fit_sigmoid(Curve.from_arrays(X, [0.3, 0.5, 0.52, 0.49, 0.5, 0.49], name="flat"), fit_from=None)
    assert fit.B <= B_BOUNDS[0] * (1 + 1e-6)
    assert [w for w in fit.warnings if w.startswith("B is at its lower bound 0.001: the points show no bend")]


def test_a_curve_that_bends_is_not_told_so():
    fit = fit_sigmoid(Curve.from_arrays(X, [0.3, 0.4, 0.45, 0.48, 0.5, 0.51], name="bends"), fit_from=None)
    assert not [w for w in fit.warnings if "lower bound" in w]
