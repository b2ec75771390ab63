"""Rows -> curves: the shared back end of the row logs (CSV, JSONL, verl, HF trainer state, MLflow,
printed dicts).

A log is a list of dicts in log order; every row holding ``y`` is a point, the others (training
metrics) are not. ``x`` may be a column or ``cum:COL`` / ``cum:GLOB``, a running total.
"""

from __future__ import annotations

import bisect
import datetime
import difflib
import fnmatch
import math
import re
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Callable, Iterable

from scalerl.curves.attempts import name_words
from scalerl.curves.cells import is_number, logged
from scalerl.curves.data import Curve
from scalerl.curves.overhead_timers import overhead_note
from scalerl.curves.progress_columns import ELAPSED, duration_seconds, with_progress_columns
from scalerl.curves.untimed_steps import timed, untimed_note, untimed_steps
from scalerl.errors import InputError


#: A number printed as its numpy / torch repr: ``np.float64(0.49)`` (verl under numpy >= 2 prints
#: its reduced metrics so; so does any f-string of a numpy value into a CSV), ``numpy.int64(3)``,
#: ``tensor(0.5)``.
SCALAR_REPR = re.compile(r"(?:np|numpy)\.\w+\(([^()]*)\)|tensor\(([^,()]*)\)")


def scalar_of(match: re.Match) -> str:
    """The number inside a :data:`SCALAR_REPR` match."""
    return (match.group(1) if match.group(1) is not None else match.group(2)).strip()


def unwrap_scalar(text: str) -> str:
    """``np.float64(0.49)`` -> ``0.49``; anything else unchanged."""
    wrapped = SCALAR_REPR.fullmatch(text)
    return scalar_of(wrapped) if wrapped else text


#: The column (or key) that names each row's run, unless the user names another (``--run-column``).
DEFAULT_RUN_COLUMN = "run"


#: Up to this many columns an unknown column's message lists them all; a real trainer's log holds
#: hundreds (verl ~100-300 a step), and then the message names the likely ones.
LIST_ALL_COLUMNS = 60
#: Words of a quantity of compute alone (a time, an amount of work done): a name holding one is an x's, whatever
#: else it holds (``timing_s/reward``: the time the reward took; ``eval_samples_per_second``). A time is matched at a
#: word's start or end (:func:`~scalerl.curves.attempts.name_words`; ``timestamp``, ``hours``, ``walltime``), not
#: inside one (review fm: ``sentiment_reward`` was listed as compute); floating-point work anywhere in the name
#: (``total_flos``, ``train/TFLOPs``, ``teraflops`` -- review fo), as :mod:`~scalerl.curves.compute_kind` reads it.
#: Not words that begin or end like one: ``timeout``, ``timed`` (``timed_out``), ``secondary``, ``lifetime``
#: (FO/FP/FX: ``eval/timeout_rate``, ``env/timed_out_rate``, ``val/secondary_acc``, ``train/lifetime_reward`` were
#: listed as compute).
_TIME_WORDS = re.compile(r"^(?:time(?!out|d$|dout)|timing|hour|second(?!ary)|runtime|elapsed)|(?<!life)time$", re.I)
#: ``time out(s)`` as two words (``eval/time_out_rate``, ``TimeOutRate``, ``reward/time_outs``: FZ, GB) is no time.
_TIME_OUT = re.compile(r"time outs?", re.I)
_COMPUTE_ANYWHERE = re.compile(r"flop|flos|gpu", re.I)
#: Words that count the work done, which a score's name can hold too (``num_tokens`` is compute, ms-swift's
#: ``eval_token_acc`` and TRL's ``mean_token_accuracy`` are scores -- review fl: listed as compute). (^x$: a table
#: of curves whose compute column is just x, its unit in another: x_name, x, score)
_COMPUTE_COUNTS = re.compile(r"step|token|sample|epoch|rollouts|^x$", re.I)
#: Words that name a score: a name holding one and no word of :data:`_TIME_WORDS` is a metric's. ``acc`` as
#: a word's end only (``eval_token_acc``, ``val_acc_avg``, ``accuracy``), not ``accepted_samples`` or
#: ``gradient_accumulation_steps``.
_SCORES = re.compile(r"acc(?:uracy)?(?![a-z])|reward|score|pass|match|mean@|mean_at_", re.I)
#: Words of an evaluation or a score: a name holding one and no compute word is a metric's.
_METRIC = re.compile(r"val|eval|test|acc|reward|score|pass|match|mean@|mean_at_", re.I)


def _axis_of(name: str) -> str | None:
    """``x`` or ``y``: the axis a column's name looks like it is given as, or None (a loss, a length)."""
    words = name_words(name)
    if _COMPUTE_ANYWHERE.search(name) or any(_TIME_WORDS.search(word) for i, word in enumerate(words)
                                             if not _TIME_OUT.fullmatch(" ".join(words[i:i + 2]))):
        return "x"
    if _SCORES.search(name):
        return "y"
    if _COMPUTE_COUNTS.search(name):
        return "x"
    return "y" if _METRIC.search(name) else None


class UnknownColumn(InputError):
    """A column the log does not have; ``available`` holds the log's columns (for listings) and
    ``rows``, where the reader counted them, how many rows give each a value: a metric printed per
    sample (a hand-written trainer's ``Metrics: {...}``, 2,000 times) stands apart from an
    evaluation (9 times) by it, which the names alone cannot tell. ``text``: the columns whose values are
    never a number (ms-swift's ``val_dataset``, a summary string): no metric, whatever their name says."""

    def __init__(self, message: str, available, rows: dict[str, int] | None = None, text=()) -> None:
        super().__init__(message)
        self.available = tuple(sorted(available))
        self.rows = dict(rows or {})
        self.text = frozenset(text)

    def reworded(self, message: str) -> "UnknownColumn":
        """The same error with another message (a reader that names what the user gave, adds advice)."""
        return UnknownColumn(message, self.available, self.rows, self.text)


def likely_columns(kind: str, columns, text=()) -> list[str]:
    """The columns whose names look like what axis ``kind`` (``x`` or ``y``) is usually given (:func:`_axis_of`:
    a name that holds a time, ``timing/eval``, is an ``x``'s; one that holds a score and counts work,
    ``eval_token_acc``, a ``y``'s); of ``y``'s, none of ``text``, the columns that hold no number (review fl)."""
    return [c for c in columns if _axis_of(c) == kind and not (kind == "y" and c in text)]


def unknown_column(path: Path, kind: str, name: str, available, rows: dict[str, int] | None = None,
                   text=()) -> InputError:
    """The error of a column ``name`` the log lacks -- or, where ``text`` holds it, has but gives no number in any
    row (null, text, a histogram) --, listing the log's ``available`` columns."""
    cols = sorted(c for c in available if c != name)
    # A typo's likely target first, however few the columns: in a list of 40 the one meant is easy to miss.
    # (not a column of text for a y: it holds no number to read)
    close = difflib.get_close_matches(name, [c for c in cols if kind != "y" or c not in text], n=5, cutoff=0.6)
    hint = f" did you mean {', '.join(repr(c) for c in close)}?" if close else ""
    missing = f"the {kind} column {name!r} holds no number in any row" if name in text else f"no {kind} column {name!r}"
    if len(cols) <= LIST_ALL_COLUMNS:
        listed = ", ".join(repr(c) for c in cols) or "(none)"
        return UnknownColumn(f"{path}: {missing};{hint} available columns: {listed}", cols, rows, text)
    likely = [c for c in likely_columns(kind if kind in ("x", "y") else "y", cols, text) if c not in close]
    listed = likely[:LIST_ALL_COLUMNS - len(close)] or [c for c in cols if c not in close][:20]
    more = len(cols) - len(close) - len(listed)  # (the close ones are named in the hint)
    return UnknownColumn(f"{path}: {missing};{hint} {len(cols)} columns, among them "
                         f"{', '.join(repr(c) for c in listed)}{f' (and {more} more)' if more > 0 else ''}", cols,
                         rows, text)


#: ``--x cum:COL``: the running total of a per-step column (``cum:timing_s/step``: wall seconds so
#: far), or of every column matching a glob (``cum:timing/*``: the sum of the timed phases), less any
#: columns written after it with ``-`` (``cum:timing_s/step-timing_s/save_checkpoint``: a step's time
#: without the checkpoint saves inside it).
CUMULATIVE = "cum:"


def _matching(keys: set[str], term: str) -> list[str]:
    """The columns ``term`` names: itself, or every column a glob matches."""
    if any(c in term for c in "*?["):
        return sorted(k for k in keys if fnmatch.fnmatchcase(k, term))
    return [term] if term in keys else []


def _cumulative_split(path: Path, keys: set[str], x: str) -> tuple[list[str], list[str], list[str]]:
    """``cum:EXPR`` read as the columns it adds up, those it takes off, and the terms it takes off that
    the log has never logged (each a ``-``-separated part: counted as 0). The first term must name
    columns; a name holding a ``-`` itself is read whole where the log has it. Of the splits, the one
    with the fewest terms the log lacks, then the fewest terms, wins."""
    expr = x[len(CUMULATIVE):]
    parts = expr.split("-")
    best: tuple[int, int, list[str], list[bool]] | None = None

    def split(i: int, terms: list[str], absent: list[bool]) -> None:  # every way to join parts[i:] into terms
        nonlocal best
        if i == len(parts):
            score = (sum(absent), len(terms))
            if best is None or score < best[:2]:
                best = (*score, terms, absent)
            return
        for j in range(i + 1, len(parts) + 1):
            term = "-".join(parts[i:j]).strip()
            if term and _matching(keys, term):
                split(j, [*terms, term], [*absent, False])
        if i and parts[i].strip():  # a term taken off that the log lacks (a run that never saved): 0
            split(i + 1, [*terms, parts[i].strip()], [*absent, True])

    split(0, [], [])
    if best is None:
        error = unknown_column(path, "x", x, {CUMULATIVE + k for k in keys if k != "type"})
        if "-" in expr:  # say which term is missing: the first, the one summed (those taken off may be)
            error = UnknownColumn(f"{error} (cum: adds up its first term, {parts[0].strip()!r} -- the log "
                                  "must have it; a term taken off that the log lacks counts as 0)",
                                  error.available, error.rows)
        raise error
    _, _, terms, absent = best
    plus = _matching(keys, terms[0])
    off = {c for t, a in zip(terms[1:], absent[1:]) if not a for c in _matching(keys, t)}
    # A column the glob adds up is left out of the sum (cum:timing/*-timing/testing); any other is subtracted.
    if not set(plus) - off:
        raise InputError(f"{path}: --x {x} takes off every column it adds up; name a per-step column first")
    return [c for c in plus if c not in off], sorted(off - set(plus)), [t for t, a in zip(terms, absent) if a]


def cumulative_terms(path: Path, keys: set[str], x: str) -> tuple[list[str], list[str]]:
    """The columns ``cum:EXPR`` adds up and those it takes off. ``EXPR`` is a column or glob, then any
    number of ``-COLUMN`` (or ``-GLOB``); a name holding a ``-`` itself (``val-core/...``) is read whole
    where the log has it: the split with the fewest terms in which every term names columns wins. A
    term taken off that the log has never logged (``-timing_s/save_checkpoint`` of a run before its
    first save) takes off 0 (:func:`absent_terms_note`)."""
    plus, minus, _ = _cumulative_split(path, keys, x)
    return plus, minus


def absent_terms_note(path: Path, keys: set[str], x: str) -> str:
    """What the notes say of the terms ``cum:EXPR`` takes off that the log has never logged ("" if none):
    they take off 0, and a name that looks like one the log has may be a typo."""
    absent = _cumulative_split(path, keys, x)[2]
    if not absent:
        return ""
    # A term is a whole column name or a glob: '-actor' names no 'timing/update_actor' (a part of a name).
    close = sorted({c for t in absent for c in [*difflib.get_close_matches(t, sorted(keys), n=3, cutoff=0.8),
                                                *(k for k in sorted(keys) if t in k)][:5]})
    return (f"--x {x}: {', '.join(repr(t) for t in absent)} logged nowhere in this log (not yet?): taken off as 0"
            + (f" -- if you meant {', '.join(repr(c) for c in close)}, name it whole in --x (or by a glob: "
               f"{'*' + absent[0] + '*'!r})" if close else ""))


def x_columns(path: Path, keys: set[str], x: str) -> list[str]:
    """The columns ``--x`` reads: ``x`` itself, the clock column ``--x wall_time`` is made from (in a
    log without a ``wall_time`` column), or those ``cum:EXPR`` adds up and takes off."""
    if not x.startswith(CUMULATIVE):
        clock = wall_time_clock(keys, x)
        if clock is not None:
            return [clock]
        if x not in keys:
            raise unknown_column(path, "x", x, keys - {"type"})
        return [x]
    plus, minus = cumulative_terms(path, keys, x)
    return plus + minus


def taken_off_too_much(path: Path, x: str, plus: list[str], minus: list[str], step: object, left: float) -> InputError:
    """The error for a ``cum:`` x that takes more off a step than its summed timer holds there: what is
    taken off is not inside what is added up (verl since PR #3117 times its saves after the step)."""
    return InputError(f"{path}: --x {x} takes more off than {' + '.join(plus)} holds in the row at step {step} "
                      f"({left:g} left): {', '.join(minus)} is not part of it in this log -- leave it out of --x")


def _cumulative_amounts(path: Path, rows: list[dict], keys: set[str], x: str, run_column: str,
                        step_column: str) -> list[float]:
    """Each row's share of the running total ``cum:EXPR`` adds up: its value of one column, or the sum
    of every column matching a glob; less the columns after a ``-``, taken off per step -- what every
    row of a step logs of them, at the step's first row that logs the summed columns: a validation's
    timer on a row of its own (a logger that writes each call as a row) is taken off its step's time
    as where it shares the step's row -- and only at steps that log the summed columns (a validation
    before training, at a step of its own, is inside no step's time), as the TensorBoard reader does.
    A row that lacks a column taken off takes off 0 there (verl logs ``timing_s/save_checkpoint`` only
    on the steps that saved). Rows without the summed column (evaluation-only rows) add 0 (training
    steps without it: :mod:`scalerl.curves.untimed_steps`); a value that is not a number is an error,
    and so is a step that takes off more than it holds (:func:`taken_off_too_much`). Rows without
    ``step_column`` are each a step of their own."""
    plus, minus = cumulative_terms(path, keys, x)

    def total(r: dict, cols: list[str]) -> float:
        out = 0.0
        for c in cols:
            v = r.get(c)
            if v is None:
                continue
            if isinstance(v, bool) or not isinstance(v, (int, float)):
                raise InputError(f"{path}: value {v!r} of {c!r} in a row at step {r.get('step', '?')} is not a "
                                 f"number (needed for --x {x})")
            if math.isfinite(v):
                out += float(v)
        return out

    amounts = [total(r, plus) for r in rows]
    if not minus:
        return amounts
    steps: dict[tuple, list[int]] = {}  # (run, step) -> its rows, in log order
    for i, r in enumerate(rows):
        step = _step_value(r.get(step_column))
        steps.setdefault((str(r.get(run_column)), step) if step is not None else ("", "row", i), []).append(i)
    for at in steps.values():
        first = next((i for i in at if timed(rows[i], plus)), None)
        if first is None:  # a step without the summed columns: nothing of its own to take off
            continue
        off = sum(total(rows[i], minus) for i in at)
        if sum(amounts[i] for i in at) - off < 0:
            r = rows[first]
            raise taken_off_too_much(path, x, plus, minus, r.get("step", "?"), sum(amounts[i] for i in at) - off)
        amounts[first] -= off
    return amounts


#: ``--x wall_time`` in a row log that has no such column: hours since each run's first row, read
#: from its clock column (Unix seconds -- or milliseconds --, as prime-rl's file monitor and many
#: scripts log ``time``), the first of these it has.
WALL_TIME = "wall_time"
CLOCK_COLUMNS = ("_timestamp", "timestamp", "time")
#: Beyond this a clock counts milliseconds (Unix seconds reach it in the year 5138).
_CLOCK_MS = 1e11


def wall_time_clock(keys, x: str) -> str | None:
    """The clock column ``--x wall_time`` is made from where the log has no ``wall_time`` column (the
    first of :data:`CLOCK_COLUMNS` it has), else None -- one answer for every row log: the CSV reader
    asked its header for a ``wall_time`` column and refused a log with ``time``."""
    if x != WALL_TIME or WALL_TIME in keys:
        return None
    return next((c for c in CLOCK_COLUMNS if c in keys), None)


def _with_wall_time(rows: list[dict], clock: str, run_column: str, default_name: str) -> list[dict]:
    """Each row with ``wall_time``: hours since its run's first ``clock`` (rows without one: none)."""
    start: dict[str, float] = {}
    out = []
    for r in rows:
        t = r.get(clock)
        if isinstance(t, datetime.datetime):  # a Parquet / pandas timestamp column: its seconds
            t = t.timestamp()
        if isinstance(t, (int, float)) and not isinstance(t, bool) and math.isfinite(t):
            t = t / 1000.0 if abs(t) > _CLOCK_MS else float(t)
            name = str(r.get(run_column, default_name))
            r = {**r, WALL_TIME: (t - start.setdefault(name, t)) / 3600.0}
        out.append(r)
    return out


def flatten_nested(row: dict, prefix: str = "") -> dict:
    """A row's nested dicts (``{"val": {"acc": 0.2}}``, a JSON log's or a Parquet struct's) as
    ``val.acc``, the name the Trackio and W&B readers give such a metric; without it ``val`` was listed
    as a metric and ``val/acc`` was "no such column". Media and tables (``_type`` objects) left out."""
    out: dict = {}
    for key, value in row.items():
        if isinstance(value, dict):
            if "_type" not in value:
                out.update(flatten_nested(value, f"{prefix}{key}."))
        else:
            out[f"{prefix}{key}"] = value
    return out


#: What to do with a date-time column (a Parquet timestamp) asked for as compute or metric.
_DATE_HINT = ("a date and time is no compute value: choose a counter (step, tokens), or, with the time in a column "
              "named timestamp or time, give --x wall_time (hours since the run's first row)")


def quoted_number(v):
    """A number written as a string (``"0.2"``, as transformers >= 5 prints and some JSON writers store
    them) as that number, as a CSV cell is read; anything else unchanged (refused by the caller)."""
    if not isinstance(v, str):
        return v
    try:
        return float(unwrap_scalar(v.strip()))
    except ValueError:
        return v


def percent_note(cells: int) -> str:
    """What a log's reader says of the values it read from percentages (``45.3%``: a spreadsheet's
    percent-formatted cell) as fractions."""
    return f"{cells} cell(s) written as percentages ('45.3%') read as fractions (0.453)"


def check_percent_scale(path: Path, *, cells: int, y: str, y_scale: float) -> None:
    """A y written as percentages (``45.3%``) is read as fractions already: a --y-scale on top of that
    (0.01, as the error for 0-100 values advises) made every value 100x too small, silently."""
    if cells and y_scale != 1.0:
        raise InputError(f"{path}: column {y!r} is written as percentages ('45.3%'), which are read as fractions "
                         f"(0.453) already; drop --y-scale {y_scale:g}")


def _runs_where(rows: list[dict], run_column: str, default_name: str, keep) -> set[str]:
    """The names of the runs that have a row for which ``keep(row)`` holds."""
    return {str(r.get(run_column, default_name)) for r in rows if keep(r)}


def _step_value(v) -> float | None:
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and v == v else None


def _late_step_state(by_step, name: str, step) -> tuple[object, float] | None:
    """For a row whose step is below one its run logged before (a late row): what the rows up to its
    step left -- (latest x, running total) -- or (None, 0.0) where no row came at or before its step;
    None for a row in order (or without a step)."""
    s = _step_value(step)
    if s is None or name not in by_step or s >= by_step[name][0][-1]:
        return None
    steps, states = by_step[name]
    i = bisect.bisect_right(steps, s) - 1
    return states[i] if i >= 0 else (None, 0.0)


def _record_step(by_step, name: str, step, state: tuple[object, float]) -> None:
    s = _step_value(step)
    if s is None:
        return
    steps, states = by_step.setdefault(name, ([], []))
    if steps and steps[-1] == s:
        states[-1] = state
    else:
        steps.append(s)
        states.append(state)


def _at_step_zero(row: dict) -> bool:
    """Whether ``row`` says it was logged at step 0 (a ``step`` or ``global_step`` of 0)."""
    step = next((row[k] for k in ("step", "global_step", "train/global_step") if row.get(k) is not None), None)
    return _step_value(step) == 0.0


def curves_from_rows(path: Path, rows: list[dict], x: str, y: str, *, default_name: str, notes=(),
                     y_scale: float = 1.0, bounded: bool = True, run_column: str | None = None,
                     run_ids: dict[str, str] | None = None, table: bool = False,
                     step_column: str | None = None, percent_cells: bool = False) -> list[Curve]:
    """Curves from a log's rows (dicts, in log order): every row holding ``y`` is a point; rows
    without it (training metrics) are not. Runs are told apart by ``run_column`` (which must then
    be a key of the rows; default: ``run`` where a row has it, else ``default_name``). ``x`` may be ``cum:COL`` (a running total, per run, over
    every row). A point whose row lacks the x column takes the latest x logged before it (said in
    the notes); in a ``table`` (CSV, Parquet: an empty cell is a missing value) only where that is
    how its run logs (training rows log the counter, no evaluation row does). A point whose x or y
    is null, or that is not given an x, is dropped and counted. ``run_ids`` maps a run's name to
    its tracker's id (:attr:`Curve.run_id`). With ``step_column``, an evaluation row logged late -- its
    step below one an earlier row of its run logged (an asynchronous evaluation written after later
    steps) -- takes a carried or ``cum:`` x as the rows up to its own step left it, not as the later
    steps did. ``percent_cells``: the reader reads ``"45%"`` cells as fractions (a JSONL's), so that an unknown
    column's listing offers a column of them as numbers."""
    if any(isinstance(v, dict) for r in rows for v in r.values()):
        rows = [flatten_nested(r) for r in rows]
    keys: set[str] = set().union(*rows) if rows else set()
    if run_column is not None and run_column not in keys:
        raise unknown_column(path, "run", run_column, keys - {"type"})
    run_column = run_column or DEFAULT_RUN_COLUMN
    rows, unnamed = _without_blank_run_names(path, rows, run_column)
    notes = (*notes, unnamed) if unnamed else notes
    rows, keys, made = with_progress_columns(rows, keys, step="step", wall_time=WALL_TIME)  # (ms-swift's)
    notes = (*notes, made[x]) if x in made else notes
    if (clock := wall_time_clock(keys, x)) is not None:
        rows, keys = _with_wall_time(rows, clock, run_column, default_name), keys | {WALL_TIME}
        notes = (*notes, f"x wall_time: hours since each run's first {clock!r}")
    cumulative = (_cumulative_amounts(path, rows, keys, x, run_column, step_column or "step")
                  if x.startswith(CUMULATIVE) else None)
    for kind, col in (("x", x), ("y", y)):
        if col not in keys and not (kind == "x" and cumulative):
            held = _holding_values(rows, keys - {"type"})
            raise unknown_column(path, kind, col, held, held, text_columns(rows, held, percent_cells))
    if not any(logged(r.get(y)) for r in rows):  # null or NaN in every row: the log's columns listed (review FV)
        held = _holding_values(rows, keys - {"type"})
        raise unknown_column(path, "y", y, held, held, text_columns(rows, held, percent_cells) | {y})
    # In a table, only runs whose evaluations never log x but other rows do (TRL's log_history
    # exported: num_tokens is on the training rows) carry it forward. Where evaluations log x, an
    # empty x cell is a missing value: the previous row's x would fit the point at the wrong compute.
    carry = (_runs_where(rows, run_column, default_name, lambda r: y not in r and x in r)
             - _runs_where(rows, run_column, default_name, lambda r: y in r and x in r)) if table else None
    points = _RowPoints(path, rows, x, y, keys, run_column=run_column, default_name=default_name,
                        cumulative=cumulative, carry=carry, step_column=step_column, y_scale=y_scale)
    for i, r in enumerate(rows):
        points.add(i, r)
    points.refuse_mostly_untimed()
    if cumulative is not None:  # checkpoint saves and validation counted as compute: said, with the x without them
        overhead = overhead_note(rows, x, *cumulative_terms(path, keys, x), run_column if run_column in keys else None)
        notes = (*notes, *(n for n in (absent_terms_note(path, keys, x), overhead) if n))
    if points.quoted:
        notes = (*notes, f"{points.quoted} value(s) written as strings ('0.2') read as numbers")
    if points.unlogged_y:
        notes = (*notes, f"{points.unlogged_y} row(s) of another kind than the evaluations hold {y!r} as null, NaN or "
                         "infinite (a row written whole fills in what it did not log): not evaluations, skipped")
    curves = readable_curves(
        partial(Curve.from_arrays, run.xs, run.ys, name=name, x_name=x, y_name=y, source=str(path), bounded=bounded,
                dropped=run.dropped, notes=tuple(notes) + points.run_notes(name), carried=run.carried_at)
        for name, run in points.runs.items())
    curves = with_left_out(curves, points.without_y())
    if run_ids:
        curves = [replace(c, run_id=run_ids.get(c.name, "")) for c in curves]
    return curves


@dataclass
class _RunPoints:
    """One run's points so far, and what became of the evaluations that gave none."""

    xs: list[float] = field(default_factory=list)
    ys: list[float] = field(default_factory=list)
    dropped: int = 0
    """Evaluations without a number for x or y (or on a step whose compute is unknown)."""
    carried: int = 0
    """Evaluations that took x from the latest row before them."""
    carried_at: list[bool] = field(default_factory=list)
    """Per point: whether its x was taken from an earlier row (for the note on several evaluations at one x)."""
    late: int = 0
    """Evaluations written after later steps (``step_column``)."""
    unplaced: int = 0
    """Evaluations before any row that logs x, after step 0: dropped (not counted in :attr:`dropped`)."""
    at_start: int = 0
    """... at step 0 (TRL's eval_on_start, the R0 point): placed at x = 0."""


class _RowPoints:
    """The rows of a log, one after another, made into each run's points (:func:`curves_from_rows`):
    where a row holds ``y``, its x is the row's own, the running total (``cum:``), or -- where the
    evaluation rows do not log x -- the latest x before it."""

    def __init__(self, path: Path, rows: list[dict], x: str, y: str, keys: set[str], *, run_column: str,
                 default_name: str, cumulative: list[float] | None, carry: set[str] | None,
                 step_column: str | None, y_scale: float) -> None:
        self.path, self.x, self.y, self.y_scale = path, x, y, y_scale
        self.run_column, self.default_name = run_column, default_name
        self.cumulative, self.carry, self.step_column = cumulative, carry, step_column
        # (the columns a cum: x adds up: a step without them is untimed; those it takes off may be missing)
        self.summed = cumulative_terms(path, keys, x)[0] if cumulative is not None else []
        self.untimed = untimed_steps(rows, self.summed, run_column) if cumulative is not None else set()
        self.runs: OrderedDict[str, _RunPoints] = OrderedDict()  # the runs with a point (an evaluation), in order
        self.seen: dict[str, None] = {}  # every run of the log, in order (a run without y yields no curve)
        self.totals: dict[str, float] = {}  # cum: the running total so far, per run
        self.latest: dict[str, object] = {}  # the last x logged, per run
        self.steps_timed: dict[str, int] = {}
        self.steps_untimed: dict[str, list[int]] = {}  # per run: [untimed step rows, points on them dropped]
        # With step_column: per run, the steps in order and the (latest x, running total) their rows left.
        self.by_step: dict[str, tuple[list[float], list[tuple[object, float]]]] = {}
        self.quoted = 0  # numbers written as strings ("0.2"), read as numbers
        # Per run, what its evaluations (the rows that log y) log besides: see _filled_in.
        self.evaluation_keys: dict[str, set[str]] = {}
        for r in rows:
            if logged(r.get(y)):
                self.evaluation_keys.setdefault(str(r.get(run_column, default_name)), set()).update(
                    k for k, v in r.items() if logged(v))
        self.unlogged_y = 0  # rows that hold y as null, NaN or infinite and are no evaluations

    def add(self, i: int, r: dict) -> None:
        """Row ``i``: what it adds to its run's running state and, where it holds ``y``, its point."""
        x, cumulative, name = self.x, self.cumulative, str(r.get(self.run_column, self.default_name))
        self.seen[name] = None
        if i in self.untimed:
            self.steps_untimed.setdefault(name, [0, 0])[0] += 1
        elif cumulative is not None and timed(r, self.summed):
            self.steps_timed[name] = self.steps_timed.get(name, 0) + 1
        own = cumulative[i] if cumulative is not None else 0.0
        if cumulative is not None:
            self.totals[name] = self.totals.get(name, 0.0) + own
        elif x in r:
            self.latest[name] = r[x]
        before = _late_step_state(self.by_step, name, r.get(self.step_column)) if self.step_column else None
        if self.step_column and before is None:
            _record_step(self.by_step, name, r.get(self.step_column), (self.latest.get(name), self.totals.get(name, 0.0)))
        if self.y not in r or self._filled_in(name, r):  # another kind of row (training metrics): not an evaluation
            self.unlogged_y += self.y in r
            return
        run = self.runs.setdefault(name, _RunPoints())
        if i in self.untimed:  # a step whose compute is unknown: the total so far is not its x
            self.steps_untimed[name][1] += 1
            run.dropped += 1
            return
        carried_before, unplaced_before = run.carried, run.unplaced
        vx, vy = self._x_of(r, name, run, before, own), r.get(self.y)
        if vx is None or vy is None:
            # (an evaluation before any row that logs x is said in a note of its own: counted once, there --
            # as a dropped row too it was said twice, once as "missing, NaN or infinite")
            run.dropped += run.unplaced == unplaced_before
            return
        self.quoted += isinstance(vx, str) + isinstance(vy, str)
        vx, vy = quoted_number(vx), quoted_number(vy)
        if isinstance(vx, bool) or isinstance(vy, bool) or not isinstance(vx, (int, float)) or not isinstance(vy, (int, float)):
            col, bad = (x, vx) if not isinstance(vx, (int, float)) else (self.y, vy)
            where = f"at step {r['step']}" if r.get("step") is not None else f"row {i + 1}"
            raise InputError(f"{self.path}: {col} value {bad!r} ({where}) is not a number -- " + _not_a_number_hint(bad, col))
        run.xs.append(float(vx))
        run.ys.append(float(vy) * self.y_scale)
        run.carried_at.append(run.carried > carried_before)

    def _filled_in(self, name: str, r: dict) -> bool:
        """Whether row ``r`` holds ``y`` as a cell a writer of whole rows filled in (pandas' ``to_json``
        writes NaN as ``null``, ``json.dumps`` as ``NaN``) in a row of another kind: its ``y`` is not
        logged (:func:`scalerl.curves.cells.logged`) and it logs a value no evaluation of its run logs
        (a training row's ``loss``). An evaluation whose ``y`` came out NaN -- a row that logs only what
        evaluations log -- is an evaluation still, dropped and counted; so is every row of a run whose
        ``y`` is never a number (no rows with finite values: not "a run without y")."""
        if logged(r[self.y]):
            return False
        evaluations = self.evaluation_keys.get(name)
        if evaluations is None:  # a run with no evaluation at all: its y is missing everywhere, said as such
            return False
        return any(k not in evaluations and logged(v) for k, v in r.items() if k not in (self.y, self.run_column))

    def _x_of(self, r: dict, name: str, run: _RunPoints, before: tuple[object, float] | None, own: float) -> object:
        """The x of evaluation row ``r`` (None: it has none)."""
        x, cumulative = self.x, self.cumulative
        if before is not None and (cumulative is not None or x not in r):
            # An evaluation written after later steps: the compute as the rows up to its step left it.
            run.late += 1
            vx = before[1] + own if cumulative is not None else before[0]
            if cumulative is None:
                run.carried += vx is not None
            return vx
        if cumulative is not None:
            return self.totals[name]
        if x in r:
            return r[x]
        if self.carry is None or name in self.carry:
            # Evaluation rows that do not log the compute counter (TRL's log_history: num_tokens is on
            # the training rows): the counter as the latest row before the evaluation left it.
            vx = self.latest.get(name)
            run.carried += vx is not None
            if vx is None and name not in self.latest:
                if _at_step_zero(r):  # before any training (TRL's eval_on_start): no compute spent yet
                    vx = 0.0
                    run.at_start += 1
                else:
                    run.unplaced += 1
            return vx
        return None

    def refuse_mostly_untimed(self) -> None:
        """``cum:COL`` where most of a run's steps lack COL: a running total would leave out most of
        the compute."""
        x = self.x
        for name, (n, _) in self.steps_untimed.items():
            if n > self.steps_timed.get(name, 0):
                raise InputError(f"{self.path}: --x {x}: {n} step row(s) of run {name!r} lack {x[len(CUMULATIVE):]!r} and only "
                                 f"{self.steps_timed.get(name, 0)} have it -- a running total would leave out most of the "
                                 "compute; choose another x (the step, or a counter the trainer logs)")

    def run_notes(self, name: str) -> tuple[str, ...]:
        """What became of run ``name``'s evaluations that are not plain points, and the runs left out."""
        x, run = self.x, self.runs[name]
        n, k = run.carried, run.late
        return (((f"{n} evaluation(s) do not log {x!r}: each takes it from the latest row before it"
                  + (f" ({k} written after later steps: from the rows of its own step)" if k else ""),)
                 if n else ())
                + ((f"{k} evaluation(s) written after later steps: {x!r} summed up to their own step",)
                   if k and self.cumulative is not None else ())
                + ((f"{run.unplaced} evaluation(s) logged before any row that logs {x!r} (an evaluation before "
                    f"training?) dropped: no {x!r} to take; --x step keeps them",) if run.unplaced else ())
                + ((f"the evaluation at step 0, before any row that logs {x!r} (before training), placed at "
                    f"{x} = 0",) if run.at_start else ())
                + ((untimed_note(*self.steps_untimed[name], x),) if name in self.steps_untimed else ()))

    def without_y(self) -> tuple[tuple[str, str], ...]:
        """``(run, reason)`` for each run of the log without a ``y`` value: left out as a run that cannot be read
        is (``Curve.left_out``), so that a backtest of every run lists it as skipped (review dh: only a note hung
        on another run, and "0 skipped")."""
        return tuple((other, f"no {self.y!r} value") for other in self.seen if other not in self.runs)


def _not_a_number_hint(value: object, column: str) -> str:
    """What to do with a value of ``column`` that is not a number."""
    if isinstance(value, (datetime.date, datetime.time)):
        return _DATE_HINT
    if column == ELAPSED and duration_seconds(value) is not None:  # LLaMA-Factory's, ms-swift's: '5:13:22', '1h 2m'
        return f"{column!r} holds a duration: --x {WALL_TIME} reads it, in hours"
    return "fix the value or choose another column"


def _holding_values(rows: list[dict], keys: set[str]) -> dict[str, int]:
    """The ``keys`` some row gives a value (not null, not NaN): the columns a listing offers, each with
    the number of rows that give it one. A column every row leaves null (LLaMA-Factory's ``eval_loss``
    and ``reward`` keys on training rows) was offered as a metric, and the read then found no point in it."""
    # (cells.logged, as the CSV listing counts: a "nan" or "None" string counted as a value, review bv)
    counts = {k: sum(logged(r.get(k)) for r in rows) for k in keys}
    return {k: n for k, n in counts.items() if n}


def _numeric_cell(value, percent: bool) -> bool:
    """Whether a row log's cell holds a finite number as its reader reads one: :func:`quoted_number`'s (a number, or
    a string of one: ``"0.3"``, ``np.float64(0.3)``; not a JSON line's ``"0,1"`` -- review fo), and with ``percent``
    (a JSONL's reader) ``"41%"`` (review fm; a console's reader refuses it -- review fq)."""
    if percent and isinstance(value, str) and value.strip().endswith("%"):
        try:  # (as the JSONL reader reads it: a plain number before the sign, not "np.float64(41)%")
            value = float(value.strip()[:-1])
        except ValueError:
            return False
    value = quoted_number(value)
    return is_number(value) and math.isfinite(value)


def text_columns(rows: list[dict], keys, percent: bool = False) -> set[str]:
    """The ``keys`` no row gives a number (:func:`holds_numbers`): text a listing must not offer as a metric
    (ms-swift's ``val_dataset`` summary -- review fl). A column no cell of which holds one is text (a dataset
    summary, a name), whatever its name says."""
    return {k for k in keys if not holds_numbers(rows, k, percent)}


def holds_numbers(rows: list[dict], key: str, percent: bool = False) -> bool:
    """Whether some row gives ``key`` a number (:func:`_numeric_cell`)."""
    return any_number((r.get(key) for r in rows), percent)


def any_number(values: Iterable, percent: bool = False) -> bool:
    """Whether one of ``values`` (looked at in order, up to the first) is a number (:func:`_numeric_cell`)."""
    return any(_numeric_cell(v, percent) for v in values)


def _without_blank_run_names(path: Path, rows: list[dict], run_column: str) -> tuple[list[dict], str]:
    """Rows whose run is named ``""`` or null (a JSON log's; a CSV's blank cells are its reader's): a
    run named ``''`` was read. Blank in every row, it is a log of one run whose name was never filled
    in: the rows lose the key (the run is named after the file), said in a note. Blank in some rows
    only, which run those belong to cannot be known, and a guess could mix two runs: refused."""
    named = [r for r in rows if run_column in r]
    blank = [r for r in named if r[run_column] is None or not str(r[run_column]).strip()]
    if not blank:
        return rows, ""
    if len(blank) < len(named):
        raise InputError(f"{path}: {len(blank)} row(s) name no run ({run_column!r} empty or null) while "
                         f"{len(named) - len(blank)} do -- fill in the run of those rows (or delete them)")
    return ([{k: v for k, v in r.items() if k != run_column} for r in rows],
            f"the {run_column!r} value is empty in every row: read as one run, named after the file")


def drop_repeated_evaluations(rows: list, x: str, holds_y: Callable[[object], bool],
                              cells: Callable[[object], object] = lambda r: r) -> tuple[list, str]:
    """``rows`` less each evaluation row (``holds_y``) that repeats the row before it verbatim (every cell
    the same: ``cells``) -- one evaluation written twice (a logger that flushed twice, a line appended
    again), which was fitted twice, narrowing the intervals -- and a note saying how many. Not with a
    ``cum:`` x, where two equal rows are two steps (a fixed batch: the same tokens every step)."""
    if x.startswith(CUMULATIVE):
        return rows, ""
    kept = [r for i, r in enumerate(rows) if not (i and holds_y(r) and cells(r) == cells(rows[i - 1]))]
    n = len(rows) - len(kept)
    return kept, (f"{n} evaluation row(s) repeating the row before them verbatim (written twice): read once" if n else "")


#: A reader's rows of a log and its notes: what :func:`read_from_rows` makes a reader of.
RowsReader = Callable[[Path], tuple[list[dict], list[str]]]


def read_from_rows(read_rows: RowsReader) -> Callable[..., list[Curve]]:
    """The ``read_<format>(path, x, y, *, y_scale, bounded)`` of a format whose reader gives its
    rows and notes (runs named by a ``run`` key of the rows, else by the file's stem)."""

    def read(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
        path = Path(path)
        rows, notes = read_rows(path)
        return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale,
                                bounded=bounded)

    return read


def readable_curves(makers: Iterable[Callable[[], Curve]]) -> list[Curve]:
    """The curves of a log's runs, each made by calling one of ``makers`` (``partial(Curve.from_arrays,
    ..., name=RUN)``). A run that cannot be a curve (no finite x: a run that never logged the counter;
    values in percent) is left out with its reason in the others' notes and ``left_out``, so that the
    log's other runs -- the one --run names -- still read; only when no run can be read is that an
    error."""
    curves, refused = [], []
    for make in makers:
        try:
            curves.append(make())
        except InputError as exc:
            refused.append((_maker_name(make), exc))
    if refused and not curves:
        raise refused[0][1]
    return with_left_out(curves, tuple((name, str(e)) for name, e in refused))


def with_left_out(curves: list[Curve], left_out: tuple[tuple[str, str], ...]) -> list[Curve]:
    """``curves`` (a log's runs read) told of the log's runs ``left_out`` (``(run, reason)``): in their notes and
    ``Curve.left_out`` (a skipped run for backtest --all-runs, the reason for fit --run)."""
    if not left_out:
        return curves
    return [replace(c, notes=(*c.notes, left_out_note(left_out)), left_out=(*c.left_out, *left_out)) for c in curves]


def left_out_note(left_out: tuple[tuple[str, str], ...]) -> str:
    """The note a log's curves carry for its runs that could not be read (``Curve.left_out``)."""
    return f"{len(left_out)} run(s) left out: " + "; ".join(named_reason(name, reason) for name, reason in left_out)


def named_reason(name: str, reason: str) -> str:
    """A left-out run's reason naming the run: a reader's error names it quoted already (``run 'a' ...``); else
    ``run 'NAME': reason`` (review dp: a run c went unnamed -- its name is in "'acc'")."""
    return reason if repr(name) in reason else f"run {name!r}: {reason}"


def _maker_name(make: Callable[[], Curve]) -> str:
    """The run name a curve maker was given (``name=`` of its partial), for the list of runs left out."""
    return str(getattr(make, "keywords", {}).get("name", "run"))
