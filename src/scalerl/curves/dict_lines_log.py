"""Read a console log whose metrics are printed dicts, one per line: the stdout of a Hugging Face
``Trainer`` / TRL trainer (``{'loss': '0.01', 'num_tokens': '1406', 'reward': '0.56', 'epoch':
'0.04'}``, then ``{'eval_loss': ..., 'eval_reward': ...}`` at each evaluation), or of any script
that prints ``print(metrics)``.

Each dict is a row, in the order printed; :func:`scalerl.curves.rows.curves_from_rows` makes
curves of them (a training row is not an evaluation; an evaluation row takes ``num_tokens`` from
the training row before it). What else the log holds -- warnings, progress bars (a dict written
over a bar's ``\\r`` line is found after it), colours -- is passed over. transformers >= 5 prints
values as strings rounded to 4 significant digits (``'1.463'``): they are read as numbers, and the
log's precision is that; ``trainer_state.json`` (the ``hf-trainer`` format) keeps every digit.

A console that several trainings printed into (``tee -a``) is told apart by the ``epoch`` every
dict carries: where it goes back to the start, a new run (``<stem>#2``); where it goes back less, a
training resumed from a checkpoint, and what the abandoned attempt printed from there on is dropped.
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from scalerl.curves.console import ANSI
from scalerl.curves.data import Curve
from scalerl.curves.attempts import split_attempts
from scalerl.curves.rows import SCALAR_REPR, curves_from_rows, scalar_of, unwrap_scalar
from scalerl.errors import InputError

#: What a Hugging Face ``Trainer`` prints in every dict, training and evaluation alike.
TRAINER_EPOCH = "epoch"
#: A printed dict of metrics: opens with a quoted key, closes the line.
_DICT = re.compile(r"\{\s*['\"][^'\"\n]+['\"]\s*:.*\}\s*$")
#: A float repr that is no Python literal: ``nan``, ``inf``, ``-inf`` as a value.
_BARE_NONFINITE = re.compile(r"(?<=:\s)(-?inf|nan)(?=\s*[,}])")
#: How many characters of a file's start are read to tell whether it is such a log.
SNIFF_CHARS = 2_000_000


def _dict_text(line: str) -> str | None:
    line = ANSI.sub("", line).split("\r")[-1] if "\r" in line else ANSI.sub("", line)
    found = _DICT.search(line)
    return found.group(0) if found else None


def _number_or_value(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(unwrap_scalar(v.strip()))
        except ValueError:
            return v
    return v


def parse_printed_dict(text: str) -> dict[str, Any] | None:
    """A printed dict of metrics (``repr`` / ``pprint`` of str keys; values numbers, or numbers as
    strings as transformers and SkyRL print them) as a dict with numbers read; None if it is none."""
    text = SCALAR_REPR.sub(scalar_of, text)  # np.float64(0.5) in a dict: no literal either parser reads
    text = _BARE_NONFINITE.sub(r"'\1'", text)  # {'loss': nan}: a literal neither parser reads
    d = None
    if '"' not in text and "\\" not in text:
        # Fast path: a repr of str keys and str / number values is JSON once its quotes are swapped
        # (json is ~10x faster than ast.literal_eval; anything else falls through to it).
        try:
            d = json.loads(text.replace("'", '"'))
        except ValueError:
            d = None
    if d is None:
        try:
            d = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(d, dict) or not all(isinstance(k, str) for k in d):
        return None
    return {k: _number_or_value(v) for k, v in d.items()}


def looks_like_dict_lines(path: Path) -> bool:
    """A text file with at least two printed metric dicts among its lines."""
    try:
        with open(path, encoding="utf-8", errors="replace", newline="") as f:
            head = f.read(SNIFF_CHARS)
    except OSError:
        return False
    found = 0
    for line in head.split("\n"):
        text = _dict_text(line)
        found += bool(text and parse_printed_dict(text))
        if found == 2:  # enough: parsing every dict of the sniffed head would cost as much as reading it
            return True
    return False


def read_dict_lines_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    rows, unreadable = [], 0
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        for line in f:
            text = _dict_text(line.rstrip("\n"))
            if text is None:
                continue
            row = parse_printed_dict(text)
            if row is None:
                unreadable += 1
            else:
                rows.append(row)
    notes = [f"{unreadable} dict-like line(s) could not be read and were skipped"] if unreadable else []
    return rows, notes


def read_dict_lines(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """One run per file (named after it)."""
    path = Path(path)
    rows, notes = read_dict_lines_rows(path)
    if not rows:
        raise InputError(f"{path}: no printed metric dicts ({{'key': value, ...}} lines) in the file")
    # A Trainer prints its epoch in every dict: the clock that tells a resume or a new training
    # appended to the same console (tee -a) from the run before it.
    rows, more = split_attempts(rows, TRAINER_EPOCH, path.stem)
    notes = [*notes, *more]
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded)
