"""Resumes a step before the kill, told from late evaluations (review dr): verl's console and file logger resumed
without a banner, a fully-async console resumed one version back, and a second late evaluation followed by more
of the last step's rows."""

from __future__ import annotations

import json

import pytest

P = "(TaskRunner pid=1) "
VAL = "val-core/acc"


# --- verl (sync trainer) resumed one step before the kill, no "Resuming from" banner ------------------------------


def _verl_sync_attempt(start: int, last: int, later: float) -> list[tuple[int, dict]]:
    """verl's ray_trainer: val_before_train logs the evaluation of the step it starts from (0, or the
    checkpoint's step on a resume) at that step alone; then one row per step, the validation (every 5
    steps) merged into the step's row. ``later``: what the resumed attempt's values are offset by."""
    rows = [(start, {VAL: round(0.1 + start / 100 + later, 4)})]
    for s in range(start + 1, last + 1):
        data = {"timing_s/step": 10.0, "actor/pg_loss": round(1 / s, 4), "critic/score/mean": round(s / 100 + later, 4)}
        if s % 5 == 0:
            data[VAL] = round(0.1 + s / 100 + later, 4)
        rows.append((s, data))
    return rows


def _console(rows: list) -> str:
    """verl's console logger (concat_dict_to_str): ``step:N - key:value - ...``; a str is a line as it is."""
    return "".join(r if isinstance(r, str) else f"{P}step:{r[0]} - " + " - ".join(f"{k}:{v!r}" for k, v in r[1].items())
                   + "\n" for r in rows)


def _killed_at_10_resumed_from_9():
    # save_freq 3 (checkpoint at step 9), test_freq 5; killed after step 10 was logged (before its checkpoint);
    # `tee -a` of the relaunch, which resumed from global_step_9 (its banner not in the log: a grep of the
    # step lines, or a verl that printed it to another stream).
    return _verl_sync_attempt(0, 10, 0.0) + _verl_sync_attempt(9, 20, 0.5)


def test_verl_console_resume_one_step_back_without_banner_keeps_the_resumed_attempt(tmp_path):
    from scalerl.curves.io import read_curve

    log = tmp_path / "verl.log"
    log.write_text(_console(_killed_at_10_resumed_from_9()))
    val = read_curve(log, "step", VAL)  # (HEAD: "compute 'step' decreases at point 4 (10 -> 9)")
    assert val.x.tolist() == [0, 5, 9, 10, 15, 20]
    assert val.y.tolist()[3] == pytest.approx(0.7)  # step 10's evaluation is the resumed attempt's
    score = read_curve(log, "step", "critic/score/mean")
    assert score.x.tolist() == list(range(1, 21))  # step 10 once (HEAD: twice, 0.1 and 0.6)
    assert score.y.tolist()[9] == pytest.approx(0.6)
    assert not any("asynchronous" in n for n in score.notes), score.notes


def test_verl_file_logger_appended_resume_one_step_back_keeps_the_resumed_attempt(tmp_path):
    from scalerl.curves.io import read_curve

    log = tmp_path / "exp.jsonl"
    log.write_text("".join(json.dumps({"step": s, "data": d}) + "\n" for s, d in _killed_at_10_resumed_from_9()))
    val = read_curve(log, "step", VAL)
    assert val.x.tolist() == [0, 5, 9, 10, 15, 20]
    score = read_curve(log, "step", "critic/score/mean")
    assert score.x.tolist() == list(range(1, 21))
    assert score.y.tolist()[9] == pytest.approx(0.6)


# --- verl fully-async trainer with a resume ----------------------------------------------------------------------


def _fully_async_attempt(start: int, kill: int, later: float, *, val_before_train: bool = True
                        ) -> list[tuple[int, dict]]:
    """verl's fully-async trainer (recipe/fully_async_policy/fully_async_trainer.py): per parameter version V a
    training row and a param-sync row at step V; the validation of version V is logged at step V after version
    V+1's rows (every 5 versions), with its timing row; a launch validates the version it starts from
    (val_before_train)."""
    rows: list[tuple[int, dict]] = []

    def val(v):
        rows.append((v, {VAL: round(0.3 + v / 100 + later, 4)}))
        rows.append((v, {"timing_s/testing": 30.0}))

    if val_before_train:
        val(start)
    for v in range(start + 1, kill + 1):
        rows.append((v, {"actor/pg_loss": 0.01, "timing_s/step": 60.0, "critic/score/mean": round(v / 100 + later, 4)}))
        rows.append((v, {"timing_s/wait_last_valid": 0.5, "timing_s/param_sync": 2.0}))
        if v > start + 1 and (v - 1) % 5 == 0:
            val(v - 1)
    return rows


def test_verl_fully_async_console_resume_one_version_back_keeps_the_resumed_attempt(tmp_path):
    from scalerl.curves.io import read_curve

    # killed after version 16 (its rows and the validation of 15 logged); resumed from the version-15 checkpoint
    log = tmp_path / "async.log"
    log.write_text(_console(_fully_async_attempt(0, 16, 0.0) + _fully_async_attempt(15, 20, 0.5)))
    val = read_curve(log, "step", VAL)
    assert val.x.tolist() == [0, 5, 10, 15], list(zip(val.x, val.y))  # (HEAD: 15 twice, 0.45 and 0.95)
    assert val.y.tolist()[-1] == pytest.approx(0.95)
    score = read_curve(log, "step", "critic/score/mean")
    assert score.x.tolist() == list(range(1, 21))  # (HEAD: 16 twice)
    assert score.y.tolist()[15] == pytest.approx(0.66)


# --- a step's second late evaluation, with the step logged last getting another row after it ---------------------


def test_second_late_evaluation_followed_by_a_row_of_the_last_step_is_no_resume(tmp_path):
    from scalerl.curves.io import read_curve

    y = "eval/avg@1"
    rows = []
    for s in range(1, 31):
        rows.append({"step": s, "time": 60.0 * s, "reward/mean": 0.25})
        if s == 10:
            rows.append({"step": 10, "time": 60.0 * s + 1, y: 0.4})  # evaluated on time
        if s == 22:  # step 10 evaluated again, its result written between step 22's two rows
            rows.append({"step": 10, "time": 60.0 * s + 1, y: 0.41})
        rows.append({"step": s, "time": 60.0 * s + 2, "perf/tokens_per_s": 1000.0})
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    c = read_curve(path, "step", "reward/mean")
    assert c.x.tolist() == list(range(1, 31)), c.notes  # (HEAD: 1..10, 23..30; "24 row(s) ... dropped")
    assert not any("resumes" in n for n in c.notes), c.notes
