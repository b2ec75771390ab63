"""scalerl report on a run log a hand (or another writer) edited: rows without a set's pass rate or a step, numbers
written as text, pass rates in percent, a run directory whose path needs quoting -- a report or one line, never a
traceback or other numbers than scalerl fit's (review di). The logs are written by hand: no test trains."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalerl.cli import main


def _rows(n: int = 10) -> list[dict]:
    """Evaluation rows of a smooth rising curve (a sigmoid in log-compute), step 0 at compute 0."""
    rows = []
    for i in range(n):
        step = 2 * i
        flops = 5e10 * i
        pr = 0.30 + 0.35 / (1 + (2e11 / flops) ** 1.2) if flops > 0 else 0.30
        rows.append({"type": "eval", "step": step, "gpu_hours": 0.0004 * i, "flops": flops, "samples": 128 * i,
                     "val/pass_rate": round(pr, 4)})
    return rows


def _write_run(directory: Path, rows: list[dict], *, raw_lines: dict[int, str] | None = None) -> Path:
    """A run directory holding a run log of ``rows`` after a header (``raw_lines``: eval row index -> the line
    written instead of that row's JSON, e.g. a hand edit)."""
    directory.mkdir(parents=True, exist_ok=True)
    header = {"type": "header", "run": directory.name, "recipe": "scalerl", "model": "tiny-m",
              "task": "arithmetic-mix", "params": 1077632, "device": "cpu",
              "config": {"forecast": {"x": "flops"}}}
    lines = [json.dumps(header)]
    for i, r in enumerate(rows):
        lines.append((raw_lines or {}).get(i, json.dumps(r)))
    (directory / "runlog.jsonl").write_text("\n".join(lines) + "\n")
    return directory


def _report(capsys, directory: Path) -> tuple[int, str, str]:
    try:
        code = main(["report", str(directory)])
    except SystemExit as exc:  # argparse / InputError paths
        code = exc.code
    out = capsys.readouterr()
    return code, out.out, out.err


def test_baseline_synthetic_run_reports(tmp_path, capsys):
    """Not a defect: the hand-written log the tests below edit gives a report (so their failures are the edits')."""
    run = _write_run(tmp_path / "run", _rows())
    code, out, err = _report(capsys, run)
    assert code == 0, err
    assert (run / "report.html").exists()


def _no_traceback(code, err):
    assert "Traceback" not in err, err
    assert code in (0, 2), err


def test_eval_row_missing_a_sets_pass_rate_gives_a_report_not_a_keyerror(tmp_path, capsys):
    rows = _rows()
    del rows[3]["val/pass_rate"]
    run = _write_run(tmp_path / "run", rows)
    code, out, err = _report(capsys, run)
    _no_traceback(code, err)
    assert code == 0, err  # the fits leave the row out (as a null pass rate) and say so
    assert (run / "report.html").exists() and (run / "sets.png").exists()


def test_a_set_logged_only_at_the_first_evaluation_gives_a_report(tmp_path, capsys):
    rows = _rows()
    rows[0]["extra/pass_rate"] = 0.1
    run = _write_run(tmp_path / "run", rows)
    code, out, err = _report(capsys, run)
    _no_traceback(code, err)
    assert code == 0, err


def test_x_written_as_a_string_gives_no_traceback(tmp_path, capsys):
    rows = _rows()
    rows[3]["flops"] = str(rows[3]["flops"])
    run = _write_run(tmp_path / "run", rows)
    code, out, err = _report(capsys, run)
    _no_traceback(code, err)


def test_last_eval_row_without_step_gives_one_line_not_a_keyerror(tmp_path, capsys):
    rows = _rows()
    del rows[-1]["step"]
    run = _write_run(tmp_path / "run", rows)
    code, out, err = _report(capsys, run)
    _no_traceback(code, err)


def test_step_written_as_a_string_gives_no_traceback(tmp_path, capsys):
    rows = _rows()
    rows[-1]["step"] = str(rows[-1]["step"])
    run = _write_run(tmp_path / "run", rows)
    (run / "samples.jsonl").write_text(json.dumps({"step": 18, "set": "val", "problem_id": "1+1", "prompt": "1+1=",
                                                   "completion": "2", "answer": "2", "reward": 1.0,
                                                   "passed": True}) + "\n")
    code, out, err = _report(capsys, run)
    _no_traceback(code, err)


def test_report_reads_a_string_pass_rate_as_fit_does(tmp_path):
    from scalerl.train.report import write_run_report

    rows = _rows(12)
    plain = write_run_report(_write_run(tmp_path / "plain", rows), n_boot=20).facts
    rows[4]["val/pass_rate"] = str(rows[4]["val/pass_rate"])
    edited = write_run_report(_write_run(tmp_path / "edited", rows), n_boot=20).facts
    assert not any("without a finite" in n for n in edited["log_notes"]), edited["log_notes"]
    assert edited["forecast_points"] == plain["forecast_points"]
    assert edited["forecast_final"] == pytest.approx(plain["forecast_final"], abs=1e-9)


def test_report_error_for_percent_pass_rates_names_no_flag_report_lacks(tmp_path, capsys):
    rows = _rows()
    for r in rows:
        r["val/pass_rate"] = round(100 * r["val/pass_rate"], 2)
    run = _write_run(tmp_path / "run", rows)
    code, out, err = _report(capsys, run)
    assert code == 2 and "Traceback" not in err, err
    # (`scalerl report --y-scale 0.01 RUN` is refused by argparse: the advice is scalerl fit's, named as its)
    assert "--unbounded" not in err, err
    assert "--y-scale" not in err.split("scalerl fit", 1)[0], err


def test_resume_command_in_report_is_shell_quoted(tmp_path, capsys):
    import shlex

    run = _write_run(tmp_path / "my runs" / "run 1", _rows())
    code, out, err = _report(capsys, run)
    assert code == 0, err
    status = next(line for line in out.splitlines() if line.startswith("status:"))
    command = status.split("go on with: ", 1)[1].split(";")[0].strip()
    assert shlex.split(command) == ["scalerl", "train", "--output", str(run), "--resume"], command


# A log whose first row has a set the rest lack: the report fits the run's own eval.sets[0] (review dk).


def test_report_fits_the_runs_own_set_not_one_only_the_first_row_has(tmp_path, capsys):
    from scalerl.train.report import write_run_report

    run = tmp_path / "run"
    run.mkdir()
    rows = _rows()
    rows[0] = {"type": "eval", "step": 0, "gpu_hours": 0.0, "flops": 0.0, "samples": 0,
               "extra/pass_rate": 0.9, "val/pass_rate": 0.3}
    header = {"type": "header", "run": "run", "recipe": "scalerl", "model": "tiny-m", "task": "arithmetic-mix",
              "params": 1077632, "device": "cpu", "config": {"forecast": {"x": "flops"}, "eval": {"sets": ["val"]}}}
    (run / "runlog.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n")
    rep = write_run_report(run, n_boot=20)
    assert rep.y == "val/pass_rate"


def test_a_configured_set_no_row_logs_is_said(tmp_path):
    """The header's eval.sets[0] names a set no row logs: the report fits the set the rows log, and says so."""
    from scalerl.train.report import write_run_report

    run = tmp_path / "run"
    run.mkdir()
    header = {"type": "header", "run": "run", "recipe": "scalerl", "model": "tiny-m", "task": "arithmetic-mix",
              "params": 1077632, "device": "cpu", "config": {"forecast": {"x": "flops"}, "eval": {"sets": ["gsm8k"]}}}
    (run / "runlog.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *_rows()]) + "\n")
    rep = write_run_report(run, n_boot=20)
    assert rep.y == "val/pass_rate"
    assert any("'gsm8k', is in no evaluation row" in n for n in rep.facts["log_notes"]), rep.facts["log_notes"]
