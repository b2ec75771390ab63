"""Reproducers of defects found in the review of today's forecaster changes (split_attempts' "step
logged again" rule, ``cum:A-B`` and the overhead-timer check, the take-off note). Each is marked
``xfail(strict=True)``: it fails on the code as it is, and the mark goes when the defect is fixed
(strict: a fix that makes it pass shows as an unexpected pass until the mark is removed)."""

import csv
import gzip
import json
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import Curve, forecast
from scalerl.curves.io import read_curve

DATA = Path(__file__).parent / "data"


def _acc(step: int) -> float:
    return round(0.2 + 0.6 * (1 - math.exp(-step / 30)), 4)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.xfail(strict=True, reason="CSV kinds count 'nan' cells as logged: the evaluation row's NaN timer "
                                       "is merged over the training row's, and cum: loses those steps")
def test_csv_nan_cells_do_not_merge_an_evaluation_row_over_its_training_row(tmp_path):
    # csv.writer of rows that hold every column, NaN where the row logged nothing; the CSV reader itself
    # reads 'nan' as a missing cell.
    path = tmp_path / "nancells.csv"
    with path.open("w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "loss", "timing_s/step", "val/acc"])
        for s in range(1, 41):
            w.writerow([s, 1 / s, 10.0, float("nan")])
            if s % 10 == 0:
                w.writerow([s, float("nan"), float("nan"), _acc(s)])
    curve = read_curve(path, x="cum:timing_s/step", y="val/acc")
    assert list(curve.x) == [100.0, 200.0, 300.0, 400.0]  # (got 90, 180, 270, 360)
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]


@pytest.mark.xfail(strict=True, reason="two evaluation sets logged as rows of one kind at one step are read as "
                                       "a resume: the first set is dropped and the shared-x warning is lost")
def test_two_evaluation_sets_at_one_step_are_no_resume(tmp_path):
    rows = []
    for s in range(1, 101):
        rows.append({"step": s, "loss": 1 / s, "timing_s/step": 10.0})
        if s % 10 == 0:
            rows.append({"step": s, "task": "gsm8k", "acc": _acc(s)})
            rows.append({"step": s, "task": "math", "acc": round(_acc(s) / 2, 4)})
    curve = read_curve(_jsonl(tmp_path / "twosets.jsonl", rows), x="step", y="acc")
    assert len(curve.x) == 20  # both sets kept (as before), so that the shared-x note names --run-column
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]


@pytest.mark.xfail(strict=True, reason="a resumed attempt that evaluates the checkpoint and dies, twice, leaves "
                                       "three rows of one kind at the step: read as the log's own way, all kept")
def test_two_resumes_at_the_same_checkpoint_keep_one_evaluation(tmp_path):
    rows = [{"step": s, "loss": 1 / s, **({"val/acc": _acc(s)} if s % 10 == 0 else {})} for s in range(1, 41)]
    rows += [{"step": 40, "val/acc": _acc(40) + 0.003}, {"step": 40, "val/acc": _acc(40) - 0.002}]
    rows += [{"step": s, "loss": 1 / s, **({"val/acc": _acc(s)} if s % 10 == 0 else {})} for s in range(41, 61)]
    curve = read_curve(_jsonl(tmp_path / "relog_twice.jsonl", rows), x="step", y="val/acc")
    assert list(curve.x) == [10.0, 20.0, 30.0, 40.0, 50.0, 60.0]  # (got 40 three times)


def _verl_after_3117(seed: int = 5) -> list[dict]:
    """verl after PR #3117 (testing and save_checkpoint timed after timing_s/step, not inside it), with
    save_freq = test_freq = 10: the two timers sit on the same rows."""
    rng = np.random.default_rng(seed)
    rows = []
    for s in range(1, 101):
        r = {"step": s, "timing_s/step": round(155 + rng.normal(0, 15), 2)}
        if s % 10 == 0:
            r["timing_s/testing"] = round(45 + rng.normal(0, 3), 2)
            r["timing_s/save_checkpoint"] = round(2330 + rng.normal(0, 50), 2)
            r["val/acc"] = _acc(s)
        rows.append(r)
    return rows


@pytest.mark.xfail(strict=True, reason="save and testing timers on the same rows make the least-squares design "
                                       "ill-conditioned: a healthy log is said to count validation in its step")
def test_a_healthy_log_with_saves_and_validation_on_the_same_steps_gets_no_overhead_note(tmp_path):
    path = _jsonl(tmp_path / "verl_after_3117.jsonl", _verl_after_3117())
    notes = read_curve(path, x="cum:timing_s/step", y="val/acc").notes
    # (got: "cum:timing_s/step counts time that is not training: timing_s/testing ...", and taking it off as
    # advised then says "timing_s/step does not grow with it": the two notes contradict each other)
    assert not [n for n in notes if "time that is not training" in n]


def _nemo_rl_with_validation_inside(tmp_path: Path) -> Path:
    """The NeMo-RL console fixture with each step's validation time inside its total step time (NeMo-RL's
    grpo_train runs validate() inside timer.time('total_step_time')), val_at_start on (step-0 validation)."""
    text = gzip.open(DATA / "nemo_rl_console.log.gz", "rt").read()
    blocks = re.split(r"(?=\n=+ Step \d+/)", text)
    out = []
    for b in blocks:
        m = re.search(r"Total validation time: ([\d.]+)s", b)
        if m and "Total step time" in b:
            v = float(m.group(1))
            b = re.sub(r"Total step time: ([\d.]+)s", lambda t: f"Total step time: {float(t.group(1)) + v:.2f}s", b)
        out.append(b)
    path = tmp_path / "nemo_inside.log"
    path.write_text("".join(out))
    return path


@pytest.mark.xfail(strict=True, reason="the row of the validation before training holds the validation timer "
                                       "and no step timer: the --x the note advises is refused")
def test_the_x_the_overhead_note_advises_reads(tmp_path):
    path = _nemo_rl_with_validation_inside(tmp_path)
    (note,) = [n for n in read_curve(path, x="cum:timing/train/total_step_time", y="validation/accuracy").notes
               if "time that is not training" in n]
    advised = re.search(r"--x '([^']+)'", note).group(1)
    curve = read_curve(path, x=advised, y="validation/accuracy")  # (got InputError: "... at step 0 (-31 left)")
    assert len(curve.x) > 10


@pytest.mark.xfail(strict=True, reason="a cum: term the log never logged is 'no x column', though a missing "
                                       "value counts 0: a run before its first save cannot use the documented --x")
def test_taking_off_a_timer_not_logged_yet_reads(tmp_path):
    rows = [{"step": s, "timing_s/step": 150.0, **({"timing_s/testing": 45.0, "val/acc": _acc(s)} if s % 5 == 0 else {})}
            for s in range(1, 51)]
    path = _jsonl(tmp_path / "nosave.jsonl", rows)
    curve = read_curve(path, x="cum:timing_s/step-timing_s/save_checkpoint-timing_s/testing", y="val/acc")
    assert len(curve.x) == 10


@pytest.mark.xfail(strict=True, reason="first_measured takes the start evaluation for the first one after the "
                                       "start when a clock x puts it above 0 (W&B wall_time = _runtime hours)")
def test_the_take_off_note_on_a_clock_whose_start_evaluation_is_above_zero():
    sys.path.insert(0, str(Path(__file__).parent.parent))
    from curves.test_takeoff import VERL_ACC, VERL_STEPS

    notes = []
    for offset in (0.0, 90 / 3600):  # the step-0 validation logged at _runtime 0 s, or at 90 s
        x = [offset + s * 160 / 3600 for s in VERL_STEPS]
        fc = forecast(Curve.from_arrays(x, VERL_ACC, name="q", x_name="wall_time", y_name="acc"), n_boot=200)
        notes.append([n for n in fc.notes if "take-off came before the first evaluation" in n])
    assert notes[0]  # at 0: said
    assert notes[1]  # (got none at 90 s: the same run, the same jump before its first evaluation after training)
