"""A long-format log (several tasks or sets in one column) read as one run is said, not fitted silently."""

import json

from scalerl.curves.data import Curve
from scalerl.curves.io import read_curves


def _shared(curve):
    return [n for n in curve.notes if "several different evaluations" in n]


def test_two_tasks_in_one_column_are_said(tmp_path):
    path = tmp_path / "long.csv"
    path.write_text("step,task,acc\n" + "".join(f"{s},gsm8k,{0.2 + s / 100}\n{s},math,{0.1 + s / 100}\n"
                                                  for s in range(0, 60, 10)))
    (curve,) = read_curves(path, "step", "acc")
    (note,) = _shared(curve)
    assert note.startswith("6 of 6 step values hold several different evaluations (at 0: 0.2, 0.1)")
    assert "--run-column" in note
    by_task = read_curves(path, "step", "acc", run_column="task")  # what the note says to do
    assert len(by_task) == 2 and not any(_shared(c) for c in by_task)


def test_a_resumed_runs_repeated_evaluations_and_equal_rows_are_not_it():
    x = [0, 10, 20, 20, 30, 40, 40, 50, 60, 70, 80, 90]  # two steps evaluated again after a resume
    y = [0.1, 0.2, 0.3, 0.31, 0.35, 0.4, 0.41, 0.45, 0.5, 0.5, 0.52, 0.53]
    assert not _shared(Curve.from_arrays(x, y))
    assert not _shared(Curve.from_arrays([0, 0, 1, 1, 2, 2], [0.1, 0.1, 0.2, 0.2, 0.3, 0.3]))  # rows written twice


def test_evaluations_that_carry_an_x_logged_less_often_are_said_as_such(tmp_path):
    # (review reviewaf) A JSON-lines log of TRL's rows: num_tokens on the training rows every 10 steps, an
    # evaluation every 5 that takes the latest training row's. Two evaluations at each x are no "several
    # tasks in one column": the note says x is logged less often than the run evaluates, not --run-column.
    lines = []
    for step in range(10, 210, 10):
        lines.append({"step": step, "loss": 0.01, "num_tokens": 4096.0 * step})
        lines.append({"step": step, "eval_reward": 0.2 + step / 1000})
        lines.append({"step": step + 5, "eval_reward": 0.2 + (step + 5) / 1000})
    path = tmp_path / "metrics.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    (curve,) = read_curves(path, "num_tokens", "eval_reward")
    (note,) = _shared(curve)
    assert "'num_tokens' is logged less often than the run evaluates" in note and "--x step" in note
    assert "--run-column" not in note and "several tasks" not in note
    # Evaluations that log their own x, two tasks at each: the note for a long-format log, as before.
    long = tmp_path / "long.jsonl"
    long.write_text("".join(json.dumps({"num_tokens": 4096.0 * s, "task": t, "eval_reward": 0.2 + s / 1000 + d}) + "\n"
                            for s in range(10, 210, 10) for t, d in (("gsm8k", 0.0), ("math", -0.1))))
    (curve,) = read_curves(long, "num_tokens", "eval_reward")
    (note,) = _shared(curve)
    assert "--run-column" in note
