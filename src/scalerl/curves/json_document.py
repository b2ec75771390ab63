"""A JSON document of metrics (one JSON value, not JSON lines): what ``json.dump(history, f)`` and
pandas' ``DataFrame.to_json`` write when a script saves its metrics. The tables it reads:

* ``records`` -- a list of rows: ``[{"step": 0, "acc": 0.21}, ...]`` (pandas ``orient="records"``);
* ``columns`` -- a list per column: ``{"step": [0, 10, ...], "acc": [0.21, 0.28, ...]}``;
* pandas' default (``orient="columns"``) -- ``{"step": {"0": 0, "1": 10}, "acc": {"0": 0.21, ...}}``,
  and ``orient="index"`` -- ``{"0": {"step": 0, "acc": 0.21}, ...}``; ``orient="split"`` --
  ``{"columns": [...], "index": [...], "data": [[...], ...]}``;
* ``runs`` -- rows per run: ``{"grpo-a": [{"step": 0, ...}, ...], "grpo-b": [...]}``, each key a run;
* TensorBoard's download (its UI's "Download JSON" of one scalar) -- ``[[wall_time, step, value],
  ...]``: columns ``wall_time`` (hours since the first point, as the TensorBoard reader gives it),
  ``step`` and ``value``;
* ClearML's ``Task.get_reported_scalars()`` saved as JSON -- ``{title: {series: {"x": [...], "y":
  [...]}}}``: a row per iteration ``step`` with a column ``TITLE/SERIES`` per series (for a verl
  run, the key it logged).

Anything else is an error that names the shapes read; rows are then read like JSON lines.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scalerl.errors import InputError
from scalerl.runlog import HEADER

SHAPES = ("a list of rows, a list per column, pandas' to_json (columns, index, split, records), rows per run, "
          "TensorBoard's [[wall_time, step, value], ...] or ClearML's {title: {series: {x: [...], y: [...]}}}")
#: TensorBoard's "Download JSON": seconds since the epoch, step, value.
TENSORBOARD_DOWNLOAD = ("wall_time", "step", "value")


def _int_like(keys) -> bool:
    try:
        [int(k) for k in keys]
    except (TypeError, ValueError):
        return False
    return True


def _scalar(v: Any) -> bool:
    return v is None or isinstance(v, (int, float, str, bool))


def _is_clearml_scalars(doc: dict) -> bool:
    """``{title: {series: {"x": [...], "y": [...]}}}`` (ClearML's ``get_reported_scalars()``)."""
    return all(isinstance(t, dict) and t and all(
        isinstance(v, dict) and isinstance(v.get("x"), list) and isinstance(v.get("y"), list)
        and len(v["x"]) == len(v["y"]) for v in t.values()) for t in doc.values())


def _clearml_rows(doc: dict, path: Path) -> list[dict[str, Any]]:
    rows: dict[Any, dict[str, Any]] = {}
    for title, series in doc.items():
        for name, xy in series.items():
            key = f"{title}/{name}" if name else str(title)
            for step, value in zip(xy["x"], xy["y"]):
                if not isinstance(step, (int, float)) or isinstance(step, bool):
                    raise InputError(f"{path}: ClearML series {key!r}: iteration {step!r} is not a number")
                rows.setdefault(step, {"step": step})[key] = value
    return [rows[k] for k in sorted(rows)]


def document_rows(doc: Any, path: Path, run_column: str = "run") -> tuple[list[dict[str, Any]], str]:
    """The rows of a JSON document of one of the shapes above, and the shape's name."""
    if isinstance(doc, list) and doc and all(isinstance(r, dict) for r in doc):
        return doc, "records"
    if isinstance(doc, list) and doc and all(isinstance(r, list) and len(r) == 3 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in r) for r in doc):
        t0 = min(r[0] for r in doc)
        return [dict(zip(TENSORBOARD_DOWNLOAD, ((r[0] - t0) / 3600.0, r[1], r[2]))) for r in doc], "tensorboard"
    if isinstance(doc, dict) and doc:
        values = list(doc.values())
        if {"columns", "data"} <= doc.keys() and isinstance(doc["data"], list):
            cols = doc["columns"]
            if all(isinstance(r, list) and len(r) == len(cols) for r in doc["data"]):
                return [dict(zip(cols, r)) for r in doc["data"]], "split"
        if all(isinstance(v, list) for v in values):
            if all(all(isinstance(r, dict) for r in v) for v in values):
                return [{**r, run_column: str(name)} for name, v in doc.items() for r in v], "runs"
            lengths = {len(v) for v in values}
            if len(lengths) == 1 and all(_scalar(e) for v in values for e in v):
                return [dict(zip(doc, row)) for row in zip(*values)], "columns"
            if len(lengths) > 1 and all(_scalar(e) for v in values for e in v):
                raise InputError(f"{path}: a JSON document of columns of different lengths "
                                 f"({', '.join(f'{k!r}: {len(v)}' for k, v in list(doc.items())[:6])}); "
                                 "each column needs a value per row (null where none was logged)")
        if _is_clearml_scalars(doc):
            return _clearml_rows(doc, path), "clearml"
        if all(isinstance(v, dict) for v in values):
            if _int_like(doc.keys()):  # orient="index": row label -> row
                return [doc[k] for k in sorted(doc, key=int)], "index"
            labels = [list(v) for v in values]
            if all(_int_like(ls) for ls in labels):  # orient="columns": column -> {row label: value}
                order = sorted({k for ls in labels for k in ls}, key=int)
                return [{c: doc[c].get(k) for c in doc} for k in order], "columns"
    raise InputError(f"{path}: a JSON document that is no table of metrics; read here: {SHAPES} "
                     "(or JSON lines: one object per line)")


def read_document(path: Path) -> Any | None:
    """The file's JSON document where it is one (not JSON lines), else None. A file whose first line
    is a JSON object is JSON lines unless it is the file's only line and holds lists or dicts (a
    table of columns written on one line)."""
    with open(path, encoding="utf-8", errors="replace") as f:
        first = next((line for line in f if line.strip()), "")
        more = next((line for line in f if line.strip()), None)
    try:
        obj = json.loads(first)
    except ValueError:
        obj = None
    # (A scalerl run log with its header alone -- a run loading, or killed before its first evaluation -- is JSON
    # lines: its header holds the config's dicts, and it was read as a document "that is no table": review cm.)
    if isinstance(obj, dict) and (more is not None or obj.get("type") == HEADER or all(_scalar(v) for v in obj.values())):
        return None
    if obj is None and not first.lstrip().startswith(("[", "{")):
        return None
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text ({exc})") from None
    except ValueError as exc:
        raise InputError(f"{path}: not valid JSON, nor JSON lines ({exc})") from None
