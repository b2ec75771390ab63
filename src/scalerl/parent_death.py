"""Child processes that die with their parent, even one killed with ``kill -9``.

A worker that watches its parent from a Python thread (``os.getppid()`` in a loop) cannot watch
while its main thread is stuck in C code that holds the GIL -- a user's reward function in a
regex that backtracks for hours, say: after a ``kill -9`` of the trainer such a worker stayed
behind, spinning, for good. On Linux the kernel does it instead: ``prctl(PR_SET_PDEATHSIG,
SIGKILL)`` (what torch's DataLoader workers and many launchers use) kills the child when its
parent dies, whatever the child is doing.

Two catches, both handled here. The parent may die before the child's prctl runs, and then no
signal ever comes: the child compares its parent with the pid the parent wrote in its
environment (:data:`PARENT_PID_ENV`). And "parent" means the *thread* that started the child:
a child started from a thread that ends before the process (a pool's, a generator's) would be
killed with that thread, so :func:`start_process` starts every child from one thread that lasts
as long as the process.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Callable, TypeVar

#: The environment variable in which :func:`start_process` tells a child its parent's pid.
PARENT_PID_ENV = "SCALERL_PARENT_PID"

T = TypeVar("T")

_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>

_starter: ThreadPoolExecutor | None = None
_starter_pid = 0  # the process the starter thread belongs to (a forked child has none)
_starter_lock = threading.Lock()


def die_with_parent(parent: int | None = None) -> bool:
    """In a child: be killed when the parent dies. True where the kernel does it (Linux); False
    elsewhere, where the caller watches its parent from a thread instead. Exits at once when the
    parent is already gone: ``parent`` is its pid as the parent knew it (a multiprocessing child's
    ``multiprocessing.parent_process().pid``), by default what :func:`start_process` put in the
    environment."""
    if not sys.platform.startswith("linux"):
        return False
    import ctypes

    try:
        if ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            return False
    except (OSError, AttributeError):  # no libc prctl: a watching thread then
        return False
    if parent is None:
        told = os.environ.get(PARENT_PID_ENV, "")
        parent = int(told) if told.isdigit() else None
    if parent is not None and os.getppid() != parent:  # died before prctl ran: no signal comes
        os._exit(0)
    return True


def start_process(args: list[str], **popen: Any) -> subprocess.Popen:
    """``subprocess.Popen(args, **popen)``, started from a thread that lasts as long as this
    process (see the module's docstring), with this process's pid in the child's environment."""
    popen["env"] = {**(popen.get("env") or os.environ), PARENT_PID_ENV: str(os.getpid())}
    return from_lasting_thread(subprocess.Popen, args, **popen)


def from_lasting_thread(fn: Callable[..., T], *args: Any, **kwargs: Any) -> T:
    """``fn(*args, **kwargs)`` in the thread that lasts as long as this process: for a child
    started otherwise than by :func:`start_process` (a multiprocessing ``Process.start``) whose
    :func:`die_with_parent` must not fire when the thread that happened to start it ends."""
    global _starter, _starter_pid
    with _starter_lock:
        if _starter is None or _starter_pid != os.getpid():
            _starter = ThreadPoolExecutor(1, thread_name_prefix="scalerl-process-starter")
            _starter_pid = os.getpid()
        starter = _starter
    return starter.submit(fn, *args, **kwargs).result()
