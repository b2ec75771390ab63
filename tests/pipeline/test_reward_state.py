"""The reward's state (a user function's failure floor, whether it answers in time) traded between the trainer and
generator processes / Ray actors: each request carries the trainer's copy as it is sent (``PooledSource._stamped``;
a Ray pool stamps it again as a request goes to an actor), each result the worker's, taken into the trainer's copy as
it arrives (review ef: a refill round, a regenerated stale batch and a restarted actor's re-run carried an older
floor, and a process that had not seen the judge's -5 scored failures -1 beside -5 wrong answers).

The scheduler is driven as tests/pipeline/test_scheduler.py drives it: fake pools that answer requests with scored
groups (no model), and a stand-in for the trainer's task that keeps the state as RewardWorkers does (the lowest
score seen, whether any call answered)."""

from __future__ import annotations

import collections
import threading
import time

import pytest

from scalerl.generate.base import Completion
from scalerl.pipeline.scheduler import OffPolicySchedule, PipelineSchedule, PooledSource
from scalerl.pipeline.work import RoundResult
from scalerl.rl.components import resolve_recipe
from scalerl.rl.recipe import RecipeConfig
from scalerl.rl.sampler import PromptSampler
from scalerl.rollout.context import RolloutContext, RoundContext
from scalerl.rollout.groups import Group
from scalerl.tasks.base import Problem

from .test_scheduler import ManualPool

SIGNAL, FLAT = (1.0, -1.0), (-1.0, -1.0)
#: What a process's or an actor's copy of a judge reports after it returned -5 for a wrong answer.
LEARNT = {"lowest": -5.0, "answered": True}


class TrainerTask:
    """The trainer's task as the scheduler sees it: ``reward_state()`` / ``load_reward_state()`` with
    RewardWorkers' rules (the floor only goes down, ``answered`` only becomes true)."""

    def __init__(self) -> None:
        self.lowest, self.answered = -1.0, False

    def reward_state(self):
        return {"lowest": self.lowest, "answered": self.answered}

    def load_reward_state(self, state) -> None:
        self.lowest = min(self.lowest, float(state["lowest"]))
        self.answered = self.answered or bool(state["answered"])


def make_ctx(recipe: RecipeConfig | None = None, problems: int = 30):
    recipe = recipe or RecipeConfig()
    recipe.batch.prompts_per_step = 3
    recipe.length.max_new_tokens = 12
    probs = {f"p{i}": Problem(f"p{i}", f"q{i}", "a") for i in range(problems)}
    sampler = PromptSampler(list(probs), seed=0, no_positive_resampling=False)
    task = TrainerTask()
    rnd = RoundContext(tokenizer=None, task=task, components=resolve_recipe(recipe), length_control=None)
    return RolloutContext(rnd, probs, sampler, temperature=1.0, top_p=1.0, seed=0), task


def scored(request, rewards, version=None, state=None):
    """``request``'s groups, each scored ``rewards``, its tokens of policy ``version`` (default: the request's)."""
    v = request.min_version if version is None else version
    groups = [Group(p, [Completion([1], [2, 3], [-1.0, -1.0], [1, 1], [v, v], "stop") for _ in rewards],
                    list(rewards), list(rewards)) for p in request.problems]
    n = sum(len(g.rewards) for g in groups)
    return RoundResult(request.index, request.round, groups, n, 2 * n, n, 0.0, 0, reward_state=state)


# ------------------------------------------------------------------------------------- (c) dynamic-sampling refills


def _first_dapo_batch(pool, ctx):
    """Batch 0 of a DAPO run on ``pool``'s answers (off-policy 1), with at least one refill round."""
    source = PooledSource(pool, ctx, OffPolicySchedule(1))
    source.weights_updated(None, 0, step=0)
    batch = source.next_batch(0)
    source.close()
    assert batch.stats["dynamic_rounds"] >= 2, "the scenario needs a refill round"
    return batch


def test_a_refill_round_carries_the_floor_its_batchs_first_round_reported():
    """DAPO on generator processes: round 0 of batch 0, scored by process A, returned the judge's -5 (its result's
    reward_state says so); every group flat, so the scheduler draws a refill round and sends it -- to whichever process
    is free. The refill request carried only the trainer's copy (floor -1: the batch not trained on yet), so a
    process B that had not seen the -5 scored the refill's failed calls -1, beside round 0's -5 wrong answers in the
    same batch: a failure paying better than a wrong answer (docs/tasks.md). (The other order -- round 0's failure
    before a refill's first -5 -- is the next test.)"""
    recipe = RecipeConfig()
    recipe.filtering.dynamic_sampling = True
    ctx, task = make_ctx(recipe)

    def answer(request):
        if request.round == 0:
            return scored(request, FLAT, state=dict(LEARNT))  # process A: saw the judge's -5
        return scored(request, SIGNAL, state={"lowest": -1.0, "answered": True})

    pool = ManualPool(answer)
    _first_dapo_batch(pool, ctx)
    refills = [r for r in pool.submitted if r.index == 0 and r.round > 0]
    assert refills and all(r.reward_state["lowest"] == -5.0 for r in refills), [r.reward_state for r in refills]


def test_a_first_rounds_failure_is_floored_at_a_refills_lower_score_on_the_pipeline():
    """DAPO on generator processes, the other order (review ei): round 0's first group holds a failed call, scored
    -1 (its process had seen nothing lower), beside a right answer -- kept; the other groups are flat, so a refill
    round goes out and comes back with the judge's -5. The batch the scheduler assembles floors round 0's failure at
    -5: a failure never pays better than a wrong answer of its batch (rollout.produce.floor_failures)."""
    recipe = RecipeConfig()
    recipe.filtering.dynamic_sampling = True
    recipe.batch.prompts_per_step = 2
    ctx, _ = make_ctx(recipe)

    def answer(request):
        if request.round > 0:
            return scored(request, (1.0, -5.0))  # the judge's wrong answer
        result = scored(request, FLAT)
        first = result.groups[0]
        first.rewards, first.shaped, first.failed = [1.0, -1.0], [1.0, -1.0], [False, True]
        return result

    batch = _first_dapo_batch(ManualPool(answer), ctx)
    failed = [(r, s) for g in batch.groups for r, s, f in zip(g.rewards, g.shaped, g.failed) if f]
    assert failed == [(-5.0, -5.0)], [(g.rewards, g.failed) for g in batch.groups]


# ------------------------------------------------------------------------------------- (c) stale-batch regeneration


def test_a_regenerated_stale_batch_carries_the_trainers_current_reward_state():
    """Batch 1 comes back too stale and is regenerated from its request (pipeline/stale_regenerated). By then the
    trainer has trained on batch 0, whose process reported the judge's -5 and that the function answers; batch 2,
    dispatched earlier than the regeneration, carries that state -- the regenerated batch 1 still carries the
    dispatch-time copy (-1, never answered), so a process that has not seen the -5 scores its failures -1, and a
    fresh one (Ray's restarted actor) may even take a function that answers for one that hangs."""
    ctx, task = make_ctx()
    attempts = collections.Counter()

    def answer(request):
        if request.index == 1:
            attempts[1] += 1
            if attempts[1] == 1:  # the first attempt: tokens far too old
                return scored(request, SIGNAL, version=-50, state={"lowest": -1.0, "answered": True})
        return scored(request, SIGNAL, state=dict(LEARNT) if request.index == 0 else None)

    pool = ManualPool(answer)
    source = PooledSource(pool, ctx, PipelineSchedule.for_generators(8, 1))
    try:
        source.weights_updated(None, 0, step=0)
        source.next_batch(0)  # (the scheduler takes batch 0's -5 in as it arrives)
        source.weights_updated(None, 1, step=1)
        source.next_batch(1)
    finally:
        source.close()
    assert source.stale_regenerated == 1, "the scenario needs batch 1 regenerated"
    regenerated = [r for r in pool.submitted if r.index == 1][-1]
    assert regenerated.reward_state == task.reward_state() == LEARNT, regenerated.reward_state


# ------------------------------------------------------------------------------------- (g) a Ray actor restarted


class _Ref:
    def __init__(self, value, ready=lambda: True):
        self._value, self.ready = value, ready

    def value(self):
        return self._value() if callable(self._value) else self._value


class _FakeRay:
    """What RayPool's dispatcher calls of Ray, with calls that complete in-process."""

    def __init__(self):
        import ray

        self.exceptions = ray.exceptions

    def wait(self, refs, num_returns=1, timeout=None, fetch_local=True):
        ready = [r for r in refs if r.ready()]
        if not ready:
            time.sleep(timeout or 0.01)
        return ready, [r for r in refs if r not in ready]

    def get(self, ref, timeout=None):
        if isinstance(ref, list):
            return [self.get(r) for r in ref]
        return ref.value()

    def kill(self, actor, no_restart=True):
        pass


class _Method:
    def __init__(self, fn):
        self.remote = fn


def test_a_request_rerun_on_a_restarted_ray_actor_carries_the_trainers_current_reward_state():
    """PipelineRL-k on Ray, one actor, 2 slots: batches 0 and 1 are dispatched at the start (the trainer's floor -1).
    The actor scores batch 0 -- the judge's -5 -- and starts batch 1; the trainer trains on batch 0 and takes the -5 in.
    Then the actor dies (killed, out of memory) and Ray restarts it: the dispatcher re-queues batch 1's request as it
    was dispatched, so the new process -- a fresh copy of the reward -- scores batch 1's failed calls -1 though the
    trainer, and the actor that died, knew -5. A resume re-sends its requests with the trainer's state
    (PooledSource._start); a restart should too."""
    pytest.importorskip("ray")
    from scalerl.pipeline.ray_backend import RayPool

    ctx, task = make_ctx()
    merged = threading.Event()
    attempts = collections.Counter()
    seen = []  # (batch index, attempt, the reward state the actor was given)

    def run(request, weights, version):
        attempts[request.index] += 1
        seen.append((request.index, attempts[request.index], request.reward_state))
        if request.index == 1 and attempts[1] == 1:  # dies while the trainer trains on batch 0
            def died():
                raise _FakeRay().exceptions.ActorUnavailableError("restarting", None)
            return _Ref(died, ready=merged.is_set)
        pid = 100 if attempts[1] < 2 else 101
        state = dict(LEARNT) if request.index == 0 else request.reward_state
        return _Ref((pid, scored(request, SIGNAL, state=state)))

    pool = object.__new__(RayPool)  # no cluster: the dispatcher over in-process "actors"
    pool.ray, pool.size, pool.max_restarts, pool._owns_ray = _FakeRay(), 1, 3, False
    pool.actors = [type("Actor", (), {"run": _Method(run), "close": _Method(lambda: _Ref(None))})()]
    pool._init_dispatch_state()
    pool._pids, pool.nodes = [None], ["n"]
    pool.push_weights = lambda weights, version: None
    pool._sync = type("Sync", (), {"request_args": lambda self: ([], 0)})()
    source = PooledSource(pool, ctx, PipelineSchedule.for_generators(1, 1))
    try:
        source.weights_updated(None, 0, step=0)
        source.next_batch(0)  # (the scheduler takes batch 0's -5 in as it arrives)
        merged.set()
        source.weights_updated(None, 1, step=1)
        source.next_batch(1)
    finally:
        source.close()
    rerun = [state for index, attempt, state in seen if index == 1 and attempt == 2]
    assert rerun, f"the scenario needs batch 1 re-run after the restart: {seen}"
    assert rerun[0] == task.reward_state() == LEARNT, rerun[0]
