"""Which reward failures belong to which scoring: the errors and timeouts of the calls made inside
one :func:`counting_failures` block.

A task's ``reward_stats()`` counts every failed call of its reward function since it started,
whatever the call was for. The run's totals (``reward_errors``, ``reward_timeouts``) must count
the calls of the batches it trained on and of its evaluations, each once -- after ``--resume`` the
pipelined sources score again the batches generated before the checkpoint and not yet trained
on, and a process-wide counter counted their failures twice (136 where the uninterrupted run
had 127). So every batch carries the failures of its own scoring, tallied here, and the trainer
adds them up as it trains on it.

The tally lives in a context variable, so concurrent scorings (generator threads, the trainer's
evaluation) each count their own calls; a scoring that hands calls to other threads (a task's
reward workers) passes its tally on with :func:`in_tally`.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from typing import Any, Callable, Iterator

#: The kinds of failure counted (a reward that raised or returned a non-number; one that timed out).
KINDS = ("errors", "timeouts")


class FailureTally:
    """Failed calls by kind; thread-safe (reward workers' threads add to one tally at once)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts = dict.fromkeys(KINDS, 0)

    def add(self, kind: str, n: int = 1) -> None:
        with self._lock:
            self._counts[kind] += n

    def as_dict(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)


_CURRENT: contextvars.ContextVar[FailureTally | None] = contextvars.ContextVar("scalerl_reward_failures",
                                                                              default=None)


@contextlib.contextmanager
def counting_failures() -> Iterator[FailureTally]:
    """A fresh tally of the failed reward calls made inside the block (in this thread, and in the
    threads it hands calls to through :func:`in_tally`)."""
    tally = FailureTally()
    token = _CURRENT.set(tally)
    try:
        yield tally
    finally:
        _CURRENT.reset(token)


def note_failure(kind: str) -> None:
    """Count a failed call (``kind``: one of :data:`KINDS`) in the tally of the scoring that made it, if any."""
    tally = _CURRENT.get()
    if tally is not None:
        tally.add(kind)


def current_tally() -> FailureTally | None:
    """The tally of the scoring running in this thread (to pass on with :func:`in_tally`), or None."""
    return _CURRENT.get()


def in_tally(tally: FailureTally | None, fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args)`` with its failed calls counted in ``tally`` (made in another thread than the scoring's)."""
    token = _CURRENT.set(tally)
    try:
        return fn(*args)
    finally:
        _CURRENT.reset(token)


def scored_apart(fn: Callable[..., Any], *args: Any) -> tuple[Any, dict[str, int]]:
    """``fn(*args)`` and the failed calls it made, counted apart (returned) and in the enclosing
    tally as well: which of a scoring's calls failed, where one completion's failure must be said
    beside it (the completions ``samples.jsonl`` shows) without leaving the scoring's totals."""
    outer = _CURRENT.get()
    with counting_failures() as own:
        result = fn(*args)
    counts = own.as_dict()
    if outer is not None:
        for kind, n in counts.items():
            outer.add(kind, n)
    return result, counts


def add_counts(total: dict[str, int], more: dict[str, int]) -> None:
    """Add the counts ``more`` into ``total`` (by kind)."""
    for kind, n in more.items():
        total[kind] = total.get(kind, 0) + n
