"""The forecaster as a notebook uses it (docs/api.md): everything the page needs is exported by
``scalerl.curves``, a calibration round-trips through its file, and the errors a Python caller
meets name the keyword to use, not only the command line's flag."""

import json
import subprocess
import sys

import numpy as np
import pytest

import scalerl.curves as curves
from scalerl.curves import (Curve, backtest, calibrate, default_calibration, read_calibration, read_curve,
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
