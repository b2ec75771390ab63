"""Read Trackio's local store: Hugging Face's experiment tracker (``report_to="trackio"`` in TRL and
``transformers``), which keeps every project in one SQLite database, ``<TRACKIO_DIR>/<project>.db``
(by default ``~/.cache/huggingface/trackio``), online runs included (a Space syncs from it).

Trackio's Parquet export of a project (``<project>.parquet``, what a Trackio Space keeps in its
Hub dataset: the same rows, each metric a column of its own) is read too.

The database is read directly (no trackio install): table ``metrics``, one row per ``trackio.log``
call -- ``run_name``, ``step``, ``timestamp`` (ISO 8601) and the logged dict as JSON (NaN and
infinities as the strings ``"NaN"``, ``"Infinity"``, ``"-Infinity"``; media and tables as objects
with a ``_type``, which are not values; other nested dicts read as ``key.sub``, as Trackio's UI
shows them). Databases from before trackio 0.24 have no ``run_id``: a run is then its name.

Each run becomes rows in log order (``step``, ``wall_time`` = hours since the run's first log, and
the metrics), which :func:`scalerl.curves.rows.curves_from_rows` makes curves of. ``step`` is
Trackio's own counter: ``transformers``' callback does not pass one (Trackio counts its calls) and
logs the trainer's step as ``train/global_step``, so ``--x train/global_step`` (or
``train/num_tokens``) is the training progress of a TRL run.

**A resumed run.** ``transformers``' callback opens its run with ``resume="allow"``: a training
resumed from a checkpoint logs into the same run, and its ``train/global_step`` goes back to the
checkpoint's. What the abandoned attempt logged after that step (its evaluations included) is
dropped, as if it had not run; at that step, each row the resumed attempt logs takes the place of
the abandoned attempt's of its kind, whose other values stay under it (a loop resumed from its
step-N checkpoint that evaluates it first logs only that evaluation at N: step N's training stays).
Killed right after saving the checkpoint of the step it logged last, a training resumed from it
logs that step again without going back: that is a resume where it comes after the run's latest
launch (the ``_Created`` time ``trackio.init`` writes into the run's config at each launch; only the
latest is kept, and the Parquet export has none) -- one row of each kind there, the later. The
notes say how much. A run logged without
``train/global_step`` is checked the same way on ``step`` (a loop that passes its own step and
logs steps again after a resume).
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections import defaultdict
from datetime import datetime
from pathlib import Path
from typing import Any

from scalerl.curves.data import Curve
from scalerl.curves.attempts import RESTART, TRAINER_STEP, keep_resumed_attempts
from scalerl.curves.cells import logged
from scalerl.curves.rows import curves_from_rows, holds_numbers, text_columns, unknown_column, x_columns
from scalerl.curves.sqlite_db import DB_ERRORS, connect, tables
from scalerl.errors import InputError

#: The columns Trackio's ``metrics`` table has had since its first release.
METRICS_COLUMNS = {"run_name", "step", "timestamp", "metrics"}
#: Those of its Parquet export (the metrics spread into columns of their own) ...
PARQUET_COLUMNS = {"run_name", "step", "timestamp"}
#: ... and the ones of them that are Trackio's bookkeeping, not logged values.
BOOKKEEPING = {"id", "run_id", "timestamp", "run_name", "step", "log_id", "space_id"}
#: How Trackio writes the values JSON cannot hold.
NON_FINITE = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
#: Columns every row has besides the metrics.
SYNTHETIC = ("step", "wall_time")
#: The files a Trackio Space's dataset keeps beside a project's export (``<project>_system.parquet``, ...):
#: system metrics, configs and traces, which Trackio's own import passes over (review dt: a traces file was read
#: as a project of its own).
SIDECARS = ("_system", "_configs", "_traces")


def _columns(db: sqlite3.Connection) -> set[str]:
    return {row[1] for row in db.execute("PRAGMA table_info(metrics)")}


def is_trackio_db(path: Path) -> bool:
    """An SQLite database with Trackio's ``metrics`` table (and not MLflow's ``runs`` table)."""
    names = tables(path) if path.is_file() else set()
    if "metrics" not in names or "runs" in names:
        return False
    try:
        with connect(path) as db:
            return METRICS_COLUMNS <= _columns(db)
    except (*DB_ERRORS, InputError):
        return False


def is_trackio_parquet(path: Path) -> bool:
    """Trackio's Parquet export of a project (what a Trackio Space keeps in its Hub dataset): the
    flattened ``metrics`` table, with Trackio's ``run_name``, ``step`` and ``timestamp`` columns."""
    if path.suffix != ".parquet" or not path.is_file():
        return False
    import pyarrow.parquet as pq

    try:
        return PARQUET_COLUMNS <= set(pq.read_schema(path).names)
    except Exception:  # pyarrow's ArrowInvalid and OSError: not a readable Parquet file
        return False


def trackio_files(path: Path) -> list[Path]:
    """The Trackio projects ``path`` names: itself, or those of a Trackio directory (a project's
    database and its Parquet export side by side are one project: the database is read)."""
    if path.is_dir():
        dbs = [p for p in path.glob("*.db") if is_trackio_db(p)]
        stems = {p.stem for p in dbs}
        projects = stems | {p.stem for p in path.glob("*.parquet")}
        exports = [p for p in path.glob("*.parquet") if p.stem not in stems and not _sidecar(p.stem, projects)
                   and is_trackio_parquet(p)]
        return sorted(dbs + exports)
    return [path] if is_trackio_db(path) or is_trackio_parquet(path) else []


def _sidecar(stem: str, projects: set[str]) -> bool:
    """Whether ``stem`` names a side file of a project beside it (:data:`SIDECARS`)."""
    return any(stem.endswith(end) and stem[: -len(end)] in projects for end in SIDECARS)


def is_trackio(path: Path) -> bool:
    return bool(trackio_files(path))


def _value(value: Any) -> float | str | None:
    """A number (Trackio's spelled-out NaN / infinities included); another string is kept, for the
    reader to refuse where it is needed as a number; booleans, lists and nulls are not values."""
    if isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value)
    if isinstance(value, str):
        return NON_FINITE.get(value, value)
    return None


def _flatten(metrics: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested dicts as ``key.sub``; media and tables (objects with a ``_type``) left out."""
    out: dict[str, Any] = {}
    for key, value in metrics.items():
        if isinstance(value, dict):
            if "_type" not in value:
                out.update(_flatten(value, f"{prefix}{key}."))
        else:
            out[prefix + str(key)] = value
    return out


def _parse(metrics: bytes | str | dict[str, Any]) -> dict[str, Any] | None:
    """One logged row's metrics (flattened), or None where they are not a JSON object."""
    if isinstance(metrics, dict):  # a row of the Parquet export: nested dicts are its struct columns
        return _flatten(metrics) if any(isinstance(v, dict) for v in metrics.values()) else metrics
    try:
        values = json.loads(metrics)
    except (TypeError, ValueError):
        return None
    if not isinstance(values, dict):
        return None
    # A nested dict shows as a '{' past the first character: only then is the slower walk needed.
    return _flatten(values) if metrics.find(b"{" if isinstance(metrics, bytes) else "{", 1) > 0 else values


def _parquet_records(path: Path) -> list[tuple[str, str, str, int, dict[str, Any]]]:
    """Trackio's Parquet export as the database's records: (run key, run name, timestamp, step,
    the values logged in that row -- a column's null is a metric that row did not log)."""
    import pyarrow.parquet as pq

    try:
        rows = pq.read_table(path).to_pylist()
    except Exception as exc:  # pyarrow's ArrowInvalid, OSError
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None
    if rows and "id" in rows[0]:
        rows.sort(key=lambda r: r["id"])
    return [(r.get("run_id") or r["run_name"], r["run_name"], r["timestamp"], r["step"],
             {k: v for k, v in r.items() if k not in BOOKKEEPING and v is not None}) for r in rows]


def _runs(path: Path) -> tuple[list[tuple[str, str, list[tuple[str, int, bytes | str | dict[str, Any]]]]], dict[str, str]]:
    """``(run key, run name, [(timestamp, step, metrics), ...])`` per run, in log order; metrics as
    the database holds them (JSON) or as the Parquet export does (a dict). And each run's latest
    launch (:func:`_launches`: none for the Parquet export, which holds no configs)."""
    if path.suffix == ".parquet":
        return _group_runs(_parquet_records(path)), {}
    try:
        with connect(path) as db:
            key = "run_id" if "run_id" in _columns(db) else "run_name"
            records = db.execute(f"SELECT {key}, run_name, timestamp, step, metrics FROM metrics ORDER BY id").fetchall()
            launches = _launches(db, key)
    except DB_ERRORS as exc:
        raise InputError(f"{path}: not a readable Trackio database ({exc})") from None
    return _group_runs(records), launches


def _launches(db: sqlite3.Connection, key: str) -> dict[str, str]:
    """Each run's latest launch: the ``_Created`` time of its config. ``trackio.init`` sets it at every
    launch, and the launch's first log call replaces the run's config row with it (trackio 0.43's
    ``INSERT OR REPLACE INTO configs``), so a run a resumed training logged into again (``resume=
    "allow"``) says when the last attempt began. A database without configs (or with an unreadable
    one): none."""
    if not db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'configs'").fetchone():
        return {}
    out = {}
    for run_key, config in db.execute(f"SELECT {key}, config FROM configs").fetchall():
        created = (_parse(config) or {}).get("_Created")
        if isinstance(created, str):
            out[str(run_key)] = created
    return out


def _group_runs(records) -> list[tuple[str, str, list]]:
    runs: dict[str, tuple[str, list]] = {}
    for run_key, name, stamp, step, metrics in records:
        runs.setdefault(str(run_key or name), (str(name), []))[1].append((stamp, step, metrics))
    return [(k, name, logs) for k, (name, logs) in runs.items()]


class _Log:
    """Every run of every project a path holds, parsed: ``runs`` = ``[(label, [(hours, step, metrics),
    ...]), ...]`` in log order, ``keys`` every metric name logged, ``unreadable`` rows skipped."""

    def __init__(self, path: Path) -> None:
        dbs = trackio_files(path)
        if not dbs:
            raise InputError(f"{path}: no Trackio project (an SQLite file with Trackio's 'metrics' table, or its "
                             "Parquet export)")
        found, launches = [], {}
        for db in dbs:
            runs, launched = _runs(db)
            found += [(db, *run) for run in runs]
            launches.update({(db, k): v for k, v in launched.items()})
        if not found:
            raise InputError(f"{path}: the Trackio database holds no logged metrics")
        # Names as Trackio shows them; the project in front where a directory holds several; two runs
        # of one name (Trackio allows it) told apart by their id.
        named = [(f"{db.stem}/{name}" if len(dbs) > 1 else name, key, logs, launches.get((db, key)))
                 for db, key, name, logs in found]
        count: dict[str, int] = defaultdict(int)
        for name, *_ in named:
            count[name] += 1
        self.keys: set[str] = set()
        self.unreadable = 0
        self.runs: list[tuple[str, list[tuple[float, int, dict[str, Any]]]]] = []
        self.ids: dict[str, str] = {}  # run name -> Trackio's run id (trackio >= 0.24; older runs have none)
        self.relaunched: dict[str, int] = {}  # run -> the index of the first row its latest launch logged
        self.no_clock: list[str] = []  # runs whose timestamps mix local time and UTC: no wall_time
        for name, key, logs, launched in named:
            label = name if count[name] == 1 else f"{name} [{key[:8]}]"
            self.ids[label] = key
            try:
                stamps = [datetime.fromisoformat(stamp) for stamp, _, _ in logs]
            except (TypeError, ValueError):
                raise InputError(f"{path}: run {label!r} has a timestamp that is not ISO 8601") from None
            if len({stamp.tzinfo is None for stamp in stamps}) > 1:
                # trackio < 0.17 wrote local time without a zone, later ones UTC: a run resumed after an upgrade
                # holds both, and the local time's zone is nowhere (review dt: a TypeError traceback).
                self.no_clock.append(label)
                stamps = [stamp.replace(tzinfo=None) for stamp in stamps]
            t0 = min(stamps)
            parsed = []
            for when, (_, step, metrics) in zip(stamps, logs):
                values = _parse(metrics)
                if values is None:
                    self.unreadable += 1
                    continue
                self.keys.update(values)
                parsed.append(((when - t0).total_seconds() / 3600.0, step, values))
            start = None if label in self.no_clock else _launch_start(launched, stamps, t0)
            if start is not None:
                # The rows logged at or after the latest launch began are its own: the index of the first.
                self.relaunched[label] = next((i for i, (hours, _, _) in enumerate(parsed) if hours >= start), len(parsed))
            self.runs.append((label, parsed))


def _launch_start(launched: str | None, stamps: list[datetime], t0: datetime) -> float | None:
    """Hours from ``t0`` to a run's latest launch, where it began after the run's first log (a resumed
    training's: the first launch began before any); None where there is none or it is unreadable."""
    if launched is None:
        return None
    try:
        when = datetime.fromisoformat(launched)
        hours = (when - t0).total_seconds() / 3600.0
    except (TypeError, ValueError):  # (unreadable; or one time with a zone and one without)
        return None
    return hours if hours > 0 and any(stamp < when for stamp in stamps) else None


def read_trackio(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """A Trackio database (``<project>.db``) or a Trackio directory of them; ``x`` may be ``step``
    (Trackio's counter), ``wall_time`` (hours), any logged number (``train/global_step``,
    ``train/num_tokens``), or ``cum:`` of one."""
    path = Path(path)
    log = _Log(path)
    available = log.keys | set(SYNTHETIC)
    logged_rows = [values for _, parsed in log.runs for _, _, values in parsed]
    # A column never logged, or logged with no number in it (null in every row): the log's columns are listed,
    # those of text said (review fr) -- the rows below keep only the columns read, and listed those alone (FS).
    if y not in available or (y in log.keys and not holds_numbers(logged_rows, y)):
        raise unknown_column(path, "y", y, available, text=text_columns(logged_rows, log.keys))
    # Only the columns the curve reads are converted (a TRL row logs ~40 metrics, verl's ~100).
    wanted = ({y, TRAINER_STEP, *x_columns(path, available, x)} - set(SYNTHETIC)) & log.keys
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    if log.no_clock and "wall_time" in x:
        raise InputError(f"{path}: run {log.no_clock[0]!r} logged its times in local time (trackio < 0.17) and in "
                         "UTC (trackio >= 0.17: resumed after an upgrade), so its wall_time cannot be told; read it "
                         "against its steps (--x train/global_step, or --x step)")
    if log.no_clock:
        notes.append(f"run(s) {', '.join(map(repr, log.no_clock))}: times in local time and in UTC (trackio "
                     "upgraded mid-run): no wall_time, and a resume at the step logged last is not told by its time")
    for label, parsed in log.runs:
        run_rows = []
        kinds: dict[int, frozenset] = {}  # what each row logs, of every key (a row keeps only those read)
        for i, (hours, step, values) in enumerate(parsed):
            if i == log.relaunched.get(label):  # a resumed training's launch: another attempt begins
                run_rows.append({RESTART: True})
            row: dict[str, Any] = {"run": label, "step": step}
            if label not in log.no_clock:
                row["wall_time"] = hours
            row.update({k: v for k in wanted & values.keys() if (v := _value(values[k])) is not None})
            kinds[id(row)] = frozenset(k for k, v in values.items() if logged(_value(v)))
            run_rows.append(row)
        run_rows, resumed = keep_resumed_attempts(run_rows, label, kinds)
        notes += resumed
        rows.extend(run_rows)
    if log.unreadable:
        notes.append(f"{log.unreadable} logged row(s) whose metrics are not a JSON object were skipped")
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded,
                            run_ids=log.ids)
