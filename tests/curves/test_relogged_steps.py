"""A step logged again where a resumed training went on: killed right after step N (its evaluation
and checkpoint written), resumed from the step-N checkpoint, a training logs step N again (verl and
SkyRL evaluate the checkpoint they loaded, at its step) and the step does not go back: ``..., 40, 40,
41, ...``. With no restart banner before it, a log cannot tell that from rows of one kind that are
its own way (two evaluation sets, an epoch's summary row, a row per sample): every row is kept and
the notes say at which steps, naming the two readings (scalerl.curves.attempts.split_attempts). Where
the step goes back, or a banner marks the launch, it is a resume: the resumed attempt's row takes the
place of the row of its kind at that step, the abandoned row's other values kept under it."""

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


def _relogged_note(notes, steps: str) -> bool:
    return any(f"logged again by rows of one kind at {steps}" in n and "all kept" in n and "--run-column" in n
               for n in notes)


@pytest.mark.parametrize("one_row", [True, False])
def test_a_jsonl_log_that_logs_the_checkpoints_step_again(tmp_path, one_row):
    path = _write_jsonl(tmp_path / "metrics.jsonl", _resumed_rows(one_row))
    c = read_curve(path, "step", Y)
    assert list(c.x) == [10, 20, 30, 40, 40, 50, 60]  # both evaluations of step 40 kept: no banner shows a resume
    assert c.y[4] == 0.9999
    assert _relogged_note(c.notes, "1 step(s) (40)") and not any("resumes from a checkpoint" in n for n in c.notes)
    assert read_curve(path, "cum:time/step", Y).x[-1] == 60 * 60.0
    loss = read_curve(path, "step", "loss", bounded=False)
    assert list(loss.x) == list(range(1, 61))


def test_a_step_trained_again_after_a_restart_keeps_the_resumed_attempts_row(tmp_path):
    """Killed after logging step 40 but before its checkpoint: the resumed attempt (from step 39's)
    trains and logs step 40 again, every metric of it. With no banner, both rows stay, said."""
    first = [{"step": s, "time/step": 60.0, **({Y: _score(s)} if s % 10 == 0 else {})} for s in range(1, 41)]
    second = [{"step": s, "time/step": 30.0, **({Y: _score(s) + 0.01} if s % 10 == 0 else {})} for s in range(40, 61)]
    path = _write_jsonl(tmp_path / "metrics.jsonl", first + second)
    c = read_curve(path, "step", Y)
    assert list(c.x) == [10, 20, 30, 40, 40, 50, 60]
    assert c.y[4] == pytest.approx(_score(40) + 0.01) and _relogged_note(c.notes, "1 step(s) (40)")
    assert read_curve(path, "cum:time/step", Y).x[4] == 40 * 60.0 + 30.0  # both rows' seconds: nothing dropped


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
    assert len(c.x) == 60 and not any("resumes from a checkpoint" in n for n in c.notes)
    assert _relogged_note(c.notes, "20 step(s) (1, 2, 3, 4, 5, ...)")
    pairs = [{"step": s, "reward": k / 2} for s in range(1, 21) for k in range(2)]  # two a step
    c = read_curve(_write_jsonl(tmp_path / "pairs.jsonl", pairs), "step", "reward")
    assert len(c.x) == 40 and not any("resumes from a checkpoint" in n for n in c.notes)


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
    assert list(c.x) == [5, 10, 15, 20, 20, 25, 30] and c.y[4] == 0.9999
    assert _relogged_note(c.notes, "1 step(s) (20)")


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
    20 twice, and no banner that says which: both kept, said."""
    lines = [line(s, _score(s) if s % 5 == 0 else None) for s in range(1, 21)]
    lines += [line(s, _score(s) + 0.1 if s % 5 == 0 else None) for s in range(20, 31)]
    path = tmp_path / "console.log"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert detect_format(path) == fmt
    c = read_curve(path, "step", y)
    assert list(c.x) == [5, 10, 15, 20, 20, 25, 30]
    assert np.allclose(c.y[3:], [_score(20)] + [_score(s) + 0.1 for s in (20, 25, 30)])
    assert _relogged_note(c.notes, "1 step(s) (20)") and not any("resumes from a checkpoint" in n for n in c.notes)
