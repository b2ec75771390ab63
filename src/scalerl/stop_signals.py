"""SIGTERM stops a run as Ctrl-C does.

``kill PID`` -- and SLURM's ``scancel``, Kubernetes, systemd, which all stop a job with SIGTERM --
ended a run at once with Python's default action: exit -15, no word, no clean-up, no "resume
with" line. While a command runs, SIGTERM instead raises :class:`~scalerl.errors.Terminated` (a
KeyboardInterrupt) in the main thread, so that every ``except KeyboardInterrupt`` that cleans up
after Ctrl-C cleans up after it too, and the command exits 143 (128 + SIGTERM).
"""

from __future__ import annotations

import contextlib
import signal
import threading
from typing import Iterator

from scalerl.errors import Terminated


def raise_terminated(signum: int, frame: object) -> None:
    """SIGTERM handler: raise :class:`Terminated` once. A second SIGTERM during the clean-up ends
    the process at once (the default action, put back here): a scheduler that repeats itself means it."""
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated("terminated (SIGTERM)")


@contextlib.contextmanager
def sigterm_stops_like_ctrl_c() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` inside the block; the previous handler is put back after
    it (a caller of the command line in-process keeps its own). Outside the main thread, where
    Python cannot set a handler, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, raise_terminated)
    try:
        yield
    finally:
        # None: a handler not set from Python (there is none to put back); the default then.
        signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)
