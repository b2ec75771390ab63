"""The pooled scheduler with fake generators (no model): the staleness bound under stress, exactly-once
delivery, dynamic-sampling refills, resuming from a checkpointed state -- and, seeded, the same
per-token weights whatever the timing, with no deadlock."""

from __future__ import annotations

import random
import threading
import time

import pytest
import torch

from scalerl.generate.base import Completion
from scalerl.pipeline.landing import Landing, WeightHistory, plan_updates, window
from scalerl.pipeline.scheduler import (OffPolicySchedule, PipelineError, PipelineSchedule, PooledSource,
                                        SeededPipelineSchedule, token_lags)
from scalerl.pipeline.threads import ThreadPool
from scalerl.pipeline.work import RoundResult
from scalerl.rl.components import resolve_recipe
from scalerl.rl.recipe import RecipeConfig
from scalerl.rl.sampler import PromptSampler
from scalerl.rollout.context import RolloutContext, RoundContext
from scalerl.rollout.groups import Group
from scalerl.tasks.base import Problem


class FakeGenerator:
    """Holds a version; weights queued by update_weights take effect at the next token."""

    def __init__(self) -> None:
        self.version = 0
        self._pending: int | None = None
        self._lock = threading.Lock()

    def update_weights(self, state, version: int) -> None:
        with self._lock:
            self._pending = version

    @property
    def latest_version(self) -> int:
        with self._lock:
            return self._pending if self._pending is not None else self.version

    def step(self) -> int:
        with self._lock:
            if self._pending is not None:
                self.version, self._pending = self._pending, None
            return self.version


class FakeWorker:
    """Decodes ``tokens`` steps of ``token_s`` seconds each for a whole request (all rows at once),
    recording the version of every token; rewards depend only on (seed, prompt), like a seeded sampler.
    With a ``history`` it follows a request's update plan (seeded mode), as the HF generator does."""

    def __init__(self, worker_id: int, *, tokens: int = 12, token_s: float = 0.001, generations: int = 2,
                 reward=None, history: WeightHistory | None = None) -> None:
        self.worker_id = worker_id
        self.generator = FakeGenerator()
        self.tokens, self.token_s, self.generations = tokens, token_s, generations
        self.reward = reward or (lambda seed, pid, j: 1.0 if j % 2 == 0 else -1.0)
        self.history = history

    def run(self, request):
        t = time.perf_counter()
        versions = []
        landing = Landing(request.updates, self.history) if request.updates is not None else None
        for step in range(self.tokens):
            if landing is not None:
                weights = landing.weights_at(step)
                if weights is not None:
                    self.generator.version = weights[1]
                versions.append(self.generator.version)
            else:
                versions.append(self.generator.step())
            time.sleep(self.token_s * random.uniform(0.5, 1.5))
        groups = []
        for p in request.problems:
            comps = [Completion([1], [2] * self.tokens, [-1.0] * self.tokens, [1] * self.tokens, list(versions), "stop",
                                meta={"seed": request.params.seed}) for _ in range(self.generations)]
            rewards = [self.reward(request.params.seed, p.id, j) for j in range(self.generations)]
            groups.append(Group(p, comps, rewards, list(rewards)))
        n = len(groups) * self.generations
        return RoundResult(request.index, request.round, groups, n, n * self.tokens, n, time.perf_counter() - t,
                           self.worker_id)


class FakeModel:
    """A weight source with no weights (the fake workers generate without a model)."""

    device = torch.device("cpu")

    def tensors(self):
        return iter(())

    def meta(self):
        return []


def make_plan(recipe=None, problems=40, seed=0):
    """The rollout context of a run with fake problems (the fake workers need no model or task)."""
    recipe = recipe or RecipeConfig()
    recipe.batch.prompts_per_step = 3
    recipe.length.max_new_tokens = 12
    probs = {f"p{i}": Problem(f"p{i}", f"q{i}", "a") for i in range(problems)}
    sampler = PromptSampler(list(probs), seed=seed, no_positive_resampling=False)
    rnd = RoundContext(tokenizer=None, task=None, components=resolve_recipe(recipe), length_control=None)
    return RolloutContext(rnd, probs, sampler, temperature=1.0, top_p=1.0, seed=seed)


def drive(source, steps, train_s, *, start=0, version=0, on_batch=None, skip=()):
    """The trainer's side: take a batch, 'train', bump the version (unless the step is in ``skip``),
    push. Returns (index, prompt ids, max lag) per step."""
    seen = []
    source.weights_updated(FakeModel(), version, step=start)  # the starting weights, as the trainer does
    for step in range(start, start + steps):
        batch = source.next_batch(step)
        lags = token_lags(batch, version)
        seen.append((batch.stats["batch_index"], [g.problem.id for g in batch.groups], max(lags, default=0)))
        if on_batch is not None:
            on_batch(step, batch)
        time.sleep(train_s * random.uniform(0.5, 1.5))
        if step not in skip:
            version += 1
        source.weights_updated(FakeModel(), version, step=step + 1)
    return seen


@pytest.mark.parametrize("k,generators,token_s,train_s", [
    (8, 1, 0.0005, 0.02),   # generation much faster than training
    (8, 3, 0.0005, 0.02),
    (2, 3, 0.003, 0.002),   # training much faster than generation
    (1, 2, 0.003, 0.002),
    (4, 8, 0.002, 0.004),   # more generators than k
])
def test_lag_bound_is_never_exceeded(k, generators, token_s, train_s):
    random.seed(k * 100 + generators)
    workers = [FakeWorker(i, token_s=token_s) for i in range(generators)]
    source = PooledSource(ThreadPool(workers), make_plan(), PipelineSchedule.for_generators(k, generators))
    try:
        seen = drive(source, 30, train_s)
    finally:
        source.close()
    assert [s[0] for s in seen] == list(range(30))  # every batch once, in order
    assert max(s[2] for s in seen) <= k
    # The bound holds by construction (slots), not by throwing batches away.
    assert source.stale_regenerated == 0
    if token_s > train_s:  # generation is the bottleneck: in-flight updates do happen
        assert max(s[2] for s in seen) >= 1


def test_ppo_off_policy_schedule_uses_one_version_per_k_batches():
    workers = [FakeWorker(i) for i in range(2)]
    source = PooledSource(ThreadPool(workers), make_plan(), OffPolicySchedule(3))
    try:
        seen = drive(source, 9, 0.001)
    finally:
        source.close()
    assert [s[2] for s in seen] == [0, 1, 2] * 3
    assert [s[0] for s in seen] == list(range(9))


class FlakyPool(ThreadPool):
    """Re-runs some requests a second time (as a pool re-running a crashed actor's work would) and
    delivers results out of order."""

    def __init__(self, workers, every=3):
        super().__init__(workers)
        self.every = every
        self.count = 0

    def submit(self, request):
        super().submit(request)
        self.count += 1
        if self.count % self.every == 0:
            super().submit(request)


def test_duplicates_are_trained_on_once_and_prompts_match_an_undisturbed_run():
    def run(pool_cls):
        workers = [FakeWorker(i, token_s=0.0005) for i in range(3)]
        source = PooledSource(pool_cls(workers), make_plan(), PipelineSchedule.for_generators(4, 3))
        try:
            return drive(source, 20, 0.002), source.duplicates_ignored
        finally:
            source.close()

    reference, _ = run(ThreadPool)
    flaky, duplicates = run(FlakyPool)
    assert duplicates > 0
    assert [s[:2] for s in flaky] == [s[:2] for s in reference]


def test_dynamic_sampling_refills_and_records_each_group_once():
    recipe = RecipeConfig()
    recipe.filtering.zero_variance = True
    recipe.filtering.dynamic_sampling = True
    plan = make_plan(recipe)
    # Prompts with an even number have no reward variance: they are dropped and refilled.
    reward = lambda seed, pid, j: (1.0 if int(pid[1:]) % 2 == 0 else (1.0 if j % 2 == 0 else -1.0))  # noqa: E731
    workers = [FakeWorker(i, reward=reward) for i in range(2)]
    source = PooledSource(ThreadPool(workers), plan, PipelineSchedule.for_generators(2, 2))
    batches = []
    try:
        drive(source, 6, 0.002, on_batch=lambda step, b: batches.append(b))
    finally:
        source.close()
    max_rounds = recipe.filtering.max_generation_rounds
    for b in batches:
        assert all(int(g.problem.id[1:]) % 2 == 1 for g in b.groups)  # only groups with reward variance
        # Full, or the round cap was hit (DAPO's rule; which prompts refill which batch depends on
        # the timing of the two batches in flight).
        assert len(b.groups) == 3 or b.stats["dynamic_rounds"] == max_rounds
        assert b.stats["dynamic_rounds"] >= 1
    assert sum(len(b.groups) == 3 for b in batches) >= len(batches) // 2
    recorded = sum(len(plan.sampler.history(p)) for p in plan.problems)
    consumed = sum(b.samples for b in batches) // 2  # groups generated for consumed batches (2 generations each)
    # Refill rounds record their first rounds when drawn (so that the draw sees them), also for
    # batches still in flight at the end.
    early = sum(len(a.results[r].groups) for a in source._batches.values() for r in a.recorded)
    assert recorded == consumed + early  # every group once


def test_resume_resends_the_pending_requests():
    def source_for(plan):
        return PooledSource(ThreadPool([FakeWorker(0)]), plan, PipelineSchedule.for_generators(8, 1))

    plan = make_plan()
    ref = source_for(plan)
    try:
        full = drive(ref, 10, 0.002)
    finally:
        ref.close()

    plan = make_plan()
    first = source_for(plan)
    try:
        head = drive(first, 4, 0.002)
        state, sampler_state = first.state_dict(), plan.sampler.state_dict()
    finally:
        first.close()
    # slots = 2: batch 3 (trained on, not yet released) and batch 4 (dispatched, not consumed)
    assert [p["index"] for p in state["pending"]] == [4]

    plan = make_plan()
    plan.sampler.load_state_dict(sampler_state)
    resumed = source_for(plan)
    resumed.load_state_dict(state)
    try:
        tail = drive(resumed, 6, 0.002, start=4, version=4)
    finally:
        resumed.close()
    assert [s[:2] for s in head + tail] == [s[:2] for s in full]


def test_a_failing_worker_surfaces_in_the_trainer():
    class Broken(FakeWorker):
        def run(self, request):
            raise RuntimeError("reward exploded")

    source = PooledSource(ThreadPool([Broken(0)]), make_plan(), PipelineSchedule.for_generators(8, 1))
    try:
        with pytest.raises(RuntimeError, match="reward exploded"):
            source.next_batch(0)
    finally:
        source.close()


def test_an_error_outside_a_request_surfaces_instead_of_hanging():
    """A pool thread that fails outside a request (here: a result the scheduler cannot take, so
    deliver() raises in the pool's thread) reports it through fail(); it used to end the thread with
    a traceback on stderr while the trainer waited for a batch that never came."""
    class Garbled(FakeWorker):
        def run(self, request):
            return None

    source = PooledSource(ThreadPool([Garbled(0)]), make_plan(), PipelineSchedule.for_generators(8, 1))
    try:
        with pytest.raises(PipelineError, match="'scalerl-generator-0' stopped on AttributeError") as info:
            in_time(lambda: source.next_batch(0), timeout=30)
        assert isinstance(info.value.__cause__, AttributeError)
    finally:
        source.close()


# ----------------------------------------------------------------------------- seeded (deterministic) mode


def seeded_source(plan, k, generators, *, token_s=0.001, tokens=12, reward=None):
    history = WeightHistory()
    workers = [FakeWorker(i, token_s=token_s, tokens=tokens, reward=reward, history=history) for i in range(generators)]
    schedule = SeededPipelineSchedule(k, window(k, generators), plan.seed, plan.recipe.length.max_new_tokens)
    own = FakeWorker(99, tokens=tokens, reward=reward)  # the trainer's own generator: dynamic-sampling refills
    return PooledSource(ThreadPool(workers, history=history), plan, schedule, history=history, own=own)


def in_time(fn, timeout=60.0):
    """Run ``fn`` in a thread; fail (instead of hanging the suite) if it deadlocks."""
    out: list = []
    errors: list = []

    def target():
        try:
            out.append(fn())
        except BaseException as exc:  # noqa: BLE001 - re-raised below
            errors.append(exc)

    t = threading.Thread(target=target, daemon=True)
    t.start()
    t.join(timeout)
    assert not t.is_alive(), f"no progress in {timeout:g} s: deadlock"
    if errors:
        raise errors[0]
    return out[0]


def seeded_run(k, generators, token_s, train_s, steps, *, recipe=None, skip=(), timing_seed=0, tokens=12, reward=None):
    """(prompt ids, per-completion versions) of each consumed batch, and the max lag per step."""
    random.seed(timing_seed)  # the fake workers' and trainer's sleep jitter
    plan = make_plan(recipe)
    source = seeded_source(plan, k, generators, token_s=token_s, tokens=tokens, reward=reward)
    batches = []
    try:
        seen = in_time(lambda: drive(source, steps, train_s, skip=skip,
                                     on_batch=lambda step, b: batches.append(
                                         ([g.problem.id for g in b.groups], [c.versions for c in b.completions]))))
        assert 0.0 <= source.stats()["pipeline/generator_wait_frac"] <= 1.0  # what determinism cost
    finally:
        source.close()
    return batches, seen


@pytest.mark.parametrize("k,generators,token_s,train_s", [
    (8, 1, 0.0005, 0.01),   # generation faster than training
    (8, 1, 0.003, 0.002),   # training faster than generation
    (8, 3, 0.002, 0.004),
    (2, 4, 0.002, 0.001),   # more generators than k
    (1, 2, 0.001, 0.001),   # k = 1: no in-flight update (one step off-policy)
])
def test_seeded_pipeline_is_the_same_whatever_the_timing(k, generators, token_s, train_s):
    a, seen_a = seeded_run(k, generators, token_s, train_s, 16, timing_seed=1)
    b, seen_b = seeded_run(k, generators, token_s * 3, train_s / 3, 16, timing_seed=2)  # other speeds, other jitter
    assert a == b  # same prompts, and every token from the same weights
    assert [s[0] for s in seen_a] == list(range(16))
    width = window(k, generators)
    for j, (_, versions) in enumerate(a):
        plan = plan_updates(0, j, width, 12)
        expected = [plan.start] * 12
        for step, tick in plan.landings:
            expected[step:] = [tick] * (12 - step)
        assert all(v == expected for v in versions), j  # no skipped step: version == tick
        lags = {j - v for v in expected}
        assert max(lags) <= width + 1 <= k and (j <= width or min(lags) >= 1)
    if width:  # weights really are swapped mid-sequence
        assert any(len(set(v[0])) > 1 for _, v in a)


def test_seeded_pipeline_with_skipped_steps_and_dynamic_sampling_is_deterministic():
    recipe = RecipeConfig()
    recipe.filtering.zero_variance = True
    recipe.filtering.dynamic_sampling = True
    recipe.filtering.max_generation_rounds = 3
    # Even prompts have no reward variance (dropped and refilled by the trainer itself).
    reward = lambda seed, pid, j: (1.0 if int(pid[1:]) % 2 == 0 else (1.0 if j % 2 == 0 else -1.0))  # noqa: E731
    runs = [seeded_run(4, 2, token_s, train_s, 12, recipe=recipe, skip={2, 3, 7}, timing_seed=s, reward=reward)
            for s, token_s, train_s in ((0, 0.001, 0.003), (1, 0.003, 0.001))]
    assert runs[0][0] == runs[1][0]
    for prompts, _ in runs[0][0]:
        assert prompts and all(int(p[1:]) % 2 == 1 for p in prompts)


def test_seeded_resume_repeats_the_uninterrupted_run():
    full, _ = seeded_run(8, 2, 0.001, 0.002, 10)

    plan = make_plan()
    first = seeded_source(plan, 8, 2)
    head = []
    try:
        in_time(lambda: drive(first, 4, 0.002, on_batch=lambda s, b: head.append(
            ([g.problem.id for g in b.groups], [c.versions for c in b.completions]))))
        state, sampler_state = first.state_dict(), plan.sampler.state_dict()
    finally:
        first.close()
    assert sorted(state["weights"]) == [2, 3]  # the ticks batches 4.. still name (window 1: from 4 - 1 - 1)

    plan = make_plan()
    plan.sampler.load_state_dict(sampler_state)
    resumed = seeded_source(plan, 8, 2)
    resumed.load_state_dict(state)
    tail = []
    try:
        in_time(lambda: drive(resumed, 6, 0.002, start=4, version=4, on_batch=lambda s, b: tail.append(
            ([g.problem.id for g in b.groups], [c.versions for c in b.completions]))))
    finally:
        resumed.close()
    assert head + tail == full


def test_seeded_pipeline_fails_loudly_instead_of_hanging():
    class Broken(FakeWorker):
        def run(self, request):
            if request.index == 2:
                raise RuntimeError("reward exploded")
            return super().run(request)

    plan = make_plan()
    history = WeightHistory()
    workers = [Broken(i, history=history) for i in range(2)]
    source = PooledSource(ThreadPool(workers, history=history), plan, SeededPipelineSchedule(8, 2, 0, 12),
                          history=history, own=FakeWorker(9))
    try:
        with pytest.raises(RuntimeError, match="reward exploded"):
            in_time(lambda: drive(source, 6, 0.001))
    finally:
        source.close()


def test_seeded_pipeline_refuses_a_lag_over_the_bound():
    plan = make_plan()
    history = WeightHistory()
    # A schedule whose plans start 3 ticks back while claiming a bound of 1: the check catches it.
    bad = SeededPipelineSchedule(8, 0, 0, 12)
    object.__setattr__(bad, "plan", lambda index: plan_updates(0, index, 2, 12))
    source = PooledSource(ThreadPool([FakeWorker(0, history=history)], history=history), plan, bad, history=history,
                          own=FakeWorker(9))
    try:
        with pytest.raises(PipelineError, match="over the bound"):
            in_time(lambda: drive(source, 6, 0.001))
    finally:
        source.close()


class ManualPool:
    """A worker pool that answers at once (from ``submit``) the requests ``answer`` returns a result for, and keeps
    the rest in flight -- as a checkpoint finds them."""

    size = 1

    def __init__(self, answer):
        self.answer, self.submitted, self._deliver = answer, [], None

    def start(self, deliver, fail, *, refresh=None):
        self._deliver = deliver

    def submit(self, request):
        self.submitted.append(request)
        result = self.answer(request)
        if result is not None:
            self._deliver(result)

    def push_weights(self, weights, version):
        pass

    def wait_ready(self):
        pass

    def check(self):
        pass

    def stats(self):
        return {}

    def generator(self):
        return None

    def close(self):
        pass


def scored_round(request, rewards):
    """``request``'s groups on the weights it asks for, problem p's generations scored ``rewards(p)`` (or
    ``rewards``, every group alike)."""
    of = rewards if callable(rewards) else (lambda p: rewards)
    version = [request.min_version] * 2
    groups = [Group(p, [Completion([1], [2, 3], [-1.0, -1.0], [1, 1], version, "stop") for _ in of(p)],
                    list(of(p)), list(of(p))) for p in request.problems]
    n = sum(len(g.rewards) for g in groups)
    return RoundResult(request.index, request.round, groups, n, 2 * n, n, 0.0, 0)


SIGNAL, FLAT = (1.0, -1.0), (-1.0, -1.0)


def test_a_timing_driven_resume_generates_the_refill_prompts_a_pending_batch_drew():
    """Timing-driven PipelineRL-k with dynamic sampling: a pending batch's refill round was drawn from the sampler
    (saved as drawn), but a resume re-sent only round 0 and drew new refill prompts: those of the stopped attempt
    were skipped for the epoch (review dc)."""
    recipe = RecipeConfig()
    recipe.filtering.dynamic_sampling = True

    def answer(request):
        if request.round > 0:
            return None  # the refill is in flight when the checkpoint is written
        # Batch 0 has a learning signal; batch 1's first round none (every group alike): it draws a refill.
        return scored_round(request, [1.0, -1.0] if request.index == 0 else [-1.0, -1.0])

    ctx = make_plan(recipe, problems=30)
    pool = ManualPool(answer)
    source = PooledSource(pool, ctx, PipelineSchedule.for_generators(8, 1))  # timing-driven: 2 slots
    source.weights_updated(None, 0, step=0)
    source.next_batch(0)  # batch 0 trained on; batch 1 dispatched, its round 0 in, its refill drawn
    drawn = {p.id for r in pool.submitted if r.index == 1 and r.round > 0 for p in r.problems}
    assert drawn, "the scenario needs a refill in flight"
    source.weights_updated(None, 1, step=1)
    state, sampler_state = source.state_dict(), ctx.sampler.state_dict()  # the checkpoint at step 1
    source.close()

    ctx = make_plan(recipe, problems=30)
    ctx.sampler.load_state_dict(sampler_state)
    pool = ManualPool(lambda r: scored_round(r, [-1.0, -1.0] if r.round == 0 else [1.0, -1.0]))
    resumed = PooledSource(pool, ctx, PipelineSchedule.for_generators(8, 1))
    resumed.load_state_dict(state)
    resumed.weights_updated(None, 1, step=1)
    assert resumed.next_batch(1).stats["batch_index"] == 1
    refills = [r for r in pool.submitted if r.index == 1 and r.round > 0]
    resumed.close()
    assert {p.id for p in refills[0].problems} == drawn  # the stopped attempt's refill, not new prompts
    assert resumed.state_dict()["pending"] == [] or all(p["index"] != 1 for p in resumed.state_dict()["pending"])


def _checkpointed_with_a_refill_in_flight(recipe, first_round):
    """A timing-driven source whose batch 1 drew a refill (``first_round(request)``: its round 0's rewards of p)
    in flight at the checkpoint after step 1: (the prompts it drew, the source's state, the sampler's)."""
    def answer(request):
        if request.round > 0:
            return None
        return scored_round(request, SIGNAL if request.index == 0 else first_round(request))

    ctx = make_plan(recipe, problems=30)
    pool = ManualPool(answer)
    source = PooledSource(pool, ctx, PipelineSchedule.for_generators(8, 1))
    source.weights_updated(None, 0, step=0)
    source.next_batch(0)
    drawn = sorted({p.id for r in pool.submitted if r.index == 1 and r.round > 0 for p in r.problems})
    source.weights_updated(None, 1, step=1)
    state, sampler_state = source.state_dict(), ctx.sampler.state_dict()
    source.close()
    return drawn, state, sampler_state


def _resumed(recipe, state, sampler_state, answer):
    ctx = make_plan(recipe, problems=30)
    ctx.sampler.load_state_dict(sampler_state)
    pool = ManualPool(answer)
    source = PooledSource(pool, ctx, PipelineSchedule.for_generators(8, 1))
    source.load_state_dict(state)
    return ctx, pool, source


def test_a_resumed_refill_asks_for_at_least_the_groups_the_batch_misses():
    """The stopped attempt's batch 1 missed 1 group and drew 1 refill prompt; the resumed attempt's round 0 misses
    all 3: its refill took the drawn prompt alone, and at max_generation_rounds=2 the batch ended with 1 group
    (review df). The held prompt first, then new ones up to what the buffer misses."""
    recipe = RecipeConfig()
    recipe.filtering.dynamic_sampling = True
    recipe.filtering.max_generation_rounds = 2
    drawn, state, sampler_state = _checkpointed_with_a_refill_in_flight(
        recipe, lambda request: (lambda p, ids=[q.id for q in request.problems]: SIGNAL if ids.index(p.id) < 2 else FLAT))
    assert len(drawn) == 1
    ctx, pool, resumed = _resumed(recipe, state, sampler_state,
                                  lambda r: scored_round(r, FLAT if r.round == 0 else SIGNAL))
    resumed.weights_updated(None, 1, step=1)
    batch = resumed.next_batch(1)
    refills = [r for r in pool.submitted if r.index == 1 and r.round > 0]
    resumed.close()
    assert [p.id for p in refills[0].problems][:1] == drawn and len(refills[0].problems) >= 3
    assert len(batch.groups) == 3


def test_held_refill_prompts_a_resumed_batch_no_longer_needs_are_not_skipped_for_the_epoch():
    """The stopped attempt's batch 1 drew a refill of 3 prompts; the resumed attempt's round 0 has a learning signal
    in every group, so no refill is due: the drawn prompts were never generated, nor drawn again -- epoch 0 trained
    on 27 of its 30 prompts (review df). They are the next rounds' to take."""
    recipe = RecipeConfig()
    recipe.filtering.dynamic_sampling = True
    generated: set[str] = set()
    drawn, state, sampler_state = _checkpointed_with_a_refill_in_flight(recipe, lambda request: FLAT)
    assert len(drawn) == 3

    def answer(request):
        if ctx.sampler.epoch == 0:
            generated.update(p.id for p in request.problems)
        return scored_round(request, SIGNAL)

    ctx, _, resumed = _resumed(recipe, state, sampler_state, answer)
    for step in range(1, 12):
        resumed.weights_updated(None, step, step=step)
        resumed.next_batch(step)
        if ctx.sampler.epoch >= 1:
            break
    resumed.close()
    assert ctx.sampler.epoch >= 1, "the scenario needs epoch 0 to end"
    assert set(drawn) <= generated, f"epoch 0 never generated {sorted(set(drawn) - generated)}"


def scored_at(request, rewards_of, version):
    """``request``'s groups, the i-th scored ``rewards_of(i)``, every token of policy ``version``."""
    groups = [Group(p, [Completion([1], [2, 3], [-1.0, -1.0], [1, 1], [version] * 2, "stop") for _ in rewards_of(i)],
                    list(rewards_of(i)), list(rewards_of(i))) for i, p in enumerate(request.problems)]
    n = sum(len(g.rewards) for g in groups)
    return RoundResult(request.index, request.round, groups, n, 2 * n, n, 0.0, 0)


def test_a_regenerated_batch_records_every_group_it_trains_on():
    """A stale batch regenerated: its fresh refill round (held prompts and new ones) was trained on but never
    recorded in the sampler's history -- the old attempt's record of that round number was copied (review dg)."""
    signal, flat = (1.0, -1.0), (-1.0, -1.0)
    recipe = RecipeConfig()
    recipe.filtering.dynamic_sampling = True
    ctx = make_plan(recipe, problems=30)
    attempts: dict[int, int] = {}

    def answer(request):
        if request.index != 1:
            return scored_at(request, lambda i: signal, request.min_version)
        if request.round == 0:
            attempts[1] = attempts.get(1, 0) + 1
        if attempts[1] == 1:  # the first attempt: tokens far too old (a stale batch); round 0 misses 1 group,
            # round 1 (1 prompt) none kept, round 2 (1 prompt) fills it
            rewards = {0: lambda i: signal if i < 2 else flat, 1: lambda i: flat}.get(request.round, lambda i: signal)
            return scored_at(request, rewards, -50)
        # the fresh attempt: round 0 keeps nothing, its refill (the 2 held prompts and 1 new) fills the batch
        return scored_at(request, lambda i: flat if request.round == 0 else signal, request.min_version)

    pool = ManualPool(answer)
    source = PooledSource(pool, ctx, PipelineSchedule.for_generators(8, 1))
    try:
        source.weights_updated(None, 0, step=0)
        source.next_batch(0)
        source.weights_updated(None, 1, step=1)
        batch = source.next_batch(1)
    finally:
        source.close()
    assert source.stale_regenerated == 1, "the scenario needs batch 1 regenerated"
    assert len(batch.groups) == 3
    unrecorded = [g.problem.id for g in batch.groups if not ctx.sampler.history(g.problem.id)]
    assert not unrecorded, f"trained on, never recorded: {unrecorded}"
