"""Where a log's compute starts. A log that starts over (two runs in one file) is told as such, not as a
resume. Compute that starts later than the log spans (a step counter carried over from an earlier stage, a W&B
``_step`` that kept counting) is said, in the fit's warnings, ``scalerl fit`` and every ``compare`` verdict
it touches; a log from 0, or whose first evaluation comes a little after the start, is not.

The curve is verl's Qwen2-7B GRPO GSM8K validation (eric-haibin-lin/verl-data, gsm8k/qwen2-7b-fsdp2.log):
22 evaluations, steps 0..105, once as logged and once with the steps offset by 1000 (review u: identical
runs compared as "efficiency worse, 1.38e+03x the baseline's compute" with nothing said)."""

import numpy as np

from scalerl.cli import main
from scalerl.curves import compare, fit_sigmoid
from scalerl.curves.data import Curve
from scalerl.curves.solver import late_start_warning

STEPS = list(range(0, 106, 5))
ACC = [0.229, 0.856, 0.879, 0.886, 0.892, 0.886, 0.900, 0.897, 0.896, 0.890, 0.895, 0.885,
       0.891, 0.893, 0.895, 0.889, 0.892, 0.897, 0.891, 0.889, 0.898, 0.898]


def _curve(name, offset):
    return Curve.from_arrays([offset + s for s in STEPS], ACC, name=name, x_name="global_step", y_name="val_acc")


def test_identical_runs_with_an_offset_counter_are_not_silently_an_efficiency_difference():
    res = compare({"from0": [_curve("from0", 0)], "from1000": [_curve("from1000", 1000)]},
                  baseline="from0", n_boot=100)
    (cls,) = res.classifications
    said = [n for n in res.notes if "from1000's compute 'global_step' starts at 1000" in n]
    assert cls.kind != "efficiency" or said, (cls.kind, res.notes)
    if said:
        assert said[0].startswith(f"from1000 vs from0: the {cls.kind} verdict compares compute as each run counts it")


def test_the_fit_warns_of_an_offset_counter_and_says_what_to_do():
    fit = fit_sigmoid(_curve("late", 1000))
    (late,) = [w for w in fit.warnings if "starts at" in w]
    assert "starts at 1000 with no evaluation at 0, and the log spans 105 after it" in late
    assert "subtract its first value" in late and "--r0" in late


def test_no_warning_from_zero_or_a_first_evaluation_soon_after_the_start():
    assert not [w for w in fit_sigmoid(_curve("from0", 0)).warnings if "starts at" in w]
    x = np.array(STEPS[1:], dtype=float)  # no evaluation at 0: the first at step 5 of 105
    assert late_start_warning(x, "step") is None
    assert late_start_warning(x + 95, "step") is None  # starts at 100, spans 100: not more than the span
    assert late_start_warning(x + 96, "step") is not None


def test_the_fit_command_prints_it(tmp_path, capsys):
    path = tmp_path / "late.csv"
    path.write_text("global_step,val_acc\n" + "".join(f"{1000 + s},{a}\n" for s, a in zip(STEPS, ACC)))
    assert main(["fit", str(path), "--x", "global_step", "--y", "val_acc", "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "warning: compute 'global_step' starts at 1000" in out


def test_a_log_that_starts_over_is_told_as_several_runs_not_as_a_resume(tmp_path):
    import pytest

    from scalerl.curves import read_curve
    from scalerl.errors import InputError

    path = tmp_path / "two.csv"  # two runs one after the other, no run column (review u)
    path.write_text("step,acc\n" + "".join(f"{s},{0.2 + 0.005 * s}\n" for s in range(0, 60, 5)) * 2)
    with pytest.raises(InputError) as exc:
        fit_sigmoid(read_curve(path, "step", "acc"))
    text = str(exc.value)
    assert "compute 'step' decreases at point 13 (55 -> 0), back to where the log began" in text
    assert "add a column naming it" in text and "split there by its step column" not in text
