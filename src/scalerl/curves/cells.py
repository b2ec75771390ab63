"""Whether a row logs a value: the one rule every reader and the rows -> curves back end classify rows by.

Writers of whole rows fill in what a row did not log: pandas writes NaN (``to_json`` as ``null``,
``to_csv`` as an empty cell), Python's ``json`` writes ``NaN``, ``csv.writer`` of full rows ``nan``.
A training row written so holds ``val/acc: NaN`` and an evaluation row ``loss: NaN``; neither logged
that value. So a value counts as logged only where it is one: not None, not NaN or infinite, not a
string the readers read as a missing cell.
"""

from __future__ import annotations

import math

#: Cells that hold no value: empty, or what writers print for a missing or non-finite one (a CSV's
#: cells; a JSON log's strings, read the same).
MISSING_CELLS = frozenset({"", "nan", "NaN", "NAN", "null", "None", "none", "inf", "-inf", "Infinity", "-Infinity",
                           "+inf"})


def logged(value: object) -> bool:
    """Whether a row logs ``value``: not None, not NaN or infinite, not a string the readers read as a
    missing cell (:data:`MISSING_CELLS`: ``""``, ``"nan"``, ``"null"``, ...). A row that writes every
    column, NaN where it logged nothing (pandas' ``to_csv``, ``csv.writer`` of full rows, ``json.dumps``
    of a metrics table's row), logs only its numbers: an evaluation row with NaN timers is no training
    row, a training row with a NaN score no evaluation."""
    if value is None:
        return False
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, str):
        return value.strip() not in MISSING_CELLS
    return True


def is_number(value: object) -> bool:
    """Whether ``value`` is a number a counter or a compute column can hold: an int or float, not a bool,
    not NaN (the readers' one test of a step, a ``from_step``, a ``num_tokens``)."""
    return isinstance(value, (int, float)) and not isinstance(value, bool) and value == value
