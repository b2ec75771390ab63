"""SIGTERM stops a run as Ctrl-C does.

``kill PID`` -- and SLURM's ``scancel``, Kubernetes, systemd, which all stop a job with SIGTERM --
ended a run at once with Python's default action: exit -15, no word, no clean-up, no "resume
with" line. While a command runs, SIGTERM instead raises :class:`~scalerl.errors.Terminated` (a
KeyboardInterrupt) in the main thread, so that every ``except KeyboardInterrupt`` that cleans up
after Ctrl-C cleans up after it too, and the command exits 143 (128 + SIGTERM).
"""

from __future__ import annotations

import contextlib
import os
import signal
import threading
import time
from typing import Iterator

from scalerl.errors import Terminated


_sigterms = 0  # how many SIGTERMs raise_terminated has turned into Terminated in this process
_sigints = 0  # how many Ctrl-Cs raise_interrupt has turned into KeyboardInterrupt in this process


def raise_terminated(signum: int, frame: object) -> None:
    """SIGTERM handler: raise :class:`Terminated` once. A second SIGTERM during the clean-up ends
    the process at once (the default action, put back here): a scheduler that repeats itself means it."""
    global _sigterms
    _sigterms += 1
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    raise Terminated("terminated (SIGTERM)")


def raise_interrupt(signum: int, frame: object) -> None:
    """SIGINT handler: Python's own (KeyboardInterrupt), counted (see :func:`stops_delivered`)."""
    global _sigints
    _sigints += 1
    raise KeyboardInterrupt


def stops_delivered() -> int:
    """How many stops (Ctrl-C, SIGTERM) the handlers here have raised in this process. A loop
    compares it with its value when the loop began: a stop raised while CPython ran a ``__del__``
    (or a weakref callback) is printed as "Exception ignored" and lost -- the run trained on to its
    end, exit 0 -- and the count still says it came."""
    return _sigints + _sigterms


def forget_caught_interrupt() -> None:
    """Clear CPython's mark of an "unhandled" Ctrl-C, for a command that caught its Ctrl-C and
    chose its exit status (130) itself.

    CPython marks a KeyboardInterrupt (exactly that class: not our Terminated) that leaves code
    run by ``exec`` or ``eval`` of a string -- dataclasses, namedtuples and typing build their
    methods so, by the hundred while torch and transformers import as a study's run starts -- as
    unhandled, even when a caller catches it; an interpreter started as ``python -m`` then kills
    itself with SIGINT as it exits (status -2) after the command's "interrupted; resume with"
    line: a Ctrl-C landing as a run started did that now and then (benchmarks/study_kill_fuzz.py).
    Every ``exec`` of a string resets the mark before it runs, and one that ends well leaves it
    clear."""
    exec("pass")  # noqa: S102 -- the reset is a side effect of exec'ing a string (see above)


@contextlib.contextmanager
def terminated_stays_terminated() -> Iterator[None]:
    """Around C code that turns any exception of its own signal check into a plain
    KeyboardInterrupt (Ray's ``ray.wait`` and ``ray.get``): one raised in the block after a SIGTERM
    is raised as :class:`Terminated` again, so that the command exits 143, not 130."""
    before = _sigterms
    try:
        yield
    except KeyboardInterrupt as exc:
        if isinstance(exc, Terminated) or _sigterms == before:
            raise
        raise Terminated("terminated (SIGTERM)") from None


@contextlib.contextmanager
def sigterm_stops_like_ctrl_c() -> Iterator[None]:
    """SIGTERM raises :class:`Terminated` inside the block, and Ctrl-C its KeyboardInterrupt counted
    (:func:`raise_interrupt`, where Python's own handler was set: not where SIGINT is ignored or a
    caller set another); the previous handlers are put back after it (a caller of the command line
    in-process keeps its own). Outside the main thread, where Python cannot set a handler, nothing
    changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGTERM, raise_terminated)
    before_int = signal.getsignal(signal.SIGINT)
    if before_int is signal.default_int_handler:
        signal.signal(signal.SIGINT, raise_interrupt)
    try:
        yield
    finally:
        # None: a handler not set from Python (there is none to put back); the default then.
        signal.signal(signal.SIGTERM, signal.SIG_DFL if before is None else before)
        if before_int is signal.default_int_handler:
            signal.signal(signal.SIGINT, before_int)


@contextlib.contextmanager
def stops_deferred() -> Iterator[None]:
    """Ctrl-C and SIGTERM wait for the end of the block, then take effect as they would have: for a
    write that must not be cut. A checkpoint's ``torch.save`` stopped mid-archive raised its own
    RuntimeError ("unexpected pos ...") over the KeyboardInterrupt, and the stop came out as a
    traceback and exit 1 instead of its "resume with" line; finished, it is one more step a resume
    keeps. Outside the main thread, where Python cannot set a handler, nothing changes."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    caught: list[int] = []

    def hold(signum: int, frame: object) -> None:
        caught.append(signum)

    before = {s: signal.signal(s, hold) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for s, handler in before.items():
            signal.signal(s, signal.SIG_DFL if handler is None else handler)
    if caught:  # handed to the handler put back: Ctrl-C's KeyboardInterrupt, SIGTERM's Terminated
        # Called, not raised again with raise_signal: a process that blocks the signal (a Ray
        # worker blocks SIGINT; ray.cancel interrupts its task through Python's handler) never saw
        # it, and a run cancelled during a checkpoint trained on to its end.
        handler = signal.getsignal(caught[0])
        if callable(handler):
            handler(caught[0], None)
        elif handler == signal.SIG_DFL:
            signal.raise_signal(caught[0])


_stop_under_way = False  # a run in this process caught its stop and is cleaning up (interrupted_until_stopping)


def stop_under_way() -> None:
    """Said by a run that caught its stop (Ctrl-C, SIGTERM, a cancel) and now cleans up: closes its
    generators, finishes its tracker runs. Inside :func:`interrupted_until_stopping`, a repeated
    interrupt then waits for that clean-up instead of cutting it."""
    global _stop_under_way
    _stop_under_way = True


def _interrupt_until_stopping(signum: int, frame: object) -> None:
    if not _stop_under_way:
        raise KeyboardInterrupt


@contextlib.contextmanager
def interrupted_until_stopping() -> Iterator[None]:
    """SIGINT raises KeyboardInterrupt in the block until the run in it says :func:`stop_under_way`;
    later ones are let go. For a run that is interrupted repeatedly on purpose: a study cancels its
    Ray tasks every few seconds (``ray.cancel``, delivered through Python's SIGINT handler), because a
    cancel that lands while the task starts can be swallowed by Ray's or a library's code -- and a
    clean-up longer than that interval (closing vLLM actors, finishing a W&B run) was cut by the next
    cancel. Sets the handler even where SIGINT was ignored (a Ray worker of a driver started in the
    background inherits that), and puts the previous one back after the block (a reused Ray worker
    runs the next task with it). Outside the main thread, where Python cannot set a handler,
    nothing changes."""
    global _stop_under_way
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    _stop_under_way = False
    before = signal.signal(signal.SIGINT, _interrupt_until_stopping)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, signal.SIG_DFL if before is None else before)
        _stop_under_way = False


@contextlib.contextmanager
def keeps_sigterm() -> Iterator[None]:
    """SIGTERM's handler as it was before the block, whatever the block sets: Ray's start-up puts
    its own crash handler on it, which answers ``kill PID`` (a batch scheduler's stop) with a C++
    stack dump and an abort, exit 1, instead of a run's clean stop. Outside the main thread, where
    Python cannot set a handler, nothing changes.

    A SIGTERM that came *during* the block, to the handler the block had set, is delivered again to
    the one from before: Ray's start-up first sets one that calls ``sys.exit(15)``, so ``kill PID``
    in the seconds ``ray.init`` takes ended the command with exit 15 and not a word (found by
    benchmarks/kill_fuzz.py --backend ray) -- now it stops as anywhere else (143, "interrupted ...")."""
    before = signal.getsignal(signal.SIGTERM) if threading.current_thread() is threading.main_thread() else None
    try:
        yield
    except SystemExit as exc:
        if before is None or exc.code != signal.SIGTERM:
            raise
        signal.signal(signal.SIGTERM, before)
        before = None  # (what that handler sets stays: raise_terminated's "a second SIGTERM ends at once")
        signal.raise_signal(signal.SIGTERM)  # the handler from before raises here (or the default ends the process)
        raise  # ignored before (SIG_IGN): the block was cut short all the same
    finally:
        if before is not None:
            signal.signal(signal.SIGTERM, before)


def ignore_stops() -> None:
    """In a child the trainer stops itself (a generator process, a reward worker): Ctrl-C and a
    scheduler's SIGTERM (``kill -- -PGID``, SLURM, Kubernetes) reach the whole process group, and a
    child stopped by them first raced the trainer's clean stop ("exited unexpectedly", "died during
    the call") or printed a second traceback. The trainer kills it when it closes; a ``kill -9`` of
    the trainer ends it through :mod:`scalerl.parent_death`."""
    for stop in (signal.SIGINT, signal.SIGTERM):
        signal.signal(stop, signal.SIG_IGN)


class StopLatch:
    """A stop that a process sets once and the children it starts read (passed to them as they
    start, spawn): a flag in shared memory, without a lock, which no child can jam. Not a
    multiprocessing Event: a child that exited while waiting on one left the Event's condition
    counting a sleeper that never woke, and the parent's ``set()`` hung. Nor a pipe's end-of-file,
    which the parent's death (``kill -9``) gives too: children that stop by themselves then (a
    torch-spawned rank gets SIGINT) got a second stop that cut their clean-up."""

    def __init__(self) -> None:
        import multiprocessing

        self._flag = multiprocessing.get_context("spawn").RawValue("b", 0)

    def set(self) -> None:
        self._flag.value = 1

    def is_set(self) -> bool:
        return bool(self._flag.value)

    def wait(self, poll_s: float = 0.2) -> None:
        while not self._flag.value:
            time.sleep(poll_s)


def sigterm_when_set(latch: StopLatch) -> None:
    """In a child: once ``latch`` is set, SIGTERM to this process -- the parent's stop passed on,
    which the child's SIGTERM handler turns into a clean stop. The parent does not signal its
    children itself: one still starting up has no handler yet, and SIGTERM's default action killed
    it without a word. From a thread, which waits for the whole life of the process."""

    def watch() -> None:
        latch.wait()
        # Not where SIGTERM is ignored (a study's worker between runs), nor after a SIGTERM has
        # raised Terminated here already (`kill -- -PGID` reaches the children too): raise_terminated
        # put back the default action, and a second one would kill the process in its clean-up.
        if signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, signal.SIG_IGN):
            os.kill(os.getpid(), signal.SIGTERM)

    threading.Thread(target=watch, name="sigterm-when-set", daemon=True).start()
