"""What the listing of a log's columns offers for --y and --x (``give --y ... and --x``): a column's name and
its values decide (review fl, on an ms-swift ``logging.jsonl`` of lgc-FINANCE/DeepClima-R1; its line shapes:
  {"loss": 0.16255112, ..., "token_acc": 0.928125, "epoch": 0.22876752, "global_step/max_steps": "100/438", ...}
  {"eval_loss": 0.15809415, ..., "eval_token_acc": 0.9284995, "epoch": 0.22876752, "global_step/max_steps": "100/438",
   "elapsed_time": "10m 52s", ...}
  {"train_dataset": "287.505147±102.300820, min=63.000000, ...", "val_dataset": "286.898288±101.851815, ...",
   "model_parameter_info": "...", "global_step": 438, "log_history": [...]})
"""
import json
import math
import re
import sqlite3
import tracemalloc
import zlib
from pathlib import Path

import pytest

from scalerl.cli import main
from scalerl.errors import InputError


def _swift_log(path):
    rows = []
    for i, step in enumerate(range(10, 110, 10)):
        rows.append({"loss": 0.3 - 0.01 * i, "token_acc": 0.85 + 0.005 * i, "epoch": step / 438,
                     "global_step/max_steps": f"{step}/438", "elapsed_time": f"{step // 10}m 0s"})
        if step % 20 == 0:
            rows.append({"eval_loss": 0.2 - 0.005 * i, "eval_token_acc": 0.9 + 0.004 * i, "epoch": step / 438,
                         "global_step/max_steps": f"{step}/438", "elapsed_time": f"{step // 10}m 30s"})
    rows.append({"train_dataset": "287.505147\u00b1102.300820, min=63.000000, max=1005.000000, size=6994",
                 "val_dataset": "286.898288\u00b1101.851815, min=112.000000, max=969.000000, size=1986",
                 "global_step": 100, "log_history": []})
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    return path


def _listing(capsys, path):
    code = main(["backtest", str(path)])
    err = capsys.readouterr().err
    assert code != 0
    m = re.search(r"metrics \(evaluation-like names[^)]*\)(?:[^:]*): (.*?); compute", err)
    assert m, err
    return m.group(1), err


def test_swift_eval_token_acc_listed_as_metric(tmp_path, capsys):
    metrics, err = _listing(capsys, _swift_log(tmp_path / "logging.jsonl"))
    assert "eval_token_acc" in metrics, err


def test_swift_text_column_not_offered_as_metric(tmp_path, capsys):
    metrics, err = _listing(capsys, _swift_log(tmp_path / "logging.jsonl"))
    assert "val_dataset" not in metrics, err


@pytest.mark.parametrize("name, axis", [
    ("eval_token_acc", "y"), ("mean_token_accuracy", "y"), ("val/acc_avg", "y"), ("epoch_acc", "y"),
    ("rewards/accuracy_reward/mean", "y"), ("val-core/openai/gsm8k/reward/mean@1", "y"), ("test_score", "y"),
    ("timing_s/reward", "x"), ("timing/eval", "x"), ("eval_runtime", "x"), ("eval_samples_per_second", "x"),
    ("num_tokens", "x"), ("train/global_step", "x"), ("gradient_accumulation_steps", "x"),
    ("accepted_samples", "x"), ("total_flos", "x"), ("gpu_hours", "x"),
    ("eval/timeout_rate", "y"), ("val/secondary_acc", "y"), ("train/lifetime_reward", "y"), ("walltime", "x"),
    ("timestamp", "x"), ("train/seconds", "x"), ("perf/time_per_step", "x"),
    ("loss", None), ("response_length/mean", None)])
def test_a_column_name_reads_as_the_axis_it_names(name, axis):
    """A time is compute whatever it times; a score is a metric though it counts tokens; ``acc`` at a word's end."""
    from scalerl.curves.rows import likely_columns

    assert [a for a in ("x", "y") if likely_columns(a, [name])] == ([axis] if axis else [])


def test_a_csv_column_of_text_is_no_metric_but_decimal_commas_are(tmp_path, capsys):
    path = tmp_path / "log.csv"
    path.write_text("step;val_acc;eval_note\n" + "".join(f"{s};0,{s};ok\n" for s in range(1, 6)))
    metrics, err = _listing(capsys, path)
    assert "val_acc" in metrics and "eval_note" not in metrics, err
    assert "'eval_note'" in err, err  # still listed, among the other columns


# review fm: percentages and scalar reprs are numbers; the --y glob offers no text; a time word inside another

_CELLS = {"percent": lambda s: f"{40 + s}%", "numpy_repr": lambda s: f"np.float64(0.{s})"}


@pytest.mark.parametrize("fmt", ["csv", "jsonl"])
@pytest.mark.parametrize("cell", sorted(_CELLS))
def test_listing_offers_a_metric_written_as_percent_or_numpy_repr(tmp_path, capsys, fmt, cell):
    from scalerl.curves.io import read_curves

    path = tmp_path / f"log.{fmt}"
    if fmt == "csv":
        path.write_text("step,val_acc\n" + "".join(f"{s},{_CELLS[cell](s)}\n" for s in range(1, 8)))
    else:
        path.write_text("".join(json.dumps({"step": s, "val_acc": _CELLS[cell](s)}) + "\n" for s in range(1, 8)))
    (curve,) = read_curves(path, "step", "val_acc")  # the reader reads the column as a metric
    assert len(curve.y) == 7
    metrics, err = _listing(capsys, path)
    assert "val_acc" in metrics, err  # now: "metrics (evaluation-like names): (none); ... other: 'val_acc'"



def test_y_glob_message_offers_no_text_column_as_metric(tmp_path, capsys):
    rows = [{"step": s, "loss": 1 / s, "val_acc": 0.1 * s} for s in range(1, 8)]
    rows.append({"val_dataset": "286.898288\u00b1101.851815, min=112.000000, size=1986", "global_step": 7})
    path = tmp_path / "logging.jsonl"
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows), encoding="utf-8")
    code = main(["backtest", str(path), "--x", "step", "--y", "eval*"])
    err = capsys.readouterr().err
    assert code != 0 and "metric-like columns" in err, err
    assert "val_dataset" not in err, err  # now: "metric-like columns: 'val_acc', 'val_dataset'"



@pytest.mark.parametrize("name", ["rewards/sentiment_reward/mean", "eval_rewards/sentiment_reward/mean",
                                  "sentiment_score"])
def test_a_sentiment_reward_is_a_metric(name):
    from scalerl.curves.rows import likely_columns

    assert likely_columns("y", [name]) == [name]
    assert likely_columns("x", [name]) == []


# review fo: floating-point work anywhere in a name; a decimal comma is a CSV's only

def test_flops_columns_are_still_compute_like():
    cols = ["FLOPs", "total_FLOPs", "train/TFLOPs", "PFLOPs", "throughput/tflops", "train/loss"]
    # compute_kind.py itself reads these as FLOPs / TFLOPs; before e18615a likely_columns('x') listed them all.
    from scalerl.curves.rows import likely_columns

    assert likely_columns("x", cols) == cols[:-1]


def test_jsonl_column_of_comma_strings_is_text(tmp_path):
    p = tmp_path / "log.jsonl"
    p.write_text("".join(json.dumps({"step": s, "devices": "0,1", "score": 0.1 * s}) + "\n" for s in range(1, 6)))
    from scalerl.curves.io import read_curve
    from scalerl.errors import InputError

    with pytest.raises(InputError, match="is not a number"):  # the reader refuses the column...
        read_curve(p, "step", "devices")
    from scalerl.curves.io import log_column_listing

    _, text = log_column_listing(p)
    assert "devices" in text  # ...so the listing must not offer it as a metric (it did before e18615a)


# review fp: a CSV listing calls a column text exactly when its reader refuses every cell as a number

def _refused_and_text(path, col):
    from scalerl.curves.io import log_column_listing, read_curve
    from scalerl.errors import InputError

    with pytest.raises(InputError, match="is not a number"):  # the reader refuses every cell of it...
        read_curve(path, "step", col)
    _, text = log_column_listing(path)
    return col in text


def test_tsv_decimal_comma_column_is_text(tmp_path):
    p = tmp_path / "log.tsv"
    p.write_text("step\tdevices\tscore\n" + "".join(f"{s}\t0,1\t0.{s}\n" for s in range(1, 6)))
    assert _refused_and_text(p, "devices")  # ...so the listing must not offer it as a metric


def test_comma_csv_quoted_decimal_comma_column_is_text(tmp_path):
    p = tmp_path / "log.csv"
    p.write_text("step,devices,score\n" + "".join(f'{s},"0,1",0.{s}\n' for s in range(1, 6)))
    assert _refused_and_text(p, "devices")


@pytest.mark.parametrize("cell", ["41,5%", ",5", "5,"])
def test_semicolon_csv_listing_agrees_with_reader(tmp_path, cell):
    from scalerl.curves.io import log_column_listing, read_curve
    from scalerl.errors import InputError

    p = tmp_path / "log.csv"
    p.write_text("step;acc;score\n" + "".join(f"{s};{cell};0,{s}\n" for s in range(1, 6)))
    try:
        read_curve(p, "step", "acc")
        refused = False
    except InputError as exc:
        refused = "is not a number" in str(exc)
    _, text = log_column_listing(p)
    assert refused == ("acc" in text)


# review fq: a console's reader refuses "41%", so its listing calls such a column text

def test_console_percent_column_listing_matches_reader(tmp_path):
    from scalerl.curves.io import log_column_listing, read_curves
    from scalerl.errors import InputError

    f = tmp_path / "train.log"
    f.write_text("".join(repr({"step": s, "eval_acc": f"{40 + s}%"}) + "\n" for s in range(1, 4)))
    rows, text = log_column_listing(f)
    assert "eval_acc" in rows
    try:
        read_curves(f, "step", "eval_acc")
        refused = False
    except InputError as exc:
        assert "not a number" in str(exc)
        refused = True
    # the listing calls a column text exactly when its reader refuses every cell as a number
    assert ("eval_acc" in text) == refused


# review fr: a Trackio database's listing calls a column of text text (W&B's reader likewise)

def test_trackio_listing_calls_a_text_column_text(tmp_path):
    import sqlite3

    from scalerl.curves.io import log_column_listing, read_curves
    from scalerl.errors import InputError

    db = tmp_path / "p.db"
    with sqlite3.connect(db) as w:
        w.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY, run_id TEXT, timestamp TEXT, run_name TEXT, "
                  "step INTEGER, metrics TEXT)")
        for s in range(1, 4):
            w.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?,?,?,?,?)",
                      ("r1", f"2026-12-01T10:0{s}:00", "run", s,
                       json.dumps({"eval/acc": 0.1 * s, "eval/dataset": "gsm8k", "eval/pct": f"{40 + s}%"})))
    for col in ("eval/dataset", "eval/pct"):
        with pytest.raises(InputError, match="is not a number|holds no number in any row"):
            read_curves(db, "step", col)
    rows, text = log_column_listing(db)
    assert {"eval/dataset", "eval/pct"} <= set(rows)
    assert {"eval/dataset", "eval/pct"} <= text
    assert "eval/acc" not in text


# Review FS: W&B's and Trackio's readers.


def _write_wandb(path: Path, steps: list[tuple[int, dict]]) -> Path:
    """A W&B run file as wandb-core writes one: its header, a run record, one history record per step (each value
    as its JSON text), each record one full chunk of the LevelDB-style log."""
    pb = pytest.importorskip("wandb.proto.wandb_internal_pb2", reason="reading W&B run files needs wandb")
    from scalerl.curves.leveldb_log import BLOCK, CHUNK_HEADER, FILE_HEADER, FULL

    run = pb.Record()
    run.run.run_id, run.run.display_name = "r1", "run"
    records = [run.SerializeToString()]
    for step, values in steps:
        r = pb.Record()
        r.history.step.num = step
        for k, v in {"_step": step, "_runtime": float(step), **values}.items():
            r.history.item.add(key=k, value_json=json.dumps(v))
        records.append(r.SerializeToString())
    out = bytearray(FILE_HEADER.pack(b":W&B", 0xBEE1, 0))
    for data in records:
        room = BLOCK - len(out) % BLOCK
        if room < CHUNK_HEADER.size + len(data):
            out += b"\0" * room
        out += CHUNK_HEADER.pack(zlib.crc32(data, zlib.crc32(bytes([FULL]))), len(data), FULL) + data
    path.write_bytes(bytes(out))
    return path


def _write_trackio(path: Path, metrics: list[dict]) -> Path:
    """A Trackio project database: its ``metrics`` table, one row per ``trackio.log`` call."""
    with sqlite3.connect(path) as w:
        w.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY, run_id TEXT, timestamp TEXT, run_name TEXT, "
                  "step INTEGER, metrics TEXT)")
        for s, m in enumerate(metrics, start=1):
            w.execute("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?,?,?,?,?)",
                      ("r1", f"2026-12-01T10:0{s}:00", "run", s, json.dumps(m)))
    return path


def test_wandb_listing_offers_a_metric_logged_as_numeric_strings(tmp_path, capsys):
    """W&B's listing calls a metric logged as strings of numbers text, though its reader reads it as numbers."""
    from scalerl.cli import main
    from scalerl.curves.io import log_column_listing, read_curves

    f = _write_wandb(tmp_path / "run-r1.wandb", [(s, {"eval/acc": f"0.{s}", "train/loss": 1.0 / s})
                                                 for s in range(1, 6)])
    assert list(read_curves(f, "step", "eval/acc")[0].y) == pytest.approx([0.1, 0.2, 0.3, 0.4, 0.5])  # read: numbers
    _, text = log_column_listing(f)
    assert "eval/acc" not in text
    assert main(["backtest", str(f)]) != 0
    err = capsys.readouterr().err
    metrics = err.split("metrics (evaluation-like names", 1)[1].split("; compute", 1)[0]
    assert "eval/acc" in metrics, err


def test_trackio_y_of_a_column_never_a_number_does_not_hide_the_metrics(tmp_path):
    """Trackio: --y of a column logged null (or true) in every row says the log's only columns are run, step, wall_time."""
    from scalerl.curves.io import read_curves

    db = _write_trackio(tmp_path / "p.db", [{"eval/acc": 0.1 * s, "eval/reward": None} for s in range(1, 5)])
    with pytest.raises(InputError) as err:
        read_curves(db, "step", "eval/reward")
    msg = str(err.value)
    assert not ("available columns" in msg and "eval/acc" not in msg), msg


def test_wandb_y_of_a_histogram_does_not_hide_the_metrics(tmp_path):
    """W&B: --y of a histogram (or an always-null key) says the log's only columns are run, step, wall_time."""
    from scalerl.curves.io import read_curves

    hist = {"_type": "histogram", "values": [1, 3, 1], "bins": [0, 10, 20, 30]}
    f = _write_wandb(tmp_path / "run-r1.wandb", [(s, {"eval/acc": 0.1 * s, "val/lengths": hist})
                                                 for s in range(1, 6)])
    with pytest.raises(InputError) as err:
        read_curves(f, "step", "val/lengths")
    msg = str(err.value)
    assert not ("available columns" in msg and "eval/acc" not in msg), msg


def test_parquet_listing_calls_a_string_column_of_text_text(tmp_path):
    """A Parquet table's string column of names is text, no metric the listing offers; one of numbers written as
    strings (read as numbers) is not (FR's note: the Parquet reader said no text columns)."""
    pa = pytest.importorskip("pyarrow")
    import pyarrow.parquet as pq

    from scalerl.curves.io import log_column_listing, read_curves

    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"step": [1, 2, 3], "eval/acc": [0.1, 0.2, 0.3], "eval/dataset": ["gsm8k"] * 3,
                             "eval/pass": ["0.1", "0.2", None]}), path)
    rows, text = log_column_listing(path)
    assert {"eval/acc", "eval/dataset", "eval/pass"} <= set(rows)
    assert "eval/dataset" in text and not {"eval/acc", "eval/pass"} & text, text
    assert [float(v) for v in read_curves(path, "step", "eval/pass")[0].y] == pytest.approx([0.1, 0.2])


def test_jsonl_listing_calls_a_column_the_reader_refuses_text_percent_signs_and_all(tmp_path):
    """A JSONL's "41%" cells are numbers (its reader takes them), "np.float64(41)%" cells are not -- the reader
    refuses them, so the listing must not offer them as a metric (FR's note)."""
    from scalerl.curves.io import log_column_listing, read_curves
    from scalerl.errors import InputError

    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps({"step": s, "eval/pct": f"{40 + s}%", "eval/odd": f"np.float64({40 + s})%"})
                            + "\n" for s in range(1, 4)))
    _, text = log_column_listing(path)
    assert "eval/odd" in text and "eval/pct" not in text, text
    with pytest.raises(InputError):
        read_curves(path, "step", "eval/odd")
    assert [float(v) for v in read_curves(path, "step", "eval/pct")[0].y] == pytest.approx([0.41, 0.42, 0.43])


# Review FU: --y of a column with no value, Parquet's text columns, the W&B listing's decoding.


def test_parquet_y_of_an_all_null_column_lists_the_metrics(tmp_path):
    """Parquet (pandas' to_parquet of a NaN column): --y of a column null in every row says 'no y column' and lists
    'step' alone, hiding eval/acc -- the defect 9d204a8 fixed for W&B and Trackio."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scalerl.curves.io import read_curves

    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"step": [1, 2, 3], "eval/acc": [0.1, 0.2, 0.3], "train/loss": [1.0, 0.5, 0.2],
                             "eval/pass": pa.array([None, None, None], pa.float64())}), path)
    with pytest.raises(InputError) as err:
        read_curves(path, "step", "eval/pass")
    assert "eval/acc" in str(err.value), err.value


def test_csv_y_of_an_empty_column_lists_the_metrics(tmp_path):
    """CSV: --y of a column whose every cell is empty says 'no y column' (the header has it) and lists 'step' alone,
    hiding eval/acc -- the defect 9d204a8 fixed for W&B and Trackio."""
    from scalerl.curves.io import read_curves

    path = tmp_path / "history.csv"
    path.write_text("step,eval/acc,eval/pass,train/loss\n1,0.1,,1\n2,0.2,,0.5\n3,0.3,,0.2\n")
    with pytest.raises(InputError) as err:
        read_curves(path, "step", "eval/pass")
    assert "eval/acc" in str(err.value), err.value


def test_parquet_listing_calls_a_category_column_text(tmp_path, capsys):
    """pandas' category column of dataset names (Arrow dictionary<string>) is offered as a metric, then refused when
    read ('gsm8k' is not a number): _text_columns looks at string/large_string columns only."""
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    from scalerl.cli import main
    from scalerl.curves.io import log_column_listing

    path = tmp_path / "history.parquet"
    pd.DataFrame({"step": [1, 2, 3], "eval/acc": [0.1, 0.2, 0.3],
                  "eval/dataset": pd.Categorical(["gsm8k"] * 3)}).to_parquet(path)
    _, text = log_column_listing(path)
    assert main(["backtest", str(path)]) != 0
    metrics = capsys.readouterr().err.split("metrics (evaluation-like names", 1)[1].split("; compute", 1)[0]
    assert "eval/dataset" in text and "eval/dataset" not in metrics, (text, metrics)


def test_parquet_listing_calls_a_struct_string_field_text(tmp_path):
    """A struct column eval: {acc, dataset} reads as eval.acc and eval.dataset; the string field eval.dataset (names)
    is offered as a metric, then refused when read: _text_columns skips struct fields."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scalerl.curves.io import log_column_listing

    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"step": [1, 2, 3], "eval": pa.array([{"acc": 0.1 * s, "dataset": "gsm8k"}
                                                                   for s in (1, 2, 3)])}), path)
    rows, text = log_column_listing(path)
    assert {"eval.acc", "eval.dataset"} <= set(rows)
    assert "eval.dataset" in text and "eval.acc" not in text, text


def test_parquet_listing_does_not_load_every_text_cell(tmp_path):
    """A Parquet history with a long text column (completions): its listing (a --y glob, a missing --y) turns the
    whole column into Python strings (to_pylist) to find no number in it -- ~100 MB here for a 20,000-row table
    (before 11d69e3 it read the schema alone)."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scalerl.curves.io import log_column_listing

    n = 20_000
    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"step": list(range(n)), "eval/acc": [0.5] * n,
                             "sample/completion": ["the answer is " + "x" * 5000] * n}), path)
    tracemalloc.start()
    try:
        _, text = log_column_listing(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert "sample/completion" in text
    assert peak < 30e6, f"{peak / 1e6:.0f} MB of Python objects to list a table's columns"


def test_wandb_listing_decodes_each_column_up_to_its_first_number(tmp_path, monkeypatch):
    """W&B: listing a run's columns (a --y glob, a missing --y) decoded every logged value's JSON (1.6 M for 50k steps
    x 30 metrics: ~2x slower, review FU) where the first number of each column settles it."""
    from scalerl.curves import wandb_run_log
    from scalerl.curves.io import log_column_listing

    f = _write_wandb(tmp_path / "run-r1.wandb",
                     [(s, {**{f"train/m{i}": (s * 7 + i) % 97 / 97 for i in range(30)}, "eval/name": "gsm8k",
                           **({"eval/acc": s / 1_000} if s % 100 == 0 else {})}) for s in range(1, 1001)])
    decoded = []
    real = wandb_run_log._value
    monkeypatch.setattr(wandb_run_log, "_value", lambda text: decoded.append(text) or real(text))
    _, text = log_column_listing(f)
    assert text == {"eval/name"}, text
    # each metric column its first value (30 columns x 1,000 steps before); eval/name, text, every one of its 1,000;
    # the reader's own (_runtime, for its restarts) 1,000
    assert len(decoded) < 3_000, len(decoded)


def test_a_long_listing_counts_the_columns_it_leaves_out_and_suggests_no_text_column_for_y():
    """Of 105 columns none of which looks like a metric, 20 are named: "(and 85 more)", not 105 (FU's note); a y's
    "did you mean" names no column of text (it holds no number to read)."""
    from scalerl.curves.rows import unknown_column

    many = str(unknown_column("f.csv", "y", "zzz", [f"col{i}" for i in range(105)]))
    assert many.count("'col") == 20 and many.endswith("(and 85 more)"), many
    text = str(unknown_column("f.csv", "y", "eval/datset", ["eval/dataset", "eval/acc", "step"], text={"eval/dataset"}))
    assert "did you mean 'eval/dataset'" not in text, text


# Review FV: --y of a column no row fills in, in every reader; a listing agrees with the reader.


def test_parquet_listing_calls_a_readable_string_metric_column_a_metric(tmp_path):
    """A Parquet table of string cells (pandas 2's astype(str): 'nan' where not logged): eval/acc, 'nan' in its first
    rows, then numbers, reads fine as --y, yet the listing calls it text (it called it a metric before 50df31c)."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scalerl.curves.io import log_column_listing, read_curves

    steps = list(range(1, 21))
    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"step": steps, "eval/acc": ["nan" if s % 5 else str(0.01 * s) for s in steps],
                             "eval/dataset": ["gsm8k"] * 20}), path)
    assert len(read_curves(path, "step", "eval/acc")[0].y) == 4  # the reader reads it
    _, text = log_column_listing(path)
    assert "eval/dataset" in text
    assert "eval/acc" not in text, text


def test_parquet_y_of_an_all_nan_column_lists_the_metrics(tmp_path):
    """Parquet written with NaN (pyarrow, polars: NaN is not null): --y of a column NaN in every row does not list
    eval/acc, as the same column of nulls (or a CSV's 'nan' cells) does."""
    pytest.importorskip("pyarrow")
    import pyarrow as pa
    import pyarrow.parquet as pq

    from scalerl.curves.io import read_curves

    path = tmp_path / "history.parquet"
    pq.write_table(pa.table({"step": [1, 2, 3], "eval/acc": [0.1, 0.2, 0.3], "train/loss": [1.0, 0.5, 0.2],
                             "eval/pass": pa.array([math.nan] * 3, pa.float64())}), path)
    with pytest.raises(InputError) as err:
        read_curves(path, "step", "eval/pass")
    assert "eval/acc" in str(err.value), err.value


def test_wandb_chart_export_y_of_an_empty_metric_lists_the_metrics(tmp_path):
    """A W&B chart export CSV ('RUN - METRIC' columns): --y of a metric empty in every run says 'no run has values'
    and does not name eval/acc, as a plain CSV's empty column now does."""
    from scalerl.curves.io import read_curves

    path = tmp_path / "chart.csv"
    path.write_text("Step,r1 - eval/acc,r1 - eval/pass,r2 - eval/acc,r2 - eval/pass\n"
                    "1,0.1,,0.2,\n2,0.2,,0.3,\n3,0.3,,0.4,\n")
    with pytest.raises(InputError) as err:
        read_curves(path, "Step", "eval/pass")
    assert "eval/acc" in str(err.value), err.value


def test_jsonl_y_of_an_all_null_column_lists_the_metrics(tmp_path):
    """A JSON-lines log (pandas' to_json(lines=True) of a NaN column: null in every row): --y of that column does not
    name eval/acc, as Parquet's and CSV's now do."""
    from scalerl.curves.io import read_curves

    path = tmp_path / "history.jsonl"
    path.write_text("".join(json.dumps({"step": s, "eval/acc": 0.1 * s, "train/loss": 1 / s, "eval/pass": None}) + "\n"
                            for s in range(1, 6)))
    with pytest.raises(InputError) as err:
        read_curves(path, "step", "eval/pass")
    assert "eval/acc" in str(err.value), err.value


# Review FX: MLflow's and a W&B chart export's NaN-only y; timed_out.


def test_mlflow_y_nan_in_every_row_lists_the_stores_metrics(tmp_path):
    """An MLflow store whose val/pass is NaN at every step: the error lists 'run', 'step', 'wall_time', not val/acc."""
    import yaml

    from scalerl.curves.io import read_curves

    d = tmp_path / "mlruns" / "0" / ("a" * 32)
    (d / "metrics" / "val").mkdir(parents=True)
    (d / "meta.yaml").write_text(yaml.safe_dump({"run_id": "a" * 32, "run_name": "r", "lifecycle_stage": "active"}))
    t0 = 1_700_000_000_000
    (d / "metrics" / "loss").write_text("".join(f"{t0 + 1000 * s} 1.0 {s}\n" for s in range(1, 11)))
    (d / "metrics" / "val" / "acc").write_text("".join(f"{t0 + 1000 * s} {0.1 * s} {s}\n" for s in range(2, 11, 2)))
    (d / "metrics" / "val" / "pass").write_text("".join(f"{t0 + 1000 * s} nan {s}\n" for s in range(2, 11, 2)))
    assert len(read_curves(tmp_path / "mlruns", "step", "val/acc")[0].x) == 5
    with pytest.raises(InputError) as err:
        read_curves(tmp_path / "mlruns", "step", "val/pass")
    assert "val/acc" in str(err.value), err.value


def test_wandb_chart_export_y_nan_in_every_run_lists_the_metrics(tmp_path):
    """A W&B chart export whose eval/pass is NaN in both runs: the error names run 'r1' alone, not eval/acc."""
    from scalerl.curves.io import read_curves

    path = tmp_path / "chart.csv"
    path.write_text("Step,r1 - eval/acc,r1 - eval/pass,r2 - eval/acc,r2 - eval/pass\n"
                    "1,0.1,NaN,0.2,NaN\n2,0.2,NaN,0.3,NaN\n3,0.3,NaN,0.4,NaN\n")
    plain = tmp_path / "plain.csv"
    plain.write_text("Step,eval/acc,eval/pass\n1,0.1,NaN\n2,0.2,NaN\n3,0.3,NaN\n")
    with pytest.raises(InputError, match="eval/acc"):  # the plain CSV's listing
        read_curves(plain, "Step", "eval/pass")
    with pytest.raises(InputError) as err:
        read_curves(path, "Step", "eval/pass")
    assert "eval/acc" in str(err.value), err.value


@pytest.mark.parametrize("name", ["env/timed_out_rate", "eval/timed_out_frac"])
def test_a_timed_out_rate_is_no_compute(name):
    """eval/timeout_rate is a metric now; eval/timed_out_rate, the same rate, is still listed as compute (x)."""
    from scalerl.curves.rows import likely_columns

    assert likely_columns("y", ["eval/timeout_rate"]) == ["eval/timeout_rate"]
    assert not likely_columns("x", [name]), name


@pytest.mark.parametrize("name", ["eval/time_out_rate", "env/TimeOutRate"])
def test_a_time_out_rate_spelled_as_two_words_is_no_compute(name):
    """eval/time_out_rate (as eval/timeout_rate, env/timed_out_rate, now metrics) is listed as compute (x)."""
    from scalerl.curves.rows import likely_columns

    assert not likely_columns("x", [name]), name


@pytest.mark.parametrize("name", ["reward/time_outs", "eval/time-outs"])
def test_time_outs_as_two_words_is_no_compute(name):
    """reward/time_outs (as reward/timeouts, eval/time_out_rate: counts of timeouts) is listed as compute (x)."""
    from scalerl.curves.rows import likely_columns

    assert not likely_columns("x", ["reward/timeouts", "eval/time_out_rate"])
    assert not likely_columns("x", [name]), name
