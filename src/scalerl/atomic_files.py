"""Files written whole or not at all.

A run can be killed at any moment (``kill -9``, a scheduler, a full node), and a file written in
place is then left empty or cut: an empty ``config.yaml`` read back as every default, a cut
calibration copy that refused every later resume, a report page that ends mid-table. Each file
here is written to a hidden temporary beside it and renamed over it (``os.replace``, atomic on one
file system): a reader sees the old file or the new one, never a part.
"""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path
from typing import Iterator

TMP_MARK = ".tmp-"
"""In the name of a file being written (``.NAME.tmp-PID-THREAD.SUFFIX``): hidden, so a run
directory's check for a user's own files passes it by."""


def temporary_for(path: Path) -> Path:
    """The hidden temporary ``path`` is written to. It keeps ``path``'s suffix (matplotlib picks the
    image format by it) and names the process and thread (two writers never share one)."""
    return path.with_name(f".{path.name}{TMP_MARK}{os.getpid()}-{threading.get_ident()}{path.suffix}")


@contextlib.contextmanager
def replaced_atomically(path: str | os.PathLike) -> Iterator[Path]:
    """Yield the temporary to write ``path``'s new content to; when the block ends without an
    exception it replaces ``path``. On an exception (a kill: Ctrl-C, SIGTERM) the temporary is
    removed and ``path`` is as it was. Temporaries of ``path`` that killed writers left (``kill -9``
    gives no chance to remove them) are removed first."""
    path = Path(path)
    remove_dead_temporaries(path)
    tmp = temporary_for(path)
    try:
        yield tmp
        os.replace(tmp, path)
    except OSError as exc:
        if exc.filename is not None and os.fspath(exc.filename) == os.fspath(tmp):
            # Named by the file the user asked for: "report.md: Is a directory", not the hidden temporary.
            raise type(exc)(exc.errno, exc.strerror, os.fspath(path)) from None
        raise
    finally:
        tmp.unlink(missing_ok=True)


def write_text_atomically(path: str | os.PathLike, text: str) -> None:
    """``Path.write_text`` (UTF-8), whole or not at all."""
    with replaced_atomically(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def lasting_path(filename: str | os.PathLike) -> Path:
    """The file or directory a write that failed inside a temporary directory (``step_000040.tmp-PID/...``,
    ``final.tmp-PID/...``: renamed into place when whole) was for: an error names it, not the temporary, which is
    removed by the time the error is read. Any other path is returned as it is."""
    path = Path(filename)
    for i, part in enumerate(path.parts):
        name, mark, pid = part.rpartition(TMP_MARK)
        if mark and name and pid.isdigit():
            return Path(*path.parts[:i], name)
    return path


def remove_dead_temporaries(path: str | os.PathLike) -> list[Path]:
    """Remove the temporaries of ``path`` that a killed process left (its PID no longer runs on
    this machine); those of a live writer stay. Returns those removed."""
    path = Path(path)
    removed = []
    for tmp in path.parent.glob(f".{path.name}{TMP_MARK}*"):
        pid = tmp.name[len(path.name) + 1 + len(TMP_MARK):].split("-")[0]
        if pid.isdigit() and not _alive(int(pid)):
            tmp.unlink(missing_ok=True)
            removed.append(tmp)
    return removed


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process: it exists
        return True
    return True
