"""The band calibration (`scalerl calibrate`, calibration files) and how calibrated bands reach fit and
backtest: the coverage it prints is that of the drawn bands, the files it writes are ones fit reads, and the
runs it counts are the runs given (review du)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.errors import InputError
from scalerl.curves import calibrate, default_calibration, read_curves
from scalerl.curves.bands import read_calibration

from .test_cli_curves import run_cli


def _law(steps, A):
    s = np.maximum(np.asarray(steps, dtype=float), 1e-9)
    return 0.3 + (A - 0.3) / (1 + (300.0 / s) ** 1.5)


def stable_runs(n=6, seed=1, steps=None) -> dict:
    """``{name: (steps, acc)}``: n stable sigmoid runs (R0 0.3, C_mid 300 steps, ceilings 0.60, 0.63, ...),
    evaluated every 50 steps to step 1000, noise sd 0.008."""
    rng = np.random.default_rng(seed)
    steps = np.arange(0, 1001, 50) if steps is None else np.asarray(steps)
    return {f"r{i}": (steps, _law(steps, 0.6 + 0.03 * i) + rng.normal(0, 0.008, steps.size)) for i in range(n)}


def long_csv(path: Path, runs: dict, *, x="step", y="acc", scale=1.0, digits=5) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", x, y])
        for name, (steps, acc) in runs.items():
            for s, a in zip(steps, acc):
                w.writerow([name, int(s), f"{a * scale:.{digits}f}"])
    return path


def late_rows(n_runs: int, *, seed=0, scale=1.0) -> list[list]:
    """Runs that rise slowly, then jump by 0.3 after step 120 of 190: no band fitted on the first 30% covers them."""
    rng = np.random.default_rng(seed)
    rows = []
    for r in range(n_runs):
        for x in range(0, 200, 10):
            y = 0.30 + 0.0005 * x + (0.30 if x > 120 else 0.0) + rng.normal(0, 0.005)
            rows.append([f"late{r}", x, f"{y * scale:.4f}"])
    return rows


# --------------------------------------------------------------------------------------------------------------------
# 1. The coverage calibrate prints for the shipped bands is not that of the bands fit / backtest draw.


def test_calibrate_reports_the_shipped_bands_coverage_as_backtest_measures_it(capsys, tmp_path):
    """`calibrate --cuts 0.2 0.25` scores the shipped factors on the runs' held-out end levels, but ignores that
    past the shipped h_max (1.27 = 3.6x the fitted compute) the drawn band is stretched by h / h_max: backtest of
    the very same forecasts (same runs, cuts, bootstrap) says 83% of end levels covered (half-width 0.261, 84% of
    evaluations), calibrate prints 75% (0.232, 81%) for "the shipped bands on your runs"."""
    log = long_csv(tmp_path / "runs.csv", stable_runs(6))
    code, out, err = run_cli(capsys, "calibrate", log, "--x", "step", "--y", "acc", "--cuts", "0.2", "0.25",
                             "--output", tmp_path / "c.json", "--json")
    assert code == 0, err
    shipped = json.loads(out)["shipped_on_your_runs"]
    code, out, err = run_cli(capsys, "backtest", log, "--x", "step", "--y", "acc", "--all-runs", "--cut-fraction",
                             "0.2", "0.25", "--bootstrap", "0", "--json", "--no-progress")
    assert code == 0, err
    summary = json.loads(out)["summary"]
    assert summary["n_scored"] == 12
    assert shipped["end_coverage"] == pytest.approx(summary["end_coverage"])
    assert shipped["point_coverage"] == pytest.approx(summary["point_coverage"])


# --------------------------------------------------------------------------------------------------------------------
# 2. Run-cuts with one held-out evaluation: calibrate writes a file that fit refuses.


def test_calibrate_never_writes_a_file_that_fit_refuses(capsys, tmp_path):
    """Runs evaluated at doubling steps (0, 1, 2, 4, ..., 1024): at the 50% and 70% cuts one evaluation is held out,
    its "gain" from the first to the last quarter of one point is 0 over a span of 0. calibrate printed its report
    and "wrote l2.json; use it with: scalerl fit ..." and fit then said "not a valid calibration: q_gain must hold 8
    positive numbers ...; h_max and gain_span must be positive"."""
    steps = np.r_[0, 2 ** np.arange(0, 11)]
    rng = np.random.default_rng(0)
    runs = {}
    for i in range(6):
        s = np.maximum(steps, 1e-9)
        runs[f"r{i}"] = (steps, 0.3 + (0.6 + 0.03 * i - 0.3) / (1 + (30.0 / s) ** 0.8) + rng.normal(0, 0.008, s.size))
    log = long_csv(tmp_path / "doubling.csv", runs)
    out = tmp_path / "cal.json"
    code, text, err = run_cli(capsys, "calibrate", log, "--x", "step", "--y", "acc", "--output", out, "--no-progress")
    if code == 0:  # a file written is one the commands it is made for can use
        read_calibration(out, level=0.95)
        code, text, err = run_cli(capsys, "fit", log, "--x", "step", "--y", "acc", "--run", "r0", "--bootstrap", "0",
                                  "--calibration", out)
        assert code == 0, err
    else:  # or refused in one line, before a file is written
        assert code == 2 and len(err.strip().splitlines()) == 1 and not out.exists()


# --------------------------------------------------------------------------------------------------------------------
# 3. backtest's "not like the runs the factors come from" tests coverage against the nominal level.


def test_backtest_advice_tests_coverage_at_the_level_the_bands_hold(capsys, tmp_path):
    """A calibration of 6 run-cuts: its bands are 85.7% ones, and backtest labels them so ("end level inside the
    85.7% confidence band in 50%"). Then "the 85.7% bands covered 50% ... (so few by chance: p = 0.014): they are
    not like the runs the factors of FILE come from" -- p of 2 of 4 under 95%; under 85.7% it is about 0.10."""
    rows = late_rows(2)
    for name, (steps, acc) in stable_runs(2).items():
        rows += [[name, int(s), f"{a:.5f}"] for s, a in zip(steps, acc)]
    log = tmp_path / "mix.csv"
    with open(log, "w", newline="") as f:
        csv.writer(f).writerows([["run", "x", "val_score"], *rows])
    cal = default_calibration().as_dict()
    cal["run_cuts"] = 6
    small = tmp_path / "small.json"
    small.write_text(json.dumps(cal))
    code, out, err = run_cli(capsys, "backtest", log, "--x", "x", "--y", "val_score", "--all-runs", "--cut-fraction",
                             "0.3", "--bootstrap", "0", "--calibration", small, "--json", "--no-progress")
    assert code == 0, err
    doc = json.loads(out)
    assert doc["summary"]["n_scored"] == 4 and doc["summary"]["end_coverage"] == 0.5
    assert doc["bands_calibration"]["band_level"] == pytest.approx(6 / 7)
    assert doc["calibrate_advice"] is None  # binom.cdf(2, 4, 6/7) = 0.10: not "so few by chance"


# --------------------------------------------------------------------------------------------------------------------
# 4. --output naming one of the logs read: the log is overwritten with the calibration.


def test_calibrate_output_that_is_one_of_the_logs_is_refused(capsys, tmp_path):
    log = long_csv(tmp_path / "runs.csv", stable_runs(6))
    before = log.read_text()
    code, out, err = run_cli(capsys, "calibrate", log, "--x", "step", "--y", "acc", "--output", log, "--no-progress")
    assert log.read_text() == before  # the user's log is not replaced by a JSON calibration
    assert code == 2 and "--output" in err


# --------------------------------------------------------------------------------------------------------------------
# 5. Leave one log out: a log whose others hold too few run-cuts is dropped from the table without a word.


def test_leave_one_log_out_says_which_logs_it_could_not_check(capsys, tmp_path):
    """Two logs, 5 runs and 1 run: the table (and the JSON) list only the 1-run log; the 5-run log, the one
    most of the factors come from, is not there and nothing says it was not checked, or why (its others hold
    3 run-cuts, fewer than the 6 a calibration is made from)."""
    runs = stable_runs(6)
    big = long_csv(tmp_path / "big.csv", dict(list(runs.items())[:5]))
    small = long_csv(tmp_path / "small.csv", dict(list(runs.items())[5:]))
    code, out, err = run_cli(capsys, "calibrate", big, small, "--x", "step", "--y", "acc",
                             "--output", tmp_path / "c.json", "--no-progress")
    assert code == 0, err
    assert "leave one log out" in out and str(small) in out
    assert str(big) in out  # listed (not checked, with why), not left out of the table without a word


# --------------------------------------------------------------------------------------------------------------------
# 6. Python: calibrate(curves) takes curves of one name from several files for one run.


def test_python_calibrate_counts_runs_of_one_name_from_several_files_apart(tmp_path):
    """Each run in its own directory as metrics.csv (read_curves names each 'metrics'): calibrate(curves) said
    1 run (provenance "scalerl calibrate: 1 runs, 18 run-cuts"), and check_new() was None -- the CLI names them
    apart by their log, the API does not."""
    curves = []
    for name, (steps, acc) in stable_runs(6).items():
        d = tmp_path / name
        d.mkdir()
        (d / "metrics.csv").write_text("step,acc\n" + "".join(f"{int(s)},{a:.5f}\n" for s, a in zip(steps, acc)))
        curves += read_curves(d / "metrics.csv", x="step", y="acc")
    run = calibrate(curves)
    assert len(run.scored) == 18
    assert run.runs_scored == 6
    assert run.check_new() is not None
    assert run.calibration.provenance.startswith("scalerl calibrate: 6 runs")


# --------------------------------------------------------------------------------------------------------------------
# 7. backtest's advice names a calibrate command that drops the flags the runs were read with.


def test_backtest_advice_gives_a_calibrate_command_that_reads_the_logs_as_backtest_did(capsys, tmp_path):
    """Logs in percent read with --y-scale 0.01: the advice said `scalerl calibrate pct.csv --x x --y val_score`
    "makes factors from your runs", and that command fails ("values outside [0, 1] ... pass --y-scale 0.01")."""
    log = tmp_path / "pct.csv"
    with open(log, "w", newline="") as f:
        csv.writer(f).writerows([["run", "x", "val_score"], *late_rows(4, scale=100.0)])
    code, out, err = run_cli(capsys, "backtest", log, "--x", "x", "--y", "val_score", "--y-scale", "0.01",
                             "--all-runs", "--cut-fraction", "0.3", "--bootstrap", "0", "--json", "--no-progress")
    assert code == 0, err
    advice = json.loads(out)["calibrate_advice"]
    assert advice is not None and "scalerl calibrate" in advice
    assert "--y-scale 0.01" in advice


# --------------------------------------------------------------------------------------------------------------------
# 8. A file from the version before run_cuts: its bands are called 95% (or 99%) whatever its run-cuts.


def test_a_calibration_file_from_before_run_cuts_is_not_called_a_99_percent_band(capsys, tmp_path):
    """`scalerl calibrate` wrote no run_cuts before commit 34f904a; its provenance still says how many
    ("scalerl calibrate: 6 runs, 18 run-cuts ..."). Read now, run_cuts is None -- "not recorded, as in the shipped
    file" -- and fit --level 0.99 labels the band 99% without the note it gives the same file with run_cuts 18 (a
    94.7% band)."""
    log = long_csv(tmp_path / "runs.csv", stable_runs(6))
    out = tmp_path / "cal.json"
    code, _, err = run_cli(capsys, "calibrate", log, "--x", "step", "--y", "acc", "--output", out, "--no-progress")
    assert code == 0, err
    old = json.loads(out.read_text())
    assert old.pop("run_cuts") == 18 and "18 run-cuts" in old["provenance"]
    out.write_text(json.dumps(old, indent=2))  # as the earlier version wrote it
    fit = ["fit", log, "--x", "step", "--y", "acc", "--run", "r1", "--fit-until", "500", "--bootstrap", "0",
           "--level", "0.99", "--calibration", out]
    code, text, err = run_cli(capsys, *fit)
    # Refused with how to write it again, or its run-cuts taken from the provenance: not a "99%" band.
    assert (code == 2 and "run_cuts" in err) or (code == 0 and "largest error seen" in text
                                                 and "99% confidence" not in text), text


# --------------------------------------------------------------------------------------------------------------------
# 9. The same run read from two formats is two runs (only exact copies are counted once).


@pytest.mark.parametrize("scale", [1.0, 0.01], ids=["pass-rate", "small-range"])
def test_the_same_run_in_two_formats_is_counted_once(capsys, tmp_path, scale):
    """Six runs in a CSV rounded to 5 decimals, and r0 again as its own JSON-lines log at full precision: calibrate
    said "calibrated on 7 run(s), 21 run-cuts" -- a run scored with factors made from its copy passes the
    leave-one-run-out check for nothing (what the exact-copy note says), and 21 >= 19 run-cuts took away the
    note that the 95% factor is the largest error seen. Also on a pass rate of 0.3-0.75%, whose range is below a
    tolerance of the range alone, but not below the CSV's rounding (review dy)."""
    runs = {name: (steps, acc * scale) for name, (steps, acc) in stable_runs(6).items()}
    log = long_csv(tmp_path / "runs.csv", runs)
    steps, acc = runs["r0"]
    d = tmp_path / "r0"
    d.mkdir()
    (d / "metrics.jsonl").write_text("".join(json.dumps({"step": int(s), "acc": float(a)}) + "\n"
                                             for s, a in zip(steps, acc)))
    code, out, err = run_cli(capsys, "calibrate", log, d / "metrics.jsonl", "--x", "step", "--y", "acc",
                             "--output", tmp_path / "c.json", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["runs_scored"] == 6 and obj["run_cuts"] == 18


def test_a_null_provenance_is_none_not_the_word(tmp_path):
    # (a hand-written file with "provenance": null was printed "bands: the factors of FILE (None)")
    cal = default_calibration().as_dict()
    cal["provenance"] = None
    path = tmp_path / "cal.json"
    path.write_text(json.dumps(cal))
    assert read_calibration(path).provenance == ""


# --- review dv: regressions of the fixes above ---------------------------------------------------------------


def _sigmoid(x, A, cmid, r0=0.2, b=1.5):
    x = np.asarray(x, dtype=float)
    return r0 + (A - r0) / (1 + (cmid / np.maximum(x, 1e-9)) ** b)


# --- 1. calibrate: a run-cut without a gain left out of the gain factors makes leave-one-run-out fail -------------


def test_calibrate_with_one_run_holding_the_gains_still_checks_leave_one_run_out(tmp_path, capsys):
    # Three runs evaluated at steps 1..9 and once more at 100: every cut (30, 50, 70) holds out that one evaluation
    # (no gain of its own); a fourth run evaluated every 5 steps holds out several at each cut. The calibration as
    # a whole has gains (the fourth run's) -- before the change calibrate printed its factors, both checks and
    # "wrote ...", exit 0. Now the leave-one-run-out check, made without the fourth run, raises.
    rng = np.random.default_rng(0)
    rows = []
    for i in range(3):
        x = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100.0])
        y = _sigmoid(x, 0.7 + 0.02 * i, 8 + i) + rng.normal(0, 0.005, x.size)
        y[0] = 0.2
        rows += [{"run": f"sparse{i}", "step": a, "acc": round(b, 4)} for a, b in zip(x, y)]
    x = np.arange(0, 101, 5.0)
    y = _sigmoid(x, 0.7, 30) + rng.normal(0, 0.005, x.size)
    y[0] = 0.2
    rows += [{"run": "dense", "step": a, "acc": round(b, 4)} for a, b in zip(x, y)]
    log = tmp_path / "runs.csv"
    with open(log, "w", newline="") as f:
        w = csv.DictWriter(f, ["run", "step", "acc"])
        w.writeheader()
        w.writerows(rows)
    out = tmp_path / "cal.json"
    code = main(["calibrate", str(log), "--x", "step", "--y", "acc", "--output", str(out), "--no-progress"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert "leave one run out" in captured.out and "wrote" in captured.out


# --- 2. calibrate: the 1e-3 "same run" tolerance merges two distinct runs of a metric on a small scale ----------


def test_calibrate_does_not_merge_two_distinct_runs_of_a_small_metric(tmp_path, capsys):
    x = np.arange(0, 201, 20.0)
    a = 0.0010 + 0.0030 / (1 + (60 / np.maximum(x, 1e-9)) ** 1.5)
    a[0] = 0.001
    rng = np.random.default_rng(3)
    b = 0.0010 + 0.0026 / (1 + (70 / np.maximum(x, 1e-9)) ** 1.5) + rng.normal(0, 0.0001, x.size)
    b[0] = 0.001
    # (a pass rate on a hard set, 0.1% -> 0.35%: two seeds, 10-27% apart at every evaluation after the first)
    assert np.all(np.abs(a - b)[1:] / a[1:] > 0.02)
    paths = []
    for name, y in (("seed0", a), ("seed1", b)):
        p = tmp_path / f"{name}.csv"
        p.write_text("step,pass_rate\n" + "".join(f"{s:g},{v:.6f}\n" for s, v in zip(x, y)))
        paths.append(str(p))
    main(["calibrate", *paths, "--x", "step", "--y", "pass_rate", "--output", str(tmp_path / "c.json"),
          "--no-progress"])
    captured = capsys.readouterr()
    assert "is the same curve as" not in captured.out + captured.err, captured.out + captured.err


# --- 3. calibrate(): same-named curves of one file are still counted as one run in the Python API ---------------


def test_python_calibrate_counts_same_named_runs_of_one_table_as_the_command_does(tmp_path, capsys):
    from scalerl.curves.calibrate import calibrate
    from scalerl.curves.io import read_curve

    rng = np.random.default_rng(1)
    x = np.arange(0, 101, 5.0)
    cols = {}
    for i in range(4):
        y = _sigmoid(x, 0.6 + 0.05 * i, 20 + 5 * i, b=1.5) + rng.normal(0, 0.004, x.size)
        y[0] = 0.2
        cols[f"m{i}"] = y
    table = tmp_path / "wide.csv"
    with open(table, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", *cols])
        for j, s in enumerate(x):
            w.writerow([s, *[round(cols[k][j], 4) for k in cols]])
    # The command line reads them as four runs.
    code = main(["calibrate", *[str(table)] * 4, "--x", "step", "--y", *cols, "--output", str(tmp_path / "c.json"),
                 "--no-progress"])
    assert code == 0 and "calibrated on 4 run(s)" in capsys.readouterr().out
    # The Python API, given the same four curves, holds them out as one run and checks nothing.
    curves = [read_curve(table, "step", k) for k in cols]
    run = calibrate(curves)
    assert run.runs_scored == 4, run.calibration.provenance
    assert run.check_new() is not None


# --- review dy: regressions of the fixes above ---------------------------------------------------------------



def test_calibrate_never_writes_nan_gain_factors_when_held_out_evaluations_share_one_compute(capsys, tmp_path):
    # Six runs evaluated at steps 0..9 and twice at step 100 (the final evaluation logged twice): every cut holds out
    # the two evaluations at 100, whose gain spans ln(100/100) = 0. Before review dv this was refused in one line
    # ("none of the 18 run-cuts holds out two evaluations or more"); now calibrate prints "gain ... nan", writes a
    # file of NaN gain factors (not even JSON) and says "use it with: scalerl fit", which refuses it.
    rng = np.random.default_rng(0)
    rows = []
    for i in range(6):
        x = np.array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 100, 100.0])
        y = _sigmoid(x, 0.7 + 0.02 * i, 8 + i) + rng.normal(0, 0.005, x.size)
        y[0] = 0.2
        rows += [[f"r{i}", a, round(b, 4)] for a, b in zip(x, y)]
    log = tmp_path / "runs.csv"
    with open(log, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "step", "acc"])
        w.writerows(rows)
    out = tmp_path / "cal.json"
    rc, text, err = run_cli(capsys, "calibrate", log, "--x", "step", "--y", "acc", "--output", out, "--no-progress")
    if rc == 0:  # a file written is one fit can use
        from scalerl.curves.bands import read_calibration

        assert "nan" not in text.lower(), text
        read_calibration(out, level=0.95)
    else:  # or refused in one line, no file
        assert rc == 2 and len(err.strip().splitlines()) == 1 and not out.exists(), err


def test_calibration_from_scores_without_a_gain_is_refused_not_written_with_nan(tmp_path):
    from scalerl.curves.bands import default_calibration, read_calibration, write_calibration
    from scalerl.curves.calibrate import CutScore, calibration_from_scores

    scores = [CutScore(run=f"r{i}", end=0.5 + 0.1 * i, end_unit=0.01, points=np.array([0.4 + 0.1 * i]), horizon=0.5,
                       gain_error=0.0, gain_ends=(0.01, 0.01), gain_span=0.0, gain_horizon=0.5, small_sample=1.1)
              for i in range(8)]
    base = default_calibration()
    path = tmp_path / "cal.json"
    try:
        write_calibration(calibration_from_scores(scores, members=base.members, temperature=base.temperature), path)
    except InputError:
        return  # refused in one line, as before review dv
    read_calibration(path)  # else what was written must be a calibration


def test_python_calibrate_keeps_a_runs_evaluation_sets_together_when_another_log_shares_its_name(tmp_path):
    # Two runs, each a metrics.jsonl in a directory named "run" (a/run, b/run), read with a --y glob: run a logs
    # sets m1 and m2, run b only m1. The command line calibrates "2 run(s)"; calibrate() renames the two
    # "run | m1" curves by their file and leaves "run | m2" as it is, so a's m2 is a third run.
    from scalerl.curves.calibrate import calibrate
    from scalerl.curves.io import read_curves

    rng = np.random.default_rng(0)
    x = np.arange(0, 1001, 50.0)
    curves = []
    for name, sets in (("a", ["m1", "m2"]), ("b", ["m1"])):
        d = tmp_path / name / "run"
        d.mkdir(parents=True)
        rows = []
        for s in x:
            row = {"step": s}
            for j, m in enumerate(sets):
                row[m] = float(_sigmoid(s, 0.6 + 0.05 * j + (0.03 if name == "b" else 0), 300)
                               + rng.normal(0, 0.005)) if s else 0.2
            rows.append(row)
        (d / "metrics.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
        curves += read_curves(d / "metrics.jsonl", "step", "m*")
    assert sorted(c.name for c in curves) == ["run | m1", "run | m1", "run | m2"]
    run = calibrate(curves)
    assert run.runs_scored == 2, run.calibration.provenance
