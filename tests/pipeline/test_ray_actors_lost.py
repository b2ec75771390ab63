"""The Ray pool's books when actors die, without a cluster: what the user reads when none is left."""

from __future__ import annotations

import collections
import threading

import pytest

ray = pytest.importorskip("ray")


def _pool(size=1, max_restarts=3):
    from scalerl.pipeline.ray_backend import RayPool

    pool = object.__new__(RayPool)  # no cluster: only the dispatcher's books
    pool.ray, pool.size, pool.max_restarts = ray, size, max_restarts
    pool._lock = threading.Condition()
    pool._pending, pool._idle = collections.deque(), collections.deque()
    pool._dead, pool._not_before = set(), {}
    pool.requeued, pool._error = 0, None
    return pool


def test_every_actor_lost_is_one_line_that_says_how_to_resume():
    """kill -9 of the last generator actor, restarts used up: `scalerl train --backend ray` ended on
    a 30-line traceback with Ray's multi-line error (exit 1); the processes backend says the same in
    one line and how to resume."""
    from scalerl.errors import ScaleRLError
    from scalerl.pipeline.pool import PipelineError

    pool = _pool()
    assert not pool._actor_lost(0, "request 2", ray.exceptions.ActorDiedError())
    error = pool._error
    assert isinstance(error, ScaleRLError) and isinstance(error, PipelineError)
    message = str(error)
    assert "\n" not in message and "max_restarts=3" in message and "--resume" in message
    assert list(pool._pending) == ["request 2"]


def test_an_actor_being_restarted_is_not_lost():
    pool = _pool(size=1)
    assert pool._actor_lost(0, "request 2", ray.exceptions.ActorUnavailableError("restarting", None)) is True
    assert pool._error is None and list(pool._idle) == [0] and not pool._dead


def test_one_actor_lost_of_two_is_said_once_and_the_run_goes_on(capsys):
    """With max_restarts=0 and two actors, a killed actor halved generation without a word (only
    the run log's pipeline/actors_lost said so)."""
    pool = _pool(size=2, max_restarts=0)
    assert pool._actor_lost(1, "request 3", ray.exceptions.ActorDiedError()) is True
    assert pool._error is None and pool._dead == {1}
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "generator actor 1" in err and "1 of 2 actors" in err
