"""A Parquet table of metrics: a row per logged step, a column per metric -- what pandas'
``to_parquet``, polars and Spark write when a script saves its history (a W&B run's
``run.history()``, a dataframe of evaluations). Read like a CSV: one run, or one per value of the
``run`` column (``--run-column`` names another). Only the columns a curve needs are converted. A
table of one run is split where its step goes back, as a CSV is (a resumed training's history: the
abandoned attempt's rows from the checkpoint on are dropped, said in the notes).

A null cell means the row did not log that column (a training row has no evaluation score): a row
without ``y`` is no evaluation, skipped and counted in the notes; a NaN or infinite value is
dropped and counted. A table of Trackio's export is read by the Trackio reader instead.
"""

from __future__ import annotations

from pathlib import Path

from scalerl.curves.attempts import STEP_COLUMNS
from scalerl.curves.csv_log import resumed_rows
from scalerl.curves.cells import logged
from scalerl.curves.data import Curve
from scalerl.curves.rows import DEFAULT_RUN_COLUMN, any_number, curves_from_rows, flatten_nested, unknown_column, x_columns
from scalerl.errors import InputError

#: The first bytes of a Parquet file.
MAGIC = b"PAR1"
#: Columns pandas adds for a dataframe's index: no metric.
_INDEX = "__index_level_"


def is_parquet(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(4) == MAGIC
    except OSError:
        return False


def _leaves(schema) -> dict[str, tuple[str, object]]:
    """Each readable name -> the top-level column it is read from and its Arrow type: a plain column its own
    name, a struct column (``val: {acc}``) its fields as ``val.acc``, as the row readers flatten nested dicts."""
    import pyarrow as pa

    def leaves(name: str, typ) -> list[tuple[str, object]]:
        if pa.types.is_struct(typ):
            return [leaf for i in range(typ.num_fields) for leaf in leaves(f"{name}.{typ.field(i).name}", typ.field(i).type)]
        return [(name, typ)]

    return {leaf: (f.name, typ) for f in schema if not f.name.startswith(_INDEX) for leaf, typ in leaves(f.name, f.type)}


def _leaf_columns(schema) -> dict[str, str]:
    """Each readable name (:func:`_leaves`) -> the top-level column it is read from."""
    return {leaf: column for leaf, (column, _) in _leaves(schema).items()}


def _is_text(typ) -> bool:
    """A string type, plain or dictionary-encoded (pandas' category)."""
    import pyarrow as pa

    if pa.types.is_dictionary(typ):
        typ = typ.value_type
    return pa.types.is_string(typ) or pa.types.is_large_string(typ) or getattr(pa.types, "is_string_view",
                                                                                 lambda t: False)(typ)


def _text_columns(path: Path, schema, top: dict[str, str]) -> set[str]:
    """The string fields (a struct's included) whose first value is no number (:func:`~scalerl.curves.rows.
    any_number`: a dataset's name, a summary, completions), which a listing offers as no metric: the reader
    refuses a column with a value of text. Read in small batches, each column up to its first value (review FU:
    a table's whole text columns turned into Python strings took ~2 GB and 5 s for 200,000 rows)."""
    import pyarrow.parquet as pq

    strings = {leaf for leaf, (_, typ) in _leaves(schema).items() if _is_text(typ)}
    first: dict[str, object] = {}
    try:
        batches = pq.ParquetFile(path).iter_batches(batch_size=256, columns=sorted({top[k] for k in strings}))
        for batch in batches:
            for row in batch.to_pylist():
                values = flatten_nested(row)
                # (a missing cell's text -- "nan", "None", pandas' astype(str) of a NaN -- is no first value: FV)
                first.update({k: values[k] for k in strings - set(first) if logged(values.get(k))})
            if len(first) == len(strings):
                break
    except Exception:  # noqa: BLE001 -- a damaged column: the listing says nothing of it
        return set()
    return {k for k in strings if k in first and not any_number([first[k]])}


def read_parquet(path, x: str, y: str, *, run_column: str | None = None, y_scale: float = 1.0,
                 bounded: bool = True) -> list[Curve]:
    """See :mod:`scalerl.curves.parquet_log`; ``x`` may be ``cum:COL`` / ``cum:GLOB``."""
    import pyarrow.parquet as pq

    path = Path(path)
    try:
        schema = pq.read_schema(path)
    except Exception as exc:  # noqa: BLE001 -- pyarrow raises ArrowInvalid, OSError, ...
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    top = _leaf_columns(schema)  # a struct column's fields as COL.FIELD (flattened in the rows), each to its column
    keys = set(top)
    if y not in keys:
        raise unknown_column(path, "y", y, keys, text=_text_columns(path, schema, top))
    if run_column is not None and run_column not in keys:
        raise unknown_column(path, "run", run_column, keys)
    run_column = run_column or DEFAULT_RUN_COLUMN
    # --x wall_time from a timestamp / time column (a Parquet timestamp too): x_columns names it
    wanted = {y, *x_columns(path, keys, x)} | ({run_column} & keys)
    # One run's table: told by its step where a resumed training's rows were appended (W&B's run.history()
    # of a resumed TRL run; its _step goes on, train/global_step goes back).
    step = None if run_column in keys else next((c for c in STEP_COLUMNS if c in keys), None)
    wanted |= {step} - {None}
    try:
        records = pq.read_table(path, columns=sorted({top[k] for k in wanted})).to_pylist()  # (a damaged column fails decoding)
    except Exception as exc:  # noqa: BLE001
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    rows = []
    for row in records:
        record = {k: v for k, v in flatten_nested(row).items() if v is not None}  # null: not logged in this row
        if run_column in record:
            record[run_column] = str(record[run_column])
        rows.append(record)
    # (the rows of a run without any y are said once, as a run left out -- review dn)
    with_y = {r.get(run_column) for r in rows if y in r}
    if not any(logged(r.get(y)) for r in rows):  # null or NaN in every row: the table's columns, not those read (FU, FV)
        raise unknown_column(path, "y", y, keys, text={y} | _text_columns(path, schema, top))
    without_y = sum(y not in r and r.get(run_column) in with_y for r in rows)
    notes = (f"{without_y} row(s) have no {y!r} value (not evaluations): skipped",) if without_y else ()
    if step is not None:
        kinds = [frozenset(k for k in r if k != step) for r in rows]  # (of the columns read: what a row logs)
        rows, resumed = resumed_rows(path, rows, step, kinds, x)
        notes += resumed
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale,
                            bounded=bounded, table=True, run_column=run_column if run_column in keys else None,
                            step_column=step)
