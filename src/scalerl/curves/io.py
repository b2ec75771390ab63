"""Read compute-performance curves from the logs users have.

Formats (chosen from the path, or by ``fmt``):

* ``jsonl`` -- scalerl's run log (a header line, then rows), or any JSON-lines log;
* ``csv`` -- one run, or many with a ``run`` column; ``#`` comment lines allowed; comma, ``;``
  (with decimal commas), tab or ``|`` delimited;
* ``wandb`` -- a W&B chart export (columns ``"<run> - <metric>"``, plus ``__MIN``/``__MAX``);
* ``tensorboard`` -- event files (a file, or a directory; each sub-directory is a run);
* ``verl`` -- verl's console log, the stdout of a run (``step:N - key:value - ...`` lines);
* ``hf-trainer`` -- a Hugging Face / TRL ``trainer_state.json``, or the run directory holding
  its ``checkpoint-*`` directories (the latest one is read);
* ``mlflow`` -- an MLflow tracking store: its SQLite database (``mlruns.db``) or an ``mlruns``
  file-store directory; each MLflow run is a run.

The user names the x (compute) and y (metric) columns. An unknown name is an error that
lists the available ones. Missing, NaN and infinite values are dropped and counted. In the
row logs (csv, jsonl, verl, hf-trainer, mlflow) x may be ``cum:COL``, the running total of a per-step column
(``cum:timing_s/step``), or ``cum:GLOB``, of every column matching it (``cum:timing/*``).
"""

from __future__ import annotations

import csv
import fnmatch
import math
import os
import re
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from scalerl.curves.data import Curve
from scalerl.curves.hf_trainer_log import is_trainer_state, read_trainer_state_rows
from scalerl.curves.mlflow_log import is_mlflow_store, is_sqlite, read_mlflow_rows
from scalerl.curves.verl_log import looks_like_verl, read_verl_rows
from scalerl.errors import InputError
from scalerl.runlog import read_runlog

_MISSING = {"", "nan", "NaN", "NAN", "null", "None", "none", "inf", "-inf", "Infinity", "-Infinity", "+inf"}


def _number(text: str, *, where: str) -> float:
    """Parse a cell; missing / NaN / inf become NaN (dropped and counted later)."""
    s = text.strip()
    if s in _MISSING:
        return math.nan
    try:
        return float(s)
    except ValueError:
        raise InputError(f"{where}: {s[:40]!r} is not a number -- fix the cell or choose another column") from None


def _unknown_column(path: Path, kind: str, name: str, available) -> InputError:
    cols = ", ".join(repr(c) for c in sorted(available)) or "(none)"
    return InputError(f"{path}: no {kind} column {name!r}; available columns: {cols}")


def _pick_runs(path: Path, curves: list[Curve], run: str | None) -> list[Curve]:
    if run is None:
        return curves
    picked = [c for c in curves if c.name == run]
    if not picked:
        names = ", ".join(repr(c.name) for c in curves)
        raise InputError(f"{path}: no run named {run!r}; runs in the file: {names}")
    return picked


# --------------------------------------------------------------------------- CSV


#: Delimiters a CSV may use: comma, and what spreadsheets in comma-decimal locales export (``;``),
#: tab and pipe. The header and first rows decide (``csv.Sniffer``); a ``.tsv`` file is tab.
_DELIMITERS = ",;\t|"


def _dialect(path: Path, sample: list[str]):
    if path.suffix.lower() == ".tsv":
        return csv.excel_tab
    try:
        return csv.Sniffer().sniff("".join(sample), delimiters=_DELIMITERS)
    except csv.Error:  # one column, or no consistent delimiter: the plain comma dialect
        return csv.excel


def _read_csv_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]], bool]:
    """Header, ``(line number, cells)`` rows, and whether numbers may use a decimal comma
    (a ``;``-delimited export from a comma-decimal locale: ``0,53``)."""
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
        lines = [(i, line) for i, line in enumerate(f, start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise InputError(f"{path}: the file is empty (no header, no rows)")
    dialect = _dialect(path, [line for _, line in lines[:20]])
    parsed = list(csv.reader([line for _, line in lines], dialect))
    header = [h.strip() for h in parsed[0]]
    rows = [(lineno, row) for (lineno, _), row in zip(lines[1:], parsed[1:])]
    if not rows:
        raise InputError(f"{path}: the file has a header but no rows")
    return header, rows, dialect.delimiter == ";"


_DECIMAL_COMMA = re.compile(r"^[+-]?\d+,\d+([eE][+-]?\d+)?$")


def _is_wandb_export(header: list[str], y: str) -> bool:
    return y not in header and any(h.endswith(f" - {y}") for h in header)


def read_csv(path, x: str, y: str, *, run_column: str = "run", y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """One run, or one per value of ``run_column``. An empty cell means the row did not log that
    column: a row with no ``y`` is not an evaluation (skipped, counted in the notes); an evaluation
    with no ``x`` takes the latest earlier one, as in the other row logs. ``nan``/``inf`` cells
    are dropped and counted. ``x`` may be ``cum:COL`` / ``cum:GLOB``."""
    path = Path(path)
    header, rows, decimal_comma = _read_csv_rows(path)
    if _is_wandb_export(header, y):
        return _wandb_from_rows(path, header, rows, x, y, y_scale=y_scale, bounded=bounded)
    columns = set(header)
    if y not in columns:
        raise _unknown_column(path, "y", y, header)
    needed = {y, *_x_columns(path, columns, x)}
    index = {h: j for j, h in enumerate(header)}
    ir = index.get(run_column)
    records, without_y = [], 0
    for lineno, row in rows:
        if len(row) != len(header):
            raise InputError(f"{path}: line {lineno} has {len(row)} fields, the header has {len(header)}")
        record: dict = {} if ir is None else {run_column: row[ir].strip()}
        for col in needed:
            cell = row[index[col]].strip()
            if not cell:
                continue  # not logged in this row
            if decimal_comma and _DECIMAL_COMMA.match(cell):
                cell = cell.replace(",", ".")
            record[col] = _number(cell, where=f"{path}: line {lineno}, column {col!r}")
        without_y += y not in record
        records.append(record)
    notes = (f"{without_y} row(s) have no {y!r} value (not evaluations): skipped",) if without_y else ()
    return curves_from_rows(path, records, x, y, default_name=path.stem, notes=notes, y_scale=y_scale,
                            bounded=bounded, run_column=run_column)


def _wandb_from_rows(path: Path, header, rows, x: str, y: str, *, y_scale: float, bounded: bool) -> list[Curve]:
    """W&B chart export: one ``"<run> - <metric>"`` column per run; ``__MIN/__MAX`` ignored."""
    if x not in header:
        raise _unknown_column(path, "x", x, [h for h in header if " - " not in h])
    ix = header.index(x)
    suffix = f" - {y}"
    curves = []
    for j, h in enumerate(header):
        if not h.endswith(suffix):
            continue
        name = h[: -len(suffix)]
        xs, ys = [], []
        for lineno, row in rows:
            # W&B leaves cells empty where a run did not log that step: missing, not an error.
            if j >= len(row) or not row[j].strip():
                continue
            xs.append(_number(row[ix], where=f"{path}: line {lineno}, column {x!r}"))
            ys.append(_number(row[j], where=f"{path}: line {lineno}, column {h!r}") * y_scale)
        if xs:
            curves.append(Curve.from_arrays(xs, ys, name=name, x_name=x, y_name=y, source=str(path), bounded=bounded))
    return curves


# --------------------------------------------------------------------------- JSONL


def read_jsonl(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True, run_column: str = "run") -> list[Curve]:
    path = Path(path)
    header, rows, notes = read_runlog(path)
    default_name = str(header.get("run") or header.get("recipe") or path.parent.name or path.stem)
    return curves_from_rows(path, rows, x, y, default_name=default_name, notes=notes, y_scale=y_scale,
                            bounded=bounded, run_column=run_column)


def read_verl(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """verl's console log (its stdout): see :mod:`scalerl.curves.verl_log`."""
    path = Path(path)
    rows, notes = read_verl_rows(path)
    if not rows:
        raise InputError(f"{path}: no verl step lines ('step:N - key:value - ...') in the file")
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded)


def read_hf_trainer(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """A Hugging Face / TRL ``trainer_state.json`` (or the run directory holding its checkpoints)."""
    path = Path(path)
    rows, name, notes = read_trainer_state_rows(path)
    return curves_from_rows(path, rows, x, y, default_name=name, notes=notes, y_scale=y_scale, bounded=bounded)


def read_mlflow(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """An MLflow tracking store (SQLite database or ``mlruns`` directory); ``x`` may be ``step``,
    ``wall_time`` (hours), a metric, or ``cum:`` of one. MLflow keys cannot hold ``@``: verl's
    adapter logs ``mean@1`` as ``mean_at_1``, and either spelling is accepted."""
    path = Path(path)
    rows, notes = read_mlflow_rows(path)
    keys = set().union(*rows)
    spelled = {name: name.replace("@", "_at_") for name in (x, y) if "@" in name and name not in keys}
    if spelled:
        rows = [{**r, **{name: r[key] for name, key in spelled.items() if key in r}} for r in rows]
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale,
                            bounded=bounded)


# --------------------------------------------------------------------------- rows -> curves

#: ``--x cum:COL``: the running total of a per-step column (``cum:timing_s/step``: wall seconds so
#: far), or of every column matching a glob (``cum:timing/*``: the sum of the timed phases).
CUMULATIVE = "cum:"


def _x_columns(path: Path, keys: set[str], x: str) -> list[str]:
    """The columns ``--x`` reads: ``x`` itself, or those ``cum:COL`` / ``cum:GLOB`` adds up."""
    if not x.startswith(CUMULATIVE):
        if x not in keys:
            raise _unknown_column(path, "x", x, keys - {"type"})
        return [x]
    pattern = x[len(CUMULATIVE):]
    globbed = any(c in pattern for c in "*?[")
    cols = sorted(k for k in keys if fnmatch.fnmatchcase(k, pattern)) if globbed else [pattern] if pattern in keys else []
    if not cols:
        raise _unknown_column(path, "x", x, {CUMULATIVE + k for k in keys if k != "type"})
    return cols


def _cumulative_columns(path: Path, keys: set[str], pattern: str) -> Callable[[dict], float]:
    """The per-row amount ``cum:PATTERN`` adds up: one column, or the sum of every column matching
    a glob. Rows without it (evaluation-only rows) add 0; a value that is not a number is an error."""
    cols = _x_columns(path, keys, CUMULATIVE + pattern)

    def amount(r: dict) -> float:
        total = 0.0
        for c in cols:
            v = r.get(c)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(f"{path}: value {v!r} of {c!r} in a row at step {r.get('step', '?')} is not a number "
                                 f"(needed for --x {CUMULATIVE}{pattern})")
            if math.isfinite(v):
                total += float(v)
        return total

    return amount


def curves_from_rows(path: Path, rows: list[dict], x: str, y: str, *, default_name: str, notes=(),
                     y_scale: float = 1.0, bounded: bool = True, run_column: str = "run") -> list[Curve]:
    """Curves from a log's rows (dicts, in log order): every row holding ``y`` is a point; rows
    without it (training metrics) are not. ``x`` may be ``cum:COL`` (a running total, per run, over
    every row). A point whose row lacks the x column takes the latest x logged before it (said in
    the notes); one whose x or y is null is dropped and counted."""
    keys: set[str] = set().union(*rows) if rows else set()
    cumulative = _cumulative_columns(path, keys, x[len(CUMULATIVE):]) if x.startswith(CUMULATIVE) else None
    for kind, col in (("x", x), ("y", y)):
        if col not in keys and not (kind == "x" and cumulative):
            raise _unknown_column(path, kind, col, keys - {"type"})
    groups: "OrderedDict[str, tuple[list[float], list[float], list[int]]]" = OrderedDict()
    totals: dict[str, float] = {}  # cum: the running total so far, per run
    latest: dict[str, object] = {}  # the last x logged, per run
    carried: dict[str, int] = {}
    for r in rows:
        name = str(r.get(run_column, default_name))
        if cumulative is not None:
            totals[name] = totals.get(name, 0.0) + cumulative(r)
        elif x in r:
            latest[name] = r[x]
        if y not in r:  # another kind of row (training metrics): not an evaluation
            continue
        xs, ys, dropped = groups.setdefault(name, ([], [], [0]))
        if cumulative is not None:
            vx = totals[name]
        elif x in r:
            vx = r[x]
        else:
            # Evaluation rows that do not log the compute counter (TRL's log_history: num_tokens is on
            # the training rows): the counter as the latest row before the evaluation left it.
            vx = latest.get(name)
            carried[name] = carried.get(name, 0) + (vx is not None)
        vy = r.get(y)
        if vx is None or vy is None:
            dropped[0] += 1
            continue
        if isinstance(vx, bool) or isinstance(vy, bool) or not isinstance(vx, (int, float)) or not isinstance(vy, (int, float)):
            bad = vx if not isinstance(vx, (int, float)) else vy
            raise InputError(f"{path}: value {bad!r} in a row at step {r.get('step', '?')} is not a number")
        xs.append(float(vx))
        ys.append(float(vy) * y_scale)

    def run_notes(name: str) -> tuple[str, ...]:
        n = carried.get(name, 0)
        return tuple(notes) + ((f"{n} evaluation(s) do not log {x!r}: each takes it from the latest row before it",)
                               if n else ())

    return [
        Curve.from_arrays(xs, ys, name=name, x_name=x, y_name=y, source=str(path), bounded=bounded,
                          dropped=d[0], notes=run_notes(name))
        for name, (xs, ys, d) in groups.items()
    ]


# --------------------------------------------------------------------------- TensorBoard


def _event_dirs(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    dirs = sorted({p.parent for p in path.rglob("*tfevents*")})
    if not dirs:
        raise InputError(f"{path}: no TensorBoard event files (*tfevents*) found")
    return dirs


def read_tensorboard(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """``x`` may be ``step``, ``wall_time`` (hours since the first event) or another scalar tag
    (joined on step, e.g. a logged compute counter)."""
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        raise InputError("reading TensorBoard logs needs the tensorboard package: pip install 'scalerl[tensorboard]'") from None
    path = Path(path)
    curves = []
    for d in _event_dirs(path):
        acc = event_accumulator.EventAccumulator(str(d), size_guidance={event_accumulator.SCALARS: 0})
        acc.Reload()
        tags = acc.Tags().get("scalars", [])
        if y not in tags:
            raise _unknown_column(d, "y", y, tags)
        events = acc.Scalars(y)
        if x == "step":
            xs = [float(e.step) for e in events]
        elif x == "wall_time":
            t0 = min(e.wall_time for e in events)
            xs = [(e.wall_time - t0) / 3600.0 for e in events]
        else:
            if x not in tags:
                raise _unknown_column(d, "x", x, ["step", "wall_time", *tags])
            by_step = {e.step: e.value for e in acc.Scalars(x)}
            xs = [float(by_step.get(e.step, math.nan)) for e in events]
        ys = [e.value * y_scale for e in events]
        name = d.name if d != path else (path.name or "run")
        curves.append(Curve.from_arrays(xs, ys, name=name, x_name=x, y_name=y, source=str(d), bounded=bounded))
    return curves


# --------------------------------------------------------------------------- dispatch

READERS: dict[str, Callable[..., list[Curve]]] = {
    "csv": read_csv,
    "wandb": read_csv,  # detected from the header; the name is accepted for clarity
    "jsonl": read_jsonl,
    "tensorboard": read_tensorboard,
    "verl": read_verl,
    "hf-trainer": read_hf_trainer,
    "mlflow": read_mlflow,
}


def detect_format(path: Path) -> str:
    name = path.name.lower()
    if path.is_dir():
        return "hf-trainer" if is_trainer_state(path) else "mlflow" if is_mlflow_store(path) else "tensorboard"
    if is_mlflow_store(path):
        return "mlflow"
    if is_sqlite(path):
        raise InputError(f"{path}: an SQLite database without MLflow's 'runs' and 'metrics' tables; "
                         "export the metrics as CSV/JSONL")
    if "tfevents" in name:
        return "tensorboard"
    if name.endswith(".json") and is_trainer_state(path):
        return "hf-trainer"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".csv", ".tsv")):
        return "csv"
    if looks_like_verl(path):
        return "verl"
    if name.endswith((".log", ".out", ".err")):
        raise InputError(f"{path}: a text log without verl step lines ('step:N - key:value - ...'); "
                         f"give --format ({', '.join(READERS)}) or export the metrics as CSV/JSONL")
    # .txt or an unknown extension: sniff the first non-blank character.
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            if line.strip():
                return "jsonl" if line.lstrip().startswith("{") else "csv"
    raise InputError(f"{path}: the file is empty")


def read_curves(
    path,
    x: str,
    y: str,
    *,
    run: str | None = None,
    fmt: str | None = None,
    y_scale: float = 1.0,
    bounded: bool = True,
) -> list[Curve]:
    """Every run in ``path`` (or only ``run``) as :class:`Curve` objects."""
    path = Path(os.fspath(path))
    if not path.exists():
        raise InputError(f"{path}: no such file or directory")
    fmt = fmt or detect_format(path)
    if fmt not in READERS:
        raise InputError(f"unknown log format {fmt!r}; known: {', '.join(READERS)}")
    kwargs = {"y_scale": y_scale, "bounded": bounded}
    if path.is_file() and path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty")
    curves = READERS[fmt](path, x, y, **kwargs)
    if not curves:
        raise InputError(f"{path}: no run has values in column {y!r}")
    return _pick_runs(path, curves, run)


def read_curve(path, x: str, y: str, *, run: str | None = None, **kwargs) -> Curve:
    """Exactly one run; several runs in the file need ``run``."""
    curves = read_curves(path, x, y, run=run, **kwargs)
    if len(curves) > 1:
        names = ", ".join(repr(c.name) for c in curves)
        raise InputError(f"{path}: holds {len(curves)} runs ({names}); choose one with --run NAME")
    return curves[0]
