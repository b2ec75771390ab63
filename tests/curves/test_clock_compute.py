"""A clock is no compute: Unix time as x is refused in one line, and ``--x wall_time`` reads hours
since each run's first row from a row log's clock column (prime-rl's file monitor logs ``time``)."""

import json
import math

import numpy as np
import pytest

from scalerl.curves import fit_sigmoid, read_curve, read_curves
from scalerl.curves.power_law_fit import fit_power_law
from scalerl.errors import InputError

T0 = 1_764_650_000.0  # 2025-12-02, Unix seconds


def _log(path, runs=("a",), scale=1.0):
    rows = []
    for k, run in enumerate(runs):
        for s in range(1, 121):
            t = (T0 + 3600 * k + 60 * s) * scale
            rows.append({"run": run, "step": s, "time": t, "reward": 0.2})
            if s % 10 == 0:
                rows.append({"run": run, "step": s, "time": t + 5 * scale,
                             "eval/acc": 0.3 + 0.3 * (1 - math.exp(-s / (40 + 20 * k)))})
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    return path


def test_unix_time_as_compute_is_refused_with_what_to_give_instead(tmp_path):
    c = read_curve(_log(tmp_path / "m.jsonl"), "time", "eval/acc")  # readable: a curve is not a fit
    for fit in (fit_sigmoid, fit_power_law):
        with pytest.raises(InputError, match=r"compute 'time' runs from 1\.76465e\+09 .*a clock such as Unix time.*--x wall_time"):
            fit(c)


def test_wall_time_is_hours_since_each_runs_first_row(tmp_path):
    path = _log(tmp_path / "m.jsonl", runs=("a", "b"))
    curves = {c.name: c for c in read_curves(path, "wall_time", "eval/acc")}
    # Each run's clock starts at its own first row (run b started an hour after run a).
    for c in curves.values():
        assert np.allclose(c.x, (60 * np.arange(10, 121, 10) + 5 - 60) / 3600)
        assert any("hours since each run's first 'time'" in n for n in c.notes)
    assert fit_sigmoid(curves["a"]).A > 0.5


def test_a_clock_in_milliseconds_reads_as_the_same_hours(tmp_path):
    s = read_curve(_log(tmp_path / "s.jsonl"), "wall_time", "eval/acc")
    ms = read_curve(_log(tmp_path / "ms.jsonl", scale=1000.0), "wall_time", "eval/acc")
    assert np.allclose(s.x, ms.x)


def test_a_csv_derives_wall_time_from_its_clock_column_as_json_lines_do(capsys, tmp_path):
    """docs/forecasting.md: the row logs, CSV among them, make --x wall_time from a time / _timestamp
    column. The CSV reader asked its header for a 'wall_time' column and refused: "no x column
    'wall_time'; did you mean 'time'?" -- while the same rows as JSON lines were read."""
    from scalerl.cli import main

    rows = [(s, 1_700_000_000 + 60 * s, a) for s, a in zip(range(0, 60, 10), (0.30, 0.35, 0.40, 0.44, 0.47, 0.49))]
    for clock in ("time", "_timestamp"):
        path = tmp_path / f"{clock}.csv"
        path.write_text(f"step,{clock},acc\n" + "".join(f"{s},{t},{a}\n" for s, t, a in rows))
        jsonl = tmp_path / f"{clock}.jsonl"
        jsonl.write_text("".join(json.dumps({"step": s, clock: t, "acc": a}) + "\n" for s, t, a in rows))
        csv_curve, jsonl_curve = (read_curve(p, "wall_time", "acc") for p in (path, jsonl))
        assert np.allclose(csv_curve.x, np.arange(0, 60, 10) / 60) and np.allclose(csv_curve.x, jsonl_curve.x)
        assert f"x wall_time: hours since each run's first {clock!r}" in csv_curve.notes
        assert main(["fit", str(path), "--x", "wall_time", "--y", "acc", "--bootstrap", "0"]) == 0
        capsys.readouterr()
