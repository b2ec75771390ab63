"""A step logged again inside one attempt of a tracker's run (W&B, SwanLab, Trackio): every row kept, and
said as the row readers say it (docs/forecasting.md "A step logged again"). The run files were written by
the real packages (data/make_relogged_tracker_runs.py); the TRL runs by make_trl_logged_run.py."""

import csv
import json
import tarfile
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import read_curve, read_curves

DATA = Path(__file__).parent / "data"
RELOGGED = "train/global_step logged again by rows of one kind at 1 train/global_step(s) (8)"


@pytest.mark.parametrize("name, package", [("relogged_step.wandb", "wandb"), ("relogged_step.swanlab", "swanlab")])
@pytest.mark.parametrize("x", ["train/global_step", "cum:train/step_time"])
def test_an_evaluation_logged_twice_at_a_step_is_kept_and_said(name, package, x):
    """Step 8's evaluation logged twice, no launch between: both kept (the reader cannot tell a resume
    from a second evaluation set), and the notes say where -- they said nothing. The training rows and
    evaluation rows at steps 4, 8 and 12 are not of one kind: no note for those."""
    pytest.importorskip(package)
    curve = read_curve(DATA / name, x, "eval/acc")
    assert list(curve.y) == pytest.approx([0.1, 0.2, 0.25, 0.3])
    said = [n for n in curve.notes if "logged again" in n]
    assert len(said) == 1 and RELOGGED in said[0] and "--run-column" in said[0], curve.notes
    assert said[0].startswith("run 'relogged-step': ")


def test_a_trl_run_in_wandb_has_no_step_logged_again(tmp_path):
    """TRL logs a profiling row per call (many at an evaluation's step, each with train/global_step)
    and a last row of only train/epoch and train/global_step: neither repeats what a row logged."""
    pytest.importorskip("wandb")
    with tarfile.open(DATA / "wandb_trl_resumed.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    for run_file in sorted(tmp_path.rglob("*.wandb")):
        for x in ("train/global_step", "step"):
            for curve in read_curves(run_file, x, "eval/reward"):
                assert not any("logged again" in n for n in curve.notes), (run_file, curve.notes)


def test_a_trl_run_in_trackio_has_no_step_logged_again(tmp_path):
    with tarfile.open(DATA / "trackio_runs.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    curve = read_curve(tmp_path / "trackio" / "trl-grpo.db", "train/global_step", "eval/reward")
    assert not any("logged again" in n for n in curve.notes), curve.notes


def test_trackio_rows_of_one_kind_at_a_step_are_said_by_what_they_log():
    """Trackio's reader keeps only the columns a curve reads: a training row keeps none of the evaluation
    row's, which by the kept columns alone looked like a repeat of it. What each row logs decides."""
    from scalerl.curves.attempts import keep_resumed_attempts

    full = [{"train/global_step": 4, "train/loss": 0.5}, {"train/global_step": 4, "eval/acc": 0.1},
            {"train/global_step": 8, "train/loss": 0.4}, {"train/global_step": 8, "eval/acc": 0.2},
            {"train/global_step": 8, "eval/acc": 0.25}]
    kept = [{"run": "r", "step": i, **{k: v for k, v in r.items() if k != "train/loss"}} for i, r in enumerate(full)]
    kinds = {id(row): frozenset(r) for row, r in zip(kept, full)}
    rows, notes = keep_resumed_attempts(kept, "r", kinds)
    assert rows == kept and len(notes) == 1 and RELOGGED in notes[0]
    kinds = {id(row): frozenset(r) for row, r in zip(kept[:4], full)}
    assert keep_resumed_attempts(kept[:4], "r", kinds)[1] == []


# Review cr: a W&B history of a resumed TRL run as JSON lines and as Parquet, split as its CSV is.

def _wandb_history_rows() -> list[dict]:
    """A TRL run's W&B history (``wandb-history.jsonl`` / ``run.scan_history()``): resumed from checkpoint-40
    after it had logged up to step 60. W&B's ``_step`` goes on; TRL's ``train/global_step`` goes back to 41."""
    rows, n = [], 0

    def log(row):
        nonlocal n
        rows.append({"_step": n, "_runtime": 10.0 * n, "_timestamp": 1.7e9 + 10.0 * n, **row})
        n += 1

    for step in range(1, 61):
        log({"train/global_step": step, "train/loss": 0.5, "train/reward": 0.1 + step / 200})
        if step % 10 == 0:
            log({"train/global_step": step, "eval/reward": 0.2 + step / 200})
    for step in range(41, 81):
        log({"train/global_step": step, "train/loss": 0.5, "train/reward": 0.1 + step / 300})
        if step % 10 == 0:
            log({"train/global_step": step, "eval/reward": 0.15 + step / 300})
    return rows


def test_wandb_history_jsonl_resume_split_by_trainer_step(tmp_path):
    rows = _wandb_history_rows()
    jsonl = tmp_path / "wandb-history.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    table = tmp_path / "history.csv"
    with open(table, "w", newline="") as f:
        w = csv.DictWriter(f, list(dict.fromkeys(k for r in rows for k in r)))
        w.writeheader()
        w.writerows(rows)
    # The CSV of the same history drops the abandoned attempt's evaluations at 50 and 60 (docs: a log of one run
    # that a resumed training appended to is read by its step column, train/global_step first).
    (from_csv,) = read_curves(table, "_step", "eval/reward")
    assert len(from_csv) == 8
    (from_jsonl,) = read_curves(jsonl, "_step", "eval/reward")
    assert list(np.round(from_jsonl.y, 4)) == list(np.round(from_csv.y, 4))
    (by_step,) = read_curves(jsonl, "train/global_step", "eval/reward")
    assert list(by_step.x) == [10, 20, 30, 40, 50, 60, 70, 80]


def test_parquet_history_resume_split_by_trainer_step(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    rows = _wandb_history_rows()
    table = tmp_path / "history.parquet"
    pd.DataFrame(rows).to_parquet(table)
    (curve,) = read_curves(table, "_step", "eval/reward")
    # The run that went on: evaluations at steps 10..40 of the first attempt, then 50..80 of the resumed one.
    assert list(np.round(curve.y, 4)) == [0.25, 0.3, 0.35, 0.4, 0.3167, 0.35, 0.3833, 0.4167]
