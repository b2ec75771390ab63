"""ROLL's console (its ``stdout`` tracker, or the driver's log file): roll/utils/tracking.py's
``StdoutTracker.log`` writes ``metrics_tag: {"step": N, "metrics": {...}}`` through ROLL's logger;
the RLVR pipeline's ``val()`` prints ``{"val_correct/all/mean": x}`` alone before it
(roll/pipeline/rlvr/rlvr_pipeline.py), with no step."""

import json
import math

from scalerl.curves.io import detect_format, log_columns, read_curve

PREFIX = "[2026-11-20 10:00:{s:02d}] [{f} ({l})] [INFO] [DRIVER 0 / 1][PID 4242] "


def _accuracy(step: int) -> float:
    return 0.2 + 0.5 / (1 + math.exp(-(step - 80) / 30))


def write_console(path, steps=range(0, 100), eval_steps=10, append=False) -> None:
    lines = []
    for step in steps:
        s = step % 60
        lines.append(PREFIX.format(s=s, f="rlvr_pipeline.py", l=487) + f"pipeline step {step} start...")
        metrics = {"time/step_total": 30.0, "actor_train/pg_loss": 0.1, "critic/score/mean": 0.3 + step / 400}
        if step % eval_steps == 0:
            acc = _accuracy(step)
            lines.append(PREFIX.format(s=s, f="rlvr_pipeline.py", l=878) + json.dumps({"val_correct/all/mean": acc}))
            lines.append(PREFIX.format(s=s, f="rlvr_pipeline.py", l=885) + f"val_correct/math:  {acc}")
            metrics |= {"val_correct/all/mean": acc, "val_correct/math/mean": acc, "time/val_step": 50.0}
        lines.append(PREFIX.format(s=s, f="tracking.py", l=161) + "metrics_tag: "
                     + json.dumps({"step": step, "metrics": metrics}))
    with open(path, "a" if append else "w") as f:
        f.write("\n".join(lines) + "\n")


def test_each_evaluation_at_its_step_once_under_the_trackers_names(tmp_path):
    log = tmp_path / "log_rank_DRIVER_0_1.log"
    write_console(log)
    assert detect_format(log) == "roll"
    curve = read_curve(log, "step", "val_correct/all/mean")
    # Read as printed dicts, the pipeline's own print of the value (no step) was a point too: at the
    # step before (the latest row's), the evaluation before training lost, the tracker's under
    # 'metrics.val_correct/all/mean'.
    assert list(curve.x) == list(range(0, 100, 10))
    assert list(curve.y) == [_accuracy(s) for s in range(0, 100, 10)]
    columns = log_columns(log)
    assert {"step", "val_correct/all/mean", "val_correct/math/mean", "time/step_total"} <= set(columns)
    assert not any(c.startswith("metrics.") for c in columns)


def test_cumulative_step_time(tmp_path):
    log = tmp_path / "roll.log"
    write_console(log, steps=range(0, 30))
    curve = read_curve(log, "cum:time/step_total", "val_correct/all/mean")
    assert list(curve.x) == [30.0, 330.0, 630.0]


def test_a_resumed_pipeline_appended_to_the_same_log(tmp_path):
    log = tmp_path / "roll.log"
    write_console(log, steps=range(0, 45))
    write_console(log, steps=range(40, 60), append=True)  # resumed from the checkpoint at step 40
    curve = read_curve(log, "step", "val_correct/all/mean")
    assert list(curve.x) == [0, 10, 20, 30, 40, 50]
