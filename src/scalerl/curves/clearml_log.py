"""Read ClearML's offline sessions (verl's ``trainer.logger=['clearml']`` with
``CLEARML_OFFLINE_MODE=1``, or any ``Task.set_offline(True)`` run): what ClearML keeps on the
training machine until ``clearml-task --import-offline-session`` uploads it.

A session is a directory ``<CLEARML_CACHE_DIR>/offline/offline-<id>/`` (and the same as a ``.zip``
beside it) holding ``task.json`` (the task's name and project) and ``metrics.jsonl``: each line a
JSON array of reported events; a scalar is ``{"type": "training_stats_scalar", "iter": N,
"metric": TITLE, "variant": SERIES, "value": V, "timestamp": ms}``. A scalar reads as the column
``TITLE/SERIES`` -- for verl, whose ClearML logger splits each key at its first ``/``, exactly the
key it logged (``val-core/openai/gsm8k/reward/mean@1``). Rows: ``step`` (ClearML's iteration),
``wall_time`` (hours since the session's first event) and every scalar reported at that
iteration; other events (plots, images, console lines) are not values, nor single values (reported at
iteration -2**31).  A session is a run, named
by its task (``project/name``); the ``offline`` directory of several sessions gives one run each,
except that a session of the same task that starts after the first iteration of an earlier one and
no later than one past its last is that training resumed from a checkpoint (offline, each start
is a session of its own): joined to it, its ``wall_time`` going on from the earlier session's.
Where the iteration goes back within a run, the abandoned attempt's rows from there on are
dropped -- but for its row at the checkpoint's own step, trained before the checkpoint, which
becomes one row with the resumed attempt's evaluation of that checkpoint (its values win), as in
every tracker's reader (:func:`scalerl.curves.attempts.drop_abandoned_attempts`); a torn last line is
skipped; each said in the notes.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import continues, drop_abandoned_attempts, merged_note
from scalerl.curves.data import Curve
from scalerl.curves.rows import curves_from_rows
from scalerl.errors import InputError

METRICS = "metrics.jsonl"
TASK = "task.json"
SCALAR = "training_stats_scalar"
#: The iteration ClearML reports a single value at (``Logger.report_single_value``: a "Summary" scalar, such as
#: the ``epoch`` transformers' ClearMLCallback reports with every log): no step of the training (review dt).
SINGLE_VALUE_ITER = -(2 ** 31)


def _is_events_line(line: str) -> bool:
    try:
        obj = json.loads(line)
    except ValueError:
        return False
    return isinstance(obj, list) and bool(obj) and isinstance(obj[0], dict) and "type" in obj[0] and "task" in obj[0]


def sessions(path: Path) -> list[Path]:
    """The session directories ``path`` names: itself (or the directory of its ``metrics.jsonl``), or
    the sessions inside an ``offline`` directory, in name order."""
    if path.is_file():
        return [path.parent] if path.name == METRICS else []
    if not path.is_dir():
        return []
    if (path / METRICS).is_file():
        return [path]
    return sorted(d for d in path.iterdir() if d.is_dir() and (d / METRICS).is_file())


def is_clearml_session(path: Path) -> bool:
    """A ClearML offline session (or a directory of them): its metrics file opens with an event array."""
    try:
        found = sessions(path)
        if not found:
            return False
        with open(found[0] / METRICS, encoding="utf-8", errors="replace") as f:
            first = next((line for line in f if line.strip()), "")
        return (found[0] / TASK).is_file() or _is_events_line(first)
    except OSError:
        return False


def _task_name(session: Path) -> tuple[str, str]:
    """(run name, task id) from ``task.json`` (the directory's name where it is missing or damaged)."""
    try:
        task = json.loads((session / TASK).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return session.name, session.name
    if not isinstance(task, dict):
        return session.name, session.name
    name, project = task.get("name"), task.get("project_name")
    name = f"{project}/{name}" if isinstance(project, str) and project and isinstance(name, str) else name
    return (name if isinstance(name, str) and name else session.name), str(task.get("id") or session.name)


def _events(session: Path, notes: list[str]) -> list[dict[str, Any]]:
    path = session / METRICS
    with open(path, encoding="utf-8", errors="replace") as f:
        lines = [(i, line) for i, line in enumerate(f, start=1) if line.strip()]
    out: list[dict[str, Any]] = []
    for k, (lineno, line) in enumerate(lines):
        try:
            batch = json.loads(line)
        except ValueError:
            if k == len(lines) - 1:
                notes.append(f"{session.name}: skipped a torn last line ({lineno}) -- the run was probably killed mid-write")
                continue
            raise InputError(f"{path}: line {lineno} is not a JSON array of ClearML events: {line.strip()[:80]!r}") from None
        if isinstance(batch, dict):
            batch = [batch]
        if not isinstance(batch, list):
            raise InputError(f"{path}: line {lineno} is not a JSON array of ClearML events")
        out += [e for e in batch if isinstance(e, dict) and e.get("type") == SCALAR]
    return out


def _number(v: Any) -> Any:
    return v if isinstance(v, (int, float)) and not isinstance(v, bool) else None


def _started(events: list[dict[str, Any]]) -> float | None:
    """The session's first event time (milliseconds since the epoch), None without timestamps."""
    return min((e["timestamp"] for e in events if isinstance(e.get("timestamp"), (int, float))), default=None)


def _session_rows(events: list[dict[str, Any]], t0: float | None) -> list[dict[str, Any]]:
    """A session's rows in report order: ``step``, ``wall_time`` (hours since ``t0``, its first
    event) and the scalars of each iteration."""
    rows: list[dict[str, Any]] = []
    for e in events:
        step, title, series = e.get("iter"), e.get("metric"), e.get("variant")
        if (not isinstance(step, (int, float)) or isinstance(step, bool) or not isinstance(title, str)
                or step == SINGLE_VALUE_ITER):
            continue
        key = f"{title}/{series}" if isinstance(series, str) and series else title
        # Consecutive events of one iteration are one row (verl reports a step's metrics together);
        # a scalar reported again at it keeps its later value.
        row = rows[-1] if rows and rows[-1]["step"] == step else None
        if row is None:
            row = {"step": step}
            when = e.get("timestamp")
            if t0 is not None and isinstance(when, (int, float)):
                row["wall_time"] = (when - t0) / 3.6e6  # milliseconds -> hours
            rows.append(row)
        row[key] = _number(e.get("value"))
    return rows


def read_clearml(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """ClearML offline session(s) (see the module docstring); ``x`` may be ``step``, ``wall_time``
    (hours), a reported scalar, or ``cum:`` of one."""
    path = Path(path)
    found = sessions(path)
    if not found:
        raise InputError(f"{path}: no ClearML offline session ({METRICS} and {TASK}) found")
    notes: list[str] = []
    by_name: dict[str, list[tuple[float, str, list[dict[str, Any]]]]] = {}
    for session in found:
        name, task_id = _task_name(session)
        events = _events(session, notes)
        t0 = _started(events)
        rows = _session_rows(events, t0)
        if rows:
            by_name.setdefault(name, []).append((t0 or 0.0, task_id, rows))
    out: list[dict[str, Any]] = []
    ids: dict[str, str] = {}
    for name, group in by_name.items():
        runs: list[tuple[str, list[dict[str, Any]]]] = []  # (label, rows), sessions of one task joined
        for _, task_id, rows in sorted(group, key=lambda g: g[0]):
            steps = [r["step"] for r in rows]
            if runs:
                label, joined = runs[-1]
                held = [r["step"] for r in joined]
                if continues(min(held), max(held), min(steps)):
                    # An offline training resumed from a checkpoint: a session of its own under the same
                    # task name. Its clock goes on from where the abandoned attempt's stopped.
                    offset = max((r.get("wall_time", 0.0) for r in joined), default=0.0)
                    joined += [{**r, "wall_time": r["wall_time"] + offset} if "wall_time" in r else r for r in rows]
                    notes.append(f"ClearML session {task_id} continues {label!r} from step {min(steps):g} "
                                 "(a training resumed from a checkpoint): joined")
                    continue
            label = name if not runs else f"{name} [{task_id}]"
            runs.append((label, list(rows)))
            ids[label] = task_id
        for label, rows in runs:
            # The resumed attempt's first row is its evaluation of the checkpoint it loaded (verl's
            # val_before_train), at the checkpoint's step: the abandoned attempt's training row at that
            # step was trained before the checkpoint, and stays (as every tracker's reader keeps it).
            rows, resumes, dropped, kept, _, _ = drop_abandoned_attempts(rows, "step")  # (a step's rows merge below)
            if resumes:
                notes.append(f"run {label!r} resumed from a checkpoint {resumes} time(s) (step goes back): {dropped} "
                             "row(s) the abandoned attempt(s) logged from there on were dropped" + merged_note(kept))
            merged: list[dict[str, Any]] = []
            for r in rows:  # a step's rows are one (a training row and a later evaluation of it): later values win
                if merged and merged[-1]["step"] == r["step"]:
                    merged[-1] = {**merged[-1], **r}
                else:
                    merged.append(r)
            out += [{**r, "run": label} for r in merged]
    if not out:
        raise InputError(f"{path}: the ClearML session(s) hold no reported scalars")
    return curves_from_rows(path, out, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded,
                            run_ids=ids)
