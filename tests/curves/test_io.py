import json
import os
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import read_curve, read_curves
from scalerl.errors import InputError
from scalerl.runlog import RunLogWriter

from .conftest import DEEPSEEK, QWEN, REAL_CSV


def test_real_csv_holds_two_runs():
    curves = read_curves(REAL_CSV, "cum_wall_hours", "val_score")
    assert [c.name for c in curves] == [QWEN, DEEPSEEK]
    q = read_curve(REAL_CSV, "cum_wall_hours", "val_score", run=QWEN)
    assert q.x[0] == 0.0 and q.zero_compute.sum() == 1
    assert len(q) == 44


def test_several_runs_need_a_run_name():
    with pytest.raises(InputError, match="--run"):
        read_curve(REAL_CSV, "cum_wall_hours", "val_score")
    with pytest.raises(InputError, match="runs in the file"):
        read_curve(REAL_CSV, "cum_wall_hours", "val_score", run="nope")


def test_unknown_column_lists_the_available_ones():
    with pytest.raises(InputError) as e:
        read_curves(REAL_CSV, "gpu_hours", "val_score")
    assert "cum_wall_hours" in str(e.value) and "available columns" in str(e.value)


def test_unknown_column_of_a_short_list_suggests_the_close_ones_too(tmp_path):
    """Up to 60 columns the message listed them all but gave no "did you mean", as a longer list does."""
    with pytest.raises(InputError, match=r"no x column 'cum_wall_hour'; did you mean 'cum_wall_hours'\? "
                                         r"available columns: .*'val_score'"):
        read_curves(REAL_CSV, "cum_wall_hour", "val_score")
    p = tmp_path / "run.jsonl"
    p.write_text('{"step": 0, "val/acc": 0.1}\n{"step": 10, "val/acc": 0.2}\n')
    with pytest.raises(InputError, match=r"no y column 'val/accc'; did you mean 'val/acc'\? available columns: "):
        read_curves(p, "step", "val/accc")
    with pytest.raises(InputError, match=r"no y column 'reward'; available columns: "):  # nothing close: no guess
        read_curves(p, "step", "reward")


def test_a_mean_reward_of_plus_or_minus_one_is_pointed_to_unbounded(tmp_path):
    """A +1 / -1 reward's mean (what many trainers log as the score) is no pass rate: the error says
    how to fit it anyway, not only how to rescale percentages."""
    p = tmp_path / "run.csv"
    p.write_text("step,val/reward\n0,-0.9\n10,-0.5\n20,0.1\n")
    with pytest.raises(InputError, match="not a pass rate .* --unbounded"):
        read_curve(p, "step", "val/reward")
    assert read_curve(p, "step", "val/reward", bounded=False).y[0] == -0.9


def test_csv_comments_nan_and_percentages(tmp_path):
    p = tmp_path / "run.csv"
    p.write_text("# exported by hand\nstep,compute,acc\n0,0,10\n1,1,20\n# a note\n2,2,nan\n3,3,\n4,4,inf\n5,5,40\n")
    with pytest.raises(InputError, match="--y-scale"):
        read_curve(p, "compute", "acc")
    c = read_curve(p, "compute", "acc", y_scale=0.01)
    assert np.allclose(c.y, [0.1, 0.2, 0.4])
    assert c.dropped == 2  # nan and inf: dropped and counted
    assert any("1 row(s) have no 'acc' value" in n for n in c.notes)  # the empty cell: said, not an evaluation
    # a spreadsheet's percent-formatted cells say what they are: read as fractions, no --y-scale
    p.write_text("step,compute,acc\n0,0,10.5%\n1,1,20%\n2,2,40 %\n")
    c = read_curve(p, "compute", "acc")
    assert np.allclose(c.y, [0.105, 0.2, 0.4])
    assert any("3 cell(s) written as percentages" in n for n in c.notes)


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_csv_other_delimiters(tmp_path, delimiter):
    p = tmp_path / "run.csv"
    p.write_text("".join(delimiter.join(r) + "\n" for r in [("step", "acc"), ("0", "0.1"), ("10", "0.3"), ("20", "0.4")]))
    c = read_curve(p, "step", "acc")
    assert np.allclose(c.x, [0, 10, 20]) and np.allclose(c.y, [0.1, 0.3, 0.4])


def test_csv_cells_written_as_numpy_reprs(tmp_path):
    # f"{value!r}" of a numpy 2 scalar writes np.float64(...): the number it shows is read.
    p = tmp_path / "run.csv"
    p.write_text("flops,acc\nnp.float64(1e+21),np.float64(0.25)\nnp.float64(2e+21),0.5\nnumpy.int64(3),x\n")
    with pytest.raises(InputError, match="line 4.*'x' is not a number"):
        read_curve(p, "flops", "acc")
    p.write_text("flops,acc\nnp.float64(1e+21),np.float64(0.25)\nnp.float64(2e+21),0.5\n")
    c = read_curve(p, "flops", "acc")
    assert np.allclose(c.x, [1e21, 2e21]) and np.allclose(c.y, [0.25, 0.5])


def test_csv_semicolon_export_with_decimal_commas(tmp_path):
    # What a spreadsheet in a comma-decimal locale writes.
    p = tmp_path / "export.csv"
    p.write_text("gpu_hours;acc;model\n0,5;0,12;qwen, 7b\n1,25;0,31;qwen, 7b\n2;0,4;qwen, 7b\n")
    c = read_curve(p, "gpu_hours", "acc")
    assert np.allclose(c.x, [0.5, 1.25, 2.0]) and np.allclose(c.y, [0.12, 0.31, 0.4])


def test_csv_log_history_export_cumulative_x_and_carried_compute(tmp_path):
    # An exported TRL log_history: training rows log num_tokens and the step time, evaluation
    # rows only eval_reward (empty cells elsewhere); a text column is not read.
    p = tmp_path / "log_history.csv"
    p.write_text(
        "step,num_tokens,step_time,eval_reward,note\n"
        "1,100,2.0,,warm\n2,200,2.0,,x\n2,,,0.25,eval\n3,300,3.0,,x\n4,400,1.0,,x\n4,,,0.5,eval\n"
    )
    c = read_curve(p, "num_tokens", "eval_reward")
    assert np.allclose(c.x, [200, 400]) and np.allclose(c.y, [0.25, 0.5]) and c.dropped == 0
    assert any("do not log 'num_tokens'" in n for n in c.notes)
    assert any("4 row(s) have no 'eval_reward'" in n for n in c.notes)
    c = read_curve(p, "cum:step_time", "eval_reward")
    assert np.allclose(c.x, [4.0, 8.0])
    with pytest.raises(InputError, match="cum:num_tokens"):  # the error lists what cum: could add up
        read_curve(p, "cum:nope", "eval_reward")


def test_csv_non_numeric_cell_names_the_line(tmp_path):
    p = tmp_path / "bad.csv"
    p.write_text("c,r\n0,0.1\n1,abc\n")
    with pytest.raises(InputError, match="line 3.*'abc'"):
        read_curve(p, "c", "r")


@pytest.mark.parametrize(
    "body, message",
    [
        ("", "empty"),
        ("c,r\n", "no rows"),
        ("c,r\n0,0.1\n-1,0.2\n", "negative"),
        ("c,r\n0,0.1\n2,0.2\n1,0.3\n", "decreases"),
        ("c,r\nnan,nan\n", "no rows with finite|holds no number in any row"),
        ("c,r\n0,0.1,5\n", "fields"),
    ],
)
def test_bad_csv_files_get_clear_errors(tmp_path, body, message):
    p = tmp_path / "f.csv"
    p.write_text(body)
    with pytest.raises(InputError, match=message):
        read_curve(p, "c", "r")


def test_missing_file():
    with pytest.raises(InputError, match="no such file"):
        read_curve("/nonexistent/log.csv", "c", "r")


def test_jsonl_run_log_with_header_and_train_rows(tmp_path):
    p = tmp_path / "runlog.jsonl"
    with RunLogWriter(p, {"run": "demo", "recipe": "scalerl", "config": {}}) as w:
        w.append({"type": "train", "step": 1, "loss": 0.3})
        for i, (c, r) in enumerate([(0.0, 0.1), (1.0, 0.3), (2.0, float("nan")), (3.0, 0.5)]):
            w.append({"type": "eval", "step": i, "gpu_hours": c, "val/pass_rate": r})
    c = read_curve(p, "gpu_hours", "val/pass_rate")
    assert c.name == "demo"
    assert np.allclose(c.x, [0, 1, 3]) and c.dropped == 1  # NaN was written as null, dropped, counted


def test_a_resumed_runs_resume_row_is_a_note_not_columns(tmp_path):
    """A resumed training writes ``{"type": "resume", "from_step", "utc"}`` where it goes on: no
    values (``from_step`` was listed as a compute column), said in the notes."""
    from scalerl.curves.io import log_columns

    p = tmp_path / "runlog.jsonl"
    with RunLogWriter(p, {"run": "demo", "recipe": "scalerl", "config": {}}) as w:
        for i in range(3):
            w.append({"type": "eval", "step": i, "flops": i * 1e9, "val/pass_rate": 0.1 * (i + 1)})
        w.append({"type": "resume", "from_step": 2, "utc": "2026-12-03T13:05:24Z"})
        for i in range(3, 5):
            w.append({"type": "eval", "step": i, "flops": i * 1e9, "val/pass_rate": 0.1 * (i + 1)})
    c = read_curve(p, "flops", "val/pass_rate")
    assert list(c.x) == [0, 1e9, 2e9, 3e9, 4e9]
    assert any("resumed 1 time(s), from the checkpoint(s) at step(s) 2" in n for n in c.notes)
    assert not {"from_step", "utc"} & set(log_columns(p))


def test_jsonl_torn_last_line_is_skipped_with_a_note(tmp_path):
    p = tmp_path / "runlog.jsonl"
    rows = [json.dumps({"c": i, "r": 0.1 * i}) for i in range(5)]
    p.write_text("\n".join(rows) + '\n{"c": 5, "r": 0.')
    c = read_curve(p, "c", "r")
    assert len(c) == 5
    assert any("torn" in n for n in c.notes)


def test_jsonl_malformed_middle_line_is_an_error(tmp_path):
    p = tmp_path / "runlog.jsonl"
    p.write_text('{"c": 0, "r": 0.1}\nnot json\n{"c": 1, "r": 0.2}\n')
    with pytest.raises(InputError, match="line 2"):
        read_curve(p, "c", "r")


def test_jsonl_non_numeric_value(tmp_path):
    p = tmp_path / "runlog.jsonl"
    p.write_text('{"c": 0, "r": 0.1}\n{"c": 1, "r": "high"}\n')
    with pytest.raises(InputError, match="not a number"):
        read_curve(p, "c", "r")


def test_jsonl_empty_and_percent_strings_are_read_as_a_csv_reads_those_cells(tmp_path):
    """{"acc": ""} and {"acc": "45%"} were "not a number", while a CSV reads such cells as a missing
    value and as the fraction 0.45."""
    p = tmp_path / "log.jsonl"
    p.write_text('{"step": 0, "acc": 0.1}\n{"step": 10, "acc": "45%"}\n{"step": 20, "acc": ""}\n'
                 '{"step": 30, "acc": " 50 %"}\n{"step": "", "acc": 0.6}\n')
    c = read_curve(p, "step", "acc")
    assert list(c.x) == [0, 10, 30] and np.allclose(c.y, [0.1, 0.45, 0.5]) and c.dropped == 2  # "" is missing
    assert "2 cell(s) written as percentages ('45.3%') read as fractions (0.453)" in c.notes
    with pytest.raises(InputError, match="written as percentages .* drop --y-scale 0.01"):
        read_curve(p, "step", "acc", y_scale=0.01)
    p.write_text('{"step": 0, "acc": "45 pct"}\n')
    with pytest.raises(InputError, match=r"acc value '45 pct' \(at step 0\) is not a number"):
        read_curve(p, "step", "acc")
    # What writers print for a missing value, as a CSV reads those cells (they were "not a number").
    p.write_text('{"step": 0, "acc": 0.1}\n{"step": 10, "acc": "null"}\n{"step": 20, "acc": "None"}\n'
                 '{"step": 30, "acc": "nan"}\n{"step": 40, "acc": 0.5}\n')
    c = read_curve(p, "step", "acc")
    assert list(c.x) == [0, 40] and c.dropped == 3


def test_jsonl_blank_run_names_are_the_files_one_run_when_all_blank_and_refused_when_some_are(tmp_path):
    """{"run": ""} made a run named ''."""
    p = tmp_path / "log.jsonl"
    p.write_text("".join(f'{{"run": {name}, "step": {s}, "acc": {0.1 + s / 100}}}\n'
                         for s, name in [(0, '""'), (10, "null"), (20, '" "')]))
    (c,) = read_curves(p, "step", "acc")
    p2 = tmp_path / "plain.jsonl"
    p2.write_text('{"step": 0, "acc": 0.1}\n')
    assert c.name == read_curves(p2, "step", "acc")[0].name != "" and len(c) == 3  # as a log without the key
    assert any("empty in every row" in n for n in c.notes)
    p.write_text('{"run": "a", "step": 0, "acc": 0.1}\n{"run": "", "step": 10, "acc": 0.2}\n')
    with pytest.raises(InputError, match=r"1 row\(s\) name no run \('run' empty or null\) while 1 do"):
        read_curves(p, "step", "acc")


def test_wandb_chart_export(tmp_path):
    p = tmp_path / "wandb_export.csv"
    p.write_text(
        '"Step","run-a - val/acc","run-a - val/acc__MIN","run-a - val/acc__MAX","run-b - val/acc","run-b - val/acc__MIN","run-b - val/acc__MAX"\n'
        "0,0.1,0.1,0.1,0.2,0.2,0.2\n"
        "10,0.3,0.3,0.3,,,\n"
        "20,0.4,0.4,0.4,0.5,0.5,0.5\n"
    )
    curves = read_curves(p, "Step", "val/acc")
    assert [c.name for c in curves] == ["run-a", "run-b"]
    assert np.allclose(curves[0].y, [0.1, 0.3, 0.4])
    assert np.allclose(curves[1].x, [0, 20])  # empty cells: the run did not log that step


def test_wandb_chart_export_offers_its_metric_not_the_raw_per_run_columns(tmp_path):
    """The listing offered 'grpo - val/acc', its __MIN and __MAX as metrics, none of which --y takes."""
    from scalerl.curves.io import log_columns

    p = tmp_path / "wandb_export.csv"
    p.write_text('"Step","grpo - val/acc","grpo - val/acc__MIN","grpo - val/acc__MAX","ppo - baseline - val/acc"\n'
                 "0,0.1,0.1,0.1,0.2\n10,0.3,0.3,0.3,0.4\n")
    assert log_columns(p) == ["Step", "val/acc"]
    with pytest.raises(InputError, match=r"no y column 'val/accc'.*W&B chart export of 2 run\(s\): 'grpo', 'ppo - baseline'"):
        read_curves(p, "Step", "val/accc")
    assert [c.name for c in read_curves(p, "Step", "val/acc")] == ["grpo", "ppo - baseline"]


def test_a_non_numeric_cell_of_one_run_of_a_wandb_export_leaves_that_run_out_not_the_file(tmp_path):
    """One run's 'oops' stopped every run of the export; as in a plain CSV it is an error naming its
    line and column -- that run's, said when it is asked for, the other runs read."""
    p = tmp_path / "wandb_export.csv"
    p.write_text("Step,good - val/acc,bad - val/acc\n0,0.2,0.1\n100,0.3,oops\n200,0.4,0.3\n")
    (c,) = read_curves(p, "Step", "val/acc")
    assert c.name == "good" and np.allclose(c.y, [0.2, 0.3, 0.4])
    assert any("1 run(s) left out" in n and "line 3, column 'bad - val/acc': 'oops' is not a number" in n
               for n in c.notes)
    with pytest.raises(InputError, match="line 3, column 'bad - val/acc': 'oops' is not a number -- fix the cell"):
        read_curve(p, "Step", "val/acc", run="bad")


def test_tensorboard_event_files(tmp_path):
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    for run, scale in (("seed0", 1.0), ("seed1", 0.9)):
        w = SummaryWriter(str(tmp_path / run))
        for step in range(6):
            w.add_scalar("val/pass_rate", scale * (0.1 + 0.1 * step), step)
            w.add_scalar("compute/gpu_hours", 0.5 * step, step)
        w.close()
    curves = read_curves(tmp_path, "compute/gpu_hours", "val/pass_rate")
    assert sorted(c.name for c in curves) == ["seed0", "seed1"]
    c0 = next(c for c in curves if c.name == "seed0")
    assert np.allclose(c0.x, 0.5 * np.arange(6)) and np.allclose(c0.y, 0.1 + 0.1 * np.arange(6))
    by_step = read_curve(tmp_path / "seed1", "step", "val/pass_rate")
    assert np.allclose(by_step.x, np.arange(6))
    with pytest.raises(InputError, match="available columns"):
        read_curves(tmp_path, "step", "val/nope")
    # A run that has not logged the metric yet (it crashed, or evaluates later) is left out and said.
    w = SummaryWriter(str(tmp_path / "seed2"))
    w.add_scalar("train/loss", 1.0, 0)
    w.close()
    curves = read_curves(tmp_path, "step", "val/pass_rate")
    assert sorted(c.name for c in curves) == ["seed0", "seed1"]
    assert all("left out: run 'seed2': no y tag 'val/pass_rate'" in c.notes[-1] for c in curves)
    assert curves[0].left_out == (("seed2", "no y tag 'val/pass_rate'"),)


def test_a_run_without_the_metric_is_left_out_and_said(tmp_path):
    p = tmp_path / "runs.jsonl"
    p.write_text("".join(f'{{"run": "a", "step": {s}, "acc": {0.1 * s}}}\n' for s in range(1, 5))
                 + "".join(f'{{"run": "b", "step": {s}, "loss": 1.0}}\n' for s in range(1, 5)))
    curve, = read_curves(p, "step", "acc")
    assert curve.name == "a" and "1 run(s) left out: run 'b': no 'acc' value" in curve.notes


def test_tensorboard_scalars_written_as_tensors(tmp_path):
    """TF2's tf.summary.scalar (and the JAX / Flax writers on it) store a scalar as a tensor with the
    scalars plugin's metadata, not as a simple value: written here with TensorBoard's own summary
    builder and event writer, as TF2 writes them."""
    import time

    pytest.importorskip("tensorboard")
    from tensorboard.compat.proto import event_pb2
    from tensorboard.plugins.scalar.summary_v2 import scalar_pb
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    w = EventFileWriter(str(tmp_path / "jax-run"))
    for step in range(8):
        for tag, value in (("eval/accuracy", 0.2 + 0.05 * step), ("compute/tokens", 1e6 * step)):
            w.add_event(event_pb2.Event(wall_time=time.time(), step=step, summary=scalar_pb(tag, value)))
    w.close()
    c = read_curve(tmp_path, "compute/tokens", "eval/accuracy")
    assert c.name == "jax-run" and np.allclose(c.x, 1e6 * np.arange(8))
    assert np.allclose(c.y, 0.2 + 0.05 * np.arange(8), atol=1e-6)  # stored as float32
    with pytest.raises(InputError, match="available columns: 'compute/tokens', 'eval/accuracy'"):
        read_curve(tmp_path, "step", "eval/nope")


def test_a_scalerl_run_directory_reads_its_run_log(tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    (run / "runlog.jsonl").write_text("".join(f'{{"type": "eval", "step": {s}, "gpu_hours": {0.5 * s}, '
                                              f'"val/pass_rate": {0.1 + 0.05 * s}}}\n' for s in range(6)))
    (run / "tensorboard").mkdir()  # other things in the directory do not matter
    c = read_curve(run, "gpu_hours", "val/pass_rate")
    assert np.allclose(c.x, 0.5 * np.arange(6)) and c.source.endswith("runlog.jsonl")
    assert np.allclose(read_curve(run / "runlog.jsonl", "gpu_hours", "val/pass_rate").y, c.y)


def test_tensorboard_run_resumed_from_a_checkpoint(tmp_path):
    """A resumed run appends a second event file to its directory and logs the steps after the
    checkpoint again: each step keeps its later value, and the note says how many of the abandoned attempt's were
    dropped (read as attempts, one per event file: review cr)."""
    import time

    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    for first, last, offset in ((0, 8, 0.0), (5, 12, 0.01)):  # killed after step 8, resumed from step 5
        w = SummaryWriter(str(tmp_path / "run"))
        for step in range(first, last + 1):
            w.add_scalar("val/pass_rate", 0.1 + 0.05 * step + offset, step)
            w.add_scalar("compute/gpu_hours", 0.5 * step, step)
        w.close()
        time.sleep(1.1)  # event files are named by the second they are opened
    assert len(list((tmp_path / "run").glob("*tfevents*"))) == 2
    c = read_curve(tmp_path, "step", "val/pass_rate")
    assert np.allclose(c.x, np.arange(13))
    assert np.allclose(c.y, [0.1 + 0.05 * s + (0.01 if s >= 5 else 0.0) for s in range(13)])
    assert any("2 event files are attempts of one training" in n and "(4 of 'val/pass_rate')" in n for n in c.notes)
    assert np.allclose(read_curve(tmp_path, "compute/gpu_hours", "val/pass_rate").x, 0.5 * np.arange(13))


def test_tensorboard_add_scalars_metrics_are_listed_and_named(tmp_path):
    """add_scalars('eval', {'gsm8k': ..}) writes tag 'eval' into directories of its own (eval_gsm8k, ..):
    a missing --y listed the first directory's tags only ('train/loss'), and --y eval/gsm8k (as
    TensorBoard's legend shows it) said nothing of how to read it."""
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    w = SummaryWriter(str(tmp_path / "run1"))
    for step in range(0, 100, 10):
        w.add_scalar("train/loss", 1.0 / (step + 1), step)
        w.add_scalars("eval", {"gsm8k": 0.7 * step / (step + 50), "math": 0.5 * step / (step + 80)}, step)
    w.close()
    with pytest.raises(InputError, match=r"available columns: 'eval', 'train/loss' -- add_scalars wrote 'eval' of "
                                         r"'gsm8k' into a directory of its own: --y eval --run eval_gsm8k"):
        read_curve(tmp_path, "step", "eval/gsm8k")
    with pytest.raises(InputError, match=r"no y column 'pass_rate'; available columns: 'eval', 'train/loss'$"):
        read_curve(tmp_path, "step", "pass_rate")
    assert read_curve(tmp_path, "step", "eval", run="eval_gsm8k").y[-1] == pytest.approx(0.7 * 90 / 140)


def test_tensorboard_running_total_of_a_per_step_timer(tmp_path):
    """--x cum:TAG: the seconds of every step up to each evaluation (verl's timing_s/step, NeMo-RL's
    timing/train/total_step_time), a glob summing several timers; a step logged again counts once."""
    import time

    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    for first, last, seconds in ((0, 14, 10.0), (11, 30, 20.0)):  # killed after step 14, resumed from step 10
        w = SummaryWriter(str(tmp_path / "run"))
        for step in range(first, last + 1):
            if step:
                w.add_scalar("timing_s/gen", seconds / 2, step)
                w.add_scalar("timing_s/update", seconds / 2, step)
                w.add_scalar("timing_s/step", seconds, step)
            if step % 10 == 0:
                w.add_scalar("val/acc", 0.3 + 0.01 * step, step)
        w.close()
        time.sleep(1.1)  # event files are named by the second they are opened
    want = [0.0, 100.0, 100.0 + 10 * 20.0, 100.0 + 20 * 20.0]  # steps 11-14 of the first attempt replaced
    assert np.allclose(read_curve(tmp_path, "cum:timing_s/step", "val/acc").x, want)
    assert np.allclose(read_curve(tmp_path, "cum:timing_s/[gu]*", "val/acc").x, want)
    with pytest.raises(InputError, match="'cum:timing_s/step'"):
        read_curve(tmp_path, "cum:timing/step", "val/acc")


def test_run_column_named_by_the_user(tmp_path, capsys):
    """A long-format CSV whose runs are told apart by another column: --run-column names it."""
    from scalerl.cli import main

    p = tmp_path / "sweep.csv"
    p.write_text("experiment,step,acc\n" + "".join(f"{e},{s},{0.1 + 0.04 * s * (1 + i):.3f}\n"
                                                   for i, e in enumerate(["lr1e-6", "lr3e-6"]) for s in range(6)))
    with pytest.raises(InputError, match="--run-column"):  # one run of two interleaved: the hint says what to do
        read_curve(p, "step", "acc")
    curves = read_curves(p, "step", "acc", run_column="experiment")
    assert [c.name for c in curves] == ["lr1e-6", "lr3e-6"] and all(len(c) == 6 for c in curves)
    with pytest.raises(InputError, match="no run column 'exp'.*'experiment'"):
        read_curves(p, "step", "acc", run_column="exp")
    jl = tmp_path / "log.jsonl"
    jl.write_text("".join(f'{{"name": "{e}", "step": {s}, "acc": 0.{s + 1}}}\n' for e in "ab" for s in range(4)))
    assert [c.name for c in read_curves(jl, "step", "acc", run_column="name")] == ["a", "b"]
    assert main(["fit", str(p), "--x", "step", "--y", "acc", "--run-column", "experiment", "--run", "lr3e-6",
                 "--bootstrap", "0", "--json"]) == 0
    assert '"run": "lr3e-6"' in capsys.readouterr().out
    with pytest.raises(InputError, match="applies to csv, jsonl"):
        read_curves(p, "step", "acc", run_column="experiment", fmt="verl")


def test_a_run_that_cannot_be_read_leaves_the_others_readable(tmp_path):
    """One run of a multi-run log whose compute goes back (or that never logged it) is left out with
    its reason; the others read, --run picks one of them, and backtest --all-runs says what was left
    out. Only a log where no run reads is an error."""
    import subprocess
    import sys

    lines = ["run,step,acc"]
    lines += [f"a,{s},{0.3 + 0.01 * s:.3f}" for s in range(1, 21)]
    lines += [f"b,{21 - s},{0.3 + 0.01 * s:.3f}" for s in range(1, 21)]
    f = tmp_path / "two.csv"
    f.write_text("\n".join(lines) + "\n")
    (a,) = read_curves(f, "step", "acc")
    assert a.name == "a" and len(a) == 20
    assert any("1 run(s) left out: run 'b'" in n and "decreases" in n for n in a.notes)
    assert len(read_curve(f, "step", "acc", run="a")) == 20
    out = subprocess.run([sys.executable, "-m", "scalerl.cli", "backtest", str(f), "--x", "step", "--y", "acc",
                          "--all-runs"], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0 and "skipped b: run 'b'" in out.stdout and "1 skipped" in out.stdout
    assert a.left_out == (("b", a.left_out[0][1]),) and "decreases" in a.left_out[0][1]
    f.write_text("\n".join(lines[:1] + lines[21:]) + "\n")
    with pytest.raises(InputError, match="compute 'step' decreases"):
        read_curves(f, "step", "acc")


def _tb_run(directory, t0=1_700_000_000.0, first_eval=50, scale=1.0):
    """A TensorBoard run: train/loss every 10 steps at 10 s a step from ``t0``, val/acc every 50 steps from ``first_eval``."""
    from tensorboard.compat.proto import event_pb2, summary_pb2
    from tensorboard.summary.writer.event_file_writer import EventFileWriter

    def scalar(tag, value):
        return summary_pb2.Summary(value=[summary_pb2.Summary.Value(tag=tag, simple_value=value)])

    w = EventFileWriter(str(directory))
    for step in range(0, 401, 10):
        w.add_event(event_pb2.Event(wall_time=t0 + 10 * step, step=step, summary=scalar("train/loss", 1.0)))
        if step >= first_eval and step % 50 == 0:
            w.add_event(event_pb2.Event(wall_time=t0 + 10 * step + 1, step=step,
                                        summary=scalar("val/acc", scale * (0.2 + step / 1000))))
    w.close()


def test_tensorboard_wall_time_starts_at_the_runs_first_event_not_its_first_evaluation(tmp_path):
    """The first evaluation at step 50 (500 s in) was put at compute 0 (the R0 point), shifting the axis."""
    pytest.importorskip("tensorboard")
    _tb_run(tmp_path / "late")
    c = read_curve(tmp_path, "wall_time", "val/acc")
    assert c.x[0] == pytest.approx(501 / 3600) and c.x[-1] == pytest.approx(4001 / 3600)


def test_tensorboard_runs_whose_directories_share_a_leaf_name_are_named_by_their_path(tmp_path):
    """a/run1 and b/run1 were both 'run1': --run could choose neither, and compare pooled them as seeds."""
    pytest.importorskip("tensorboard")
    _tb_run(tmp_path / "a" / "run1")
    _tb_run(tmp_path / "b" / "run1")
    _tb_run(tmp_path / "c" / "late")
    assert sorted(c.name for c in read_curves(tmp_path, "step", "val/acc")) == ["a/run1", "b/run1", "late"]
    assert read_curve(tmp_path, "step", "val/acc", run="b/run1").source.endswith("run1")


def test_an_empty_x_cell_in_a_table_of_evaluations_is_dropped_not_given_the_previous_rows_x(tmp_path):
    """The point measured at 80 was fitted at 60 (the row before's x), moving B from 1.5 to 1.4."""
    p = tmp_path / "emptyx.csv"
    p.write_text("step,score\n0,0.2\n20,0.25\n40,0.3\n,0.35\n80,0.4\n100,0.45\n")
    c = read_curve(p, "step", "score")
    assert np.allclose(c.x, [0, 20, 40, 80, 100]) and np.allclose(c.y, [0.2, 0.25, 0.3, 0.4, 0.45])
    assert c.dropped == 1 and not any("do not log" in n for n in c.notes)


def test_percent_cells_with_a_y_scale_are_refused_not_scaled_twice(tmp_path):
    """'64.4%' is read as 0.644; --y-scale 0.01 on top made it 0.0064 (the note said percent, the numbers were wrong)."""
    p = tmp_path / "pct.csv"
    p.write_text("step,score\n0,20.0%\n100,33.1%\n200,45.0%\n400,56.9%\n")
    assert np.allclose(read_curve(p, "step", "score").y, [0.2, 0.331, 0.45, 0.569])
    with pytest.raises(InputError, match=r"column 'score' is written as percentages .* drop --y-scale 0.01"):
        read_curve(p, "step", "score", y_scale=0.01)
    wandb = tmp_path / "wandb.csv"
    wandb.write_text("Step,grpo - val/acc\n0,20%\n100,33%\n")
    with pytest.raises(InputError, match="drop --y-scale 0.01"):
        read_curve(wandb, "Step", "val/acc", y_scale=0.01)


def test_a_column_named_twice_in_the_header_is_an_error_naming_both(tmp_path):
    """The last 'score' (a constant 0.9) was read, silently."""
    p = tmp_path / "dup.csv"
    p.write_text("step,score,score,note,note\n0,0.2,0.9,a,b\n10,0.3,0.9,a,b\n20,0.4,0.9,a,b\n")
    with pytest.raises(InputError, match=r"names column 'score' 2 times \(columns 2, 3\)"):
        read_curve(p, "step", "score")
    q = tmp_path / "dup_unread.csv"  # a repeated column that is not read does not matter
    q.write_text("step,score,note,note\n0,0.2,a,b\n10,0.3,a,b\n20,0.4,a,b\n")
    assert np.allclose(read_curve(q, "step", "score").y, [0.2, 0.3, 0.4])


def test_one_run_in_percent_does_not_block_the_other_runs_of_a_tensorboard_dir_or_wandb_export(tmp_path):
    """tb/pct (values 20..60) stopped even `--run good`; CSV / JSONL logs already left such a run out with a note."""
    pytest.importorskip("tensorboard")
    _tb_run(tmp_path / "tb" / "good")
    _tb_run(tmp_path / "tb" / "pct", scale=100.0)
    c = read_curve(tmp_path / "tb", "step", "val/acc", run="good")
    assert len(c) == 8 and any("1 run(s) left out: run 'pct'" in n for n in c.notes)
    wandb = tmp_path / "wandb.csv"
    wandb.write_text("Step,good - val/acc,other - val/acc\n0,0.2,20\n100,0.3,30\n200,0.4,40\n")
    c = read_curve(wandb, "Step", "val/acc", run="good")
    assert np.allclose(c.y, [0.2, 0.3, 0.4]) and any("run 'other'" in n and "--y-scale 0.01" in n for n in c.notes)
    with pytest.raises(InputError, match="outside"):  # when no run can be read, that is the error
        read_curve(tmp_path / "tb" / "pct", "step", "val/acc")


def test_a_directory_of_no_known_log_names_what_it_holds(tmp_path):
    """It said "no TensorBoard event files (*tfevents*) found" of a directory holding good.csv."""
    (tmp_path / "logs").mkdir()
    (tmp_path / "logs" / "good.csv").write_text("step,score\n0,0.2\n10,0.3\n")
    with pytest.raises(InputError, match=r"a directory holding no log of a format read as a directory .*; "
                                         r"it holds good.csv: name the log among them"):
        read_curve(tmp_path / "logs", "step", "score")
    (tmp_path / "empty").mkdir()
    with pytest.raises(InputError, match="it holds no files"):
        read_curve(tmp_path / "empty", "step", "score")
    # A folder of run directories (scalerl's, TRL's output_dir per run): which commands take each of them.
    for run in ("a", "b"):
        (tmp_path / "sweep" / run).mkdir(parents=True)
        (tmp_path / "sweep" / run / "runlog.jsonl").write_text('{"type": "eval", "step": 0, "score": 0.2}\n')
    with pytest.raises(InputError, match=r"-- or, a directory of 2 runs \(a, b\): compare and calibrate take each "
                                         r"of them, as .*sweep/\*/ lists them; fit and backtest one$"):
        read_curve(tmp_path / "sweep", "step", "score")
    # A directory named like an event file is none: it was read as one (an IsADirectoryError's traceback).
    (tmp_path / "tb" / "run" / "events.out.tfevents.1").mkdir(parents=True)
    with pytest.raises(InputError, match="it holds no files"):
        read_curve(tmp_path / "tb", "step", "score")


def test_a_message_appended_to_a_csv_is_skipped_with_a_note_a_short_row_elsewhere_is_an_error(tmp_path):
    p = tmp_path / "junk.csv"
    p.write_text("step,score\n0,0.2\n10,0.3\n20,0.4\nTraining finished!\n")
    c = read_curve(p, "step", "score")
    assert len(c) == 3 and any("line 5: 'Training finished!'" in n and "skipped" in n for n in c.notes)
    p.write_text("step,score\n0,0.2\n10\n20,0.4\n")
    with pytest.raises(InputError, match="line 3 has 1 fields, the header has 2 -- fix or delete that line"):
        read_curve(p, "step", "score")


def test_numbers_written_as_strings_in_json_lines_and_parquet_are_read_as_numbers(tmp_path):
    """{"acc": "0.2"} was "value '0.2' ... is not a number", though a CSV cell "0.2" reads."""
    p = tmp_path / "strnum.jsonl"
    p.write_text("".join(json.dumps({"step": s, "acc": f"{0.2 + s / 1000}"}) + "\n" for s in (0, 10, 20)))
    c = read_curve(p, "step", "acc")
    assert np.allclose(c.y, [0.2, 0.21, 0.22]) and any("3 value(s) written as strings" in n for n in c.notes)
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    pq.write_table(pa.table({"step": [0, 10, 20], "acc": ["0.2", "0.21", "0.22"]}), tmp_path / "s.parquet")
    assert np.allclose(read_curve(tmp_path / "s.parquet", "step", "acc").y, [0.2, 0.21, 0.22])
    p.write_text(json.dumps({"step": 0, "acc": "high"}) + "\n")
    with pytest.raises(InputError, match=r"acc value 'high' \(at step 0\) is not a number -- fix the value"):
        read_curve(p, "step", "acc")


def test_nested_metrics_of_json_lines_and_parquet_structs_are_read_as_dotted_names(tmp_path):
    """{"val": {"acc": 0.2}} listed 'val' as a metric and had no 'val/acc'; Trackio and W&B already flatten to val.acc."""
    p = tmp_path / "nested.jsonl"
    p.write_text("".join(json.dumps({"step": s, "val": {"acc": 0.2 + s / 1000}, "timing": {"step_s": 10}}) + "\n"
                         for s in (0, 10, 20)))
    assert np.allclose(read_curve(p, "step", "val.acc").y, [0.2, 0.21, 0.22])
    assert np.allclose(read_curve(p, "cum:timing.step_s", "val.acc").x, [10, 20, 30])
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    table = pa.table({"step": [0, 10, 20], "val": [{"acc": 0.2}, {"acc": 0.21}, None]})
    pq.write_table(table, tmp_path / "struct.parquet")
    c = read_curve(tmp_path / "struct.parquet", "step", "val.acc")
    assert np.allclose(c.y, [0.2, 0.21]) and any("1 row(s) have no 'val.acc'" in n for n in c.notes)


def test_an_evaluation_row_written_twice_is_read_once_and_said(tmp_path):
    """Each row of a log written twice (a logger that flushed twice) was fitted twice: 2x the points,
    intervals too narrow, and no word of it. Equal rows of a cum: x are steps of their own."""
    steps = range(0, 100, 10)
    csv_log, jsonl_log = tmp_path / "twice.csv", tmp_path / "twice" / "metrics.jsonl"
    csv_log.write_text("step,acc\n" + "".join(f"{s},{0.1 + s / 1000}\n" * 2 for s in steps))
    jsonl_log.parent.mkdir()
    jsonl_log.write_text("".join((json.dumps({"step": s, "acc": 0.1 + s / 1000}) + "\n") * 2 for s in steps))
    for path in (csv_log, jsonl_log):
        c = read_curve(path, "step", "acc")
        assert list(c.x) == list(steps)
        assert "10 evaluation row(s) repeating the row before them verbatim (written twice): read once" in c.notes
    fixed = tmp_path / "fixed_batch.csv"
    fixed.write_text("tokens,acc\n" + "".join(f"512,{0.1 + s / 1000}\n" for s in steps) + "512,0.19\n")
    assert list(read_curve(fixed, "cum:tokens", "acc").x) == [512.0 * (i + 1) for i in range(11)]


def test_a_csv_log_a_resumed_training_appended_to_is_split_by_its_step(tmp_path):
    """A training resumed from its step-30 checkpoint, appended to the same CSV: the step goes back, and
    the error said "several runs mixed". As for a JSON-lines log, the resumed attempt's rows stand."""
    def log(step: bool) -> str:
        attempts = ((range(0, 60, 5), 0.0), (range(30, 100, 5), 0.01))
        return ("step," * step + "tokens,acc\n"
                + "".join(f"{f'{s},' * step}{1000 * s},{0.2 + s / 200 + shift:.4f}\n" for steps, shift in attempts
                          for s in steps))

    p = tmp_path / "resumed.csv"
    p.write_text(log(step=True))
    for x, unit in (("step", 1), ("tokens", 1000)):
        c = read_curve(p, x, "acc")
        assert list(c.x) == [unit * s for s in range(0, 100, 5)]
        assert np.allclose(c.y[6:], [0.2 + s / 200 + 0.01 for s in range(30, 100, 5)])  # the later attempt's
        assert any("resumes from a checkpoint 1 time(s) (step goes back): 6 row(s)" in n for n in c.notes)
    # Without a step column nothing tells a resume: the error names it among the causes.
    p.write_text(log(step=False))
    with pytest.raises(InputError, match="decreases.*or was a training resumed from a checkpoint appended"):
        read_curve(p, "tokens", "acc")


def test_blank_run_cells_are_the_files_one_run_when_all_blank_and_refused_naming_the_lines_when_some_are(tmp_path):
    """Blank cells of the run column were a run named ''."""
    p = tmp_path / "blank.csv"
    p.write_text("run,step,acc\n" + "".join(f",{s},{0.1 + s / 100}\n" for s in range(0, 40, 10)))
    (c,) = read_curves(p, "step", "acc")
    assert c.name == "blank" and len(c) == 4 and any("'run' column is empty on every row" in n for n in c.notes)
    p.write_text("run,step,acc\na,0,0.1\na,10,0.2\n ,20,0.3\na,30,0.4\n,40,0.5\n")
    with pytest.raises(InputError, match=r"the 'run' cell is empty on line\(s\) 4, 6, while the other rows name their "
                                         r"run -- fill in the run of those rows"):
        read_curves(p, "step", "acc")


def test_a_csv_in_a_windows_code_page_is_read_with_its_names_and_a_utf8_one_with_a_bad_byte_said(tmp_path):
    # Read as UTF-8 with replacement, the header held 'pr\ufffdcision': no --y could name it.
    rows = "".join(f"modèle–base,{s},{0.2 + s / 100:.3f}\n" for s in range(0, 60, 10))
    legacy = tmp_path / "excel.csv"
    legacy.write_bytes(("run,step,précision\n" + rows).encode("cp1252"))
    curve = read_curve(legacy, x="step", y="précision")
    assert curve.name == "modèle–base" and len(curve.x) == 6
    assert any("not UTF-8 (line 1): read as Windows-1252" in n for n in curve.notes)
    # A UTF-8 file with one damaged byte stays UTF-8 (its other names intact), said.
    damaged = tmp_path / "damaged.csv"
    damaged.write_bytes(("run,step,précision\n" + rows).encode() + b"mod\xe8le,70,0.9\n")
    curves = read_curves(damaged, x="step", y="précision")
    assert {c.name for c in curves} == {"modèle–base", "mod\ufffdle"}
    assert any("not valid UTF-8 from line 8 on" in n for n in curves[0].notes)
    # UTF-8 (with or without a byte-order mark): no note.
    clean = tmp_path / "clean.csv"
    clean.write_bytes(b"\xef\xbb\xbf" + ("run,step,précision\n" + rows).encode())
    assert not any("UTF-8" in n for n in read_curve(clean, x="step", y="précision").notes)


def test_which_bad_csv_cell_an_error_names_does_not_depend_on_the_hash_seed(tmp_path):
    """Two columns read, neither a number: the error named one or the other by the process's hash seed
    (the columns read were a set) -- the x column first, always, now."""
    import subprocess
    import sys

    log = tmp_path / "runs.csv"
    log.write_text("step,algo,model\n1,grpo,qwen\n2,grpo,qwen\n")
    code = ("from scalerl.curves import read_curves\n"
            f"try: read_curves({str(log)!r}, 'algo', 'model')\n"
            "except Exception as e: print(e)")
    said = {subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                           env={**os.environ, "PYTHONHASHSEED": str(seed)}).stdout for seed in range(1, 7)}
    assert len(said) == 1 and "column 'algo'" in said.pop()


def test_tensorboard_resume_in_same_directory_drops_abandoned_tail(tmp_path):
    SummaryWriter = pytest.importorskip("torch.utils.tensorboard").SummaryWriter
    run = tmp_path / "tensorboard_log" / "proj" / "exp"  # verl's $TENSORBOARD_DIR: one directory per experiment
    w = SummaryWriter(str(run))  # the first launch: steps 0..60, killed after step 60 (last checkpoint: 40)
    for step in range(0, 61):
        w.add_scalar("timing_s/step", 10.0, step)
        if step % 10 == 0:
            w.add_scalar("val/acc", 0.2 + step / 200, step)
    w.close()
    w = SummaryWriter(str(run))  # the resumed launch: a new event file in the same directory, steps 41..55 so far
    for step in range(41, 56):
        w.add_scalar("timing_s/step", 10.0, step)
        if step % 10 == 0:
            w.add_scalar("val/acc", 0.1 + step / 400, step)
    w.close()
    (curve,) = read_curves(run, "step", "val/acc")  # (review cr)
    # The run that went on: the first launch's steps up to 40, then the resumed launch's 50. The first launch's
    # step 60 (logged after the checkpoint the run resumed from) is not part of it.
    assert list(curve.x) == [0, 10, 20, 30, 40, 50]
    assert np.allclose(curve.y, [0.2, 0.25, 0.3, 0.35, 0.4, 0.225])
    assert any("(2 of 'val/acc')" in n for n in curve.notes), curve.notes  # (the first launch's 50 and 60)


@pytest.mark.parametrize("fmt", ["csv", "jsonl", "verl", "dict-lines", "skyrl"])
def test_file_format_given_a_directory_is_a_one_line_error(tmp_path, fmt):
    out = tmp_path / "outputs" / "my-run"
    out.mkdir(parents=True)
    (out / "metrics.jsonl").write_text("".join(json.dumps({"step": s, "val/acc": 0.2 + s / 100}) + "\n"
                                               for s in range(0, 50, 10)))
    try:
        read_curves(out, "step", "val/acc", fmt=fmt)
    except InputError as exc:
        assert str(out) in str(exc)
    except OSError as exc:  # (review cr: IsADirectoryError)
        raise AssertionError(f"a traceback: {exc!r}") from None
    else:
        raise AssertionError("a directory read as one file")


# Review cs: a trainer's and a later evaluator's event files in one directory are no resume.

def _trainer_then_evaluator(d: Path) -> None:
    """A training's SummaryWriter (steps 1..20), then, after it ended, an evaluation job's writer in the same
    directory scoring the checkpoints at steps 5, 10, 15, 20: two writers, one after the other, no resume."""
    from torch.utils.tensorboard import SummaryWriter

    train = SummaryWriter(str(d), filename_suffix=".train")
    for s in range(1, 21):
        train.add_scalar("train/tokens", 1000.0 * s, s, walltime=1000 + s)
        train.add_scalar("train/reward", 0.1 + 0.02 * s, s, walltime=1000 + s)
    train.close()
    evaluator = SummaryWriter(str(d), filename_suffix=".eval")
    for i, s in enumerate((5, 10, 15, 20)):
        evaluator.add_scalar("eval/acc", 0.2 + 0.1 * i, s, walltime=2000 + i)
    evaluator.close()


def test_a_trainer_and_a_later_evaluator_writing_one_directory_are_not_a_resume(tmp_path):
    pytest.importorskip("tensorboard")
    from scalerl.curves.tensorboard_log import read_tensorboard

    d = tmp_path / "tb"
    d.mkdir()
    _trainer_then_evaluator(d)
    (reward,) = read_tensorboard(d, "step", "train/reward")
    assert list(reward.x) == list(range(1, 21)), reward.notes
    (acc,) = read_tensorboard(d, "train/tokens", "eval/acc")
    assert list(acc.x) == [5000.0, 10000.0, 15000.0, 20000.0], acc.notes
