"""A step logged again where a resumed training went on: killed right after step N (its evaluation
and checkpoint written), resumed from the step-N checkpoint, a training logs step N again (verl and
SkyRL evaluate the checkpoint they loaded, at its step) and the step does not go back: ``..., 40, 40,
41, ...``. Every reader with no restart banner kept both rows -- the step fitted twice, two
evaluations of one checkpoint -- where the W&B, TensorBoard and MLflow readers keep the later one.
One rule for all (scalerl.curves.attempts.split_attempts): the resumed attempt's row takes the place
of the row of its kind at that step, the abandoned row's other values kept under it, said in the
notes. Rows of other kinds at one step (a training row and an evaluation row) and logs that print
several rows of one kind per step (per sample) are left alone."""

import json

import numpy as np
import pytest

from scalerl.curves import read_curve
from scalerl.curves.io import detect_format

Y = "eval/accuracy"


def _score(step: int) -> float:
    return round(0.2 + step / 200, 4)


def _write_jsonl(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _resumed_rows(train_and_eval_in_one_row: bool) -> list[dict]:
    """Steps 1..40 (evaluated every 10), killed; resumed from the step-40 checkpoint, which it evaluates
    first (0.9999: the resumed attempt's evaluation), then steps 41..60."""
    rows = []
    for s in range(1, 61):
        train = {"step": s, "loss": 1.0 / s, "time/step": 60.0}
        evaluation = {"step": s, Y: _score(s)} if s % 10 == 0 else None
        if evaluation and train_and_eval_in_one_row:
            rows.append({**train, **evaluation})
        else:
            rows += [train] + ([evaluation] if evaluation else [])
        if s == 40:
            rows.append({"step": 40, Y: 0.9999})
    return rows


@pytest.mark.parametrize("one_row", [True, False])
def test_a_jsonl_log_that_logs_the_checkpoints_step_again(tmp_path, one_row):
    path = _write_jsonl(tmp_path / "metrics.jsonl", _resumed_rows(one_row))
    c = read_curve(path, "step", Y)
    assert list(c.x) == [10, 20, 30, 40, 50, 60]  # step 40 once (twice before)
    assert c.y[3] == 0.9999  # the resumed attempt's evaluation of the checkpoint
    assert any("resumes from a checkpoint 1 time(s) (step logged again)" in n for n in c.notes)
    # The step's training metrics stay, counted once.
    assert read_curve(path, "cum:time/step", Y).x[-1] == 60 * 60.0
    loss = read_curve(path, "step", "loss", bounded=False)
    assert list(loss.x) == list(range(1, 61))


def test_a_step_trained_again_after_a_restart_keeps_the_resumed_attempts_row(tmp_path):
    """Killed after logging step 40 but before its checkpoint: the resumed attempt (from step 39's)
    trains and logs step 40 again, every metric of it."""
    first = [{"step": s, "time/step": 60.0, **({Y: _score(s)} if s % 10 == 0 else {})} for s in range(1, 41)]
    second = [{"step": s, "time/step": 30.0, **({Y: _score(s) + 0.01} if s % 10 == 0 else {})} for s in range(40, 61)]
    path = _write_jsonl(tmp_path / "metrics.jsonl", first + second)
    c = read_curve(path, "step", Y)
    assert list(c.x) == [10, 20, 30, 40, 50, 60]
    assert c.y[3] == pytest.approx(_score(40) + 0.01)
    assert read_curve(path, "cum:time/step", Y).x[3] == 39 * 60.0 + 30.0  # step 40's seconds once, the later


def test_a_training_row_and_an_evaluation_row_at_one_step_are_not_a_resume(tmp_path):
    rows = [r for r in _resumed_rows(False) if not (r["step"] == 40 and r.get(Y) == 0.9999)]
    path = _write_jsonl(tmp_path / "metrics.jsonl", rows)
    c = read_curve(path, "step", Y)
    assert list(c.x) == [10, 20, 30, 40, 50, 60]
    assert not any("resume" in n for n in c.notes)
    assert read_curve(path, "cum:time/step", Y).x[-1] == 60 * 60.0


def test_rows_printed_per_sample_under_their_step_are_all_kept(tmp_path):
    """A hand-written trainer that writes a row per sample (or micro-batch) under the step: its rows of
    one kind at one step are the log's own way, not resumes."""
    rows = [{"step": s, "reward": (s + k) % 3 / 2} for s in range(1, 21) for k in range(3)]
    path = _write_jsonl(tmp_path / "samples.jsonl", rows)
    c = read_curve(path, "step", "reward")
    assert len(c.x) == 60 and not any("resume" in n for n in c.notes)
    pairs = [{"step": s, "reward": k / 2} for s in range(1, 21) for k in range(2)]  # two a step
    c = read_curve(_write_jsonl(tmp_path / "pairs.jsonl", pairs), "step", "reward")
    assert len(c.x) == 40 and not any("resume" in n for n in c.notes)


def test_a_csv_with_training_and_evaluation_rows_at_one_step(tmp_path):
    """A CSV's rows hold only the columns read (here the step alone, on a training row): what the whole
    row logs tells a training row from an evaluation row at its step."""
    lines = ["step,loss,eval_reward"]
    for s in range(1, 31):
        lines.append(f"{s},{1 / s:.4f},")
        if s % 5 == 0:
            lines.append(f"{s},,{_score(s)}")
    path = tmp_path / "log.csv"
    path.write_text("\n".join(lines) + "\n")
    c = read_curve(path, "step", "eval_reward")
    assert list(c.x) == [5, 10, 15, 20, 25, 30] and not any("resume" in n for n in c.notes)
    path.write_text("\n".join(lines[:lines.index("20,,0.3") + 1] + ["20,,0.9999"]
                              + lines[lines.index("20,,0.3") + 1:]) + "\n")
    c = read_curve(path, "step", "eval_reward")
    assert list(c.x) == [5, 10, 15, 20, 25, 30] and c.y[3] == 0.9999
    assert any("step logged again" in n for n in c.notes)


def _roll_line(step: int, accuracy: float | None) -> str:
    metrics = {"time/step_total": 30.0, "actor_train/pg_loss": 0.1}
    if accuracy is not None:
        metrics["val_correct/all/mean"] = accuracy
    return ("[2026-11-20 10:00:00] [tracking.py (161)] [INFO] [DRIVER 0 / 1][PID 4242] metrics_tag: "
            + json.dumps({"step": step, "metrics": metrics}))


def _torchtune_line(step: int, accuracy: float | None) -> str:
    return f"Step {step} | loss:0.5 " + (f"successes:{accuracy} " if accuracy is not None else "")


def _openrlhf_line(step: int, accuracy: float | None) -> str:
    metrics = {"policy_loss": 0.1, **({"eval_pass1": accuracy} if accuracy is not None else {})}
    return f"(PPOTrainer pid=77) ✨ Global step {step}: {metrics}"


@pytest.mark.parametrize("line, fmt, y", [
    (_roll_line, "roll", "val_correct/all/mean"),
    (_torchtune_line, "torchtune", "successes"),
    (_openrlhf_line, "dict-lines", "eval_pass1"),
])
def test_consoles_without_a_restart_banner(tmp_path, line, fmt, y):
    """Killed after step 20 was logged, resumed from step 19's checkpoint (a ``tee -a`` console): step
    20 twice, the later values the run's."""
    lines = [line(s, _score(s) if s % 5 == 0 else None) for s in range(1, 21)]
    lines += [line(s, _score(s) + 0.1 if s % 5 == 0 else None) for s in range(20, 31)]
    path = tmp_path / "console.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect_format(path) == fmt
    c = read_curve(path, "step", y)
    assert list(c.x) == [5, 10, 15, 20, 25, 30]
    assert np.allclose(c.y[3:], [_score(s) + 0.1 for s in (20, 25, 30)])
    assert any("resumes from a checkpoint 1 time(s) (step logged again)" in n for n in c.notes)
