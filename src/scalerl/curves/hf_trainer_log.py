"""Read a Hugging Face Trainer's ``trainer_state.json``: the log TRL's trainers (GRPOTrainer,
PPOTrainer, ...) and every other ``transformers.Trainer`` write into each checkpoint.

Its ``log_history`` is a list of dicts -- training rows (``step``, ``reward``, ``num_tokens``,
...) and evaluation rows (``step``, ``eval_reward``, ...) -- which become the rows
:func:`scalerl.curves.rows.curves_from_rows` makes curves of. Given a run's output directory,
the checkpoint with the most steps is read (its state holds the whole history up to it).

The Trainer logs its training rows every ``logging_steps`` and evaluates every ``eval_steps``; an
evaluation row holds no ``num_tokens`` (nor any other counter the training rows log). Where a training
row was logged at the evaluation's own step (before it: the Trainer logs, then evaluates), the
evaluation takes that row's value, as every row log's evaluations do. Where it evaluated between two
training rows (``eval_steps < logging_steps``), it takes the value interpolated by step between them --
from 0 at step 0 before the first, as mlx-lm's validations take ``trained_tokens`` -- said in the notes;
the latest row's value would put several evaluations at one x. An evaluation after the last training row
that logs x has no value to take: left out, said (``--x step`` keeps it).
"""

from __future__ import annotations

import bisect
import json
from pathlib import Path
from typing import Any

from scalerl.curves.cells import is_number
from scalerl.curves.data import Curve
from scalerl.curves.rows import CUMULATIVE, curves_from_rows
from scalerl.errors import InputError

STATE_FILE = "trainer_state.json"


def state_files(directory: Path) -> list[Path]:
    """The trainer states in a run directory: its own and its ``checkpoint-*`` sub-directories'."""
    return sorted(p for p in [directory / STATE_FILE, *directory.glob(f"checkpoint-*/{STATE_FILE}")] if p.is_file())


def _load(path: Path) -> dict[str, Any]:
    try:
        with open(path, encoding="utf-8") as f:
            state = json.load(f)
    except json.JSONDecodeError as exc:
        raise InputError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno}); is the file cut short?") from None
    except UnicodeDecodeError as exc:
        raise InputError(f"{path}: not UTF-8 text (byte {exc.start}); is the file damaged?") from None
    if not isinstance(state, dict) or not isinstance(state.get("log_history"), list):
        raise InputError(f"{path}: not a Hugging Face trainer state (no 'log_history' list)")
    return state


def is_trainer_state(path: Path) -> bool:
    """A directory holding trainer states, or a JSON object with a ``log_history`` list."""
    if path.is_dir():
        return bool(state_files(path))
    if path.name == STATE_FILE:
        return True
    with open(path, encoding="utf-8", errors="replace") as f:
        head = f.read(4096)
    return head.lstrip().startswith("{") and '"log_history"' in head


def read_trainer_state_rows(path: Path) -> tuple[list[dict[str, Any]], str, list[str]]:
    """``(rows, run name, notes)`` from a trainer state file or a run directory."""
    notes: list[str] = []
    if path.is_dir():
        files = state_files(path)
        if not files:
            raise InputError(f"{path}: no {STATE_FILE} in it or in its checkpoint-* directories")
        states = [(_load(f), f) for f in files]
        state, file = max(states, key=lambda sf: sf[0].get("global_step", 0) or 0)
        if len(files) > 1:
            notes.append(f"read {file.relative_to(path)} (step {state.get('global_step')}), the latest of {len(files)} trainer states")
        name = path.resolve().name
    else:
        state, file = _load(path), path
        # .../run/checkpoint-500/trainer_state.json -> "run"
        parent = file.resolve().parent
        name = parent.parent.name if parent.name.startswith("checkpoint-") else parent.name
    rows = [r for r in state["log_history"] if isinstance(r, dict)]
    if len(rows) != len(state["log_history"]):
        notes.append(f"{len(state['log_history']) - len(rows)} log_history entries that are not objects were skipped")
    return rows, name or file.stem, notes


def read_hf_trainer(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """A Hugging Face / TRL ``trainer_state.json`` (or the run directory holding its checkpoints)."""
    path = Path(path)
    rows, name, notes = read_trainer_state_rows(path)
    rows, placed = _evaluations_between_logging_steps(rows, x, y)
    return curves_from_rows(path, rows, x, y, default_name=name, notes=(*notes, *placed), y_scale=y_scale,
                            bounded=bounded)


def _evaluations_between_logging_steps(rows: list[dict[str, Any]], x: str, y: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The rows with an ``x`` given to each evaluation (a row holding ``y``) that falls between the
    training rows that log ``x`` (see the module's doc), those after the last such row left out; the
    notes. Nothing changes where the evaluations log ``x`` themselves, or each has a training row at
    its own step (``eval_steps`` a multiple of ``logging_steps``)."""
    if x.startswith(CUMULATIVE) or any(y in r and x in r for r in rows):
        return rows, []
    logged = sorted({r["step"]: r[x] for r in rows if y not in r and is_number(r.get(x)) and is_number(r.get("step"))}.items())
    if not logged:
        return rows, []
    steps = [s for s, _ in logged]
    kept, between, before_first, after = [], 0, 0, 0
    for r in rows:
        step = r.get("step")
        if y not in r or not is_number(step) or step == 0:  # (step 0: before training, at x = 0 -- rows.py's)
            kept.append(r)
            continue
        at = bisect.bisect_left(steps, step)
        if at < len(steps) and steps[at] == step:  # a training row at its own step: its value, taken as logged
            kept.append(r)
        elif at == len(steps):
            after += 1
        else:
            (s0, x0), (s1, x1) = logged[at - 1] if at else (0, 0.0), logged[at]
            kept.append({**r, x: x0 + (x1 - x0) * (step - s0) / (s1 - s0)})
            between += 1
            before_first += not at
    notes = []
    if between:
        first = f" ({before_first} before the first, from 0 at step 0)" if before_first else ""
        notes.append(f"{between} evaluation(s) fall between the training rows that log {x!r} (evaluated more often "
                     f"than logged: eval_steps < logging_steps): their {x!r} interpolated by step between the rows "
                     f"around them{first}")
    if after:
        notes.append(f"{after} evaluation(s) after the last training row that logs {x!r} (step {steps[-1]:g}): no "
                     f"{x!r} to give them, left out (the latest one's would put them at one x); --x step keeps them")
    return kept, notes
