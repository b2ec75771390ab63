"""What a user sees while a run trains and right after it stops (review cm): the live forecast's ``forecast/*``
columns, the run report of a stopped / short / just-started run, and ``scalerl fit`` pointed at such a run's
directory."""

import json

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.curves import Curve, forecast
from scalerl.runlog import RunLogWriter
from scalerl.train.live_forecast import live_forecast
from scalerl.train.report import summary_lines, write_run_report

#: A run log header as the trainer writes it, cut to what the report and ``scalerl fit`` read.
HEADER = {"type": "header", "run": "r", "recipe": "scalerl", "model": "tiny", "task": "arithmetic",
          "config": {"forecast": {"x": "flops"}, "eval": {"sets": ["val"]}}}

#: The pass rates of a real `scalerl train --model tiny --steps 12 --eval-every 2` run (it fell).
FALLING = [0.25875, 0.25375, 0.255, 0.215, 0.21875, 0.21125, 0.1925]


def _eval_rows(ys, step=2, flops_per_step=2.3e10):
    return [{"type": "eval", "step": step * i, "flops": flops_per_step * step * i, "gpu_hours": 1e-4 * i,
             "samples": 128 * i, "val/pass_rate": float(y)} for i, y in enumerate(ys)]


def _write_run(directory, rows, header=HEADER):
    directory.mkdir(parents=True, exist_ok=True)
    with RunLogWriter(directory / "runlog.jsonl", header) as log:
        for r in rows:
            log.append(r)
    return directory


def _curve(rows):
    return Curve.from_arrays([r["flops"] for r in rows], [r["val/pass_rate"] for r in rows], name="r",
                             x_name="flops", y_name="val/pass_rate")


def _text(rep):
    return "\n".join(f"{k}: {v}" for k, v in summary_lines(rep))


# ----------------------------------------------------------------------------------- the live forecast

def test_live_forecast_says_when_the_curve_is_not_yet_tested_for_a_fall():
    # Rose to 0.62, then fell to 0.05 -- below its start -- in the last two evaluations.
    rows = _eval_rows([0.10, 0.30, 0.50, 0.62, 0.15, 0.05])
    out = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=12, n_boot=20)
    said = " ".join(str(v) for k, v in out.items() if k.startswith("forecast/") and isinstance(v, str))
    assert "not tested" in said, out["forecast/status"]


def test_live_forecast_status_names_the_command_whose_flags_it_advises():
    out = live_forecast(_eval_rows(FALLING), x="flops", y="val/pass_rate", total_steps=12, n_boot=20)
    status = out["forecast/status"]
    assert status.startswith("no fit yet")
    if "--fit-until" in status or "--plot" in status:
        assert "scalerl fit" in status, status


def test_live_forecast_says_when_its_bands_at_the_budget_are_not_calibrated():
    rows = _eval_rows([0.1, 0.2, 0.3, 0.38, 0.45, 0.5, 0.54, 0.57])  # at step 14 of a 200-step run
    out = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=200, n_boot=20)
    assert out["forecast/status"] == "ok"
    (pred,) = forecast(_curve(rows), n_boot=20, power_law=False).predict([out["forecast/budget"]])
    assert pred.calibrated is False  # (the premise: fit would star this prediction)
    assert any("calibrat" in k or (isinstance(v, str) and "calibrat" in v) for k, v in out.items()), out


# ----------------------------------------------------------------------------------- the run report

def test_report_of_a_falling_run_says_why_there_is_no_whole_run_fit(tmp_path):
    rep = write_run_report(_write_run(tmp_path / "run", _eval_rows(FALLING)), n_boot=20)
    assert "does not rise" in rep.facts.get("fit_error_message", "")  # (the premise: the fit said why)
    text = _text(rep)
    assert "does not rise" in text, text
    assert "does not rise" in (tmp_path / "run" / "report.md").read_text()


def test_report_of_a_run_stopped_for_nans_says_its_steps_were_skipped(tmp_path):
    rows, ys = [], [0.21875, 0.1875, 0.21875, 0.3125]
    for i, y in enumerate(ys):
        step = 2 * i
        for s in (step - 1, step) if step else ():
            skipped = s >= 3
            rows.append({"type": "train", "step": s, "skipped": skipped, "loss": -0.05,
                         **({"skip_reason": "non-finite loss (nan)"} if skipped else {})})
        rows.append({**_eval_rows(ys)[i], "skipped_steps": max(0, step - 2)})
    rep = write_run_report(_write_run(tmp_path / "run", rows), n_boot=20)
    text = _text(rep)
    assert "non-finite" in text or "skipped" in text, text


def test_report_intervals_agree_with_scalerl_fit_json(tmp_path, capsys):
    rng = np.random.default_rng(0)
    xs = np.geomspace(1e12, 3e14, 16)
    ys = 0.1 + 0.7 / (1 + (3e13 / xs) ** 1.2) + rng.normal(0, 0.01, xs.size)
    rows = [{"type": "eval", "step": 0, "flops": 0.0, "gpu_hours": 0.0, "samples": 0, "val/pass_rate": 0.1}]
    rows += [{"type": "eval", "step": 10 * (i + 1), "flops": float(x), "gpu_hours": 0.01 * (i + 1),
              "samples": 100 * (i + 1), "val/pass_rate": float(y)} for i, (x, y) in enumerate(zip(xs, ys))]
    run = _write_run(tmp_path / "run", rows)
    rep = write_run_report(run)
    assert main(["fit", str(run), "--json"]) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["A"] == pytest.approx(rep.facts["fit_A"])  # the same fit
    for name in ("A", "B", "C_mid"):
        assert rep.facts[f"fit_{name}_interval"] == pytest.approx(fit["intervals"][name], rel=1e-9), name


@pytest.mark.parametrize("ys", [FALLING[:1], FALLING], ids=["only-step-0", "seven-evaluations"])
def test_report_of_a_short_run_gives_no_advice_it_cannot_take(tmp_path, ys):
    rep = write_run_report(_write_run(tmp_path / "run", _eval_rows(ys)), n_boot=20)
    message = rep.facts["forecast_error_message"]
    assert "--x" not in message and "cut later" not in message, message


# ----------------------------------------------------------------------------------- scalerl fit on a run directory

def test_fit_of_a_run_before_its_first_evaluation_says_there_is_none_yet(tmp_path, capsys):
    run = _write_run(tmp_path / "run", [])
    assert main(["fit", str(run), "--json"]) == 2
    err = capsys.readouterr().err
    assert "no table of metrics" not in err and "no evaluation" in err, err


# --------------------------------------------------------------------------------------------- the run report


def test_report_counts_skipped_steps_by_reason_not_by_their_numbers(tmp_path):
    reasons = {  # what train/precision.py:skip logs, step by step
        1: "non-finite loss 0.0731 or grad norm inf", 2: "non-finite loss -0.052 or grad norm inf",
        3: "non-finite loss 0.114 or grad norm inf",
        5: "fp16 gradient overflow at loss scale 65536; scale lowered to 32768",
        6: "fp16 gradient overflow at loss scale 32768; scale lowered to 16384",
    }
    ys = [0.10, 0.20, 0.30, 0.38, 0.45, 0.50, 0.54, 0.57]
    rows = []
    for i, ev in enumerate(_eval_rows(ys)):
        for s in (ev["step"] - 1, ev["step"]) if ev["step"] else ():
            rows.append({"type": "train", "step": s, "skipped": s in reasons, "loss": -0.05,
                         **({"skip_reason": reasons[s]} if s in reasons else {})})
        rows.append(ev)
    rep = write_run_report(_write_run(tmp_path / "run", rows), n_boot=20)
    line = dict(summary_lines(rep))["skipped steps"]
    assert line.startswith("5 of 14"), line  # (the premise)
    # Expected: "3 steps: non-finite loss ...; 2 steps: fp16 gradient overflow ..."; it lists five "1 step: ..." entries.
    assert "3 steps" in line and "2 steps" in line and "1 step:" not in line, line


# --------------------------------------------------------------------------------------------- the live forecast


@pytest.mark.parametrize("ys, said", [
    ([0.1, 0.2, 0.3, 0.38, 0.02, 0.5, 0.54, 0.57, 0.59, 0.6], ("dip", "excursion")),
    ([0.1, 0.8, 0.82, 0.83, 0.84, 0.84, 0.85, 0.85], ("take-off", "takeoff")),
], ids=["excursion-left-out", "take-off-not-measured"])
def test_live_forecast_notes_say_what_scalerl_fit_notes(ys, said):
    rows = _eval_rows(ys)
    fc = forecast(_curve(rows), n_boot=50, power_law=False)
    assert any(any(s in note for s in said) for note in fc.notes), fc.notes  # (the premise: scalerl fit says it)
    out = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=2 * len(ys), n_boot=50)
    assert out["forecast/status"] == "ok", out
    notes = out.get("forecast/notes", "")
    assert any(s in notes for s in said), out


def test_live_forecast_notes_do_not_call_a_budget_inside_the_horizon_beyond_it():
    rows = _eval_rows([0.1, 0.2, 0.3, 0.38, 0.45, 0.5])  # step 10 of a 20-step run: the budget at 2x the last compute
    out = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=20, n_boot=50)
    assert out["forecast/status"] == "ok", out
    fc = forecast(_curve(rows), n_boot=50, power_law=False)
    budget = out["forecast/budget"]
    assert budget == pytest.approx(2 * rows[-1]["flops"])
    assert max(fc.bands.stretch([budget])) <= 1.0 and not fc.bands.validated  # (the premise: inside the horizon)
    notes = out.get("forecast/notes", "")
    assert "beyond the calibrated horizon" not in notes, notes  # (scalerl fit: "... or too few points to validate")
    assert "validat" in notes, notes  # the bands are still not calibrated: said for the reason they are not
