"""Read compute-performance curves from the logs users have.

Formats (chosen from the path, or by ``fmt``):

* ``jsonl`` -- scalerl's run log (a header line, then rows), or any JSON-lines log;
* ``csv`` -- one run, or many with a ``run`` column; ``#`` comment lines allowed;
* ``wandb`` -- a W&B chart export (columns ``"<run> - <metric>"``, plus ``__MIN``/``__MAX``);
* ``tensorboard`` -- event files (a file, or a directory; each sub-directory is a run).

The user names the x (compute) and y (metric) columns. An unknown name is an error that
lists the available ones. Missing, NaN and infinite values are dropped and counted.
"""

from __future__ import annotations

import csv
import math
import os
from collections import OrderedDict
from pathlib import Path
from typing import Callable

from scalerl.curves.data import Curve
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


def _read_csv_rows(path: Path) -> tuple[list[str], list[tuple[int, list[str]]]]:
    with open(path, newline="", encoding="utf-8-sig", errors="replace") as f:
        lines = [(i, line) for i, line in enumerate(f, start=1) if line.strip() and not line.lstrip().startswith("#")]
    if not lines:
        raise InputError(f"{path}: the file is empty (no header, no rows)")
    dialect = csv.excel_tab if path.suffix.lower() == ".tsv" else csv.excel
    parsed = list(csv.reader([line for _, line in lines], dialect))
    header = [h.strip() for h in parsed[0]]
    rows = [(lineno, row) for (lineno, _), row in zip(lines[1:], parsed[1:])]
    if not rows:
        raise InputError(f"{path}: the file has a header but no rows")
    return header, rows


def _is_wandb_export(header: list[str], y: str) -> bool:
    return y not in header and any(h.endswith(f" - {y}") for h in header)


def read_csv(path, x: str, y: str, *, run_column: str = "run", y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    path = Path(path)
    header, rows = _read_csv_rows(path)
    if _is_wandb_export(header, y):
        return _wandb_from_rows(path, header, rows, x, y, y_scale=y_scale, bounded=bounded)
    for kind, col in (("x", x), ("y", y)):
        if col not in header:
            raise _unknown_column(path, kind, col, header)
    ix, iy = header.index(x), header.index(y)
    ir = header.index(run_column) if run_column in header else None
    groups: "OrderedDict[str, tuple[list[float], list[float]]]" = OrderedDict()
    for lineno, row in rows:
        if len(row) != len(header):
            raise InputError(f"{path}: line {lineno} has {len(row)} fields, the header has {len(header)}")
        name = row[ir].strip() if ir is not None else path.stem
        xs, ys = groups.setdefault(name, ([], []))
        xs.append(_number(row[ix], where=f"{path}: line {lineno}, column {x!r}"))
        ys.append(_number(row[iy], where=f"{path}: line {lineno}, column {y!r}") * y_scale)
    return [
        Curve.from_arrays(xs, ys, name=name, x_name=x, y_name=y, source=str(path), bounded=bounded)
        for name, (xs, ys) in groups.items()
    ]


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
    keys: set[str] = set()
    for r in rows:
        keys.update(r)
    for kind, col in (("x", x), ("y", y)):
        if col not in keys:
            raise _unknown_column(path, kind, col, keys - {"type"})
    default_name = str(header.get("run") or header.get("recipe") or path.parent.name or path.stem)
    groups: "OrderedDict[str, tuple[list[float], list[float], list[int]]]" = OrderedDict()
    for r in rows:
        if y not in r:  # another kind of row (training metrics): not an evaluation
            continue
        name = str(r.get(run_column, default_name))
        xs, ys, dropped = groups.setdefault(name, ([], [], [0]))
        vx, vy = r.get(x), r.get(y)
        if vx is None or vy is None:
            dropped[0] += 1
            continue
        if isinstance(vx, bool) or isinstance(vy, bool) or not isinstance(vx, (int, float)) or not isinstance(vy, (int, float)):
            bad = vx if not isinstance(vx, (int, float)) else vy
            raise InputError(f"{path}: value {bad!r} in a row at step {r.get('step', '?')} is not a number")
        xs.append(float(vx))
        ys.append(float(vy) * y_scale)
    return [
        Curve.from_arrays(xs, ys, name=name, x_name=x, y_name=y, source=str(path), bounded=bounded,
                          dropped=d[0], notes=tuple(notes))
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
}


def detect_format(path: Path) -> str:
    name = path.name.lower()
    if path.is_dir() or "tfevents" in name:
        return "tensorboard"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".csv", ".tsv", ".txt")):
        return "csv"
    # Unknown extension: sniff the first non-blank character.
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
