"""Micro-batches by count and by padded tokens (``run.micro_batch_tokens``): memory, not the gradient."""

from __future__ import annotations

import copy

import pytest
import torch

from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.rl.presets import get_recipe
from scalerl.rollout.groups import Group
from scalerl.tasks.base import Problem
from scalerl.train.micro_batches import micro_batches
from scalerl.train.update import policy_update


def test_a_micro_batch_closes_at_its_row_or_its_token_limit():
    lengths = [(4, 2), (4, 3), (4, 4), (4, 10), (4, 30), (4, 6)]
    order = [0, 1, 2, 5, 3, 4]  # shortest first, as the update sorts them
    assert micro_batches(order, lengths, max_rows=4) == [[0, 1, 2, 5], [3, 4]]
    # 24 padded tokens: (4 + 4) x 3 rows fits, a fourth row of 10 would pad all four to 40.
    assert micro_batches(order, lengths, max_rows=64, max_tokens=24) == [[0, 1, 2], [5], [3], [4]]
    # A sequence longer than the budget gets a pass of its own; nothing is lost or repeated.
    packed = micro_batches(order, lengths, max_rows=2, max_tokens=12)
    assert sorted(i for m in packed for i in m) == sorted(order) and [4] in packed
    assert all(len(m) <= 2 for m in packed)
    assert micro_batches([], lengths, max_rows=4, max_tokens=10) == []


def test_the_token_limit_changes_the_passes_not_the_step(random_model, char_tokenizer, monkeypatch):
    import scalerl.train.update as update

    passes = []
    monkeypatch.setattr(update, "micro_batches", lambda *a, **k: passes.append(micro_batches(*a, **k)) or passes[-1])
    gen = HFGenerator(random_model, char_tokenizer, seed=0)
    groups = []
    for i, rewards in enumerate([[1, -1, -1, 1], [1, 1, -1, 1], [-1, 1, -1, -1]]):
        prompt = char_tokenizer(f"{i}+{i + 3}=").input_ids
        comps = gen.generate([prompt] * 4, SamplingParams(max_new_tokens=8 + 4 * i, seed=i))
        groups.append(Group(Problem(str(i), "", ""), comps, [float(r) for r in rewards], [float(r) for r in rewards]))
    models, results = [], []
    for tokens in (0, 40):
        model = copy.deepcopy(random_model)
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        results.append(policy_update(model, opt, sched, groups, get_recipe("scalerl"), temperature=1.0, pad_token_id=0,
                                     micro_batch_size=64, micro_batch_tokens=tokens))
        models.append(model)
    assert len(passes[0]) == 1 < len(passes[1])  # one pass of every sequence, against several of <= 40 tokens
    assert results[0].metrics["loss"] == pytest.approx(results[1].metrics["loss"], abs=1e-6)
    for (n, a), (_, b) in zip(models[0].named_parameters(), models[1].named_parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=n)
