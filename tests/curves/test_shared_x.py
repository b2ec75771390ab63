"""A long-format log (several tasks or sets in one column) read as one run is said, not fitted silently."""

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
