"""The ``--json`` outputs (and the run report's facts JSON) as a script reads them (review bw): valid JSON, and what
the text says -- verdicts, band levels, warnings -- said there too."""

from __future__ import annotations

import csv
import html
import json
import re
from pathlib import Path

import numpy as np
import pytest

from scalerl.cli import main


def _strict_json(text: str):
    """RFC 8259 JSON: NaN / Infinity tokens are refused."""
    def refuse(token):
        raise ValueError(f"not JSON: {token}")

    return json.loads(text, parse_constant=refuse)


def _cli(capsys, *argv) -> tuple[int, str, str]:
    capsys.readouterr()
    rc = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return rc, out, err


def _sigmoid(x, A=0.7, B=1.5, C_mid=100.0, R0=0.2):
    return R0 + (A - R0) / (1 + (C_mid / x) ** B)


def _write_csv(path: Path, x, y, run=None) -> Path:
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow((["run"] if run else []) + ["step", "acc"])
        for a, b in zip(x, y):
            w.writerow(([run] if run else []) + [float(a), float(b)])
    return path


def _healthy(tmp_path: Path, name="healthy", seed=0) -> Path:
    x = np.arange(1, 41) * 10.0
    y = _sigmoid(x) + np.random.default_rng(seed).normal(0, 0.01, x.size)
    return _write_csv(tmp_path / f"{name}.csv", x, y)


def _collapsing(tmp_path: Path) -> Path:
    """Rises to ~0.6, then falls back to ~0.2: an unstable run."""
    x = np.arange(1, 41) * 10.0
    y = _sigmoid(x)
    y = np.where(x > 250, y - (x - 250) / 150 * 0.5, y) + np.random.default_rng(1).normal(0, 0.01, x.size)
    return _write_csv(tmp_path / "collapse.csv", x, y)


def _still_rising(tmp_path: Path) -> Path:
    """A straight climb from 0.1 to ~0.87: the sigmoid's A ends at its bound of 1."""
    x = np.arange(1, 41) * 10.0
    y = np.clip(0.1 + x / 520 + np.random.default_rng(1).normal(0, 0.005, x.size), 0, 1)
    return _write_csv(tmp_path / "rising.csv", x, y)


def _few_cut_calibration(tmp_path: Path) -> Path:
    """The shipped factors, as a file `scalerl calibrate` made from 6 run-cuts (2 runs x 3 cuts)."""
    import scalerl.curves as curves

    shipped = json.loads((Path(curves.__file__).parent / "calibration.json").read_text())
    shipped["run_cuts"] = 6
    shipped["provenance"] = "scalerl calibrate: 2 runs, 6 run-cuts at [0.3, 0.5, 0.7], x: step"
    path = tmp_path / "small-calibration.json"
    path.write_text(json.dumps(shipped))
    return path


# ----------------------------------------------------------------------------- fit


def test_fit_json_unstable_run_verdict_says_no_verdict(tmp_path, capsys):
    rc, out, _ = _cli(capsys, "fit", _collapsing(tmp_path), "--x", "step", "--y", "acc", "--bootstrap", "20",
                      "--verdict", "100", "800", "--json")
    assert rc == 0
    o = _strict_json(out)
    assert o["status"] == "unstable"
    assert "verdict" in o, "asked --verdict, got no verdict key"
    assert "no verdict" in o["verdict"]["word"]


# ----------------------------------------------------------------------------- compare


def test_compare_json_says_the_band_level_of_a_small_calibration(tmp_path, capsys):
    cal = _few_cut_calibration(tmp_path)
    a, b = _healthy(tmp_path, "a", 0), _healthy(tmp_path, "b", 1)
    args = ["compare", a, b, "--x", "step", "--y", "acc", "--bootstrap", "20", "--calibration", cal]
    rc, text, _ = _cli(capsys, *args)
    assert rc == 0 and "85.7% band, not 95%" in text  # what the text says
    rc, out, _ = _cli(capsys, *args, "--json")
    assert rc == 0
    _strict_json(out)
    assert "85.7%" in out or "band_level" in out, "the JSON's forecast bands read as 95% ones"


def test_compare_json_warns_of_A_at_its_upper_bound(tmp_path, capsys):
    rising, base = _still_rising(tmp_path), _healthy(tmp_path)
    rc, out, _ = _cli(capsys, "fit", rising, "--x", "step", "--y", "acc", "--bootstrap", "20", "--json")
    assert any("upper bound" in w for w in _strict_json(out)["warnings"])  # fit says so
    rc, out, _ = _cli(capsys, "compare", base, rising, "--x", "step", "--y", "acc", "--bootstrap", "20", "--json")
    assert rc == 0
    o = _strict_json(out)
    assert next(r for r in o["runs"] if r["label"] == "rising")["A"] > 0.999
    assert "bound" in out, "nothing in the JSON says the rising run's A is at its bound (its ceiling not identified)"


# ----------------------------------------------------------------------------- backtest


def test_backtest_json_skipped_run_cut_keeps_the_run_name(tmp_path, capsys):
    x = np.arange(1, 41) * 10.0
    y = _sigmoid(x) + np.random.default_rng(0).normal(0, 0.01, x.size)
    path = tmp_path / "two.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["run", "step", "acc"])
        w.writerows(["short8", a, b] for a, b in zip(x[:7], y[:7]))  # too short at the 0.3 and 0.5 cuts
        w.writerows(["long", a, b] for a, b in zip(x, y))
    rc, out, _ = _cli(capsys, "backtest", path, "--x", "step", "--y", "acc", "--all-runs", "--cut-fraction",
                      "0.3", "0.5", "0.7", "--bootstrap", "20", "--no-progress", "--json")
    assert rc == 0
    o = _strict_json(out)
    scored_names = {r["run"] for r in o["runs"]}
    assert o["skipped"], "expected short8 skipped at the early cuts"
    for s in o["skipped"]:
        assert s["run"] in {"short8", "long"} | scored_names, f"skipped 'run' is not a run's name: {s['run']!r}"
        assert s.get("cut_fraction") in (0.3, 0.5)


# ----------------------------------------------------------------------------- calibrate


def _calibrate(capsys, tmp_path, *paths, json_out=True):
    args = ["calibrate", *paths, "--x", "step", "--y", "acc", "--output", tmp_path / "cal.json", "--no-progress"]
    return _cli(capsys, *args, *(["--json"] if json_out else []))


def test_calibrate_json_says_the_95_factor_is_not_95_with_few_run_cuts(tmp_path, capsys):
    a, b = _healthy(tmp_path, "a", 0), _healthy(tmp_path, "b", 1)
    rc, text, _ = _calibrate(capsys, tmp_path, a, b, json_out=False)
    assert rc == 0 and "a 85.7% band, not 95%" in text
    rc, out, _ = _calibrate(capsys, tmp_path, a, b)
    assert rc == 0
    o = _strict_json(out)
    assert o["run_cuts"] == 6
    assert "85.7%" in out, "the JSON does not say the 95% factors hold about 85.7%"


def test_calibrate_json_notes_a_run_given_twice(tmp_path, capsys):
    a, b = _healthy(tmp_path, "a", 0), _healthy(tmp_path, "b", 1)
    rc, text, _ = _calibrate(capsys, tmp_path, a, b, a, json_out=False)
    assert rc == 0 and "given twice" in text
    rc, out, _ = _calibrate(capsys, tmp_path, a, b, a)
    assert rc == 0
    assert any("given twice" in n for n in _strict_json(out)["notes"])


# ----------------------------------------------------------------------------- report


def _run_dir(tmp_path: Path, ys, *, last_row: dict | None = None) -> Path:
    """A finished scalerl run directory (a run log of evaluations every 10 steps, config.yaml, final/)."""
    d = tmp_path / "run"
    (d / "final").mkdir(parents=True)
    (d / "final" / "config.json").write_text("{}")
    (d / "final" / "scalerl_final.json").write_text(json.dumps({"step": 10 * (len(ys) - 1)}))
    (d / "config.yaml").write_text(f"run:\n  steps: {10 * (len(ys) - 1)}\n")
    header = {"type": "header", "run": "run", "recipe": "scalerl", "model": "tiny", "task": "arithmetic",
              "params": 1, "config": {"forecast": {"x": "flops"}, "eval": {"sets": ["val"]}}}
    with open(d / "runlog.jsonl", "w") as f:
        f.write(json.dumps(header) + "\n")
        for i, y in enumerate(ys):
            s = 10 * i
            row = {"type": "eval", "step": s, "gpu_hours": s * 1e-4, "flops": s * 1e9, "tokens": s * 100,
                   "samples": s * 16, "val/pass_rate": float(y)}
            if last_row and i == len(ys) - 1:
                row.update(last_row)
            f.write(json.dumps(row) + "\n")
    return d


def _healthy_ys():
    x = np.arange(21) * 10.0
    y = 0.2 + 0.5 / (1 + (60 / np.maximum(x, 1)) ** 1.5) + np.random.default_rng(0).normal(0, 0.01, x.size)
    y[0] = 0.2
    return y


def _facts_text(d: Path) -> str:
    page = (d / "report.html").read_text()
    m = re.search(r"<summary>facts \(JSON\)</summary><pre>(.*?)</pre>", page, re.S)
    assert m, "no facts JSON in report.html"
    return html.unescape(m.group(1))


def test_report_facts_json_is_json_with_a_null_in_the_log(tmp_path, capsys):
    d = _run_dir(tmp_path, _healthy_ys(), last_row={"gpu_hours": None})
    rc, _, _ = _cli(capsys, "report", d)
    assert rc == 0
    _strict_json(_facts_text(d))


def test_report_warns_of_A_at_its_upper_bound(tmp_path, capsys):
    x = np.arange(21) * 10.0
    y = np.clip(0.1 + x / 230 + np.random.default_rng(0).normal(0, 0.005, x.size), 0, 1)
    y[0] = 0.1
    d = _run_dir(tmp_path, y)
    rc, out, _ = _cli(capsys, "fit", d, "--bootstrap", "20", "--json")
    assert any("upper bound" in w for w in _strict_json(out)["warnings"])  # what fit says of this run
    rc, text, _ = _cli(capsys, "report", d)
    assert rc == 0
    facts = _strict_json(_facts_text(d))
    assert facts["fit_A"] > 0.999
    said = text + (d / "report.md").read_text() + json.dumps(facts)
    assert "bound" in said, "the report does not say A sits at its bound"


def test_report_says_the_band_level_of_a_small_calibration(tmp_path, capsys):
    d = _run_dir(tmp_path, _healthy_ys())
    cal = _few_cut_calibration(tmp_path)
    rc, text, _ = _cli(capsys, "report", d, "--calibration", cal)
    assert rc == 0
    said = text + (d / "report.md").read_text() + _facts_text(d)
    assert "85.7%" in said, "the report's 95% bands are about 85.7% ones, unsaid"
    # ...and no line or caption calls them 95% ones (the forecast line and curve.png's caption did).
    md = (d / "report.md").read_text()
    assert "85.7% confidence band" in md and "Bands: 85.7% confidence" in md, md
    assert "95% confidence" not in md, md


def test_fit_tables_label_the_bands_with_the_level_they_hold(tmp_path, capsys):
    cal = _few_cut_calibration(tmp_path)
    rc, text, _ = _cli(capsys, "fit", _healthy(tmp_path, "a", 0), "--x", "step", "--y", "acc", "--bootstrap", "20",
                       "--calibration", cal, "--predict", "400")
    assert rc == 0 and "85.7% confidence (curve)" in text and "95% confidence" not in text, text


# Review bx
def _collapsing_csv(tmp_path: Path) -> Path:
    x = np.arange(1, 41) * 10.0
    y = 0.2 + 0.5 / (1 + (100.0 / x) ** 1.5)
    y = np.where(x > 250, y - (x - 250) / 150 * 0.5, y) + np.random.default_rng(1).normal(0, 0.01, x.size)
    path = tmp_path / "collapse.csv"
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "acc"])
        w.writerows([float(a), float(b)] for a, b in zip(x, y))
    return path


def test_fit_verdict_of_an_unstable_run_refuses_a_backwards_budget(tmp_path, capsys):
    path = _collapsing_csv(tmp_path)
    capsys.readouterr()
    rc = main(["fit", str(path), "--x", "step", "--y", "acc", "--bootstrap", "20", "--verdict", "800", "100"])
    out, err = capsys.readouterr()
    assert rc == 2 and "Going from" not in out and err.startswith("scalerl fit: error:"), (out, err)  # as a stable run's


def test_report_compute_line_says_flops_it_lacks(tmp_path, capsys):
    d = _run_dir(tmp_path, _healthy_ys(), last_row={"flops": None})
    assert main(["report", str(d)]) == 0
    compute = next(line for line in (d / "report.md").read_text().splitlines() if line.startswith("| compute |"))
    assert "nan" not in compute, compute


def test_report_of_a_log_with_null_samples_is_no_traceback(tmp_path, capsys):
    d = _run_dir(tmp_path, _healthy_ys(), last_row={"samples": None})
    assert main(["report", str(d)]) == 0  # (a TypeError traceback: int(None))
    assert "samples not logged" in (d / "report.md").read_text()


# Review by
@pytest.mark.parametrize("column", ["reward_errors", "reward_timeouts"])
def test_report_of_a_log_with_null_reward_counts_is_no_traceback(tmp_path, capsys, column):
    d = _run_dir(tmp_path, _healthy_ys(), last_row={column: None})
    assert main(["report", str(d)]) == 0
    assert (d / "report.md").exists()


# Review bz
def test_report_does_not_claim_a_negative_number_of_reward_errors(tmp_path, capsys):
    d = _run_dir(tmp_path, _healthy_ys(), last_row={"reward_errors": -3})
    assert main(["report", str(d)]) == 0
    md = (d / "report.md").read_text()
    assert "-3 errors" not in md, [line for line in md.splitlines() if "reward function" in line]


def test_report_does_not_read_a_boolean_as_one_reward_error(tmp_path, capsys):
    d = _run_dir(tmp_path, _healthy_ys(), last_row={"reward_errors": True})
    assert main(["report", str(d)]) == 0
    md = (d / "report.md").read_text()
    assert "1 errors" not in md, [line for line in md.splitlines() if "reward function" in line]


@pytest.mark.parametrize("command", ["fit", "compare", "backtest"])
def test_json_with_a_plot_says_where_the_figure_went(tmp_path, capsys, command):
    runs = [_healthy(tmp_path, "a", 0)] + ([_healthy(tmp_path, "b", 1)] if command == "compare" else [])
    figure = tmp_path / "figure.png"
    cut = ["--cut-fraction", 0.5] if command == "backtest" else []
    rc, out, err = _cli(capsys, command, *runs, "--x", "step", "--y", "acc", *cut, "--plot", figure, "--json",
                        "--bootstrap", 50)
    assert rc == 0, err
    assert _strict_json(out)["plot"] == str(figure) and figure.exists()


# Review ct: compare, backtest and the study report label the bands with the level they hold.

def test_compare_table_labels_the_bands_with_the_level_they_hold(tmp_path, capsys):
    cal = _few_cut_calibration(tmp_path)
    rc, text, _ = _cli(capsys, "compare", _healthy(tmp_path, "a", 0), _healthy(tmp_path, "b", 1),
                    "--x", "step", "--y", "acc", "--bootstrap", "20", "--calibration", cal)
    assert rc == 0 and "85.7% band, not 95%" in text  # the note says so...
    assert "[95% band]" not in text and "85.7% band]" in text, text  # ...and the column names that level


def test_fit_verdict_labels_the_gain_interval_with_the_level_it_holds(tmp_path, capsys):
    rc, text, _ = _cli(capsys, "fit", _healthy(tmp_path), "--x", "step", "--y", "acc", "--bootstrap", "20",
                       "--verdict", "200", "800", "--calibration", _few_cut_calibration(tmp_path))
    assert rc == 0 and "85.7% band, not 95%" in text
    (verdict,) = [line for line in text.splitlines() if line.startswith("Going from")]
    assert "95% interval" not in verdict and "85.7% interval" in verdict, verdict  # (review cu: said 95%)


def test_backtest_labels_the_bands_with_the_level_they_hold(tmp_path, capsys):
    cal = _few_cut_calibration(tmp_path)
    rc, text, _ = _cli(capsys, "backtest", _healthy(tmp_path, "a", 0), _healthy(tmp_path, "b", 1), "--all-runs",
                    "--x", "step", "--y", "acc", "--bootstrap", "20", "--calibration", cal)
    assert rc == 0 and "85.7% band, not 95%" in text
    assert "95% band" not in text and "95% confidence band" not in text and "95% prediction band" not in text, text
    assert "end in 85.7% band" in text, text


def test_study_report_labels_the_forecast_bands_of_a_small_calibration(tmp_path, monkeypatch):
    import matplotlib.figure

    from scalerl.study.report import write_study_report
    from scalerl.study.spec import StudySpec

    from tests.study.synthetic import write_study

    laws = {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.55, 1.5, 5e11)}
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=20, extrapolate=2.0,
                     calibration=str(_few_cut_calibration(tmp_path)))
    titles: list[str] = []  # the figures' titles (review cu: intervals.png said 95% of the calibrated band)
    suptitle = matplotlib.figure.Figure.suptitle
    monkeypatch.setattr(matplotlib.figure.Figure, "suptitle",
                        lambda self, t, *a, **k: (titles.append(t), suptitle(self, t, *a, **k))[1])
    write_study(tmp_path / "study", spec, laws)
    write_study_report(tmp_path / "study")
    md = (tmp_path / "study" / "report.md").read_text()
    assert "budget [95%]" not in md, md
    assert "85.7%" in md, md
    (title,) = [t for t in titles if "fitted parameters" in t]  # intervals.png, with the extrapolated pass rate
    assert "85.7%" in title, title
