"""Review C (the log-reading changes of readers7 and fixa): reproducers of the defects found, each a
strict xfail that states what should happen -- the fix removes the mark. Realistic layouts: a long
table of evaluation sets whose sets are not all evaluated at every evaluation, per-epoch summary rows
beside per-step rows, two different trainings appended to one Hugging Face Trainer console, verl /
TRL resumed into the same Trackio run at the step the abandoned attempt logged last, and a
``cum:A-B`` whose B sits on rows of its own."""

import json
import math
import sqlite3
import tarfile
import uuid
from pathlib import Path

import pytest

from scalerl.curves import read_curves
from scalerl.curves.io import read_curve

DATA = Path(__file__).parent / "data"


def _acc(step: int) -> float:
    return round(0.2 + 0.6 * (1 - math.exp(-step / 300)), 4)


def _jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.xfail(strict=True, reason="review C: one missing evaluation of one set turns every evaluation "
                                       "into a 'resume' (relogs_are_the_logs_own needs a relog at every step)")
def test_two_evaluation_sets_with_one_evaluation_missing_are_no_resumes(tmp_path):
    """The fixa test's two evaluation sets (rows of one kind at every evaluation), with the 'math' set's
    evaluation at step 50 missing (a timeout): read as 9 resumes, gsm8k's value dropped at every step
    but 50, the curve a zigzag of the two sets, and the note that names --run-column gone."""
    rows = []
    for s in range(1, 101):
        rows.append({"step": s, "loss": 1 / s, "timing_s/step": 10.0})
        if s % 10 == 0:
            rows.append({"step": s, "task": "gsm8k", "acc": _acc(s * 10)})
            if s != 50:
                rows.append({"step": s, "task": "math", "acc": round(_acc(s * 10) / 2, 4)})
    curve = read_curve(_jsonl(tmp_path / "sets.jsonl", rows), x="step", y="acc")
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]  # (got: 9 time(s))
    assert len(curve.x) == 19  # (got 10: one value a step, math's but at 50)
    assert [n for n in curve.notes if "--run-column" in n]


@pytest.mark.xfail(strict=True, reason="review C: sets evaluated at different intervals read as resumes")
def test_evaluation_sets_at_different_intervals_are_no_resumes(tmp_path):
    """Set 'a' every 100 steps, a slower benchmark 'b' every 200: 5 'resumes', a's value at 200, 400,
    ... replaced by b's."""
    rows = []
    for s in range(1, 1001):
        rows.append({"step": s, "loss": 1 / s})
        if s % 100 == 0:
            rows.append({"step": s, "task": "a", "acc": _acc(s)})
        if s % 200 == 0:
            rows.append({"step": s, "task": "b", "acc": round(_acc(s) / 2, 4)})
    curve = read_curve(_jsonl(tmp_path / "intervals.jsonl", rows), x="step", y="acc")
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]
    assert len(curve.x) == 15  # (got 10)


@pytest.mark.xfail(strict=True, reason="review C: a per-epoch row whose names are among the step row's is "
                                       "read as a resume: the step's loss replaced, the evaluation's cum: x a step short")
def test_per_epoch_summary_rows_are_no_resumes(tmp_path):
    """A loop that logs each step's loss and, at an epoch's last step, the epoch's mean loss under the
    same name: 3 'resumes'; the step's own loss at 100, 200, 300 replaced by the epoch's mean, and the
    merged row moved after the evaluation at that step, whose cum:timing_s/step lost that step's time."""
    rows = []
    for s in range(1, 301):
        rows.append({"step": s, "epoch": (s - 1) // 100, "loss": round(1 / s, 5), "timing_s/step": 10.0})
        if s % 50 == 0:
            rows.append({"step": s, "val/acc": _acc(s)})
        if s % 100 == 0:
            rows.append({"step": s, "epoch": (s - 1) // 100, "loss": 0.5})
    path = _jsonl(tmp_path / "epochs.jsonl", rows)
    curve = read_curve(path, x="cum:timing_s/step", y="val/acc")
    assert list(curve.x) == [500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]  # (got 990 at step 100, ...)
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]


def _trainer_launch(steps_per_epoch: int, total: int, offset: float = 0.0) -> list[str]:
    """A Hugging Face Trainer's console at INFO (transformers 5: values as 4 significant digits), a fresh
    start: its banner, a training dict every 10 steps, an evaluation every 50, the summary dict."""
    g = lambda v: f"{v:.4g}"  # noqa: E731
    out = ["[transformers] ***** Running training *****", f"[transformers]   Num examples = {steps_per_epoch * 4}",
           f"[transformers]   Total optimization steps = {total}"]
    for s in range(1, total + 1):
        e = s / steps_per_epoch
        if s % 10 == 0:
            out.append(str({"loss": g(2 / s ** 0.3), "grad_norm": "1.5", "learning_rate": "4e-05", "epoch": g(e)}))
        if s % 50 == 0:
            out += ["[transformers] ", "***** Running Evaluation *****",
                    str({"eval_accuracy": g(_acc(s) + offset), "eval_runtime": "0.5", "epoch": g(e)})]
    out.append(str({"train_runtime": "100", "train_samples_per_second": "10", "train_loss": "1.2",
                    "epoch": g(total / steps_per_epoch)}))
    return out


@pytest.mark.xfail(strict=True, reason="review C: a fresh Trainer launch appended (banner, no 'Resuming training "
                                       "from checkpoint') whose first epoch is above the first run's is read as its resume")
def test_a_fresh_trainer_launch_appended_is_a_run_of_its_own(tmp_path):
    """`tee -a` of two trainings: 400 steps on 1600 examples (first dict at epoch 0.025), then 300 steps
    on a 400-example set (first dict at epoch 0.1). The second prints the launch banner and no
    'Resuming training from checkpoint' line: a training of its own. Read as run 1 resumed at epoch
    0.1 -- its 8 evaluations dropped (46 rows), run 2's evaluations taken as run 1's."""
    path = tmp_path / "console.log"
    path.write_text("\n".join(_trainer_launch(400, 400) + _trainer_launch(100, 300, offset=0.1)) + "\n")
    curves = read_curves(path, x="epoch", y="eval_accuracy")
    assert len(curves) == 2  # (got 1, 'the log resumes from a checkpoint 1 time(s) (epoch goes back): 46 row(s) ... dropped')
    assert sorted(len(c.x) for c in curves) == [6, 8]


def _trackio_db(tmp_path: Path, rows: list[dict]) -> Path:
    """A Trackio project database (the schema of the real TRL fixture's, written by trackio 0.43.0)
    holding ``rows`` as one run's log calls, in order."""
    with tarfile.open(DATA / "trackio_runs.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    db_path = tmp_path / "trackio" / "trl-grpo.db"
    db = sqlite3.connect(db_path)
    db.execute("DELETE FROM metrics")
    for i, m in enumerate(rows):
        db.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics, log_id) VALUES (?, ?, ?, ?, ?, ?)",
                   ("0752cded10ea41da97bc817df667f9a9", f"2026-12-01T20:{i // 60:02d}:{i % 60:02d}+00:00",
                    "grpo-tiny", i, json.dumps(m), uuid.uuid4().hex))
    db.commit()
    db.close()
    return db_path


@pytest.mark.xfail(strict=True, reason="review C: drop_abandoned_attempts sees a resume only where the step "
                                       "goes back: one at the step the abandoned attempt logged last keeps two evaluations")
def test_trackio_resume_at_the_step_logged_last_keeps_one_evaluation(tmp_path):
    """TRL (eval_on_start, eval and save every 5 steps) killed right after saving checkpoint-20, resumed
    from it into the same Trackio run: its evaluation of the checkpoint at global step 20 again. Both
    evaluations at 20 are kept, unsaid (the printed-dicts reader keeps the later since readers7; W&B
    merges a later file that starts at the step the earlier ended on). SwanLab's reader does the same:
    verl killed after step 10 was logged and resumed from checkpoint 10 (real swanlab 0.10.3 files,
    made in /tmp by the review) gave x = [0, 5, 10, 10, 15]."""
    rows = []
    for s in range(0, 21):
        if s:
            rows.append({"train/loss": 0.1, "train/epoch": s / 40, "train/global_step": s})
        if s % 5 == 0:
            rows.append({"eval/reward": _acc(s * 20), "train/epoch": s / 40, "train/global_step": s})
    for s in range(20, 31):
        if s > 20:
            rows.append({"train/loss": 0.1, "train/epoch": s / 40, "train/global_step": s})
        if s % 5 == 0:
            rows.append({"eval/reward": _acc(s * 20) + (0.05 if s == 20 else 0), "train/epoch": s / 40,
                         "train/global_step": s})
    curve = read_curve(_trackio_db(tmp_path, rows), x="train/global_step", y="eval/reward")
    assert list(curve.x) == [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]  # (got 20 twice)
    assert curve.y[4] == pytest.approx(_acc(400) + 0.05)


@pytest.mark.xfail(strict=True, reason="review C: a term taken off that is logged, but only on rows without the "
                                       "summed timer, takes off nothing, unsaid")
def test_a_term_taken_off_from_rows_of_its_own_is_said(tmp_path):
    """Each step's time holds its validation's; the validation's metrics and timer are a row of their
    own at the step (a logger that writes each log call as a row). --x cum:total-validation gives the
    same x as cum:total, with no note: the user asked for 240 s off and got 0, silently (before fixa:
    refused, 'takes more off than ... holds in the row at step 5')."""
    rows = []
    for s in range(1, 41):
        v = 30.0 if s % 5 == 0 else 0.0
        rows.append({"step": s, "timing/train/total_step_time": 100.0 + v})
        if v:
            rows.append({"step": s, "timing/validation/total_validation_time": v, "validation/accuracy": _acc(s * 20)})
    path = _jsonl(tmp_path / "separate.jsonl", rows)
    full = read_curve(path, x="cum:timing/train/total_step_time", y="validation/accuracy")
    off = read_curve(path, x="cum:timing/train/total_step_time-timing/validation/total_validation_time",
                     y="validation/accuracy")
    taken_off = list(off.x) != list(full.x)
    said = [n for n in off.notes if "timing/validation/total_validation_time" in n]
    assert taken_off or said  # (got: x identical, no note)
