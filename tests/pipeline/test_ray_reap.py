"""RayPool's reaping of weight-update calls against the trainer's thread, without a cluster.

CI failed once with 'the generator pool was closed': the dispatcher thread had stopped on an
AssertionError inside ``ray.wait`` (``ray._raylet.CoreWorker.wait``), which Ray raises when the
list it was handed grows during the wait -- and ``push_weights`` extended that very list from the
trainer's thread while ``ray.wait`` held no lock and had released the GIL. Reproduced with Ray
2.60 in a few seconds by a thread that extends a list another thread waits on."""

from __future__ import annotations

import threading

from scalerl.pipeline.ray_backend import RayPool


class _RayThatChecks:
    """``ray.wait`` as Ray's core worker behaves: the list it is given must not change during the
    call. The trainer's thread pushes new weights (under the pool's lock, as ``push_weights`` does)
    in the middle of it."""

    class exceptions:
        RayError = RuntimeError

    def __init__(self, pool: RayPool) -> None:
        self.pool = pool

    def wait(self, refs, num_returns, timeout):
        n = len(refs)
        with self.pool._lock:  # push_weights, from the trainer's thread
            self.pool._update_calls.append("pushed during the wait")
        assert len(refs) == n, "the list handed to ray.wait changed during the wait"
        return refs[:1], refs[1:]

    def get(self, ref):
        return None


def test_weight_updates_pushed_while_the_dispatcher_reaps_are_neither_lost_nor_race_ray_wait():
    pool = RayPool.__new__(RayPool)  # only what _reap_updates touches: no cluster
    pool._lock = threading.Condition()
    pool._update_calls = ["finished", "running"]
    pool.updates_failed = 0
    pool.ray = _RayThatChecks(pool)
    pool._reap_updates()
    assert sorted(pool._update_calls) == ["pushed during the wait", "running"]
    assert pool.updates_failed == 0


def test_busy_workers_lists_training_batches_not_evaluation_shares():
    """An evaluation's share (a QueuedJob) has no batch index: busy_workers raised AttributeError
    while one was in flight."""
    from scalerl.generate.base import SamplingParams
    from scalerl.pipeline.pool_generator import GenerateJob, QueuedJob
    from scalerl.pipeline.work import RoundRequest

    pool = RayPool.__new__(RayPool)
    pool._lock = threading.Condition()
    pool._inflight = {"a": (0, QueuedJob(GenerateJob([[1]], SamplingParams(max_new_tokens=1), False))),
                      "b": (1, RoundRequest(7, 0, [], SamplingParams(max_new_tokens=1), min_version=0))}
    assert pool.busy_workers() == {1: 7}
