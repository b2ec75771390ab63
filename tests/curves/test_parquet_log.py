"""A Parquet table of metrics, as pandas writes a script's history: read like a CSV."""

from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from scalerl.curves import read_curves
from scalerl.curves.io import detect_format
from scalerl.errors import InputError

ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "examples" / "data" / "real_rl_curves.csv"


def test_a_pandas_table_of_several_runs_reads_as_its_csv(tmp_path):
    df = pd.read_csv(CSV)
    path = tmp_path / "history.parquet"
    df.to_parquet(path)  # pandas' index column comes along: no metric
    assert detect_format(path) == "parquet"
    from_csv = read_curves(CSV, "cum_wall_hours", "val_score")
    from_parquet = read_curves(path, "cum_wall_hours", "val_score")
    assert [c.name for c in from_parquet] == [c.name for c in from_csv]
    for a, b in zip(from_parquet, from_csv):
        np.testing.assert_array_equal(a.x, b.x)
        np.testing.assert_array_equal(a.y, b.y)
    bare = tmp_path / "history"  # no extension: told by its magic bytes
    bare.write_bytes(path.read_bytes())
    assert len(read_curves(bare, "cum_wall_hours", "val_score")) == 2


def test_a_wandb_style_history_with_sparse_evaluations(tmp_path):
    # run.history(): a row per step, the evaluation only every 10th (null elsewhere)
    steps = np.arange(1, 101)
    score = [0.3 + 0.002 * s if s % 10 == 0 else None for s in steps]
    df = pd.DataFrame({"_step": steps, "timing_s/step": 30.0, "timing_s/gen": 20.0, "val/acc": score})
    path = tmp_path / "run.parquet"
    df.to_parquet(path, index=False)
    [curve] = read_curves(path, "cum:timing_s/*", "val/acc")
    assert len(curve) == 10 and curve.dropped == 0
    assert curve.x[0] == pytest.approx(10 * 50.0)  # every row's seconds count, evaluation or not
    assert any("90 row(s) have no 'val/acc' value" in n for n in curve.notes)
    # a NaN the writer kept as NaN (pyarrow; pandas writes its NaN as null, i.e. not logged): dropped, counted
    import pyarrow as pa
    import pyarrow.parquet as pq

    pq.write_table(pa.table({"step": [1.0, 2.0, 3.0, 4.0], "acc": [0.1, float("nan"), 0.3, None]}), tmp_path / "nan.parquet")
    [curve] = read_curves(tmp_path / "nan.parquet", "step", "acc")
    assert list(curve.x) == [1.0, 3.0] and curve.dropped == 1
    with pytest.raises(InputError, match="no y column 'val/accuracy'"):
        read_curves(path, "_step", "val/accuracy")
    with pytest.raises(InputError, match="no run column 'seed'"):
        read_curves(path, "_step", "val/acc", run_column="seed")


def test_a_broken_parquet_file(tmp_path):
    path = tmp_path / "run.parquet"
    pd.DataFrame({"step": [1, 2], "acc": [0.1, 0.2]}).to_parquet(path)
    path.write_bytes(path.read_bytes()[:40])
    with pytest.raises(InputError, match="not a readable Parquet file"):
        read_curves(path, "step", "acc")


def test_a_date_time_column_is_no_compute_but_a_timestamp_column_gives_wall_time(tmp_path):
    """A datetime 'step' said "value datetime.datetime(...) ... is not a number" and no more."""
    import datetime

    import pyarrow as pa
    import pyarrow.parquet as pq

    start = datetime.datetime(2023, 11, 14, 22, 0, 0)
    times = [start + datetime.timedelta(minutes=30 * i) for i in range(4)]
    pq.write_table(pa.table({"timestamp": times, "acc": [0.2, 0.3, 0.4, 0.5]}), tmp_path / "dt.parquet")
    with pytest.raises(InputError, match="a date and time is no compute value: choose a counter"):
        read_curves(tmp_path / "dt.parquet", "timestamp", "acc")
    [c] = read_curves(tmp_path / "dt.parquet", "wall_time", "acc")
    assert np.allclose(c.x, [0, 0.5, 1.0, 1.5])
