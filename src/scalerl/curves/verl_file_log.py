"""Read verl's file logger (``trainer.logger=[..., 'file']``): one JSON line per logged step,
``{"step": 10, "data": {"actor/pg_loss": ..., "val-core/openai/gsm8k/reward/mean@1": ..., ...}}``,
written to ``$VERL_FILE_LOGGER_PATH``, else ``$VERL_FILE_LOGGER_ROOT/<project>/<experiment>.jsonl``.

Each line is a row, ``step`` and the metrics verl logged at it (the same dict its console logger
prints), which :func:`scalerl.curves.rows.curves_from_rows` makes curves of. verl writes NaN as
``null`` (orjson): such a value is dropped and counted like any missing one. What it smooths over,
each said in the notes:

* **a resume into the same file** (verl releases that append to it): the step goes back (the last
  step logged again without going back shows no launch in the file: both rows kept, said); what the
  abandoned attempt logged after the
  checkpoint's step is dropped, and at that step the resumed attempt's evaluation-only line (verl
  evaluates the checkpoint it loaded and logs that at its step) is merged into the abandoned
  attempt's line of that step: one evaluation of the checkpoint, the later, beside the step's
  training metrics; newer verl truncates the file on a resume, which then holds the resumed attempt
  alone;
* **several trainings in one file** (the step goes back to the first one): each a run of its own,
  ``<stem>#1``, ``<stem>#2``, ...;
* a torn last line (the run was killed mid-write) is skipped; a malformed line in the middle is
  an error that names it.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import split_attempts
from scalerl.curves.data import Curve
from scalerl.curves.rows import curves_from_rows
from scalerl.errors import InputError
from scalerl.runlog import iter_lines

#: The two keys of every line verl's file logger writes.
LINE_KEYS = {"step", "data"}


def _is_line(obj: Any) -> bool:
    return isinstance(obj, dict) and set(obj) == LINE_KEYS and isinstance(obj["data"], dict)


def looks_like_verl_file(path: Path) -> bool:
    """The first non-blank line is one of verl's file logger's."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            first = next((line for line in f if line.strip()), "")
        return _is_line(json.loads(first))
    except (OSError, ValueError):
        return False


def read_verl_file_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows (``step`` and the metrics) in log order, resumes and restarts resolved, and notes."""
    lines = list(iter_lines(path))
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    for idx, (lineno, obj, raw) in enumerate(lines):
        if not _is_line(obj):
            if idx == len(lines) - 1 and rows and obj is None:
                notes.append(f"skipped a torn last line ({lineno}) -- the run was probably killed mid-write")
                continue
            raise InputError(f"{path}: line {lineno} is not a verl file-logger line ({{\"step\": N, \"data\": "
                             f"{{...}}}}): {raw.strip()[:80]!r}")
        if isinstance(obj["step"], bool) or not isinstance(obj["step"], (int, float)):
            raise InputError(f"{path}: line {lineno}: step {obj['step']!r} is not a number")
        rows.append({**obj["data"], "step": obj["step"]})
    if rows and rows[0]["step"] > 1:
        notes.append(f"the file begins at step {rows[0]['step']:g}: verl rewrites its file logger's file when a run "
                     "resumes, so the steps before the resume are not in it (its console log or tracker has them)")
    # (late_rows: the fully-async trainer's validations come after later steps -- review dq)
    rows, more = split_attempts(rows, "step", path.stem, late_rows=True)
    return rows, notes + more


def read_verl_file(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """verl's file-logger JSONL: see :mod:`scalerl.curves.verl_file_log`; ``x`` may be ``step``, a
    logged number, or ``cum:`` of one (``cum:timing_s/step``: seconds so far)."""
    path = Path(path)
    rows, notes = read_verl_file_rows(path)
    if not rows:
        raise InputError(f"{path}: no verl file-logger lines in the file")
    # (step_column: a late validation takes the x of its own step, not the later steps' -- review ds)
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded,
                            step_column="step")
