"""No-positive-resampling sampler: retirement, determinism, exact resume."""

from __future__ import annotations

import json
import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scalerl.rl.recipe import SamplerConfig
from scalerl.rl.sampler import PromptSampler, SamplerExhausted


def run(sampler: PromptSampler, steps: int, batch: int, difficulty: dict, seed: int, retirements=None):
    """Draw ``steps`` batches, scoring each prompt with a seeded coin of its own pass probability.

    Returns the batches and, per step, the set of prompts retired before that step was drawn;
    ``retirements`` (a dict) receives each retired prompt's pass rate when it was retired.
    """
    rng = random.Random(seed)
    batches, retired_before = [], []
    for _ in range(steps):
        retired_before.append(set(sampler.retired))
        try:
            ids = sampler.sample(batch)
        except SamplerExhausted:
            break
        batches.append(ids)
        for pid in ids:
            if sampler.record(pid, [1.0 if rng.random() < difficulty[pid] else -1.0 for _ in range(8)]):
                if retirements is not None:
                    retirements[pid] = sampler.pass_rate(pid)
    return batches, retired_before


pools = st.integers(min_value=1, max_value=25).flatmap(
    lambda n: st.tuples(
        st.just(n),
        st.lists(st.sampled_from([0.0, 0.3, 0.95, 1.0]), min_size=n, max_size=n),
        st.integers(1, 9),  # batch size
        st.integers(0, 2**16),  # seed
    )
)


@settings(max_examples=60, deadline=None)
@given(pools)
def test_retired_prompts_never_return(pool):
    n, passes, batch, seed = pool
    ids = [f"p{i}" for i in range(n)]
    sampler = PromptSampler(ids, seed=seed)
    retirements: dict = {}
    batches, retired_before = run(sampler, 40, batch, dict(zip(ids, passes)), seed, retirements)
    for drawn, retired in zip(batches, retired_before):
        assert not retired & set(drawn)
    assert set(retirements) == sampler.retired
    assert all(rate >= 0.9 for rate in retirements.values())
    # Always-solved prompts are retired the first time they are scored.
    always = {pid for pid, p in zip(ids, passes) if p == 1.0}
    seen = {pid for b in batches for pid in b}
    assert always & seen <= sampler.retired


@settings(max_examples=40, deadline=None)
@given(pools)
def test_same_seed_same_draws_and_exact_resume_mid_epoch(pool):
    n, passes, batch, seed = pool
    ids = list(range(100, 100 + n))  # int ids work too
    difficulty = dict(zip(ids, passes))
    a, b = PromptSampler(ids, seed=seed), PromptSampler(ids, seed=seed)
    assert run(a, 12, batch, difficulty, seed) == run(b, 12, batch, difficulty, seed)

    # Stop after 3 steps (usually mid-epoch), save through JSON, resume in a fresh sampler.
    first = PromptSampler(ids, seed=seed)
    run(first, 3, batch, difficulty, seed)
    state = json.loads(json.dumps(first.state_dict()))
    resumed = PromptSampler(ids, seed=12345)  # the seed comes from the state
    resumed.load_state_dict(state)
    assert run(first, 9, batch, difficulty, seed + 1) == run(resumed, 9, batch, difficulty, seed + 1)
    assert first.state_dict() == resumed.state_dict()


def test_epochs_visit_every_active_prompt_once_in_a_seeded_order():
    ids = [f"q{i}" for i in range(10)]
    sampler = PromptSampler(ids, seed=3, no_positive_resampling=False)
    epochs = [sampler.sample(10) for _ in range(3)]
    assert all(sorted(e) == sorted(ids) for e in epochs)
    assert epochs[0] != epochs[1]  # reshuffled each epoch
    assert PromptSampler(ids, seed=4).sample(10) != epochs[0]  # another seed, another order


def test_plain_epochs_keep_easy_prompts():
    ids = ["a", "b", "c"]
    sampler = PromptSampler(ids, seed=0, no_positive_resampling=False)
    for _ in range(4):
        for pid in sampler.sample(3):
            assert not sampler.record(pid, [1.0] * 4)
    assert sampler.retired == frozenset() and sampler.pass_rate("a") == 1.0
    assert sampler.history("a") == [(4, 4)] * 4


def test_a_prompt_retired_mid_epoch_is_skipped_for_the_rest_of_it():
    ids = ["a", "b", "c", "d"]
    epoch_order = PromptSampler(ids, seed=1).sample(4)  # a twin shows the epoch's order
    sampler = PromptSampler(ids, seed=1)
    assert sampler.sample(1) == epoch_order[:1]
    victim = epoch_order[3]
    assert sampler.record(victim, [1.0] * 10)  # e.g. scored from an earlier, in-flight batch
    assert sampler.sample(2) == epoch_order[1:3]
    assert victim not in sampler.sample(20)


def test_pass_rate_window():
    latest = PromptSampler(["a"], window=1)
    whole = PromptSampler(["a"], window=0)
    for s in (latest, whole):
        s.record("a", [-1.0] * 10)
        s.record("a", [1.0] * 10)
    assert latest.pass_rate("a") == 1.0 and "a" in latest.retired
    assert whole.pass_rate("a") == 0.5 and "a" not in whole.retired
    assert PromptSampler(["z"]).pass_rate("z") is None


def test_threshold_is_inclusive_and_configurable():
    s = PromptSampler.from_config(["a", "b"], SamplerConfig(pass_rate_threshold=0.75))
    assert s.record("a", [1, 1, 1, -1])  # 0.75 >= 0.75
    assert not s.record("b", [1, 1, -1, -1])


def test_exhausted_when_every_prompt_is_retired():
    s = PromptSampler(["a", "b"], seed=0)
    for pid in s.sample(2):
        s.record(pid, [1.0] * 4)
    with pytest.raises(SamplerExhausted, match="all 2 prompts reached a pass rate >= 0.9"):
        s.sample(1)


def test_small_active_pool_spans_epochs_within_a_batch():
    s = PromptSampler(["a", "b"], seed=0, no_positive_resampling=False)
    drawn = s.sample(5)
    assert len(drawn) == 5 and s.epoch == 2


def test_bad_inputs():
    with pytest.raises(ValueError, match="unique"):
        PromptSampler(["a", "a"])
    with pytest.raises(ValueError, match="at least one"):
        PromptSampler([])
    s = PromptSampler(["a"])
    with pytest.raises(KeyError):
        s.record("zz", [1.0])
    other = PromptSampler(["x", "y"])
    other.sample(1)
    with pytest.raises(ValueError, match="another prompt pool"):
        s.load_state_dict(other.state_dict())
