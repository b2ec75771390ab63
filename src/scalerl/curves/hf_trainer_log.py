"""Read a Hugging Face Trainer's ``trainer_state.json``: the log TRL's trainers (GRPOTrainer,
PPOTrainer, ...) and every other ``transformers.Trainer`` write into each checkpoint.

Its ``log_history`` is a list of dicts -- training rows (``step``, ``reward``, ``num_tokens``,
...) and evaluation rows (``step``, ``eval_reward``, ...) -- which become the rows
:func:`scalerl.curves.rows.curves_from_rows` makes curves of. Given a run's output directory,
the checkpoint with the most steps is read (its state holds the whole history up to it).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scalerl.curves.data import Curve
from scalerl.curves.rows import curves_from_rows
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
    return curves_from_rows(path, rows, x, y, default_name=name, notes=notes, y_scale=y_scale, bounded=bounded)
