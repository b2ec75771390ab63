"""JSON logs: scalerl's run log (a header line, then rows), any JSON-lines log, or a JSON document
that holds a table of metrics (:mod:`scalerl.curves.json_document`).

A JSON-lines log of one run (no ``run`` key) that a resumed training appended to -- prime-rl's file
monitor (``{"step": N, "time": ..., ...}``) and most scripts open it with ``"a"`` -- is read by its
``step``: where it goes back, a training resumed from a checkpoint (what the abandoned attempt
logged from there on is dropped) or started over (a run of its own, ``<stem>#2``); an evaluation
written after later steps (an asynchronous trainer's) stays where it is, and an x it does not log
(``progress/total_tokens``, ``cum:time/step``) is the one of its own step, not of the later steps.
"""

from __future__ import annotations

from pathlib import Path

from scalerl.curves.attempts import RESTART, RESUMED, STEP_COLUMNS, split_attempts, steps_count_again
from scalerl.curves.data import Curve
from scalerl.curves.json_document import document_rows, read_document
from scalerl.curves.cells import MISSING_CELLS, is_number
from scalerl.curves.progress_columns import with_progress_columns
from scalerl.curves.rows import (CUMULATIVE, DEFAULT_RUN_COLUMN, WALL_TIME, check_percent_scale,
                                 curves_from_rows, drop_repeated_evaluations, flatten_nested, percent_note)
from scalerl.errors import InputError
from scalerl.runlog import RESUME, read_runlog


def read_jsonl(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True,
               run_column: str | None = None) -> list[Curve]:
    """One run per value of ``run_column`` (default: a ``run`` key where rows have one), else the
    header's run name."""
    path = Path(path)
    doc = read_document(path)
    if doc is not None:
        rows, shape = document_rows(doc, path, run_column or "run")
        rows, notes = _as_csv_cells(path, rows, x, y, y_scale)
        notes = [*notes, *_download_origin(rows, shape, x)]
        return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale,
                                bounded=bounded, run_column=run_column, percent_cells=True)
    header, rows, notes = read_runlog(path)
    if header and not any(r.get("type") == "eval" for r in rows):  # (review cm: "no x column 'flops'")
        raise InputError(f"{path}: a scalerl run log with no evaluation rows yet (the run is loading or in its first "
                         "evaluation, or was stopped before it)")
    rows, percent = _as_csv_cells(path, rows, x, y, y_scale)
    notes = [*notes, *percent]
    # ms-swift's progress text as the step (and wall_time) before a resume or a restart is read by the step (review
    # fg: made after, a logging.jsonl appended to itself was refused as a compute that decreases)
    rows, _, made = with_progress_columns(rows, set().union(*rows) if rows else set(), step="step", wall_time=WALL_TIME)
    notes = [*notes, made[x]] if x in made else notes
    rows, repeated = drop_repeated_evaluations(rows, x, lambda r: y in r)
    notes = [*notes, repeated] if repeated else notes
    # A resumed run marks where it went on with a row of no values (``from_step``, ``utc``): said, not read.
    resumes = [r for r in rows if r.get("type") == RESUME]
    if resumes:
        steps = ", ".join(str(r.get("from_step")) for r in resumes)
        notes = [*notes, f"resumed {len(resumes)} time(s), from the checkpoint(s) at step(s) {steps}"]
    default_name = str(header.get("run") or header.get("recipe") or path.parent.name or path.stem)
    one_run = run_column is None and not any(DEFAULT_RUN_COLUMN in r for r in rows)
    # The counter a resumed training's rows are told by, the first a row holds (the CSV reader's columns): TRL's
    # train/global_step before W&B's _step in a wandb-history.jsonl (read by _step, a resumed run kept the abandoned
    # attempt's evaluations: review cr), LLaMA-Factory's current_steps, most loggers' step.
    step = next((s for s in STEP_COLUMNS if any(s in r for r in rows)), "step")
    if one_run and steps_count_again(rows, step, x):  # (review ct: 8 of 13 rows of per-epoch steps were dropped)
        notes = [*notes, f"{step!r} goes back to its start where {x!r} goes on rising: read as one training whose "
                         "step counts again (per epoch), not as a resume"]
        rows = [r for r in rows if r.get("type") != RESUME]
    elif one_run:
        rows, more = runlog_attempts(rows, step, default_name)
        notes = [*notes, *more]
    else:
        rows = [r for r in rows if r.get("type") != RESUME]
    return curves_from_rows(path, rows, x, y, default_name=default_name, notes=notes, y_scale=y_scale,
                            bounded=bounded, run_column=run_column, step_column=step if one_run else None,
                            percent_cells=True)


def _download_origin(rows: list[dict], shape: str, x: str) -> list[str]:
    """A note where TensorBoard's download of one tag, read by its ``wall_time``, begins after step 0: the hours
    count from its first point, which is then at compute 0 and taken as the start (R0) -- an evaluation first
    made an hour into training was read as the pass rate before RL, with no word (review cr)."""
    first = min((r["step"] for r in rows), default=0) if shape == "tensorboard" else 0
    if x != "wall_time" or first <= 0:
        return []
    return [f"TensorBoard's download holds one tag: its wall_time counts from its first point, at step {first:g}, "
            "not from the run's start, so that point is at compute 0 and taken as the start (R0); --x step puts "
            "each point at its step, and the run's event files (scalerl fit DIR) give the hours from its first event"]


def runlog_attempts(rows: list[dict], counter: str, name: str) -> tuple[list[dict], list[str]]:
    """One run log's rows read attempt by attempt, as ``scalerl fit`` reads them (the run report too): a resumed
    attempt keeps its rows over the abandoned one's, a training started over is a run of its own (``name#2``);
    ``(rows, notes)`` of :func:`~scalerl.curves.attempts.split_attempts`."""
    return split_attempts(resumes_as_launches(rows, counter), counter, name, late_rows=True)


def resumes_as_launches(rows: list[dict], counter: str = "step") -> list[dict]:
    """The rows with each resume marker (``{"type": "resume", "from_step": N}``, a row of no values) as the
    launch banner :func:`~scalerl.curves.attempts.split_attempts` reads (a launch that loaded a checkpoint):
    a resumed attempt whose first step is the one the abandoned attempt logged last -- where the step does
    not go back -- is then a resume too, not that step logged twice (review ao; scalerl's own trainer cuts
    its log back, a log another writer continued does not). A marker whose next step is at or below its
    ``from_step`` is dropped instead: no resume of this run goes back there."""
    out: list[dict] = []
    next_step = None  # the step of the first row after this one that logs one
    for r in reversed(rows):
        if r.get("type") == RESUME:
            start = r.get("from_step")
            # scalerl's trainer cuts its log back to the checkpoint, so its resumed attempt goes on past
            # from_step; a step at or below it after the marker is another training's (two logs put together,
            # after a resume that logged nothing: review ap) -- the marker is dropped, as before, not a launch.
            if is_number(start) and is_number(next_step) and next_step > start:
                out.append({RESTART: RESUMED})
            continue
        out.append(r)
        if is_number(r.get(counter)):
            next_step = r[counter]
    return out[::-1]


def _as_csv_cells(path: Path, rows: list[dict], x: str, y: str, y_scale: float) -> tuple[list[dict], list[str]]:
    """The rows with their x and y strings read as the CSV reader reads those cells (a log written
    from a spreadsheet's or a CSV's values): ``""`` is a missing value, as ``null`` (the evaluation
    dropped and counted) -- so are ``"null"``, ``"None"``, ``"nan"`` --, and ``"45%"`` the fraction 0.45 (said in the notes; with --y-scale refused,
    as in a CSV: it would scale twice). They were "not a number" here, while the CSV read them."""
    if any(isinstance(v, dict) for r in rows for v in r.values()):  # (a nested y: read by its dotted name)
        rows = [flatten_nested(r) for r in rows]
    cols = [y] if x.startswith(CUMULATIVE) else list(dict.fromkeys((x, y)))
    percent = percent_y = 0
    out = []
    for r in rows:
        read = {}
        for col in cols:
            v = r.get(col)
            if not isinstance(v, str):
                continue
            text = v.strip()
            if text in MISSING_CELLS:
                read[col] = None
            elif text.endswith("%"):
                try:
                    read[col] = float(text[:-1]) / 100.0
                except ValueError:
                    continue  # not a number: said so where it is read
                percent, percent_y = percent + 1, percent_y + (col == y)
        out.append({**r, **read} if read else r)
    check_percent_scale(path, cells=percent_y, y=y, y_scale=y_scale)
    return out, [percent_note(percent)] if percent else []
