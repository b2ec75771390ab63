"""Read an MLflow tracking store as it lies on disk: the SQLite database (MLflow 3's default
backend; verl's ``trainer.logger=['mlflow']`` writes ``sqlite:////tmp/mlruns.db`` unless
``MLFLOW_TRACKING_URI`` says otherwise), a file store (an ``mlruns`` directory, MLflow 1-2's
default: ``<experiment>/<run>/meta.yaml`` and one ``metrics/<key>`` file per metric), or a tracking
server's address (``http(s)://...``, read through its REST API: :mod:`scalerl.curves.mlflow_server`).

Both are read directly -- the SQLite tables ``runs``, ``metrics`` and ``tags``, the file store's
``meta.yaml`` and ``timestamp value step`` lines, all unchanged since MLflow 1.x -- so forecasting
from them needs neither MLflow (and its database stack) nor a tracking server.

Each run becomes rows, one per logged step: ``run``, ``step``, ``wall_time`` (hours since the run's
first metric of those read; every metric is read for ``--x wall_time``) and every metric logged at that step, which
:func:`scalerl.curves.rows.curves_from_rows` makes curves of (so ``--x cum:timing_s/step`` works as
on verl's console log). Deleted runs are left out; a metric logged again at the same step (a
resumed run repeating it) keeps its latest value; a training resumed from a checkpoint into a new
run of the same name (a Hugging Face / TRL ``Trainer``'s resume) is joined to the run it continues;
each is said in the notes.
"""

from __future__ import annotations

import math
import urllib.parse
from collections import defaultdict
from pathlib import Path
from typing import Any, Callable, Collection, Iterable

import yaml

from scalerl.curves.attempts import continues
from scalerl.curves.data import Curve
from scalerl.curves.mlflow_server import Server, is_server
from scalerl.curves.cells import logged
from scalerl.curves.rows import curves_from_rows, unknown_column, x_columns
from scalerl.curves.sqlite_db import DB_ERRORS, connect, tables
from scalerl.errors import InputError

RUN_NAME_TAG = "mlflow.runName"
#: Columns every row has besides the metrics.
SYNTHETIC = ("step", "wall_time")
#: Milliseconds (MLflow's timestamps) per hour (``wall_time``'s unit, as in the TensorBoard reader).
MS_PER_HOUR = 3_600_000.0

#: What MLflow's SQL store writes for an infinity (``sanitize_metric_value``: SQL cannot hold one): read back as
#: one, to be dropped and counted as the other readers drop theirs (review dt).
DBL_MAX = 1.7976931348623157e308
#: The prefix of the system metrics MLflow's monitor logs (``MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING``): at steps of
#: its own (a sample every 10 s, from 0 in every run), not the training's -- they say neither where a run starts
#: nor when a training step was logged (review dt).
SYSTEM = "system/"

# One metric value: (run id, run name, lifecycle stage, key, value, step, timestamp in ms).
Record = tuple[str, str, str, str, float, int, int]


def _run_metas(directory: Path) -> list[Path]:
    """``meta.yaml`` of every run under an ``mlruns`` directory, an experiment's, or one run's."""
    found = [directory / "meta.yaml", *directory.glob("*/meta.yaml"), *directory.glob("*/*/meta.yaml")]
    return sorted(p for p in found if p.is_file() and (p.parent / "metrics").is_dir() and ".trash" not in p.parts)


def is_mlflow_store(path: Path) -> bool:
    """An MLflow SQLite database (with ``runs`` and ``metrics`` tables) or a file store."""
    if path.is_dir():
        return bool(_run_metas(path))
    return {"runs", "metrics"} <= tables(path)


def _sqlite_query(path: Path, query: str, params: tuple = ()) -> list[tuple]:
    try:
        with connect(path) as db:
            return db.execute(query, params).fetchall()
    except DB_ERRORS as exc:
        raise InputError(f"{path}: not a readable MLflow database ({exc})") from None


def _sqlite_records(path: Path, keys: Collection[str]) -> list[Record]:
    # The mlflow.runName tag first: older stores leave runs.name empty and keep the name there.
    query = f"""
        SELECT r.run_uuid, COALESCE(NULLIF(t.value, ''), NULLIF(r.name, ''), substr(r.run_uuid, 1, 8)),
               r.lifecycle_stage, m.key, CASE WHEN m.is_nan THEN NULL ELSE m.value END, m.step, m.timestamp
        FROM metrics m JOIN runs r ON r.run_uuid = m.run_uuid
        LEFT JOIN tags t ON t.run_uuid = r.run_uuid AND t.key = ?
        WHERE m.key IN ({", ".join("?" * len(keys))})
        ORDER BY r.start_time, r.run_uuid, m.step, m.timestamp
    """
    keys = sorted(keys)
    rows = _sqlite_query(path, query, (RUN_NAME_TAG, *keys))
    return [(rid, name, stage, key, math.nan if v is None else float(v), int(step or 0), int(ts or 0))
            for rid, name, stage, key, v, step, ts in rows]


def _metric_lines(metrics_dir: Path) -> Iterable[tuple[str, Path]]:
    for f in sorted(metrics_dir.rglob("*")):
        if f.is_file():
            yield f.relative_to(metrics_dir).as_posix(), f


def _file_store_records(path: Path, keys: Collection[str]) -> list[Record]:
    records: list[Record] = []
    for meta_path in _run_metas(path):
        try:
            meta = yaml.safe_load(meta_path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError as exc:
            raise InputError(f"{meta_path}: not valid YAML ({exc})") from None
        run_dir = meta_path.parent
        rid = str(meta.get("run_id") or meta.get("run_uuid") or run_dir.name)
        tag = run_dir / "tags" / RUN_NAME_TAG
        name = str(meta.get("run_name") or (tag.read_text(encoding="utf-8").strip() if tag.is_file() else "") or rid[:8])
        stage = str(meta.get("lifecycle_stage", "active"))
        for key, f in _metric_lines(run_dir / "metrics"):
            if key not in keys:
                continue
            for lineno, line in enumerate(f.read_text(encoding="utf-8", errors="replace").splitlines(), start=1):
                parts = line.split()
                if not parts:
                    continue
                try:
                    ts, value = int(parts[0]), float(parts[1])
                    step = int(parts[2]) if len(parts) > 2 else 0  # MLflow < 1.0 logged no step
                except (ValueError, IndexError):
                    raise InputError(f"{f}: line {lineno} is not 'timestamp value step': {line[:60]!r}") from None
                records.append((rid, name, stage, key, value, step, ts))
    return records


def _last_line(f: Path) -> str:
    """The last non-blank line of a (possibly long) metric file, read from its end."""
    with open(f, "rb") as fh:
        fh.seek(0, 2)
        size = fh.tell()
        fh.seek(max(0, size - 4096))
        lines = [line for line in fh.read().decode("utf-8", errors="replace").splitlines() if line.strip()]
    return lines[-1] if lines else ""


def step_ranges(path: Path | Server) -> dict[str, tuple[int, int]]:
    """Each run's first and last step over every metric it logged (not only those read; not the system
    metrics, whose steps are the monitor's): what tells
    whether a run continues another. A file store's metric files are appended in step order, so
    their first and last lines say it; a tracking server is not asked (empty: the readers fall back
    to the steps of the metrics read)."""
    if isinstance(path, Server):
        return {}
    if not path.is_dir():
        rows = _sqlite_query(path, "SELECT run_uuid, MIN(step), MAX(step) FROM metrics WHERE key NOT LIKE ? "
                                   "GROUP BY run_uuid", (SYSTEM + "%",))
        return {rid: (int(lo or 0), int(hi or 0)) for rid, lo, hi in rows}
    ranges: dict[str, tuple[int, int]] = {}
    for meta_path in _run_metas(path):
        try:
            meta = yaml.safe_load(meta_path.read_text(encoding="utf-8")) or {}
        except yaml.YAMLError:
            continue  # the records' reading says what is wrong with it
        rid = str(meta.get("run_id") or meta.get("run_uuid") or meta_path.parent.name)
        for key, f in _metric_lines(meta_path.parent / "metrics"):
            if key.startswith(SYSTEM):
                continue
            with open(f, encoding="utf-8", errors="replace") as fh:
                first = next((line for line in fh if line.strip()), "")
            for line in (first, _last_line(f)):
                parts = line.split()
                try:
                    step = int(parts[2]) if len(parts) > 2 else 0
                except ValueError:
                    continue
                lo, hi = ranges.get(rid, (step, step))
                ranges[rid] = (min(lo, step), max(hi, step))
    return ranges


def metric_keys(path: Path | Server) -> set[str]:
    """Every metric name the store holds."""
    if isinstance(path, Server):
        return path.metric_keys()
    if path.is_dir():
        return {key for meta in _run_metas(path) for key, _ in _metric_lines(meta.parent / "metrics")}
    return {key for (key,) in _sqlite_query(path, "SELECT DISTINCT key FROM metrics")}


def _join_resumed(steps: dict[str, dict[int, dict]], names: dict[str, str],
                  ranges: Callable[[], dict[str, tuple[int, int]]]) -> list[str]:
    """A training resumed from a checkpoint into a new MLflow run of the same name (what a Hugging Face
    / TRL ``Trainer`` does unless told the run id): a run that starts after the first step of an
    earlier run of its name, and no later than one past its last, continues it. Joined in place
    (under the earlier run's id; the earlier run's steps from the later one's first step on go). A
    run's first and last steps are those of every metric it logged (``ranges()``, asked only where a
    name has several runs -- it reads the whole store's steps: its training metrics
    too, where the resumed attempt's first evaluation may come after the abandoned one's last), else
    those of the metrics read. At the later run's first step the two are merged, the later one's
    values winning: a resumed TRL training logs its profiling at the checkpoint's own step, which the
    earlier run may have evaluated (and the later one does not evaluate again). Returns the notes."""
    notes = []
    by_name: dict[str, list[str]] = defaultdict(list)
    for rid in steps:
        by_name[names[rid]].append(rid)
    repeated = {name: rids for name, rids in by_name.items() if len(rids) > 1}
    known = ranges() if repeated else {}
    for name, rids in repeated.items():
        rids.sort(key=lambda rid: min(ts for metrics in steps[rid].values() for ts, _ in metrics.values()))
        span = {rid: known.get(rid, (min(steps[rid]), max(steps[rid]))) for rid in rids}
        head = rids[0]
        for rid in rids[1:]:
            start = span[rid][0]
            if continues(span[head][0], span[head][1], start):
                dropped = [step for step in steps[head] if step > start]
                for step in dropped:
                    del steps[head][step]
                later = steps.pop(rid)
                if start in later and start in steps[head]:
                    dropped.append(start)
                    later[start] = {**steps[head][start], **later[start]}
                steps[head].update(later)
                span[head] = (span[head][0], max(span[head][1], span[rid][1]))
                notes.append(f"MLflow run {rid[:8]} continues run {head[:8]} ({name!r}) from step {start} (a training "
                             f"resumed from a checkpoint): joined, the {len(dropped)} step(s) the first logged from "
                             "there on dropped")
            else:
                head = rid
    return notes


def read_mlflow_rows(path: Path | Server, keys: Collection[str]) -> tuple[list[dict[str, Any]], list[str], dict[str, str]]:
    """Rows (``run``, ``step``, ``wall_time``, the metrics among ``keys``...) of every live run, notes,
    and each run's id by its name in the rows. Only ``keys`` are read: a store holds every metric a trainer logs (verl: ~100 a step)."""
    if isinstance(path, Server):
        records = path.records(keys)
    else:
        records = _file_store_records(path, keys) if path.is_dir() else _sqlite_records(path, keys)
    if not records:
        raise InputError(f"{path}: the MLflow store holds no metrics")
    names: dict[str, str] = {}
    deleted: set[str] = set()
    # run id -> step -> key -> (timestamp, value); the latest timestamp wins.
    steps: dict[str, dict[int, dict[str, tuple[int, float]]]] = defaultdict(lambda: defaultdict(dict))
    repeated: dict[str, int] = defaultdict(int)
    for rid, name, stage, key, value, step, ts in records:
        if stage == "deleted":
            deleted.add(name)
            continue
        names[rid] = name
        if abs(value) == DBL_MAX:
            value = math.copysign(math.inf, value)
        seen = steps[rid][step].get(key)
        # (the same value again is no sign of a resume: a Trainer logs its epoch with the step's training and
        # evaluation logs -- review dt)
        repeated[name] += seen is not None and not (seen[1] == value or math.isnan(seen[1]) and math.isnan(value))
        if seen is None or ts >= seen[0]:
            steps[rid][step][key] = (ts, value)
    notes = _join_resumed(steps, names, lambda: step_ranges(path))
    # Two runs of one name (MLflow allows it): told apart by their id.
    taken = defaultdict(int)
    for rid in steps:
        taken[names[rid]] += 1
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for rid, by_step in steps.items():
        label = names[rid] if taken[names[rid]] == 1 else f"{names[rid]} [{rid[:8]}]"
        ids[label] = rid
        t0 = min(ts for metrics in by_step.values() for ts, _ in metrics.values())
        for step in sorted(by_step):
            metrics = by_step[step]
            row: dict[str, Any] = {"run": label, "step": step,
                                   "wall_time": (max(ts for ts, _ in metrics.values()) - t0) / MS_PER_HOUR}
            row.update({key: value for key, (_, value) in metrics.items()})
            rows.append(row)
    if deleted:
        notes.append(f"deleted MLflow run(s) left out: {', '.join(sorted(deleted))}")
    for name, n in repeated.items():
        if n:
            notes.append(f"run {name!r}: {n} metric value(s) logged again at the same step (a resumed run?): the latest kept")
    return rows, notes, ids


def read_mlflow(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """An MLflow tracking store (SQLite database or ``mlruns`` directory); ``x`` may be ``step``,
    ``wall_time`` (hours since the run's first logged metric of any key), a metric, or ``cum:`` of one. MLflow keys cannot hold ``@``: verl's
    adapter logs ``mean@1`` as ``mean_at_1``, and either spelling is accepted."""
    store: Path | Server = Server(path) if is_server(path) else Path(path)
    where = path if is_server(path) else store  # how errors and curves name the source
    available = metric_keys(store) | set(SYNTHETIC)
    stored = {name: name.replace("@", "_at_") if "@" in name and name not in available else name for name in (x, y)}
    if stored[y] not in available:
        raise unknown_column(where, "y", y, available)
    wanted = {stored[y], *x_columns(where, available, stored[x])} - set(SYNTHETIC)
    if x == "wall_time":
        # The clock starts at the run's first metric of any key (as the TensorBoard and row readers
        # measure it), not at its first evaluation: that would put the first evaluation at compute 0.
        # Not the system metrics': logged at steps of their own, a step's time would be theirs.
        wanted = {k for k in available if not k.startswith(SYSTEM)} - set(SYNTHETIC) | wanted
    rows, notes, ids = read_mlflow_rows(store, wanted)
    renamed = {name: key for name, key in stored.items() if name != key}
    if renamed:
        rows = [{**r, **{name: r[key] for name, key in renamed.items() if key in r}} for r in rows]
    if not any(logged(r.get(y)) for r in rows):  # NaN at every step: the store's metrics listed (review FX)
        raise unknown_column(where, "y", y, available, text={y})
    name = urllib.parse.urlsplit(path).netloc if is_server(path) else store.stem
    return curves_from_rows(where, rows, x, y, default_name=name, notes=notes, y_scale=y_scale, bounded=bounded,
                            run_ids=ids)
