"""A step logged again by rows of one kind with no sign of a new launch is no resume: two evaluation
sets as rows of one kind (one set missing an evaluation, or evaluated at another interval), per-epoch
summary rows under the step row's names -- every row kept and the notes say where (found by review C
of the readers7 / fixa changes, which replaced values and dropped rows on such logs). Where the log
does show a launch, it decides: a Hugging Face Trainer's banner without a 'Resuming training from
checkpoint' line is a fresh training (a run of its own), a Trackio run's latest launch time marks the
attempt that logs the step it resumed from again. And ``cum:A-B`` with B on rows of its own at A's
step takes B off per step."""

import json
import math
import sqlite3
import tarfile
import uuid
from pathlib import Path

import pytest

from scalerl.curves import read_curves
from scalerl.curves.io import read_curve

from .conftest import write_jsonl

DATA = Path(__file__).parent / "data"


def _acc(step: int) -> float:
    return round(0.2 + 0.6 * (1 - math.exp(-step / 300)), 4)


def test_two_evaluation_sets_with_one_evaluation_missing_are_no_resumes(tmp_path):
    """Two evaluation sets as rows of one kind at every evaluation, the 'math' set's evaluation at step
    50 missing (a timeout). Before: read as 9 resumes, gsm8k's value dropped at every step but 50, the
    curve a zigzag of the two sets, and the note that names --run-column gone."""
    rows = []
    for s in range(1, 101):
        rows.append({"step": s, "loss": 1 / s, "timing_s/step": 10.0})
        if s % 10 == 0:
            rows.append({"step": s, "task": "gsm8k", "acc": _acc(s * 10)})
            if s != 50:
                rows.append({"step": s, "task": "math", "acc": round(_acc(s * 10) / 2, 4)})
    curve = read_curve(write_jsonl(tmp_path / "sets.jsonl", rows), x="step", y="acc")
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]  # (got: 9 time(s))
    assert len(curve.x) == 19  # (got 10: one value a step, math's but at 50)
    assert [n for n in curve.notes if "--run-column" in n]
    (note,) = [n for n in curve.notes if "logged again by rows of one kind" in n]
    assert "at 9 step(s) (10, 20, 30, 40, 60, ...)" in note and "all kept" in note


def test_evaluation_sets_at_different_intervals_are_no_resumes(tmp_path):
    """Set 'a' every 100 steps, a slower benchmark 'b' every 200. Before: 5 'resumes', a's value at 200,
    400, ... replaced by b's."""
    rows = []
    for s in range(1, 1001):
        rows.append({"step": s, "loss": 1 / s})
        if s % 100 == 0:
            rows.append({"step": s, "task": "a", "acc": _acc(s)})
        if s % 200 == 0:
            rows.append({"step": s, "task": "b", "acc": round(_acc(s) / 2, 4)})
    curve = read_curve(write_jsonl(tmp_path / "intervals.jsonl", rows), x="step", y="acc")
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]
    assert len(curve.x) == 15  # (got 10)
    assert [n for n in curve.notes if "at 5 step(s) (200, 400, 600, 800, 1000)" in n]


def test_per_epoch_summary_rows_are_no_resumes(tmp_path):
    """A loop that logs each step's loss and, at an epoch's last step, the epoch's mean loss under the
    same name. Before: 3 'resumes'; the step's own loss at 100, 200, 300 replaced by the epoch's mean,
    and the merged row moved after the evaluation at that step, whose cum:timing_s/step lost that
    step's time."""
    rows = []
    for s in range(1, 301):
        rows.append({"step": s, "epoch": (s - 1) // 100, "loss": round(1 / s, 5), "timing_s/step": 10.0})
        if s % 50 == 0:
            rows.append({"step": s, "val/acc": _acc(s)})
        if s % 100 == 0:
            rows.append({"step": s, "epoch": (s - 1) // 100, "loss": 0.5})
    path = write_jsonl(tmp_path / "epochs.jsonl", rows)
    curve = read_curve(path, x="cum:timing_s/step", y="val/acc")
    assert list(curve.x) == [500.0, 1000.0, 1500.0, 2000.0, 2500.0, 3000.0]  # (got 990 at step 100, ...)
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]
    loss = read_curve(path, x="step", y="loss", bounded=False)
    assert len(loss.x) == 303 and loss.y[list(loss.x).index(100.0)] == pytest.approx(0.01)  # the step's own kept
    assert [n for n in curve.notes if "at 3 step(s) (100, 200, 300)" in n]


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


def test_a_fresh_trainer_launch_appended_is_a_run_of_its_own(tmp_path):
    """`tee -a` of two trainings: 400 steps on 1600 examples (first dict at epoch 0.025), then 300 steps
    on a 400-example set (first dict at epoch 0.1). The second prints the launch banner and no
    'Resuming training from checkpoint' line: a training of its own. Before: read as run 1 resumed at
    epoch 0.1 -- its 8 evaluations dropped (46 rows), run 2's evaluations taken as run 1's."""
    path = tmp_path / "console.log"
    path.write_text("\n".join(_trainer_launch(400, 400) + _trainer_launch(100, 300, offset=0.1)) + "\n")
    curves = read_curves(path, x="epoch", y="eval_accuracy")
    assert len(curves) == 2  # (got 1, 'the log resumes from a checkpoint 1 time(s) (epoch goes back): 46 row(s) ... dropped')
    assert sorted(len(c.x) for c in curves) == [6, 8]
    assert [c.name for c in curves] == ["console#1", "console#2"]
    assert any("a new training launched 1 time(s)" in n for n in curves[0].notes)


def _trackio_db(tmp_path: Path, rows: list[dict], launched: int | None = None) -> Path:
    """A Trackio project database (the schema of the real TRL fixture's, written by trackio 0.43.0)
    holding ``rows`` as one run's log calls, in order, a second apart. ``launched``: the index of the
    first row a later launch of the run logged -- trackio 0.43's ``init`` sets ``_Created`` in the run's
    config at every launch, and the launch's first log replaces the run's config row with it."""
    with tarfile.open(DATA / "trackio_runs.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    db_path = tmp_path / "trackio" / "trl-grpo.db"
    db = sqlite3.connect(db_path)
    db.execute("DELETE FROM metrics")
    stamp = lambda i: f"2026-12-01T20:{i // 60:02d}:{i % 60:02d}+00:00"  # noqa: E731
    for i, m in enumerate(rows):
        db.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics, log_id) VALUES (?, ?, ?, ?, ?, ?)",
                   ("0752cded10ea41da97bc817df667f9a9", stamp(i), "grpo-tiny", i, json.dumps(m), uuid.uuid4().hex))
    config = json.loads(db.execute("SELECT config FROM configs").fetchone()[0])
    config["_Created"] = stamp(launched - 1).replace("+", ".500000+") if launched else "2026-12-01T19:59:59+00:00"
    db.execute("UPDATE configs SET config = ?", (json.dumps(config).encode(),))
    db.commit()
    db.close()
    return db_path


def _trackio_resumed_at_20() -> tuple[list[dict], int]:
    """TRL (eval_on_start, eval and save every 5 steps) killed right after saving checkpoint-20, resumed
    from it into the same Trackio run: its evaluation of the checkpoint at global step 20 again. The
    rows, and the index of the resumed launch's first."""
    rows = []
    for s in range(0, 21):
        if s:
            rows.append({"train/loss": 0.1, "train/epoch": s / 40, "train/global_step": s})
        if s % 5 == 0:
            rows.append({"eval/reward": _acc(s * 20), "train/epoch": s / 40, "train/global_step": s})
    launched = len(rows)
    for s in range(20, 31):
        if s > 20:
            rows.append({"train/loss": 0.1, "train/epoch": s / 40, "train/global_step": s})
        if s % 5 == 0:
            rows.append({"eval/reward": _acc(s * 20) + (0.05 if s == 20 else 0), "train/epoch": s / 40,
                         "train/global_step": s})
    return rows, launched


def test_trackio_resume_at_the_step_logged_last_keeps_one_evaluation(tmp_path):
    """The resumed launch's time (the run's config) marks its first row: at global step 20, its
    evaluation takes the abandoned one's place. Before: both evaluations at 20 kept, unsaid."""
    rows, launched = _trackio_resumed_at_20()
    curve = read_curve(_trackio_db(tmp_path, rows, launched), x="train/global_step", y="eval/reward")
    assert list(curve.x) == [0.0, 5.0, 10.0, 15.0, 20.0, 25.0, 30.0]  # (got 20 twice)
    assert curve.y[4] == pytest.approx(_acc(400) + 0.05)
    assert any("resumed from a checkpoint 1 time(s) (a later attempt starts at the train/global_step the earlier "
               "ended on)" in n for n in curve.notes)


def test_trackio_step_logged_again_within_one_launch_keeps_both(tmp_path):
    """The same rows where the run's one launch came before them all: nothing shows a resume, both
    evaluations at 20 stay (as two evaluation sets logged as rows of one kind would)."""
    rows, _ = _trackio_resumed_at_20()
    curve = read_curve(_trackio_db(tmp_path, rows), x="train/global_step", y="eval/reward")
    assert list(curve.x) == [0.0, 5.0, 10.0, 15.0, 20.0, 20.0, 25.0, 30.0]
    assert not [n for n in curve.notes if "resumed" in n]


def _validation_on_rows_of_its_own() -> list[dict]:
    """Each step's time holds its validation's; the validation's metrics and timer are a row of their own
    at the step (a logger that writes each log call as a row), after the step's row or before it; a
    validation before training at step 0, inside no step's time."""
    rows = [{"step": 0, "timing/validation/total_validation_time": 31.0, "validation/accuracy": 0.2}]
    for s in range(1, 41):
        v = 30.0 if s % 5 == 0 else 0.0
        step_row = {"step": s, "timing/train/total_step_time": 100.0 + v}
        validation = [{"step": s, "timing/validation/total_validation_time": v, "validation/accuracy": _acc(s * 20)}] if v else []
        rows += [step_row, *validation] if s % 10 else [*validation, step_row]
    return rows


def test_a_term_taken_off_from_rows_of_its_own_is_taken_off_its_step(tmp_path):
    """--x cum:total-validation took off nothing where the validation's timer sat on a row of its own,
    unsaid (before fixa: refused, 'takes more off than ... holds in the row at step 5'). Per step: each
    step's 30 s of validation off, the step-0 validation's 31 s not (no step time there); the row
    readers and the TensorBoard reader agree."""
    path = write_jsonl(tmp_path / "separate.jsonl", _validation_on_rows_of_its_own())
    clean = "cum:timing/train/total_step_time-timing/validation/total_validation_time"
    full = read_curve(path, x="cum:timing/train/total_step_time", y="validation/accuracy")
    off = read_curve(path, x=clean, y="validation/accuracy")
    # At 10, 20, 30, 40 the validation's row comes before its step's: its x is the total before the step.
    done = [s if s % 10 else s - 1 for s in range(5, 41, 5)]  # the steps whose rows came before each point
    assert list(full.x) == [0.0] + [100.0 * d + 30.0 * (d // 5) for d in done]
    assert list(off.x) == [0.0] + [100.0 * d for d in done]  # (got full.x: nothing taken off)
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    w = SummaryWriter(str(tmp_path / "tb"))
    for r in _validation_on_rows_of_its_own():
        for k, v in r.items():
            if k != "step":
                w.add_scalar(k, v, r["step"])
    w.close()
    from_tb = read_curve(tmp_path / "tb", x=clean, y="validation/accuracy")  # (per step: 100 s a step)
    assert list(from_tb.x) == pytest.approx([0.0] + [100.0 * s for s in range(5, 41, 5)], abs=1e-3)
    assert [x for x, s in zip(from_tb.x, range(0, 41, 5)) if s % 10] == pytest.approx(
        [x for x, s in zip(off.x, range(0, 41, 5)) if s % 10], abs=1e-3)  # where the validation's row comes after


def test_a_console_with_only_trainer_banners_has_no_printed_dicts(tmp_path):
    """A Trainer's launch banners and no dict (killed before its first log): the format's own message,
    not 'no x column epoch; available columns: (none)'."""
    from scalerl.errors import InputError

    path = tmp_path / "console.log"
    path.write_text("\n".join(_trainer_launch(100, 300)[:3] * 2
                              + ["[transformers]   Resuming training from checkpoint with epoch 0 and global step 10"]) + "\n")
    with pytest.raises(InputError, match="no printed metric dicts"):
        read_curves(path, x="epoch", y="eval_accuracy", fmt="dict-lines")
