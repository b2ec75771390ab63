"""Open an SQLite file read-only, as the trackers that keep their runs in one (MLflow, Trackio) leave
it: never written to, never locked against the trainer still logging into it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from scalerl.errors import InputError

SQLITE_MAGIC = b"SQLite format 3\x00"
#: What reading a damaged database raises: SQLite's errors, and Python's when the error message or a
#: name in the damaged schema is not UTF-8.
DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)


def is_sqlite(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(SQLITE_MAGIC)) == SQLITE_MAGIC
    except OSError:
        return False


def connect(path: Path) -> sqlite3.Connection:
    """A read-only connection (``mode=ro``); an unopenable file is an :class:`InputError`. Text that
    is not UTF-8 (a damaged page) reads with replacement characters instead of raising mid-query."""
    try:
        db = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True)
    except DB_ERRORS as exc:
        raise InputError(f"{path}: cannot open the SQLite database ({exc})") from None
    db.text_factory = lambda raw: raw.decode("utf-8", errors="replace")
    return db


def tables(path: Path) -> set[str]:
    """The tables of an SQLite file; empty for anything else (not SQLite, unreadable)."""
    if not is_sqlite(path):
        return set()
    try:
        with connect(path) as db:
            return {r[0] for r in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    except (*DB_ERRORS, InputError):
        return set()
