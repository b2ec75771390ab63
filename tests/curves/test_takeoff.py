"""A take-off before the first evaluation: C_mid below every measured point after the start is said
(fit's notes, compare's efficiency verdicts), and a curve whose C_mid lies inside its data is not."""

import numpy as np

from scalerl.curves import Curve, Sigmoid, compare, forecast

from .conftest import PAPER_LAW, synthetic

# verl's GRPO on GSM8K (Qwen2-7B-Instruct, FSDP2; eric-haibin-lin/verl-data gsm8k/qwen2-7b-fsdp2.log):
# val-core/openai/gsm8k/reward/mean@1 as printed, every 5 steps -- 0.229 before training, 0.856 at
# its first evaluation after it. The jump came before it was measured.
VERL_STEPS = [0, 5, 10, 15, 20, 25, 30, 35, 40, 45, 50, 55, 60, 65, 70, 75, 80, 85, 90, 95, 100, 105]
VERL_ACC = [0.229, 0.856, 0.879, 0.886, 0.892, 0.886, 0.900, 0.897, 0.896, 0.890, 0.895, 0.885, 0.891, 0.893,
            0.895, 0.889, 0.892, 0.897, 0.891, 0.889, 0.898, 0.898]

TAKEOFF = "the take-off came before the first evaluation"


def verl_gsm8k() -> Curve:
    return Curve.from_arrays(VERL_STEPS, VERL_ACC, name="qwen2-7b-grpo", x_name="step", y_name="val_acc")


def test_fit_says_a_c_mid_below_the_first_evaluation_is_not_measured():
    fc = forecast(verl_gsm8k(), n_boot=200)
    assert fc.fit.C_mid < 5
    (note,) = [n for n in fc.notes if TAKEOFF in n]
    assert "(step = 5," in note and "B and C_mid are not measured" in note
    lo, hi = fc.intervals()["C_mid"]
    assert f"[{lo:.3g}, {hi:.3g}]" in note  # the interval it rests on, as fit prints it


def test_a_curve_whose_c_mid_lies_inside_its_data_gets_no_such_note():
    fc = forecast(synthetic(PAPER_LAW, seed=3), n_boot=200)
    assert fc.curve.x[fc.curve.x > 0].min() < fc.fit.C_mid
    assert not [n for n in fc.notes if "take-off" in n]


def test_a_c_mid_whose_interval_reaches_past_the_first_evaluation_is_measured():
    from scalerl.curves.takeoff import below_first

    assert below_first(0.9, [0, 5, 10], (0.3, 1.9)) == 5
    assert below_first(4.0, [0, 5, 10], (2.0, 6.0)) is None  # pinned by the points on either side
    assert below_first(4.0, [0, 5, 10]) == 5  # no interval: the estimate decides
    assert below_first(7.0, [0, 5, 10]) is None
    assert below_first(0.5, [0.0, 0.0]) is None  # nothing measured after the start


def _early(seed: int) -> Curve:
    """A run that has made most of its gain by its first evaluation (C_mid 200 against 500: 85%)."""
    law = Sigmoid(A=0.61, B=1.92, C_mid=200.0, R0=0.3)
    return synthetic(law, n=16, c_max=8000, seed=seed, noise=0.005)


def test_an_efficiency_verdict_on_an_unmeasured_take_off_says_so():
    # Three seeds a run: with two, the early run's two C_mid (221 and 272: fitted below the data, so they
    # differ more than the base's) give Welch's t one degree of freedom, and a t with one degree of freedom
    # does not exclude 0 at 97.5% even for a tenfold C_mid (scalerl.curves.seed_dof).
    base = [synthetic(PAPER_LAW, seed=s, noise=0.005) for s in range(3)]
    early = [_early(10 + s) for s in range(3)]
    res = compare({"base": base, "early": early}, n_boot=150, forecasts=False)
    (c,) = res.classifications
    assert c.kind == "efficiency" and c.better
    (note,) = [n for n in res.notes if "unmeasured take-off" in n]
    assert note.startswith("early vs base: the efficiency verdict rests on an unmeasured take-off")
    assert "early (C_mid" in note and "first evaluation at 500" in note and "base (" not in note


def test_an_efficiency_verdict_on_measured_take_offs_has_no_such_note():
    base = [synthetic(PAPER_LAW, seed=s, noise=0.005) for s in range(2)]
    faster = [synthetic(Sigmoid(A=0.61, B=1.92, C_mid=1200, R0=0.3), seed=20 + s, noise=0.005) for s in range(2)]
    res = compare({"base": base, "faster": faster}, n_boot=150, forecasts=False)
    (c,) = res.classifications
    assert c.kind == "efficiency"
    assert not [n for n in res.notes if "take-off" in n]
    assert np.isfinite(c.C_mid[0])
