"""Read W&B's local run files: ``wandb/run-<date>-<id>/run-<id>.wandb`` (``offline-run-...`` too).

W&B writes every run's history to this file on the training machine first -- online runs as
well as offline ones, which ``wandb sync`` uploads from it -- so a run's metrics can be forecast
where it trains, without an export and without the network. verl, TRL, OpenRLHF and most RL
trainers log to W&B by default.

The file is a LevelDB-style log: a 7-byte header (``:W&B``, 0xBEE1, version 0), then 32 KiB
blocks of chunks, each with a 7-byte header (CRC-32 of its type byte and data, length, type:
full / first / middle / last piece of one record). This module undoes that framing (the format
has not changed since wandb 0.10; wandb itself now reads it in its Go core only) and parses each
record with the protobuf schema of the installed ``wandb`` package -- the one that wrote the
file, so a newer schema is read by its own code. History records become rows: ``step`` (W&B's
``_step``), ``wall_time`` (hours: ``_runtime`` / 3600), ``_step``, ``_runtime`` (seconds),
``_timestamp`` and every numeric value logged at that step (a nested dict as ``key.sub``, as W&B
shows it, whether the writer logged a key path or, as older wandb did, one JSON object), which
:func:`scalerl.curves.rows.curves_from_rows` makes curves of (so ``--x cum:timing_s/step`` works).

A path may be one ``.wandb`` file, a run directory, or a ``wandb`` directory of runs (each run a
curve, named by its display name). A resumed run (a second directory with the same run id) is
joined to the first, in the order they started: a ``_runtime`` that started over (an offline
resume) continues from the first file's last value, and so does a ``_step`` that started over (an
offline resume of a trainer that does not pass its own step, such as TRL). Where the run's step goes
back -- the trainer's ``train/global_step`` where it logs one, else W&B's -- the resumed attempt
logged the steps after its checkpoint again, and the abandoned attempt's rows from that step on are
dropped (at that step, merged under the resumed attempt's rows of their kind:
:func:`scalerl.curves.attempts.drop_abandoned_attempts`). Where a later file starts at the very step the earlier ones ended on (the step does not go
back there), and where a file starts at step 0 after attempts that logged step 0 alone (a run that
started over: not a ``_step`` to continue), the earlier rows at that step are merged under the later
file's (its values win): a trainer may re-log only part of that step (verl's validation at the
checkpoint's step, whose training the checkpoint holds). OpenRLHF logs its evaluations' step as ``eval/global_step``, its training rows'
``train/global_step``: an evaluation row's is taken as its ``train/global_step`` too, so ``--x
train/global_step`` places it at the step it evaluated (its asynchronous trainer logs it after later
steps; a carried or ``cum:`` x is then that step's as well). A torn last record (the run
was killed mid-write) and damaged records (checksum or framing) are skipped and counted in the notes.
"""

from __future__ import annotations

import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any, Iterator

from scalerl.curves.data import Curve
from scalerl.curves.leveldb_log import FILE_HEADER, Kind, has_ident, records, version
from scalerl.curves.attempts import TRAINER_STEP, keep_resumed_attempts
from scalerl.curves.rows import any_number, curves_from_rows, unknown_column, x_columns
from scalerl.errors import InputError

SUFFIX = ".wandb"
WANDB = Kind(b":W&B", 0xBEE1, "W&B run file")
VERSION = 0
#: OpenRLHF's evaluation rows log their training step under this name, its training rows under
#: ``train/global_step`` (openrlhf/utils/logging_utils.py: ``log_eval`` / ``log_train``).
EVAL_STEP = "eval/global_step"
#: Columns every row has besides the metrics (W&B's own ``_step``, ``_runtime``, ``_timestamp`` too).
SYNTHETIC = ("step", "wall_time")
SECONDS_PER_HOUR = 3600.0
#: A history value's JSON text where the row logged no number there (:func:`scalerl.curves.cells.logged`).
UNLOGGED_JSON = frozenset({"null", "NaN", "Infinity", "-Infinity", '""'})
INSTALL = "pip install wandb (or pip install 'scalerl[wandb]')"
#: The start time W&B puts in a run directory's name.
STARTED = re.compile(r"run-(\d{8}_\d{6})-")


def is_wandb_file(path: Path) -> bool:
    return has_ident(path, WANDB)


def run_files(path: Path) -> list[Path]:
    """The ``.wandb`` files of ``path``: itself, a run directory's, or those of a ``wandb`` directory's
    runs (``latest-run``, a link to one of them, left out)."""
    if path.is_file():
        return [path]
    found = [*path.glob(f"*{SUFFIX}"), *(f for d in path.iterdir() if d.is_dir() and d.name != "latest-run"
                                         for f in d.glob(f"*{SUFFIX}"))] if path.is_dir() else []
    # In the order the attempts started (a resumed run's later attempt joins its earlier one): by the
    # start time in the run directory's name (run-20251201_103000-<id>, offline-run-...), then the
    # number W&B appends where an attempt of the same run started in the same second (<id>-1, <id>-2:
    # a short first attempt and its resume), then the path.
    return sorted((f for f in found if f.is_file()), key=lambda f: (_started(f), _same_second(f), str(f)))


def runs_without_file(path: Path) -> list[str]:
    """The run directories of a ``wandb`` directory ``path`` that hold no ``.wandb`` file (``run-<time>-<id>/``
    with only ``files/`` and ``logs/``: copied without it, or cleaned after a sync) -- left out of its runs, said
    in the notes (review en: four of six runs were skipped without a word)."""
    if not path.is_dir():
        return []
    return sorted(d.name for d in path.iterdir() if d.is_dir() and d.name != "latest-run"
                  and STARTED.search(d.name) and not any(d.glob(f"*{SUFFIX}")))


def _started(f: Path) -> str:
    match = STARTED.search(f.parent.name)
    return match.group(1) if match else ""


def _same_second(f: Path) -> int:
    """The number W&B appended to a run directory's name (``offline-run-<time>-<id>-1``) because one of
    the same run had started in the same second; 0 for none. Sorted by the path alone, ``<id>-1/``
    came before ``<id>/`` (``-`` sorts before ``/``): the resumed attempt joined as the earlier one."""
    run_id = f.stem[len("run-"):] if f.stem.startswith("run-") else ""
    name = f.parent.name
    at = name.rfind(f"-{run_id}-") if run_id else -1
    tail = name[at + len(run_id) + 2:] if at >= 0 else ""
    return int(tail) if tail.isdigit() else 0


def is_wandb_run(path: Path) -> bool:
    """A W&B run file, or a directory holding one (a run's) or several (``wandb/``'s runs)."""
    if path.is_file():
        return path.suffix == SUFFIX or is_wandb_file(path)
    return path.is_dir() and any(is_wandb_file(f) for f in run_files(path))


def _records(path: Path, notes: list[str]) -> Iterator[bytes]:
    """The serialized records of one file, in order (framing undone, checksums checked)."""
    data = path.read_bytes()
    found = version(data, path, WANDB)
    if found != VERSION:
        raise InputError(f"{path}: W&B run file version {found}; this reader knows version {VERSION}")
    return records(data, path.name, notes)


def _record_class():
    try:
        from wandb.proto import wandb_internal_pb2
    except ImportError:
        raise InputError(f"reading a W&B run file needs the wandb package that writes them: {INSTALL}") from None
    return wandb_internal_pb2.Record


class _Run:
    """One W&B run (one or more files: a resumed run continues in a new directory)."""

    def __init__(self, run_id: str, name: str) -> None:
        self.run_id, self.name = run_id, name
        self.rows: list[tuple[int, dict[str, str]]] = []  # (step, key -> value as JSON text), attempts in order
        self.last_step = -1
        self.runtime = 0.0  # the largest _runtime so far (seconds)
        self.restarted = 0  # later files whose _runtime started over
        self.steps_restarted = 0  # later files whose _step started over
        self.abandoned = 0  # earlier attempts' rows from a later file's first step on, dropped

    def add(self, history: list[tuple[int, dict[str, str]]]) -> None:
        """One file's history rows, after the earlier files'. An offline run resumed in a new
        directory counts ``_runtime`` from 0 again, and ``_step`` too where the trainer does not pass
        its own step (TRL does not); online, W&B continues both from the server. Both are continued
        from the earlier files' last values, so that they keep counting across the attempts. A step
        logged in several records of one file is one row (the later value of a key wins)."""
        if not history:
            return
        _flatten_objects(history)
        first = next((_number(v["_runtime"]) for _, v in history if "_runtime" in v), None)
        offset = self.runtime if self.rows and first is not None and first < self.runtime else 0.0
        self.restarted += offset > 0
        start = history[0][0]
        carried: dict[str, str] = {}  # an abandoned attempt's values at the step this file starts at
        if self.rows and start == self.last_step:
            # The attempt resumed at the very step the earlier ones ended on (a trainer that passes its
            # own step: scalerl stopped at step 5, its checkpoint at 4): the step does not go back,
            # and keep_resumed_attempts -- which drops an abandoned attempt's rows where it does --
            # kept both rows of step 5. After attempts that logged step 0 alone, a first step 0 is a
            # run that started over (resumed with no checkpoint: scalerl; verl's evaluation before
            # training), which, continued as a _step that started over, moved every later row one
            # step on. The earlier rows at that step are an abandoned attempt's -- merged under the
            # resumed one's, not dropped: a trainer that re-logs only part of the step (verl resumed
            # from the step-N checkpoint logs its validation at N, not step N's training, which the
            # checkpoint holds) keeps the rest (dropped, cum:timing_s/step came out a step short).
            at_start = [values for step, values in self.rows if step >= start]
            self.rows = [(step, values) for step, values in self.rows if step < start]
            self.abandoned += len(at_start)
            for values in at_start:
                carried.update(values)
            self.last_step = max((step for step, _ in self.rows), default=-1)
        step_offset = self.last_step + 1 if self.rows and start == 0 else 0
        self.steps_restarted += step_offset > 0
        merged: dict[int, dict[str, str]] = {}
        for step, values in history:
            if "_runtime" in values:
                runtime = _number(values["_runtime"]) + offset
                if offset:
                    values["_runtime"] = repr(runtime)
                self.runtime = max(self.runtime, runtime)
            if step_offset:
                step += step_offset
                values["_step"] = str(step)
            merged.setdefault(step, dict(carried) if step == start + step_offset else {}).update(values)
        self.rows.extend(merged.items())
        self.last_step = max(self.last_step, *merged)


def _read_runs(path: Path, notes: list[str]) -> list[_Run]:
    Record = _record_class()
    runs: dict[str, _Run] = {}
    for f in run_files(path):
        run: _Run | None = None
        history: list[tuple[int, dict[str, str]]] = []
        undecodable = 0
        for raw in _records(f, notes):
            record = Record()
            try:
                record.ParseFromString(raw)
            except Exception:  # protobuf's DecodeError: a damaged record
                undecodable += 1
                continue
            kind = record.WhichOneof("record_type")
            if kind == "run":
                rid = record.run.run_id or f.stem
                run = runs.get(rid) or runs.setdefault(rid, _Run(rid, record.run.display_name or rid))
            elif kind == "history":
                if run is None:  # no run record before the history: name it after the file
                    run = runs.setdefault(f.stem, _Run(f.stem, f.stem))
                values: dict[str, str] = {}
                for item in record.history.item:  # inlined: ~100 items a step, the reader's hot loop
                    nested = item.nested_key  # a key path; W&B shows nested dicts joined by dots
                    values[nested[0] if len(nested) == 1 else ".".join(nested) if nested else item.key] = item.value_json
                step = record.history.step.num if record.history.HasField("step") else int(_number(values.get("_step", "0")))
                history.append((step, values))
        if run is not None:
            run.add(history)
        if undecodable:
            notes.append(f"{f.name}: skipped {undecodable} record(s) that did not parse")
    return list(runs.values())


def last_logged_step(path: Path) -> int:
    """The last step of ``path``'s history records (-1: none), as W&B wrote them (no attempts joined):
    what a resumed writer reads of what a killed attempt got to write."""
    Record = _record_class()
    last = -1
    for raw in _records(path, []):
        record = Record()
        try:
            record.ParseFromString(raw)
        except Exception:  # noqa: BLE001 -- protobuf's DecodeError: a damaged record
            continue
        if record.WhichOneof("record_type") == "history" and record.history.HasField("step"):
            last = max(last, record.history.step.num)
    return last


def exit_code(path: Path) -> int | None:
    """The exit code of the run in ``path`` (one ``.wandb`` file); None where it holds no exit record:
    the run has not finished -- or W&B's service process, which writes the file's buffered end only
    as it closes the run's stream, after ``finish()`` has returned, has not got there yet
    (:func:`scalerl.train.loggers.wait_for_run_file` waits for it). Searched from the end: wandb-core
    writes the exit record last (wandb 0.17's own writer put a few records after it)."""
    if path.stat().st_size < FILE_HEADER.size:  # created, its header not written yet
        return None
    Record = _record_class()
    for raw in reversed(list(_records(path, []))):
        record = Record()
        try:
            record.ParseFromString(raw)
        except Exception:  # noqa: BLE001 -- protobuf's DecodeError: a damaged record
            continue
        if record.WhichOneof("record_type") == "exit":
            return record.exit.exit_code
    return None


def _flatten_objects(history: list[tuple[int, dict[str, str]]]) -> None:
    """Older wandb logs a nested dict as one JSON object under its top key: spread it into the
    ``key.sub`` values newer wandb writes. Found per key from its first value (a set union and a
    short scan, not a test of every value: this runs on every record of the file)."""
    keys = set().union(*(values for _, values in history))
    objects = [k for k in keys if next(v[k] for _, v in history if k in v)[:1] == "{"]
    for key in objects:
        for _, values in history:
            if key in values:
                values.update(_flatten(key, values.pop(key)))


def _flatten(key: str, text: str) -> dict[str, str]:
    """A JSON object logged under ``key`` as W&B shows it: ``key.sub`` per plain value (recursively);
    media, histograms and tables (objects with a ``_type``) stay one value, which is not a number."""
    try:
        value = json.loads(text)
    except ValueError:
        return {key: text}
    if not isinstance(value, dict) or "_type" in value:
        return {key: text}
    out: dict[str, str] = {}
    for sub, v in value.items():
        out.update(_flatten(f"{key}.{sub}", json.dumps(v)))
    return out


def _number(text: str) -> float:
    v = _value(text)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else 0.0


def _value(text: str) -> Any:
    """A logged value: a number (JSON ``NaN``/``Infinity`` included) or a string; media, histograms
    and tables (JSON objects and lists) are not."""
    try:
        v = json.loads(text)
    except ValueError:
        return text
    return None if isinstance(v, (dict, list)) else v


def _logged(runs, key: str) -> Iterator[Any]:
    """``key``'s logged values, as the reader reads them (:func:`_value`), in order -- decoded one at a time: a
    listing looks at each column up to its first number (review FU: decoding every value first took 2x)."""
    return (_value(values[key]) for r in runs for _, values in r.rows if key in values)


def read_wandb_run(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """W&B run file(s) (see the module docstring); ``x`` may be ``step``, ``wall_time`` (hours),
    ``_step``, ``_runtime`` (seconds), ``_timestamp``, a metric, or ``cum:`` of one."""
    path = Path(path)
    notes: list[str] = []
    missing = runs_without_file(path)
    if missing:
        notes.append(f"{len(missing)} run director{'y' if len(missing) == 1 else 'ies'} without a {SUFFIX} file left "
                     f"out ({', '.join(missing[:3])}{', ...' if len(missing) > 3 else ''}): a run's files/output.log is "
                     "its console -- read that where it is a framework's (verl, ...) console log")
    runs = [r for r in _read_runs(path, notes) if r.rows]
    if not runs:
        raise InputError(f"{path}: the W&B run file(s) hold no logged history")
    available = {k for r in runs for _, values in r.rows for k in values} | set(SYNTHETIC)
    # A column never logged, or logged with no number in it (a histogram, null in every row): the log's columns
    # are listed, those of text said (review fr), each value as the reader reads it -- its JSON text decoded, so
    # that "0.3" is a number (FS) --; the rows below keep only the columns read, and listed those alone (FS).
    if y not in available or (y not in SYNTHETIC and not any_number(_logged(runs, y))):
        raise unknown_column(path, "y", y, available,
                             text={k for k in available - set(SYNTHETIC) if not any_number(_logged(runs, k))})
    wanted = {y, *x_columns(path, available, x), TRAINER_STEP, EVAL_STEP}
    taken: dict[str, int] = defaultdict(int)
    for r in runs:
        taken[r.name] += 1
    rows: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for r in runs:
        label = r.name if taken[r.name] == 1 else f"{r.name} [{r.run_id}]"
        ids[label] = r.run_id
        if r.restarted:
            notes.append(f"run {label!r}: resumed offline in {r.restarted} later file(s) whose _runtime started "
                         "over: continued from the earlier file's last value")
        if r.steps_restarted:
            notes.append(f"run {label!r}: resumed offline in {r.steps_restarted} later file(s) whose _step started "
                         "over: continued from the earlier file's last step")
        if r.abandoned:
            notes.append(f"run {label!r}: resumed in a later file at the step an earlier one ended on: "
                         f"{r.abandoned} row(s) the abandoned attempt(s) logged at it merged under the resumed "
                         "attempt's (its values win where both logged one)")
        run_rows = []
        kinds: dict[int, frozenset] = {}  # what each row logs, of every key (a row keeps only those read)
        for step, values in r.rows:
            row: dict[str, Any] = {"run": label, "step": step}
            if "_runtime" in values:
                runtime = _value(values["_runtime"])
                if isinstance(runtime, (int, float)):
                    row["wall_time"] = runtime / SECONDS_PER_HOUR
            row.update({k: v for k in wanted & values.keys() if (v := _value(values[k])) is not None})
            kinds[id(row)] = frozenset(k for k, v in values.items() if v not in UNLOGGED_JSON)
            run_rows.append(row)
        run_rows, resumed = keep_resumed_attempts(run_rows, label, kinds)
        notes += resumed
        rows.extend(run_rows)
    # OpenRLHF: an evaluation row's eval/global_step is its train/global_step (its asynchronous trainer
    # logs it after later steps: a carried or cum: x is then the one of the step it evaluated). Set
    # after the resumes are resolved, which a late evaluation's step going back must not look like.
    split = any(TRAINER_STEP in r for r in rows) and any(EVAL_STEP in r and TRAINER_STEP not in r for r in rows)
    if split:
        rows = [{**r, TRAINER_STEP: r[EVAL_STEP]} if EVAL_STEP in r and TRAINER_STEP not in r else r for r in rows]
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded,
                            run_ids=ids, step_column=TRAINER_STEP if split else None)
