"""The forecaster as a notebook uses it (docs/api.md): everything the page needs is exported by
``scalerl.curves``, a calibration round-trips through its file, and the errors a Python caller
meets name the keyword to use, not only the command line's flag."""

import json
import subprocess
import sys

import numpy as np
import pytest

import scalerl.curves as curves
from scalerl.curves import (Curve, backtest, calibrate, default_calibration, read_calibration, read_curve, read_curves,
                            write_calibration)
from scalerl.errors import InputError


def test_every_exported_name_exists_and_the_package_stays_light():
    assert not [name for name in curves.__all__ if not hasattr(curves, name)]
    # What docs/api.md imports from the package, not from its modules.
    for name in ("calibrate", "CalibrationRun", "read_calibration", "write_calibration", "plot_forecast",
                 "plot_compare", "plot_backtest", "RunFit"):
        assert name in curves.__all__, name
    # The plots are exported, matplotlib still imported only when one is drawn; never torch.
    code = ("import sys, scalerl.curves; "
            "assert 'matplotlib' not in sys.modules and 'torch' not in sys.modules, sorted(sys.modules)")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_a_calibration_written_from_python_reads_back(tmp_path):
    cal = default_calibration()
    path = write_calibration(cal, tmp_path / "sub" / "mine.json")
    assert read_calibration(path) == cal
    assert json.loads(path.read_text())["levels"] == list(cal.levels)
    assert not list(path.parent.glob(".*"))  # written atomically: no temporary left beside it
    with pytest.raises(InputError, match="is a directory"):
        write_calibration(cal, tmp_path)


def test_calibrate_from_python_gives_factors_a_forecast_takes(tmp_path):
    x = np.array([0, 1, 2, 4, 8, 12, 16, 24, 32, 48, 64, 96, 128], dtype=float)
    rng = np.random.default_rng(0)
    runs = []
    for i, (A, C_mid) in enumerate([(0.6, 6), (0.7, 10), (0.55, 4), (0.65, 8)]):
        y = 0.2 + (A - 0.2) / (1 + (C_mid / np.maximum(x, 1e-9)) ** 1.3) + rng.normal(0, 0.005, x.size)
        y[0] = 0.2
        runs.append(Curve.from_arrays(x, y, name=f"run{i}", x_name="step"))
    result = calibrate(runs)
    assert len(result.scored) >= 6 and result.calibration.run_cuts == len(result.scored)
    again = read_calibration(write_calibration(result.calibration, tmp_path / "cal.json"))
    (p,) = curves.forecast(runs[0], calibration=again).predict([200])
    assert p.lo <= p.R <= p.hi


def test_errors_name_the_python_keyword(tmp_path):
    log = tmp_path / "two.csv"
    log.write_text("run,step,score\na,0,0.1\na,1,0.2\nb,0,0.1\nb,1,0.3\n")
    with pytest.raises(InputError, match=r"--run NAME .*run=NAME"):
        read_curve(log, x="step", y="score")
    c = Curve.from_arrays([0, 1, 2, 3, 4, 5], [0.1, 0.2, 0.3, 0.35, 0.4, 0.42])
    with pytest.raises(InputError, match=r"--cut-fraction .*cut_fraction="):
        backtest(c)
    with pytest.raises(InputError, match=r"--y-scale 0.01.*bounded=False"):
        Curve.from_arrays([0, 1], [10, 20])


def _score_curve(seed: int, A: float = 7.5, C_mid: float = 400.0, name: str = "score") -> Curve:
    """A metric that is no pass rate: a score from 1 to ~7.5 (a judge's 0-10 scale), read unbounded."""
    rng = np.random.default_rng(seed)
    x = np.r_[0.0, np.linspace(50, 3000, 30)]
    y = 1.0 + (A - 1.0) / (1 + (C_mid / np.maximum(x, 1e-9)) ** 1.5) + rng.normal(0, 0.05, x.size)
    y[0] = 1.0
    return Curve.from_arrays(x, y, name=name, bounded=False)


def test_a_curve_read_unbounded_is_fitted_without_a_cap_by_default():
    """A Curve read with bounded=False was fitted with A capped at 1 unless the caller also passed
    A_max=inf, y_floor=-inf: a score up to 7.5 came out A = 1.000 with only a warning. The fits,
    the bootstrap, the forecast, the power law and a comparison now take the curve's own bounds."""
    from scalerl.curves import compare, fit_power_law, fit_sigmoid, forecast

    curve = _score_curve(0)
    fit = fit_sigmoid(curve)
    assert fit.A == pytest.approx(7.5, abs=0.3) and fit.A_max == np.inf
    assert not any("upper bound" in w for w in fit.warnings)
    assert fit_power_law(curve).law.A > 5
    fc = forecast(curve, fit_until=1500, n_boot=100)
    assert fc.fit.A == pytest.approx(7.5, abs=0.6)
    low, high = fc.intervals()["A"]
    assert high > 7 and low > 1
    # Two seeds of two recipes, one with a higher ceiling: a comparison on the score's own scale.
    runs = {"base": [_score_curve(1), _score_curve(2)], "better": [_score_curve(3, A=8.5), _score_curve(4, A=8.5)]}
    result = compare(runs, n_boot=60, forecasts=False)
    (c,) = result.classifications
    assert c.kind == "ceiling" and c.better and c.dA == pytest.approx(1.0, abs=0.4)
    # A pass rate keeps its bounds.
    rate = Curve.from_arrays(curve.x, (curve.y - 1) / 10, name="rate")
    assert fit_sigmoid(rate).A_max == 1.0


def test_compare_unbounded_on_the_command_line(tmp_path, capsys):
    """`scalerl compare --unbounded` on two score logs failed outright ("the bootstrap failed on 300 of 300
    resamples"): the seeds' bootstrap refitted with A capped at 1 whatever the flag said."""
    from scalerl import cli

    paths = []
    for i, (A, c_mid) in enumerate([(7.5, 120.0), (7.5, 220.0)]):
        x = np.arange(10, 410, 10)
        rng = np.random.default_rng(i)
        y = 1 + (A - 1) / (1 + (c_mid / x) ** 1.5) + rng.normal(0, 0.03, x.size)
        path = tmp_path / f"r{i}.csv"
        path.write_text("step,score\n" + "".join(f"{a},{b:.4f}\n" for a, b in zip(x, y)))
        paths.append(str(path))
    assert cli.main(["compare", *paths, "--x", "step", "--y", "score", "--unbounded"]) == 0
    out = capsys.readouterr().out
    assert "r1:" in out and ("efficiency" in out or "ceiling" in out or "no clear effect" in out)


def test_select_fit_from_takes_an_unbounded_curves_own_bounds():
    """select_fit_from, exported beside fit_sigmoid, still assumed a pass rate: on a score starting at 1 it
    raised scipy's 'Each lower bound must be strictly less than each upper bound'."""
    from scalerl.curves import select_fit_from

    cut = select_fit_from(_score_curve(0))
    assert cut.fit_from is None or cut.fit_from >= 0


def test_a_one_line_console_cut_inside_a_number_is_said_not_called_empty(tmp_path):
    from scalerl.curves import read_curves

    log = tmp_path / "v1.log"
    log.write_text("step:1 - val-core/acc:0.5 - timing_s/step:10.5")
    with pytest.raises(InputError, match="its only line ends inside a number"):
        read_curves(log, "step", "val-core/acc")


# Review al: the Python API as a notebook user calls it.
_X = [0, 50, 100, 200, 400, 800, 1600]
_Y = [0.20, 0.31, 0.38, 0.46, 0.52, 0.555, 0.57]


def test_compare_result_run_of_an_unknown_label_names_the_runs():
    """It raised a bare StopIteration."""
    from scalerl.curves import Curve, compare

    result = compare({"a": [Curve.from_arrays(_X, _Y)], "b": [Curve.from_arrays(_X, [v + 0.05 for v in _Y])]},
                     n_boot=20, forecasts=False)
    assert result.run("a").label == "a"
    with pytest.raises(InputError, match=r"no run labelled 'base PPO'; the runs compared are a, b"):
        result.run("base PPO")


def test_from_arrays_drops_pandas_missing_values_in_a_list():
    """A nullable column's tolist() holds pd.NA: it was refused as 'not numeric' where None is dropped."""
    import pandas as pd

    from scalerl.curves import Curve

    y = pd.Series([0.20, 0.31, None, 0.46, 0.52, 0.555, 0.57], dtype="Float64").tolist()
    curve = Curve.from_arrays(_X, y)
    assert len(curve) == 6 and curve.dropped == 1
    with pytest.raises(InputError, match="values are not numeric"):
        Curve.from_arrays(_X, ["a", *_Y[1:]])


def test_a_y_scale_that_is_no_positive_number_is_refused(tmp_path):
    """y_scale=0 made every y 0; NaN dropped every row "as NaN/inf/missing"."""
    from scalerl.curves import read_curve

    path = tmp_path / "log.csv"
    path.write_text("step,acc\n" + "".join(f"{x},{100 * y}\n" for x, y in zip(_X, _Y)))
    assert read_curve(path, "step", "acc", y_scale=0.01).y[-1] == pytest.approx(0.57)
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(InputError, match="y_scale must be a positive number"):
            read_curve(path, "step", "acc", y_scale=bad)


def test_a_verdict_to_infinite_compute_is_refused_and_plots_take_home_paths(tmp_path, monkeypatch):
    """verdict(100, inf) read "infx the compute"; plot_forecast(fc, '~/x.png') made a './~' folder; plot_curves
    of one Curve failed as "'Curve' object is not iterable"."""
    from scalerl.curves import Curve, forecast, plot_curves

    curve = Curve.from_arrays(_X, _Y)
    fc = forecast(curve, n_boot=0)
    with pytest.raises(InputError, match="both finite compute values"):
        fc.verdict(100, float("inf"))
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)
    assert plot_curves(curve, "~/x.png") == tmp_path / "home" / "x.png"
    assert (tmp_path / "home" / "x.png").is_file() and not (tmp_path / "~").exists()


def test_a_numpy_float32_y_scale_is_a_positive_number(tmp_path):
    path = tmp_path / "pct.csv"
    path.write_text("step,tokens,acc\n" + "".join(f"{s},{s * 1000},{20 + s / 10:.2f}\n" for s in range(10, 70, 10)))
    c = read_curves(path, x="tokens", y="acc", y_scale=np.float32(0.01))[0]
    assert c.y[0] == pytest.approx(0.21)



def test_a_table_or_complex_values_are_refused_not_flattened():
    """A 2-column array was flattened row by row (two runs interleaved into one curve), complex values
    lost their imaginary part with only numpy's warning, nested lists were flattened too."""
    x = np.linspace(1.0, 100.0, 12)
    y = 0.7 / (1 + (50 / x) ** 1.5)
    with pytest.raises(InputError, match="12 x 2 table"):
        Curve.from_arrays(np.stack([x, x], 1), np.stack([y, y], 1))
    with pytest.raises(InputError, match="table"):
        Curve.from_arrays([[1, 2], [3, 4]], [[0.1, 0.2], [0.3, 0.4]])
    with pytest.raises(InputError, match="complex"):
        Curve.from_arrays(x + 1j, y)
    # One column (a pandas frame's values of one run) is still one run's values.
    assert Curve.from_arrays(x[:, None], y[:, None]).x.shape == (12,)


def test_fits_and_plots_given_no_curve_say_how_to_make_one(tmp_path):
    """fit_sigmoid(x) raised "'numpy.ndarray' object has no attribute 'bounded'", bootstrap(fit, None)
    "'<' not supported between NoneType and int", plot_curves([]) wrote an empty figure."""
    from scalerl.curves import bootstrap, fit_ensemble, fit_power_law, fit_sigmoid, plot_curves

    x = np.linspace(1.0, 100.0, 12)
    curve = Curve.from_arrays(x, 0.7 / (1 + (50 / x) ** 1.5))
    for fit in (fit_sigmoid, fit_power_law, fit_ensemble):
        with pytest.raises(InputError, match=r"takes a Curve.*Curve.from_arrays"):
            fit(x)
    with pytest.raises(InputError, match="whole number"):
        bootstrap(fit_sigmoid(curve), None)
    with pytest.raises(InputError, match="takes a SigmoidFit"):
        bootstrap(curve)
    with pytest.raises(InputError, match="at least one Curve"):
        plot_curves([], tmp_path / "empty.png")
    assert not (tmp_path / "empty.png").exists()
    with pytest.raises(InputError, match="takes a Curve"):
        plot_curves([x], tmp_path / "arrays.png")


def test_masked_arrays_tensors_and_other_iterables_are_read_as_what_they_hold():
    """Review ax: a masked array's masked value was read as the number under the mask, a tensor that requires
    grad raised numpy's RuntimeError, a generator or dict.values() was refused as "not numeric"."""
    import torch

    x = np.arange(1.0, 7.0)
    y = np.array([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    masked = Curve.from_arrays(x, np.ma.masked_array(y, mask=[0, 0, 1, 0, 0, 0]))
    assert masked.y.tolist() == [0.1, 0.2, 0.4, 0.5, 0.6] and masked.dropped == 1
    assert Curve.from_arrays(torch.tensor(x, requires_grad=True), torch.tensor(y)).y.tolist() == y.tolist()
    assert Curve.from_arrays((v for v in x), dict(enumerate(y)).values()).x.tolist() == x.tolist()


# Review ba
def test_a_dict_given_as_y_is_not_read_as_its_keys():
    d = {10: 0.1, 20: 0.2, 40: 0.35, 80: 0.5}
    try:
        c = Curve.from_arrays(list(d), d, bounded=False)
    except (TypeError, ValueError):
        return  # refused (or read as its values): either is right
    assert c.y.tolist() == [0.1, 0.2, 0.35, 0.5]


# Review ba
def test_bytes_are_not_read_as_character_codes():
    with pytest.raises((TypeError, ValueError)):
        Curve.from_arrays([1, 2, 3], b"123", bounded=False)


# Review bb
def test_a_dicts_keys_are_read_in_their_order():
    """{step: pass rate}.keys() is a collections.abc.Set, but ordered: Curve.from_arrays(d.keys(), d.values())
    was read before f3abdf3; f3abdf3 refused it as 'a set (it has no order)'."""
    d = {10: 0.1, 20: 0.2, 30: 0.3, 40: 0.4, 50: 0.5}
    assert list(Curve.from_arrays(d.keys(), d.values()).x) == [10, 20, 30, 40, 50]


def test_a_complex_tensor_is_refused_as_a_complex_array_is():
    """The docstring: complex values are refused (numpy would drop the imaginary part). A complex torch tensor
    was refused before f3abdf3; f3abdf3's `.double()` dropped its imaginary part with only a torch warning."""
    torch = pytest.importorskip("torch")
    with pytest.raises(Exception, match="complex"):
        Curve.from_arrays(torch.arange(1, 6) * (1 + 1j), [0.1, 0.2, 0.3, 0.4, 0.5])
