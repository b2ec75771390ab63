"""The interface between the scheduler (driver side) and the generators that run its requests.

A pool owns its generators -- threads (:mod:`~scalerl.pipeline.threads`), processes
(:mod:`~scalerl.pipeline.processes`) or Ray actors (:mod:`~scalerl.pipeline.ray_backend`) --
and knows how to get a request to an idle one, a result back, and new weights to all of them.
It decides nothing about content or staleness; :mod:`~scalerl.pipeline.scheduler` does.

Contract:

* :meth:`WorkerPool.submit` never blocks; requests are taken by whichever generator is idle.
* A generator starts a request only once it holds weights of ``request.min_version`` or newer.
* ``deliver(result)`` is called once per completed request, from a pool thread; a pool that
  re-runs a request (after a crash) may deliver it again -- the scheduler drops duplicates.
* ``fail(error)`` reports an error the run cannot continue past; :meth:`WorkerPool.check`
  raises one (called by the waiting trainer, so a wedged pool cannot hang it silently).
* A pool thread runs its loop through :func:`reporting`: an exception the loop does not handle
  itself reaches ``fail`` too -- a thread that dies unheard leaves the trainer waiting forever.
* A pool's constructor that fails part-way closes what it had started (:func:`undone_if_raised`):
  its caller never gets the object, so nobody else can.
"""

from __future__ import annotations

import contextlib
import sys
import threading
from typing import Any, Callable, Iterator, Protocol

from scalerl.generate.base import Generator
from scalerl.pipeline.weights import Weights
from scalerl.pipeline.work import RoundRequest, RoundResult

Deliver = Callable[[RoundResult], None]
Fail = Callable[[BaseException], None]
Refresh = Callable[[RoundRequest], RoundRequest]
"""What a pool applies to a request it sends to a worker again (a restarted Ray actor's) or long after it was
submitted: the scheduler's stamp of the trainer's current reward state (``PooledSource._stamped``)."""


class PipelineError(RuntimeError):
    """A generator failed in a way the pipeline cannot recover from; the message says which and why."""


#: The command a pipeline error's message gives to continue the run. The pipeline does not know the
#: run directory; the trainer puts it in for ``RUN_DIR`` (:func:`with_run_dir`).
RESUME_COMMAND = "scalerl train --output RUN_DIR --resume"


def with_run_dir(exc: BaseException, run_dir: object) -> BaseException:
    """``exc`` with :data:`RESUME_COMMAND` in its message naming ``run_dir`` (a user-facing error of
    the same class), or ``exc`` itself when its message has none."""
    message = str(exc)
    if RESUME_COMMAND not in message:
        return exc
    return type(exc)(message.replace(RESUME_COMMAND, RESUME_COMMAND.replace("RUN_DIR", str(run_dir))))


def reporting(loop: Callable[..., None], fail: Fail) -> Callable[..., None]:
    """``loop`` (a pool thread's body) such that whatever it raises and does not handle itself -- a
    bug, an engine error between requests, an error in ``deliver`` -- is passed to ``fail`` as a
    :class:`PipelineError` naming the thread (the original as its cause), instead of ending the
    thread with a traceback on stderr while the trainer waits for a batch that never comes."""

    def run(*args: Any) -> None:
        try:
            loop(*args)
        except BaseException as exc:
            fail(thread_error(exc))

    return run


def thread_error(exc: BaseException) -> PipelineError:
    """What a pool thread that stopped on ``exc`` reports: a :class:`PipelineError` naming the
    thread, with ``exc`` as its cause."""
    error = PipelineError(f"the pool thread {threading.current_thread().name!r} stopped on "
                          f"{type(exc).__name__}: {exc}")
    error.__cause__ = exc
    return error


@contextlib.contextmanager
def undone_if_raised(undo: Callable[[], None]) -> Iterator[None]:
    """Run the body; if it raises anything -- Ctrl-C included -- call ``undo``, then raise the
    body's error again.

    For a pool's constructor: processes, actors or a Ray cluster it had started when it failed
    stayed behind, harmless on the command line (the process exits) but found by the next run
    of a notebook or an in-process study. The body's error is what the user must see: one from
    ``undo`` itself is only a note on stderr."""
    try:
        yield
    except BaseException:
        try:
            undo()
        except BaseException as failed:  # (a second Ctrl-C too: the first is on its way out)
            print(f"note: closing the half-started generator pool failed too: {type(failed).__name__}: {failed}",
                  file=sys.stderr)
        raise


class WorkerPool(Protocol):
    size: int
    """Number of generators."""

    def wait_ready(self) -> None:
        """Block until every generator is up (or one failed: :meth:`start`'s reader then says how)."""
        ...

    def start(self, deliver: Deliver, fail: Fail, *, refresh: Refresh | None = None) -> None:
        """Start delivering results (``deliver``) and errors (``fail``); ``refresh``: see :data:`Refresh` (a
        pool that sends every request once, as submitted, has no use for it)."""
        ...

    def submit(self, request: RoundRequest) -> None: ...

    def push_weights(self, weights: Weights, version: int) -> None:
        """Send the trainer's current weights (its model, or a :class:`~scalerl.pipeline.weights.WeightSource`)
        as policy ``version`` to every generator; each applies
        them between two decode steps of whatever it is generating (in-flight update)."""
        ...

    def check(self) -> None: ...

    def stats(self) -> dict[str, float]: ...

    def generator(self) -> Generator | None:
        """The generators as one :class:`~scalerl.generate.base.Generator` for the trainer's
        evaluations (``eval.engine: generators``), or None where this pool offers none."""
        ...

    def close(self) -> None: ...
