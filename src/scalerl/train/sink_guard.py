"""A metric sink that fails mid-run does not end the training.

TensorBoard and W&B mirror the run log, which is written first and holds every row. A mirror that
fails -- the disk under ``<output>/tensorboard`` full (TensorBoard's writer then raises at every
later row and at its close), W&B raising in ``log`` -- used to end hours of training with its
traceback. As in verl and TRL, the training goes on instead: one warning when a sink first fails,
the rows it could not take counted, and the count said when the run closes.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # loggers makes the guarded sinks; only the annotation needs its Sink
    from scalerl.train.loggers import Sink


class GuardedSink:
    """``sink`` with its failures (any ``Exception``; a stop -- Ctrl-C, SIGTERM -- still stops the run)
    turned into a warning and a count. ``name`` says which sink in the messages."""

    def __init__(self, sink: Sink, name: str) -> None:
        self.sink = sink
        self.name = name
        self.lost = 0  # rows the sink raised on
        self.first_failure: str | None = None  # "at step N: OSError: ..." of the first failure

    def _failed(self, what: str, exc: Exception) -> None:
        if self.first_failure is None:
            self.first_failure = f"{what}: {type(exc).__name__}: {exc}"
            print(f"warning: {self.name} failed {self.first_failure}; training goes on and the run log keeps every "
                  f"row (rows {self.name} could not take are counted and said at the end)", file=sys.stderr)

    def resume(self, first_step: int, kept=()) -> str | None:
        try:
            return self.sink.resume(first_step, kept)
        except Exception as exc:  # noqa: BLE001 -- a mirror's failure must not end the run
            self._failed("at the resume", exc)
            return None

    def log(self, row: dict[str, Any], step: int) -> None:
        try:
            self.sink.log(row, step)
        except Exception as exc:  # noqa: BLE001 -- a mirror's failure must not end the run
            self.lost += 1
            self._failed(f"at step {step}", exc)

    def close(self, ok: bool = True) -> None:
        try:
            self.sink.close(ok)
        except Exception as exc:  # noqa: BLE001 -- its last rows may be lost; the run log has them
            self._failed("at its close", exc)
        if self.lost:
            print(f"note: {self.name} could not take {self.lost} row(s), the first {self.first_failure}; the run log "
                  f"has every row (`scalerl fit` reads it)", file=sys.stderr)

    def discard(self) -> None:
        try:
            self.sink.discard()
        except Exception as exc:  # noqa: BLE001 -- what is left is a tracker's, beside no run
            print(f"note: {self.name} could not remove this attempt's files: {type(exc).__name__}: {exc}",
                  file=sys.stderr)
