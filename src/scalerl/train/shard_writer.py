"""The checkpoint shards' writer: ``torch.distributed.checkpoint``'s file-system writer, with a write's disk error kept.

A disk that fills while the ranks write their shards (``--nproc``, FSDP): dcp writes each tensor with torch.save, whose
zip writer raises a RuntimeError of its own (``unexpected pos ...``) over the write's OSError, and ``dcp.save`` raised a
CheckpointException of that on every rank -- both ranks' tracebacks, where a full disk is the trainer's one-line stop
that says how to go on (as for the single-process ``state.pt``: :func:`scalerl.train.checkpoint._save_through`).
"""

from __future__ import annotations

import os
from contextlib import contextmanager
from typing import Any, Iterator

from torch.distributed.checkpoint import FileSystemWriter
from torch.distributed.checkpoint.api import CheckpointException
from torch.distributed.checkpoint.filesystem import FileSystem

from scalerl.train.checkpoint import KeptWriteErrors


class _DiskErrorsFileSystem(FileSystem):
    """dcp's local file system, whose streams raise a failed write as its OSError, naming the file."""

    @contextmanager
    def create_stream(self, path: str | os.PathLike, mode: str) -> Iterator[Any]:
        with super().create_stream(path, mode) as stream:
            kept = KeptWriteErrors(stream)
            try:
                yield kept
            except Exception as exc:  # (torch's RuntimeError over it, or the OSError itself)
                error = kept.error if kept.error is not None else exc
                if not isinstance(error, OSError):
                    raise
                raise OSError(error.errno, error.strerror or str(error), error.filename or str(path)) from exc


def shard_writer(path: str | os.PathLike) -> FileSystemWriter:
    """The storage writer ``dcp.save`` is given for ``path``: the default one, its disk errors kept."""
    writer = FileSystemWriter(path)
    writer.fs = _DiskErrorsFileSystem()
    return writer


def disk_error(exc: CheckpointException) -> OSError | None:
    """The OSError of the lowest rank whose write failed in ``exc`` (every rank raises the same exception), its rank
    said; None where no rank's failure was one."""
    for rank in sorted(exc.failures):
        error = exc.failures[rank][0]
        if isinstance(error, OSError):
            return OSError(error.errno, f"{error.strerror or error} (rank {rank}, writing its shard)", error.filename)
    return None
