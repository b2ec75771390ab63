"""A step column that goes back, read as what it is (reviews cr, cs, ct): a resume on a clock x (the abandoned
attempt's rows dropped), two trainings appended (refused), a step counted per epoch on a counter that rises (one
training), and a TensorBoard resume that keeps the checkpoint step's training metrics."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalerl.errors import InputError

ROOT = Path(__file__).resolve().parents[2]


def _resumed_rows_on_a_clock() -> list[dict]:
    """One training (a row per step, an evaluation every 10 steps) that crashed after step 57 and was resumed from its
    step-40 checkpoint; ``wall_time`` (hours) is a clock column, which goes on rising over the resume."""
    rows: list[dict] = []

    def attempt(steps, start_s: float, acc0: float) -> None:
        for s in steps:
            t = (start_s + 60.0 * s) / 3600.0
            rows.append({"step": s, "wall_time": t, "loss": 0.5, "accuracy": None})
            if s % 10 == 0:
                rows.append({"step": s, "wall_time": t, "loss": None, "accuracy": round(acc0 + 0.005 * s, 3)})

    attempt(range(1, 58), 0.0, 0.10)      # abandoned: its evaluation at step 50 (0.35) is not the run's
    attempt(range(41, 81), 4000.0, 0.30)  # resumed from step 40: evaluations at 50..80
    return rows


#: What the run that went on evaluated: the first attempt's 10..40, the resumed attempt's 50..80.
_WENT_ON = [0.15, 0.2, 0.25, 0.3, 0.55, 0.6, 0.65, 0.7]


def _write(rows: list[dict], path: Path) -> Path:
    if path.suffix == ".csv":
        cols = list(rows[0])
        cell = lambda v: "" if v is None else str(v)  # noqa: E731
        path.write_text(",".join(cols) + "\n" + "".join(",".join(cell(r[c]) for c in cols) + "\n" for r in rows))
    else:
        pd = pytest.importorskip("pandas")
        pytest.importorskip("pyarrow")
        pd.DataFrame(rows).to_parquet(path)
    return path


@pytest.mark.parametrize("suffix", [".csv", ".parquet"])
def test_a_resume_read_on_a_wall_time_column_still_drops_the_abandoned_rows(tmp_path, suffix):
    from scalerl.curves.io import read_curves

    path = _write(_resumed_rows_on_a_clock(), tmp_path / f"log{suffix}")
    (by_step,) = read_curves(path, "step", "accuracy")
    assert [round(float(v), 3) for v in by_step.y] == _WENT_ON, by_step.notes  # (read by its step: right)
    (curve,) = read_curves(path, "wall_time", "accuracy")
    assert [round(float(v), 3) for v in curve.y] == _WENT_ON, curve.notes
    assert not any("per epoch" in n for n in curve.notes), curve.notes


def test_two_trainings_appended_to_one_csv_read_by_a_wall_time_column_are_refused(tmp_path):
    from scalerl.curves.csv_log import read_csv

    lines = ["step,wall_time,accuracy"]
    for t0, a0 in ((0.0, 0.2), (5.0, 0.3)):  # the second training starts over at step 1, five hours later
        lines += [f"{s},{t0 + 0.1 * s:.2f},{a0 + 0.01 * s:.3f}" for s in range(1, 31)]
    path = tmp_path / "two.csv"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="--run-column"):
        read_csv(path, "wall_time", "accuracy")


def test_a_jsonl_whose_step_restarts_each_epoch_keeps_every_row(tmp_path):
    from scalerl.curves.io import read_curves

    rows, tokens, acc = [{"epoch": 0, "step": 0, "tokens": 0, "accuracy": 0.2}], 0, 0.2
    for epoch in range(3):
        for step in range(1, 5):
            tokens, acc = tokens + 1000, acc + 0.02
            rows.append({"epoch": epoch, "step": step, "tokens": tokens, "accuracy": round(acc, 3)})
    csv = tmp_path / "metrics.csv"
    csv.write_text("epoch,step,tokens,accuracy\n" + "".join(f"{r['epoch']},{r['step']},{r['tokens']},{r['accuracy']}\n"
                                                            for r in rows))
    (from_csv,) = read_curves(csv, "tokens", "accuracy")
    assert len(from_csv.x) == 13
    jsonl = tmp_path / "metrics.jsonl"
    jsonl.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (curve,) = read_curves(jsonl, "tokens", "accuracy")
    assert len(curve.x) == 13, curve.notes
    assert not any("dropped" in n for n in curve.notes), curve.notes


def test_docs_say_how_a_step_that_goes_back_on_a_rising_x_is_read(tmp_path):
    from scalerl.curves.csv_log import read_csv

    path = tmp_path / "metrics.csv"
    path.write_text("step,tokens,accuracy\n" + "".join(f"{s},{1000 * (4 * e + s)},{0.2 + 0.01 * (4 * e + s):.3f}\n"
                                                      for e in range(3) for s in range(1, 5)))
    (curve,) = read_csv(path, "tokens", "accuracy")  # what the code does: one training, 12 points, not refused
    assert len(curve.x) == 12
    docs = (ROOT / "docs" / "forecasting.md").read_text()
    assert "is refused whatever the x" not in docs
    assert "per epoch" in docs or "per-epoch" in docs


def test_a_verl_resume_in_event_files_keeps_the_checkpoint_steps_training_metrics(tmp_path):
    pytest.importorskip("tensorboard")
    from torch.utils.tensorboard import SummaryWriter

    from scalerl.curves.io import read_curves
    from scalerl.curves.tensorboard_log import read_tensorboard

    d = tmp_path / "tb"
    d.mkdir()
    rows: list[dict] = []

    def attempt(writer, steps, t0: float, acc0: float) -> None:  # 10 s a step, a validation every 10 steps
        for s in steps:
            writer.add_scalar("timing_s/step", 10.0, s, walltime=t0 + s)
            rows.append({"step": s, "timing_s/step": 10.0})
            if s % 10 == 0:
                writer.add_scalar("val/acc", acc0 + 0.01 * s, s, walltime=t0 + s)
                rows.append({"step": s, "val/acc": acc0 + 0.01 * s})
        writer.close()

    attempt(SummaryWriter(str(d), filename_suffix=".a"), range(1, 26), 1000, 0.1)  # crashed after step 25
    resumed = SummaryWriter(str(d), filename_suffix=".b")  # from the step-20 checkpoint: its validation first, at 20
    resumed.add_scalar("val/acc", 0.3, 20, walltime=2000)
    rows.append({"step": 20, "val/acc": 0.3})
    attempt(resumed, range(21, 41), 2000, 0.2)
    log = tmp_path / "same_events.jsonl"
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    (from_jsonl,) = read_curves(log, "cum:timing_s/step", "val/acc")
    assert list(from_jsonl.x) == [100.0, 200.0, 300.0, 400.0]  # 10 s a step, steps 1..N before each validation
    (curve,) = read_tensorboard(d, "cum:timing_s/step", "val/acc")
    assert list(curve.x) == [100.0, 200.0, 300.0, 400.0], curve.notes


def test_which_x_is_a_clock():
    from scalerl.curves.attempts import is_clock

    rows = [{"train/global_step": 1, "tokens": 10, "wall_time": 0.1, "_step": 3, "cum_wall_hours": 0.2}]
    assert not is_clock(rows, "train/global_step") and not is_clock(rows, "tokens")  # counters a resume takes back
    assert all(is_clock(rows, x) for x in ("wall_time", "_step", "cum_wall_hours"))
    # whole words, not parts of one (review cu: "num_updates" held "date", "total_timesteps" "time")
    rows = [{"num_updates": 1, "total_timesteps": 2, "train/wallTime_s": 3, "elapsed_s": 4, "timestamp": 5}]
    assert not is_clock(rows, "num_updates") and not is_clock(rows, "total_timesteps")
    assert all(is_clock(rows, x) for x in ("train/wallTime_s", "elapsed_s", "timestamp"))
    assert is_clock(rows, "cum:timing_s/step")  # no column of the rows: a total the reader makes after the split


def _write_lines(rows: list[dict], path: Path) -> Path:
    """``rows`` as a CSV or as JSON lines, by ``path``'s suffix."""
    if path.suffix == ".csv":
        return _write(rows, path)
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("counter", ["num_updates", "total_timesteps"])
def test_a_per_epoch_step_on_an_updates_or_timesteps_counter_is_one_training(tmp_path, counter):
    from scalerl.curves.io import read_curves

    rows = [{"step": s, counter: 1000 * (4 * e + s), "accuracy": round(0.2 + 0.01 * (4 * e + s), 3)}
            for e in range(3) for s in range(1, 5)]  # the step counts 1..4 each epoch; the counter goes on rising
    for suffix in (".csv", ".jsonl"):  # (review cu: read as a clock -- refused in a CSV, 3 runs in JSON lines)
        curves = read_curves(_write_lines(rows, tmp_path / f"metrics{suffix}"), counter, "accuracy")
        assert len(curves) == 1 and len(curves[0].x) == 12, [(c.name, len(c.x)) for c in curves]


@pytest.mark.parametrize("suffix", [".csv", ".jsonl"])
def test_a_per_epoch_step_after_an_evaluation_at_step_0_keeps_every_row(tmp_path, suffix):
    from scalerl.curves.io import read_curves

    rows, tokens, acc = [{"step": 0, "tokens": 0, "accuracy": 0.2}], 0, 0.2  # evaluated once before training
    for _epoch in range(3):
        for s in (10, 20, 30):  # logged every 10 steps; the step counts again each epoch
            tokens, acc = tokens + 10_000, acc + 0.02
            rows.append({"step": s, "tokens": tokens, "accuracy": round(acc, 3)})
    (curve,) = read_curves(_write_lines(rows, tmp_path / f"metrics{suffix}"), "tokens", "accuracy")
    assert len(curve.x) == 10, curve.notes  # (review cu: 4, read as 2 resumes)


def test_a_per_epoch_step_whose_epoch_opens_with_an_evaluation_is_one_training_in_json_lines(tmp_path):
    from scalerl.curves.io import read_curves

    rows, tokens, acc = [], 0, 0.2
    for _epoch in range(3):
        rows.append({"step": 0, "tokens": tokens, "accuracy": round(acc, 3)})  # the epoch's evaluation: tokens as left
        for s in range(1, 5):
            tokens, acc = tokens + 1000, acc + 0.02
            rows.append({"step": s, "tokens": tokens, "accuracy": round(acc, 3)})
    for suffix in (".csv", ".jsonl"):  # (review cu: 3 runs of 5 in JSON lines)
        curves = read_curves(_write_lines(rows, tmp_path / f"metrics{suffix}"), "tokens", "accuracy")
        assert [len(c.x) for c in curves] == [15], [(c.name, len(c.x), c.notes) for c in curves]
