import math

import numpy as np
import pytest

from scalerl.curves import PowerLaw, Sigmoid


def test_sigmoid_values_at_landmarks():
    law = Sigmoid(A=0.6, B=2.0, C_mid=100.0, R0=0.2)
    assert law(0.0) == pytest.approx(0.2)
    assert law(100.0) == pytest.approx(0.4)  # half the gain at C_mid
    assert law(1e12) == pytest.approx(0.6, abs=1e-9)
    # the formula as written in the paper (docs/paper.md)
    C = 37.0
    assert law(C) == pytest.approx(0.2 + 0.4 / (1 + (100.0 / C) ** 2.0))


def test_sigmoid_inverse_and_fraction_identity():
    law = Sigmoid(A=0.7, B=1.5, C_mid=2500.0, R0=0.3)
    for f in (0.1, 0.5, 0.9):
        C = law.compute_for_fraction(f)
        assert C == pytest.approx(2500.0 * (f / (1 - f)) ** (1 / 1.5))
        assert law.gain_fraction(C) == pytest.approx(f)
    assert law.compute_for(law(1234.0)) == pytest.approx(1234.0)
    assert law.compute_for(0.7) == math.inf  # the asymptote is never reached
    assert law.compute_for(0.9) == math.inf
    assert law.compute_for(0.3) == 0.0
    with pytest.raises(ValueError):
        law.compute_for_fraction(1.0)


def test_sigmoid_is_linear_after_the_transform():
    law = Sigmoid(A=0.65, B=1.8, C_mid=3000.0, R0=0.25)
    C = np.geomspace(10, 1e5, 20)
    z = np.log((law.A - law.R0) / (law(C) - law.R0) - 1)
    assert np.allclose(z, law.B * np.log(law.C_mid) - law.B * np.log(C))


def test_slope_matches_finite_difference():
    law = Sigmoid(A=0.6, B=1.9, C_mid=2542.0, R0=0.3)
    for C in (100.0, 2542.0, 20000.0):
        h = C * 1e-6
        assert law.slope(C) == pytest.approx((law(C + h) - law(C - h)) / (2 * h), rel=1e-5)
    pl = PowerLaw(A=1.0, D=0.5, B=0.4)
    C = 50.0
    assert pl.slope(C) == pytest.approx((pl(C + 1e-4) - pl(C - 1e-4)) / 2e-4, rel=1e-5)
    pl = PowerLaw(A=1.0, D=0.5, B=0.4, C_ref=30.0)
    assert pl.slope(C) == pytest.approx((pl(C + 1e-4) - pl(C - 1e-4)) / 2e-4, rel=1e-5)


def test_power_law_values_and_inverse():
    pl = PowerLaw(A=0.9, D=0.5, B=0.5)
    assert pl(4.0) == pytest.approx(0.9 - 0.5 / 2.0)
    assert pl.compute_for(pl(123.0)) == pytest.approx(123.0)
    assert pl.compute_for(0.95) == math.inf
    assert pl(0.0) == -math.inf
    # in units of C_ref: the same law as the classic A - D' / C^B with D' = D * C_ref^B
    scaled = PowerLaw(A=0.9, D=0.5 / 10.0 ** 0.5, B=0.5, C_ref=10.0)
    assert scaled(4.0) == pytest.approx(pl(4.0)) and scaled.compute_for(0.7) == pytest.approx(pl.compute_for(0.7))


def test_params_report_every_parameter():
    assert set(Sigmoid(0.6, 1.0, 10.0, 0.1).params()) == {"A", "B", "C_mid", "R0"}
    assert set(PowerLaw(0.6, 1.0, 0.5).params()) == {"A", "D", "B", "C_ref"}
