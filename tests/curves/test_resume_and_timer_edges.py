"""Edges of three forecaster rules, each found by a review: a step logged again at a resume
(:func:`scalerl.curves.attempts.split_attempts`: 'nan' cells are no values, two evaluation sets at
every evaluation are no resume; with no restart banner, rows of one kind at one step -- resumes from
one checkpoint or two, a duplicate at the log's last step -- are all kept, said), ``cum:A-B`` and the overhead-timer check (saves and validation on the
same rows judged together, the validation before training not taken off, a term never logged taken
off as 0) and the take-off note on a clock whose start evaluation is above 0."""

import csv
import gzip
import math
import re
import sys
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import Curve, forecast
from scalerl.curves.csv_log import read_csv
from scalerl.curves.io import read_curve
from scalerl.errors import InputError

from .conftest import write_jsonl

DATA = Path(__file__).parent / "data"


def _acc(step: int) -> float:
    return round(0.2 + 0.6 * (1 - math.exp(-step / 30)), 4)


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


def test_two_evaluation_sets_at_one_step_are_no_resume(tmp_path):
    rows = []
    for s in range(1, 101):
        rows.append({"step": s, "loss": 1 / s, "timing_s/step": 10.0})
        if s % 10 == 0:
            rows.append({"step": s, "task": "gsm8k", "acc": _acc(s)})
            rows.append({"step": s, "task": "math", "acc": round(_acc(s) / 2, 4)})
    curve = read_curve(write_jsonl(tmp_path / "twosets.jsonl", rows), x="step", y="acc")
    assert len(curve.x) == 20  # both sets kept (as before), so that the shared-x note names --run-column
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]


def test_two_relogs_at_the_same_step_without_a_banner_keep_every_evaluation(tmp_path):
    rows = [{"step": s, "loss": 1 / s, **({"val/acc": _acc(s)} if s % 10 == 0 else {})} for s in range(1, 41)]
    rows += [{"step": 40, "val/acc": _acc(40) + 0.003}, {"step": 40, "val/acc": _acc(40) - 0.002}]
    rows += [{"step": s, "loss": 1 / s, **({"val/acc": _acc(s)} if s % 10 == 0 else {})} for s in range(41, 61)]
    curve = read_curve(write_jsonl(tmp_path / "relog_twice.jsonl", rows), x="step", y="val/acc")
    assert list(curve.x) == [10.0, 20.0, 30.0, 40.0, 40.0, 40.0, 50.0, 60.0]  # no banner: none dropped
    assert [n for n in curve.notes if "logged again by rows of one kind at 1 step(s) (40)" in n]


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


def test_a_healthy_log_with_saves_and_validation_on_the_same_steps_gets_no_overhead_note(tmp_path):
    path = write_jsonl(tmp_path / "verl_after_3117.jsonl", _verl_after_3117())
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


def test_the_x_the_overhead_note_advises_reads(tmp_path):
    path = _nemo_rl_with_validation_inside(tmp_path)
    (note,) = [n for n in read_curve(path, x="cum:timing/train/total_step_time", y="validation/accuracy").notes
               if "time that is not training" in n]
    advised = re.search(r"--x '([^']+)'", note).group(1)
    curve = read_curve(path, x=advised, y="validation/accuracy")  # (got InputError: "... at step 0 (-31 left)")
    assert len(curve.x) > 10


def test_taking_off_a_timer_not_logged_yet_reads(tmp_path):
    rows = [{"step": s, "timing_s/step": 150.0, **({"timing_s/testing": 45.0, "val/acc": _acc(s)} if s % 5 == 0 else {})}
            for s in range(1, 51)]
    path = write_jsonl(tmp_path / "nosave.jsonl", rows)
    curve = read_curve(path, x="cum:timing_s/step-timing_s/save_checkpoint-timing_s/testing", y="val/acc")
    assert len(curve.x) == 10


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


def test_json_lines_nan_values_are_no_values_logged(tmp_path):
    # The JSON-lines half of the CSV case above: json.dumps writes NaN for a value a row did not have.
    rows = []
    for s in range(1, 41):
        rows.append({"step": s, "loss": 1 / s, "timing_s/step": 10.0, "val/acc": float("nan")})
        if s % 10 == 0:
            rows.append({"step": s, "timing_s/step": float("nan"), "val/acc": _acc(s)})
    curve = read_curve(write_jsonl(tmp_path / "nanvalues.jsonl", rows), x="cum:timing_s/step", y="val/acc")
    assert list(curve.x) == [100.0, 200.0, 300.0, 400.0]
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]


def test_relogs_at_two_checkpoints_without_a_banner_are_kept_and_said(tmp_path):
    """A relog at some of the steps that evaluate (40 and 80 of every 10): two resumes, or a second
    evaluation set at two of them -- no banner tells which. Both rows kept at each, said."""
    rows = []
    for s in range(1, 101):
        rows.append({"step": s, "loss": 1 / s, **({"val/acc": _acc(s)} if s % 10 == 0 else {})})
        if s in (40, 80):
            rows.append({"step": s, "val/acc": _acc(s) + 0.01})
    curve = read_curve(write_jsonl(tmp_path / "two_resumes.jsonl", rows), x="step", y="val/acc")
    assert sorted(curve.x) == sorted([float(s) for s in range(10, 101, 10)] + [40.0, 80.0])
    assert curve.y[4] == pytest.approx(_acc(40) + 0.01) and curve.y[9] == pytest.approx(_acc(80) + 0.01)
    assert [n for n in curve.notes if "at 2 step(s) (40, 80)" in n]
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]


def test_an_evaluation_logged_twice_at_the_last_step_is_no_resume(tmp_path):
    """A trainer that evaluates at its last step and again as it ends: both kept, said (a note, no
    resume)."""
    rows = [{"step": s, "loss": 1 / s, **({"val/acc": _acc(s)} if s % 10 == 0 else {})} for s in range(1, 51)]
    rows.append({"step": 50, "val/acc": _acc(50)})
    curve = read_curve(write_jsonl(tmp_path / "final_twice.jsonl", rows), x="step", y="val/acc")
    assert list(curve.x) == [10.0, 20.0, 30.0, 40.0, 50.0, 50.0]
    assert not [n for n in curve.notes if "resumes from a checkpoint" in n]
    assert [n for n in curve.notes if "at 1 step(s) (50)" in n]


def test_an_old_verl_log_with_saves_and_validation_on_the_same_steps_is_said(tmp_path):
    """The same log as the healthy one above, with both timers inside timing_s/step (verl before PR
    #3117): said, and the --x it advises gets no note of its own."""
    rows = _verl_after_3117()
    for r in rows:
        r["timing_s/step"] = round(r["timing_s/step"] + r.get("timing_s/testing", 0) + r.get("timing_s/save_checkpoint", 0), 2)
    path = write_jsonl(tmp_path / "verl_before_3117.jsonl", rows)
    (note,) = [n for n in read_curve(path, x="cum:timing_s/step", y="val/acc").notes if "time that is not training" in n]
    assert "timing_s/save_checkpoint (checkpoint saves" in note and "timing_s/testing (validation" in note
    advised = re.search(r"--x '([^']+)'", note).group(1)
    assert advised == "cum:timing_s/step-timing_s/save_checkpoint-timing_s/testing"
    assert not [n for n in read_curve(path, x=advised, y="val/acc").notes if "not training" in n or "grow" in n]


def test_the_overhead_notes_share_counts_the_rows_the_advised_x_takes_it_off(tmp_path):
    """NeMo-RL's validation before training sits on a row without a step time: inside no step, it is
    neither taken off nor counted in the note's share of x."""
    path = _nemo_rl_with_validation_inside(tmp_path)
    full = read_curve(path, x="cum:timing/train/total_step_time", y="validation/accuracy")
    (note,) = [n for n in full.notes if "time that is not training" in n]
    clean = read_curve(path, x=re.search(r"--x '([^']+)'", note).group(1), y="validation/accuracy")
    share = re.search(r"-- (\d+)% of x", note).group(1)
    assert share == f"{100 * (full.x[-1] - clean.x[-1]) / full.x[-1]:.0f}"


def test_a_term_taken_off_that_is_never_logged_is_said_and_a_missing_summed_term_named(tmp_path):
    rows = [{"step": s, "timing_s/step": 150.0, **({"val/acc": _acc(s)} if s % 5 == 0 else {})} for s in range(1, 21)]
    path = write_jsonl(tmp_path / "nosave.jsonl", rows)
    curve = read_curve(path, x="cum:timing_s/step-timing_s/save_checkpoint", y="val/acc")
    assert list(curve.x) == [750.0, 1500.0, 2250.0, 3000.0]
    assert [n for n in curve.notes if "'timing_s/save_checkpoint' logged nowhere in this log" in n]
    with pytest.raises(InputError, match="no x column 'cum:timing_s/stepp-timing_s/save_checkpoint'.*"
                                         "its first term, 'timing_s/stepp'"):
        read_curve(path, x="cum:timing_s/stepp-timing_s/save_checkpoint", y="val/acc")


def _tensorboard(path: Path, rows: list[dict]) -> Path:
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    w = SummaryWriter(str(path))
    for r in rows:
        for k, v in r.items():
            if k != "step":
                w.add_scalar(k, v, r["step"])
    w.close()
    return path


def _validation_at_start_inside() -> list[dict]:
    """NeMo-RL's layout: a validation before training (step 0: its timer, no step time), then each
    step's time holding its validation's."""
    rng = np.random.default_rng(3)
    rows = [{"step": 0, "timing/validation/total_validation_time": 31.0, "validation/accuracy": 0.2}]
    for s in range(1, 41):
        r = {"step": s, "timing/train/total_step_time": round(100 + rng.normal(0, 3), 2)}
        if s % 5 == 0:
            r["timing/validation/total_validation_time"] = round(30 + rng.normal(0, 1), 2)
            r["timing/train/total_step_time"] += r["timing/validation/total_validation_time"]
            r["validation/accuracy"] = _acc(s)
        rows.append(r)
    return rows


def test_tensorboard_and_the_row_readers_take_off_the_same(tmp_path):
    rows = _validation_at_start_inside()
    clean = "cum:timing/train/total_step_time-timing/validation/total_validation_time"
    from_rows = read_curve(write_jsonl(tmp_path / "nemo.jsonl", rows), x=clean, y="validation/accuracy")
    from_tb = read_curve(_tensorboard(tmp_path / "tb", rows), x=clean, y="validation/accuracy")
    assert from_tb.x == pytest.approx(from_rows.x, abs=1e-3)  # (float32 events)
    assert from_rows.x[0] == 0.0
    for x in ("cum:timing/train/total_step_time", clean + "-timing/train/checkpointing"):  # (never saved)
        said = [[n for n in read_curve(p, x=x, y="validation/accuracy").notes if "not training" in n or "logged nowhere" in n]
                for p in (tmp_path / "nemo.jsonl", tmp_path / "tb")]
        assert said[0] and [re.sub(r"[\d.]+", "N", n) for n in said[0]] == [re.sub(r"[\d.]+", "N", n) for n in said[1]]


def test_tensorboard_refuses_taking_off_a_timer_logged_after_the_step_as_the_row_readers_do(tmp_path):
    rows = [{"step": s, "timing_s/step": 150.0, **({"timing_s/testing": 200.0, "val/acc": _acc(s)} if s % 5 == 0 else {})}
            for s in range(1, 21)]
    x = "cum:timing_s/step-timing_s/testing"
    for path in (write_jsonl(tmp_path / "after.jsonl", rows), _tensorboard(tmp_path / "tb", rows)):
        with pytest.raises(InputError, match="takes more off than timing_s/step holds in the row at step 5 "
                                             r"\(-50 left\).*leave it out of --x"):
            read_curve(path, x=x, y="val/acc")


def test_the_first_evaluation_after_the_start_of_each_seed_on_a_clock():
    from scalerl.curves.takeoff import below_first

    assert below_first(0.9, [0.025, 5, 10], (0.3, 1.9)) == 5  # the start at 90 s: the next is the first measured
    assert below_first(0.9, [np.array([0.02, 5.0, 10.0]), np.array([0.03, 6.0, 11.0])]) == 5  # each seed's own start


def test_compare_judges_the_shared_refits_c_mid_by_its_interval_as_fit_does():
    from dataclasses import replace

    from scalerl.curves import Sigmoid, compare
    from scalerl.curves.compare import unmeasured_takeoff_notes

    from .conftest import PAPER_LAW, synthetic

    base = [synthetic(PAPER_LAW, seed=s, noise=0.005) for s in range(2)]
    faster = [synthetic(Sigmoid(A=0.61, B=1.92, C_mid=1200, R0=0.3), seed=20 + s, noise=0.005) for s in range(2)]
    res = compare({"base": base, "faster": faster}, n_boot=150, forecasts=False)
    (c,) = res.classifications
    assert c.kind == "efficiency" and c.C_mid_intervals is not None
    first = min(float(x[x > 0].min()) for x in (b.x for b in base))
    below = (c.C_mid_intervals[0], (0.5 * first, 0.9 * first))
    reaching = (c.C_mid_intervals[0], (0.5 * first, 1.5 * first))
    for intervals, said in ((below, True), (reaching, False)):
        res.classifications = [replace(c, C_mid=(c.C_mid[0], 0.8 * first), C_mid_intervals=intervals)]
        assert bool([n for n in unmeasured_takeoff_notes(res) if "base (C_mid" in n]) is said


def test_a_term_taken_off_by_part_of_a_name_says_the_columns_it_may_mean(tmp_path):
    rows = [{"step": s, "timing/gen": 50.0, "timing/update_actor": 40.0, **({"acc": _acc(s)} if s % 5 == 0 else {})}
            for s in range(1, 11)]
    curve = read_curve(write_jsonl(tmp_path / "v01.jsonl", rows), x="cum:timing/*-actor", y="acc")
    (note,) = [n for n in curve.notes if "logged nowhere" in n]
    assert "'actor' logged nowhere" in note and "if you meant 'timing/update_actor'" in note and "'*actor*'" in note
    assert list(read_curve(tmp_path / "v01.jsonl", x="cum:timing/*-*actor*", y="acc").x) == [250.0, 500.0]


def test_a_csv_sorted_as_text_is_no_resume(tmp_path):
    # (review reviewaf) Steps sorted as text (10, 100, 110, ..., 190, 20, 200, ...): read as a resume that
    # dropped 21 of 30 rows ("resumes 1 time(s)"). The rows are read in step order, said.
    steps = list(range(10, 310, 10))
    path = tmp_path / "sorted.csv"
    path.write_text("step,gpu_hours,val_acc\n" + "".join(f"{s},{s / 2:g},{0.2 + s / 1000:.4f}\n"
                                                          for s in sorted(steps, key=str)))
    curve = read_curve(path, "gpu_hours", "val_acc")
    assert list(curve.x) == [s / 2 for s in steps] and len(curve) == 30
    assert not any("resumes" in n for n in curve.notes)
    assert any("sorted as text (10, 100, 110" in n for n in curve.notes), curve.notes
    # A real resume (the step goes back to a checkpoint's) is still one.
    path.write_text("step,gpu_hours,val_acc\n" + "".join(f"{s},{s / 2:g},{0.2 + s / 1000:.4f}\n"
                                                          for s in steps + [200, 210]))
    curve = read_curve(path, "gpu_hours", "val_acc")
    assert any("resumes from a checkpoint 1 time(s)" in n for n in curve.notes), curve.notes



def test_a_csv_written_newest_first_is_read_oldest_first(tmp_path):
    # An export sorted by step, descending (a W&B table, a dashboard's "latest first"): refused as a compute that
    # decreases, blaming a restart. Read in step order, said; a training and an evaluation row at one step too.
    path = tmp_path / "newest.csv"
    lines = []
    for s in range(300, 0, -10):
        lines.append(f"{s},{s / 2:g},")
        if s % 20 == 0:
            lines.append(f"{s},{s / 2:g},{0.2 + s / 1000:.4f}")
    path.write_text("step,gpu_hours,val_acc\n" + "\n".join(lines) + "\n")
    curve = read_curve(path, "gpu_hours", "val_acc")
    assert list(curve.x) == [s / 2 for s in range(20, 310, 20)]
    assert any("newest first (300, 290, 280" in n for n in curve.notes), curve.notes


def test_text_sorted_rows_with_training_and_evaluation_rows_at_one_step_keep_every_evaluation(tmp_path):
    # Review aj: a training row and an evaluation row at one step sorted as text (10, 100, 110, 120, 20, ...):
    # the repeated steps stopped the text-order check, and the rows were read as a resume.
    steps = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100, 110, 120]
    lines = []
    for st in sorted(steps, key=str):
        lines.append(f"{st},{0.01 * st:.3f},")
        if st % 20 == 0:
            lines.append(f"{st},,{min(0.9, 0.1 + st / 200):.3f}")
    path = tmp_path / "log.csv"
    path.write_text("step,loss,pass_rate\n" + "\n".join(lines) + "\n", encoding="utf-8")
    (curve,) = read_csv(path, "step", "pass_rate")
    assert list(curve.x) == [20, 40, 60, 80, 100, 120]
    assert not any("resumes" in n for n in curve.notes)


# Review ba
def test_a_table_whose_x_rises_and_step_falls_is_read_in_file_order(tmp_path):
    # One row per run of a sweep (a runs table: each run's final _step), sorted by compute. Read before c55a0e5;
    # c55a0e5 took it for 'newest first', sorted it by _step, and refused it: "compute 'gpu_hours' decreases".
    f = tmp_path / "sweep.csv"
    f.write_text("name,_step,gpu_hours,reward\nsmall,4000,10,0.30\nmid,3000,20,0.42\nbig,2000,40,0.50\n"
                 "huge,1000,80,0.55\n")
    (c,) = read_csv(f, "gpu_hours", "reward")
    assert c.x.tolist() == [10.0, 20.0, 40.0, 80.0]


# Review cs: a step counted per epoch, on an x the trainer counts, is no resume.

def _epoch_local_rows(with_start: bool) -> list[str]:
    """One training's log whose `step` counts within each epoch (1..4, three epochs) while `tokens` rises throughout;
    ``with_start``: an evaluation before training first, at step 0."""
    lines = ["epoch,step,tokens,accuracy"] + (["0,0,0,0.200"] if with_start else [])
    tokens, acc = 0, 0.2
    for epoch in range(3):
        for step in range(1, 5):
            tokens, acc = tokens + 1000, acc + 0.02
            lines.append(f"{epoch},{step},{tokens},{acc:.3f}")
    return lines


def test_a_csv_whose_step_restarts_each_epoch_reads_on_a_rising_x(tmp_path):
    from scalerl.curves.csv_log import read_csv

    path = tmp_path / "metrics.csv"
    path.write_text("\n".join(_epoch_local_rows(with_start=False)) + "\n")
    (curve,) = read_csv(path, "tokens", "accuracy")
    assert len(curve.x) == 12


def test_a_parquet_whose_step_restarts_each_epoch_keeps_every_row(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from scalerl.curves.parquet_log import read_parquet

    path = tmp_path / "history.parquet"
    header, *rows = _epoch_local_rows(with_start=True)
    pd.DataFrame([[float(v) for v in r.split(",")] for r in rows], columns=header.split(",")).to_parquet(path)
    (curve,) = read_parquet(path, "tokens", "accuracy")
    assert len(curve.x) == 13, curve.notes
    assert not any("dropped" in n for n in curve.notes), curve.notes
