"""Read SwanLab's local run files: ``swanlog/run-<date>-<id>/`` (verl's ``trainer.logger=['swanlab']``
writes them to ``$SWANLAB_LOG_DIR``, default ``swanlog``), online runs as well as offline ones.

Each run directory holds one record log (:mod:`scalerl.curves.leveldb_log`, ident ``:SWL``) in one
of two versions:

* **version 1** (swanlab before 0.8: ``backup.swanlab``) -- each record one JSON object,
  ``{"model_type": "Scalar", "data": {"key": ..., "step": ..., "metric": {"data": ...,
  "create_time": ...}}}``; read with the standard library;
* **version 2** (swanlab 0.8 and later: ``run-<id>.swanlab``) -- protobuf records, parsed with the
  installed swanlab package's own schema (``pip install swanlab``).

A run (``Experiment`` / ``start`` record: its name and id) becomes rows, one per step: ``step``,
``wall_time`` (hours since its first scalar) and every scalar logged at that step (NaN and
infinities as logged: dropped and counted downstream); media are not values, nor is SwanLab's
system monitor (``__swanlab__.*``, logged on a clock of its own). A run id found in
several directories (a resumed run) is joined in the order the directories started; where the
run's step goes back -- the trainer's ``train/global_step`` where it logs one, else SwanLab's
step -- or a later directory starts at the step the earlier one ended on (verl killed right after
saving step N's checkpoint, resumed from it), the abandoned attempt's rows from there on are
dropped, but at the step the resumed attempt starts at its rows take the place of the abandoned attempt's of their kind, the others' values kept
(verl resumed from its step-N checkpoint logs only its evaluation at N: step N's training metrics
stay, :func:`scalerl.curves.attempts.drop_abandoned_attempts`). Torn and damaged records are
skipped; each is said in the notes.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any, Iterator

from scalerl.curves.data import Curve
from scalerl.curves.leveldb_log import Kind, has_ident, records, version
from scalerl.curves.attempts import RESTART, keep_resumed_attempts
from scalerl.curves.rows import curves_from_rows
from scalerl.errors import InputError

SWANLAB = Kind(b":SWL", 0xE1D6, "SwanLab run file")
SUFFIX = ".swanlab"
INSTALL = "pip install swanlab"
#: The start time SwanLab puts in a run directory's name.
STARTED = re.compile(r"run-(\d{8}_\d{6})-")

#: SwanLab's own system monitor (``__swanlab__.cpu.pct``, ...): logged on a clock of its own, not the run's steps.
SYSTEM = "__swanlab__"

# One logged scalar: (step, key, value, seconds since the epoch).
Scalar = tuple[int, str, Any, float]


def run_files(path: Path) -> list[Path]:
    """The run files ``path`` names: itself, a run directory's, or those of a ``swanlog``
    directory's runs; in the order the runs started (by the time in the directory's name)."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        return []
    found = [*path.glob(f"*{SUFFIX}"), *(f for d in path.iterdir() if d.is_dir() for f in d.glob(f"*{SUFFIX}"))]
    found = [f for f in found if f.is_file() and has_ident(f, SWANLAB)]
    return sorted(found, key=lambda f: (_started(f), str(f)))


def _started(f: Path) -> str:
    match = STARTED.search(f.parent.name)
    return match.group(1) if match else ""


def is_swanlab_run(path: Path) -> bool:
    """A SwanLab run file, or a directory holding one (a run's) or several (``swanlog``'s runs)."""
    if path.is_file():
        return has_ident(path, SWANLAB)
    return bool(run_files(path))


def _seconds(stamp: str) -> float:
    return datetime.fromisoformat(stamp).timestamp()


def _json_records(raws: Iterator[bytes], path: Path) -> tuple[str, str, list[Scalar], int]:
    """Version 1: ``(name, id, scalars, unreadable records)``."""
    name, rid, scalars, bad = path.parent.name, path.parent.name, [], 0
    for raw in raws:
        try:
            record = json.loads(raw)
            kind, data = record["model_type"], record["data"]
            if kind == "Experiment":
                name, rid = str(data.get("name") or name), str(data.get("id") or rid)
            elif kind == "Scalar":
                metric = data["metric"]
                scalars.append((int(data["step"]), str(data["key"]), metric["data"], _seconds(metric["create_time"])))
        except (ValueError, KeyError, TypeError):
            bad += 1
    return name, rid, scalars, bad


def _proto_records(raws: Iterator[bytes], path: Path) -> tuple[str, str, list[Scalar], int]:
    """Version 2: ``(name, id, scalars, unreadable records)``, with swanlab's own schema."""
    try:
        from swanlab.proto.swanlab.record.v1.record_pb2 import Record
    except ImportError:
        raise InputError(f"{path}: a SwanLab run file of swanlab >= 0.8 (protobuf records); reading it needs "
                         f"the swanlab package that writes them: {INSTALL}") from None
    name, rid, scalars, bad = path.parent.name, path.parent.name, [], 0
    for raw in raws:
        record = Record()
        try:
            record.ParseFromString(raw)
        except Exception:  # protobuf's DecodeError: a damaged record
            bad += 1
            continue
        kind = record.WhichOneof("record_type")
        if kind == "start":
            name, rid = record.start.name or name, record.start.id or rid
        elif kind == "scalar":
            s = record.scalar
            when = s.timestamp.seconds + s.timestamp.nanos / 1e9
            scalars.append((int(s.step), s.key, s.value.number, when))
    return name, rid, scalars, bad


#: The record parser of each format version.
PARSERS = {1: _json_records, 2: _proto_records}


def _read_file(path: Path, notes: list[str]) -> tuple[str, str, list[Scalar]]:
    data = path.read_bytes()
    found = version(data, path, SWANLAB)
    if found not in PARSERS:
        raise InputError(f"{path}: SwanLab run file version {found}; this reader knows versions "
                         f"{', '.join(map(str, PARSERS))}")
    name, rid, scalars, bad = PARSERS[found](records(data, path.name, notes), path)
    if bad:
        notes.append(f"{path.name}: skipped {bad} record(s) that did not parse")
    return name, rid, scalars


def _number(value: Any) -> Any:
    """A logged value as a number (swanlab 0.6 writes NaN as the string "NaN"); else as it is."""
    if isinstance(value, str):
        try:
            return float(value)
        except ValueError:
            return value
    return value


def read_swanlab(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """SwanLab run file(s) (see the module docstring); ``x`` may be ``step``, ``wall_time`` (hours),
    a logged number (``train/global_step``), or ``cum:`` of one."""
    path = Path(path)
    files = run_files(path)
    if not files:
        raise InputError(f"{path}: no SwanLab run files (*{SUFFIX}) found")
    notes: list[str] = []
    runs: dict[str, tuple[str, list[list[Scalar]]]] = {}  # id -> (name, attempts)
    for f in files:
        name, rid, scalars = _read_file(f, notes)
        runs.setdefault(rid, (name, []))[1].append(scalars)
    taken: dict[str, int] = defaultdict(int)
    for name, _ in runs.values():
        taken[name] += 1
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for rid, (name, attempts) in runs.items():
        label = name if taken[name] == 1 else f"{name} [{rid}]"
        ids[label] = rid
        times = [when for scalars in attempts for _, _, _, when in scalars]
        if not times:
            continue
        t0 = min(times)
        run_rows: list[dict[str, Any]] = []
        for scalars in attempts:
            if run_rows:  # another attempt's directory: a resume may start at the step the last one ended on
                run_rows.append({RESTART: True})
            by_step: dict[int, dict[str, Any]] = {}
            for step, key, value, when in scalars:
                if key.startswith(SYSTEM):
                    continue
                row = by_step.setdefault(step, {"run": label, "step": step, "wall_time": (when - t0) / 3600.0})
                row[key] = _number(value)
            run_rows += by_step.values()
        run_rows, resumed = keep_resumed_attempts(run_rows, label)
        notes += resumed
        rows += run_rows
    if not rows:
        raise InputError(f"{path}: the SwanLab run file(s) hold no logged scalars")
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded,
                            run_ids=ids)
