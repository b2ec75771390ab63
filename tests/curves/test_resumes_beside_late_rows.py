"""Resumes beside late rows (attempts.split_attempts, _relogs_last) end to end, with logs built the way verl
(console, file logger), its fully-async trainer and asynchronously evaluating JSON-lines writers write them
(review ds)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from scalerl.cli import main

from .test_resume_one_step_back import VAL, _console
from .test_resume_one_step_back import _fully_async_attempt as _fully_async


# --- 1. verl's fully-async banner ("Resuming from  <dir>", two spaces) is not read as a launch --------------------


def test_verl_fully_async_resume_banner_marks_the_launch(tmp_path):
    from scalerl.curves.io import read_curve

    # Killed right after version 10's checkpoint (its validation logged already); the relaunch prints verl's
    # fully-async banner (print(f"[FullyAsyncTrainer] Resuming from  {global_step_folder}")) and validates
    # version 10 again at step 10.
    first = _fully_async(0, 10, 0.0)
    first += [(10, {VAL: 0.4}), (10, {"timing_s/testing": 30.0})]
    banner = "(FullyAsyncTrainer pid=7) [FullyAsyncTrainer] Resuming from  /ckpt/global_step_10\n"
    log = tmp_path / "async.log"
    log.write_text(_console(first + [banner] + _fully_async(10, 14, 0.5)))
    c = read_curve(log, "step", VAL)
    # (the same log with a single space after "from" reads [0, 5, 10], the resumed attempt's 0.9 at 10)
    assert c.x.tolist() == [0, 5, 10], list(zip(c.x, c.y))
    assert c.y.tolist()[-1] == pytest.approx(0.9)
    assert not any("no restart banner" in n for n in c.notes), c.notes


# --- 2. verl's console and file logger put a late validation at the compute of the later steps -------------------


def _async_rows() -> list[tuple[int, dict]]:
    return _fully_async(0, 21, 0.0)


def test_verl_file_logger_late_validation_cum_x_is_its_own_steps(tmp_path):
    from scalerl.curves.io import read_curve

    log = tmp_path / "exp.jsonl"
    log.write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in _async_rows()))
    c = read_curve(log, "cum:timing_s/step", VAL)
    # version V's validation: V steps of 60 s (the generic JSONL reader of the same rows says so)
    assert c.x.tolist() == [0.0, 300.0, 600.0, 900.0, 1200.0], c.x.tolist()


def test_verl_console_late_validation_cum_x_is_its_own_steps(tmp_path):
    from scalerl.curves.io import read_curve

    log = tmp_path / "async.log"
    log.write_text(_console(_async_rows()))
    c = read_curve(log, "cum:timing_s/step", VAL)
    assert c.x.tolist() == [0.0, 300.0, 600.0, 900.0, 1200.0], c.x.tolist()


# --- 3. _relogs_last: a late row right before a resume one step back is taken for the resume's first row --------


def _steps(first: int, last: int, later: float) -> list[dict]:
    rows = []
    for s in range(first, last + 1):
        rows.append({"step": s, "time": 60.0 * s + later, "reward/mean": round(0.2 + 0.5 * (1 - math.exp(-s / 8))
                                                                              + later / 1e5, 6)})
        rows.append({"step": s, "time": 60.0 * s + 2 + later, "perf/tokens_per_s": 1000.0})
    return rows


def _late_eval_then_resume_one_step_back(tmp_path: Path) -> Path:
    # Steps 1..22; step 10's evaluation written late, after step 22 (an asynchronous evaluator); killed; the
    # relaunch resumed from the step-21 checkpoint and logs step 22 again, then 23..30.
    rows = _steps(1, 22, 0.0) + [{"step": 10, "time": 60.0 * 22 + 5, "eval/avg@1": 0.4}] + _steps(22, 30, 3000.0)
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_late_eval_right_before_a_resume_one_step_back_keeps_the_checkpointed_steps(tmp_path):
    from scalerl.curves.io import read_curve

    c = read_curve(_late_eval_then_resume_one_step_back(tmp_path), "step", "reward/mean")
    assert set(range(1, 31)) <= set(c.x.tolist()), c.x.tolist()
    assert not any("24 row(s)" in n for n in c.notes), c.notes
    e = read_curve(tmp_path / "metrics.jsonl", "step", "eval/avg@1")
    assert e.x.tolist() == [10]


def test_fit_cli_late_eval_right_before_a_resume_keeps_the_checkpointed_steps(tmp_path, capsys):
    log = _late_eval_then_resume_one_step_back(tmp_path)
    code = main(["fit", str(log), "--x", "step", "--y", "reward/mean", "--bootstrap", "0", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    obj = json.loads(out)
    assert not any("resumes from a checkpoint" in n and "24 row(s)" in n for n in obj["notes"]), obj["notes"]
    assert obj["n_points"] >= 29, obj["n_points"]  # 30 steps


def test_verl_fully_async_abandoned_late_validation_of_the_resumed_first_step_is_dropped(tmp_path):
    from scalerl.curves.io import read_curve

    # Killed after version 16's rows and the (late) validation of version 15; the relaunch resumed from the
    # version-14 checkpoint with val_before_train=False: it trains 15 and 16 again, and validates its own 15.
    log = tmp_path / "async.log"
    log.write_text(_console(_fully_async(0, 16, 0.0) + _fully_async(14, 25, 0.5, val_before_train=False)))
    val = read_curve(log, "step", VAL)
    assert val.x.tolist() == [0, 5, 10, 15, 20], list(zip(val.x, val.y))
    assert val.y.tolist()[3] == pytest.approx(0.95)


# --- 4. a fresh training without an evaluation before it, appended after one with a step-0 evaluation ------------


def _verl_sync(later: float, *, val_before_train: bool) -> list[tuple[int, dict]]:
    rows = [(0, {VAL: round(0.1 + later, 4)})] if val_before_train else []
    for s in range(1, 21):
        d = {"timing_s/step": 10.0, "actor/pg_loss": round(1 / s, 4), "critic/score/mean": round(s / 100 + later, 4)}
        if s % 5 == 0:
            d[VAL] = round(0.1 + s / 100 + later, 4)
        rows.append((s, d))
    return rows


def test_fresh_training_from_step_1_after_one_with_a_step_0_evaluation_is_a_run_of_its_own(tmp_path):
    from scalerl.curves.io import read_curves

    # Two verl trainings in one console (tee -a): the first with val_before_train, the second without. (Appended
    # the other way round they are read as two runs.) verl saves no checkpoint before step 1, and a resumed
    # attempt logs the checkpoint step's validation or a step after the checkpoint: a training row at step 1 is
    # a new training.
    log = tmp_path / "two.log"
    log.write_text(_console(_verl_sync(0.0, val_before_train=True) + _verl_sync(0.3, val_before_train=False)))
    curves = read_curves(log, "step", "critic/score/mean")
    assert len(curves) == 2, [(c.name, c.notes) for c in curves]
    assert curves[0].y.tolist()[:2] == pytest.approx([0.01, 0.02])
