"""Rows written whole: a writer of a metrics table's rows fills in what a row did not log (pandas'
``to_json`` writes NaN as ``null``, Python's ``json.dumps`` as ``NaN``). Such a cell is not logged
(scalerl.curves.cells.logged): a training row holding ``val/acc: NaN`` is no evaluation, an evaluation
row holding ``loss: NaN`` and no step time is no untimed step -- as a CSV's empty cells read."""

import json
import math

import pandas as pd
import pytest

from scalerl.curves import read_curve


def _table(*, eval_fill: bool, train_fill: bool) -> list[dict]:
    """30 training steps of 10 s, an evaluation row after every 5th; ``*_fill``: the row holds the other
    kind's columns as NaN (a table's row written whole)."""
    rows = []
    for s in range(1, 31):
        rows.append({"step": s, "loss": 1.0 / s, "time/step": 10.0, **({"val/acc": math.nan} if train_fill else {})})
        if s % 5 == 0:
            rows.append({"step": s, **({"loss": math.nan, "time/step": math.nan} if eval_fill else {}),
                         "val/acc": 0.2 + s / 100})
    return rows


def _write(path, rows, how: str):
    if how == "json.dumps":  # NaN
        path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    elif how == "to_json lines":  # null
        pd.DataFrame(rows).to_json(path, orient="records", lines=True)
    else:  # one JSON document, pandas' default orient (columns)
        pd.DataFrame(rows).to_json(path)
    return path


HOW = ["json.dumps", "to_json lines", "to_json document"]


@pytest.mark.parametrize("how", HOW)
@pytest.mark.parametrize("x, first", [("step", 5.0), ("cum:time/step", 50.0)])
def test_a_training_row_with_a_nan_score_is_no_evaluation(tmp_path, how, x, first):
    """Was: each of the 30 training rows an evaluation whose y is missing: 30 'rows dropped as NaN/inf/missing'."""
    curve = read_curve(_write(tmp_path / "log.jsonl", _table(eval_fill=False, train_fill=True), how), x, "val/acc")
    assert list(curve.x) == [first * k for k in range(1, 7)] and curve.dropped == 0
    assert any(n.startswith("30 row(s) of another kind than the evaluations hold 'val/acc' as null, NaN")
               for n in curve.notes), curve.notes


@pytest.mark.parametrize("how", HOW)
def test_an_evaluation_row_with_nan_training_metrics_is_no_untimed_step(tmp_path, how):
    """Was: every evaluation row (``loss: NaN``, no finite ``time/step``) a training step whose time is
    unknown: every point dropped, 'no rows with finite cum:time/step and val/acc values'."""
    curve = read_curve(_write(tmp_path / "log.jsonl", _table(eval_fill=True, train_fill=True), how),
                       "cum:time/step", "val/acc")
    assert list(curve.x) == [50.0 * k for k in range(1, 7)] and curve.dropped == 0
    assert not any("lack 'time/step'" in n for n in curve.notes), curve.notes


def test_an_evaluation_that_came_out_nan_is_still_dropped_and_counted(tmp_path):
    """A row that logs only what the evaluations log (the step) with a NaN score is an evaluation: dropped and counted."""
    rows = _table(eval_fill=False, train_fill=False)
    rows[5]["val/acc"] = math.nan  # step 5's evaluation
    curve = read_curve(_write(tmp_path / "log.jsonl", rows, "json.dumps"), "cum:time/step", "val/acc")
    assert list(curve.x) == [50.0 * k for k in range(2, 7)] and curve.dropped == 1


@pytest.mark.parametrize("x, first", [("step", 5.0), ("cum:time/step", 50.0)])
def test_a_csv_written_whole_with_nan_cells_reads_as_its_json_does(tmp_path, x, first):
    """pandas' ``to_csv(na_rep='NaN')``: the training rows' 'NaN' scores were 30 'rows with missing, NaN or
    infinite values dropped' (an empty cell was 'not evaluations'); a NaN score in a row that logs only what
    evaluations log is still dropped and counted."""
    rows = _table(eval_fill=True, train_fill=True)
    path = tmp_path / "log.csv"
    pd.DataFrame(rows).to_csv(path, index=False, na_rep="NaN")
    curve = read_curve(path, x, "val/acc")
    assert list(curve.x) == [first * k for k in range(1, 7)] and curve.dropped == 0
    assert any(n.startswith("30 row(s) have no 'val/acc' value, 30 of them a NaN that a row of another kind filled in")
               for n in curve.notes), curve.notes
    rows[5]["val/acc"] = math.nan  # step 5's evaluation came out NaN
    pd.DataFrame(rows).to_csv(path, index=False, na_rep="NaN")
    curve = read_curve(path, x, "val/acc")
    assert list(curve.x) == [first * k for k in range(2, 7)] and curve.dropped == 1
