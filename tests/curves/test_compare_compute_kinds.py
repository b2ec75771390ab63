"""Seeds of one run pooled into one fit only where they share a kind of compute: FLOPs and steps are
refused, one unit under two names (``cum_wall_hours``, ``hours``) is pooled."""

import json

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.curves import Curve, compare
from scalerl.curves.compute_kind import compute_kind, mixed_compute, untold_compute
from scalerl.errors import InputError


def _sigmoid(C, A, B, C_mid, R0):
    C = np.asarray(C, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):  # C = 0: the start, R0
        return R0 + (A - R0) / (1 + (C_mid / C) ** B)


def _csv(path, x_name, per_point, A, seed):
    rng = np.random.default_rng(seed)
    x = np.arange(21) * per_point
    y = _sigmoid(np.arange(21) * 1e11, A, 1.5, 5e11, 0.3) + rng.normal(0, 0.006, size=21)  # to 4x C_mid
    y[0] = 0.3
    path.write_text(f"{x_name},score\n" + "".join(f"{a},{b}\n" for a, b in zip(x, y)))
    return str(path)


def test_compare_does_not_pool_seeds_of_one_label_whose_compute_columns_differ(capsys, tmp_path):
    """Review z: four curves of one law (A 0.70); the second seed of 'agg' is read against its step column instead
    of FLOPs (`--x flops flops flops step`). compare pooled the two units into one fit and said "agg: ceiling
    raised" (A 0.90 or so), with a note that only spoke of C_mid and compute ratios between runs. It is refused,
    in one line that names the columns and says what to do."""
    paths = [_csv(tmp_path / "b0.csv", "flops", 1e11, 0.70, 0), _csv(tmp_path / "b1.csv", "flops", 1e11, 0.70, 1),
             _csv(tmp_path / "a0.csv", "flops", 1e11, 0.70, 2), _csv(tmp_path / "a1.csv", "step", 1, 0.70, 3)]
    code = main(["compare", *paths, "--x", "flops", "flops", "flops", "step", "--y", "score", "--labels",
                 "base", "base", "agg", "agg", "--bootstrap", "50", "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and not out
    (line,) = err.strip().splitlines()
    assert "run 'agg': its seeds are read against different kinds of compute ('flops' (FLOPs) in " in line
    assert "'step' (steps) in " in line and "a1.csv" in line
    assert "read every seed of a run against the same kind of compute (--x), or give them different labels" in line


def test_seeds_read_against_one_unit_under_two_names_are_pooled(capsys, tmp_path):
    """The legitimate case: one trainer logs hours as cum_wall_hours, another as hours; seeds of one run from both
    are one unit, pooled (and runs compared across the two names draw no note of different units)."""
    paths = [_csv(tmp_path / "b0.csv", "cum_wall_hours", 0.5, 0.70, 0), _csv(tmp_path / "b1.csv", "hours", 0.5, 0.70, 1),
             _csv(tmp_path / "a0.csv", "hours", 0.5, 0.70, 2), _csv(tmp_path / "a1.csv", "cum_wall_hours", 0.5, 0.70, 3)]
    code = main(["compare", *paths, "--x", "cum_wall_hours", "hours", "hours", "cum_wall_hours", "--y", "score",
                 "--labels", "base", "base", "agg", "agg", "--bootstrap", "50", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    obj = json.loads(out)
    assert [r["seeds"] for r in obj["runs"]] == [2, 2]
    assert not [n for n in obj["notes"] if "units" in n], obj["notes"]


def test_the_python_api_refuses_it_too_and_pools_a_name_that_tells_no_kind_with_a_note():
    """Two known kinds are refused from Python as from the command; a name that tells no kind ('compute') is a
    hint the name cannot give: pooled, with a note naming it (refused, review ac found, it left a user whose
    logs name compute their own way no way to compare at all)."""
    x = np.arange(1, 21) * 1e11
    y = _sigmoid(x, 0.7, 1.5, 5e11, 0.3)
    base = [Curve.from_arrays(x, y, name="b", x_name="flops")]
    with pytest.raises(InputError, match=r"'flops' \(FLOPs\); 'step' \(steps\)"):
        compare({"base": base, "agg": [Curve.from_arrays(x, y, name="a0", x_name="flops"),
                                       Curve.from_arrays(x, y + 0.01, name="a1", x_name="step")]}, n_boot=20)
    result = compare({"base": base, "agg": [Curve.from_arrays(x, y, name="a0", x_name="flops"),
                                            Curve.from_arrays(x, y + 0.01, name="a1", x_name="compute")]}, n_boot=20)
    assert any("run 'agg': its seeds are read against differently named compute columns ('flops', 'compute'), "
               "pooled as one unit; 'compute' does not say which" in n for n in result.notes), result.notes


@pytest.mark.parametrize("name, kind", [
    ("flops", "FLOPs"), ("step", "steps"), ("_step", "steps"), ("trainer/global_step", "steps"),
    ("cum_wall_hours", "hours"), ("hours", "hours"), ("wall_time", "hours"), ("gpu_hours", "GPU-hours"),
    ("compute/gpu_hours", "GPU-hours"), ("cum:timing_s/step", "seconds"), ("cum:time/step", "seconds"),
    ("num_tokens", "tokens"), ("perf/total_num_tokens", "tokens"), ("samples", "samples"), ("epoch", "epochs"),
    ("x", None), ("compute", None),
    # review ac: verl's seconds per step, other timers, HF Trainer's FLOPs, env timesteps
    ("cum:perf/time_per_step", "seconds"), ("perf/time_per_step", "seconds"), ("step_time", "seconds"),
    ("_timestamp", "seconds"), ("wall_clock_time", "seconds"), ("total_flos", "FLOPs"), ("train/total_flos", "FLOPs"),
    ("gpu_h", "GPU-hours"), ("time/total_timesteps", "steps"), ("tokens_per_second", "tokens"),
    # review ad: the unit a timer's name ends in; verl's rollout timer; TFLOPs apart from FLOPs
    ("cum:step_time_ms", "milliseconds"), ("wall_clock_h", "hours"), ("time_h", "hours"),
    ("elapsed_minutes", "minutes"), ("runtime_min", "minutes"), ("timing_s/rollout", "seconds"),
    ("rollout/time", "seconds"), ("tflops", "TFLOPs"), ("num_rollouts", "samples"),
    # GPU time in seconds was pooled with the wall clock's seconds
    ("gpu_seconds", "GPU-seconds"), ("cum:gpu_sec", "GPU-seconds"), ("total_gpu_s", "GPU-seconds"),
    # review aj: any timer whose name says GPU (gpu_time_s was the wall clock's seconds)
    ("gpu_time_s", "GPU-seconds"), ("gpu_time", "GPU-seconds"), ("gpu_time_hours", "GPU-hours"),
    ("gpu_ms", "GPU-milliseconds"), ("gpu_min", "GPU-minutes"), ("elapsed_sec", "seconds"), ("gpu_util", None),
    ("gpuhr", "GPU-hours"), ("gpuhrs", "GPU-hours"), ("gpusec", "GPU-seconds"),  # (review am: they had become None)
    # a glued unit before more of the name; minutes and days glued; a GPU's index and the wall clock are no GPU time
    ("gpu_hrs_total", "GPU-hours"), ("gpumin", "GPU-minutes"), ("gpu_days", "GPU-days"), ("train_days", "days"),
    ("wall_time_gpu0", "hours"), ("gpu0_time_s", "seconds"), ("gpu_min_time", "GPU-seconds"),  # (a minimum: review ba)
])
def test_compute_kind_of_the_columns_logs_use(name, kind):
    assert compute_kind(name) == kind


def test_mixed_compute():
    assert not mixed_compute(["flops"]) and not mixed_compute(["x", "x"])
    assert not mixed_compute(["num_tokens", "trained_tokens"])
    assert mixed_compute(["flops", "step"]) and mixed_compute(["gpu_hours", "hours"])
    assert mixed_compute(["gpu_seconds", "timing_s"]) and mixed_compute(["gpu_time_s", "wall_s"])
    assert not mixed_compute(["x", "y"]) and not mixed_compute(["flops", "x"])  # (untold: pooled with a note)
    assert untold_compute(["flops", "x"]) == ["x"] and untold_compute(["x", "x"]) == []


def _verl_csv(path, A, seed):
    """A run of one law against steps, with verl's seconds per step beside it (30 s each)."""
    rng = np.random.default_rng(seed)
    step = np.arange(21)
    with np.errstate(divide="ignore"):
        y = 0.3 + (A - 0.3) / (1 + (5.0 / step) ** 1.5) + rng.normal(0, 0.006, size=21)
    y[0] = 0.3
    path.write_text("step,perf/time_per_step,score\n" + "".join(f"{s},30.0,{v}\n" for s, v in zip(step, y)))
    return str(path)


def test_compare_does_not_pool_a_seed_against_steps_with_one_against_verl_seconds(capsys, tmp_path):
    """Four seeds of one law (A 0.70) against steps; the second seed of 'agg' is read against verl's summed
    seconds per step (--x step step step cum:perf/time_per_step). 247f570 refuses flops with step; this pair
    (steps 0..20 with seconds 30..630) is pooled into one fit without a word (exit 0, agg A ~0.58, no note).
    Before 247f570 it drew the "compute columns differ" note at least (review ac)."""
    paths = [_verl_csv(tmp_path / f"c{i}.csv", 0.70, i) for i in range(4)]
    code = main(["compare", *paths, "--x", "step", "step", "step", "cum:perf/time_per_step", "--y", "score",
                 "--labels", "base", "base", "agg", "agg", "--bootstrap", "50", "--json"])
    out, err = capsys.readouterr()
    assert code == 2 and "different kinds of compute" in err


def _sigmoid_5e3(C):
    return 0.3 + (0.7 - 0.3) / (1 + (5e3 / C) ** 1.5)


@pytest.mark.parametrize("other, scale", [("cum:step_time_ms", 1e3), ("wall_clock_h", 1 / 3600)])
def test_seeds_read_against_seconds_and_milliseconds_or_hours_are_not_pooled_without_a_word(other, scale):
    """Seed a0 of 'agg' counts seconds (cum:timing_s/step), seed a1 the same run in milliseconds (cum:step_time_ms)
    or hours (wall_clock_h). bff3e27 read both as seconds, and compare pooled x values 1000x (3600x) apart into one
    fit with no note about the columns (review ad); the unit a name ends in is read first now."""
    x = np.arange(1, 21) * 1e3
    base = [Curve.from_arrays(x, _sigmoid_5e3(x), name="b", x_name="cum:timing_s/step")]
    agg = [Curve.from_arrays(x, _sigmoid_5e3(x), name="a0", x_name="cum:timing_s/step"),
           Curve.from_arrays(x * scale, _sigmoid_5e3(x) + 0.01, name="a1", x_name=other)]
    with pytest.raises(InputError, match="different kinds of compute"):
        compare({"base": base, "agg": agg}, n_boot=20)
