"""Loss aggregation (token / sample / prompt) on hand-computed tensors: values and gradients."""

from __future__ import annotations

import pytest
import torch

from scalerl.errors import ConfigError
from scalerl.rl.aggregate import AGGREGATIONS, aggregate_loss, aggregation_weights

# Three sequences: two answer prompt 7, one answers prompt 3 (group ids need not be 0..G-1).
PER_TOKEN = [[1.0, 2.0, 3.0], [4.0, 99.0, 99.0], [5.0, 6.0, 99.0]]
MASK = [[1, 1, 1], [1, 0, 0], [1, 1, 0]]
GROUP = [7, 7, 3]

# name -> (loss, d loss / d per_token)
EXPECTED = {
    # all 6 tokens count the same: 21 / 6
    "token": (21 / 6, [[1 / 6] * 3, [1 / 6, 0, 0], [1 / 6, 1 / 6, 0]]),
    # per-sequence means 2, 4, 5.5, then their mean
    "sample": ((2 + 4 + 5.5) / 3, [[1 / 9] * 3, [1 / 3, 0, 0], [1 / 6, 1 / 6, 0]]),
    # prompt 7: (1 + 2 + 3 + 4) / 4 tokens = 2.5; prompt 3: (5 + 6) / 2 = 5.5; mean 4.0
    "prompt": (4.0, [[1 / 8] * 3, [1 / 8, 0, 0], [1 / 4, 1 / 4, 0]]),
}


def tensors(extra_rows=0):
    per_token = torch.tensor(PER_TOKEN + [[50.0] * 3] * extra_rows, dtype=torch.float64, requires_grad=True)
    mask = torch.tensor(MASK + [[0] * 3] * extra_rows)
    group = torch.tensor(GROUP + [9] * extra_rows)
    return per_token, mask, group


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_values_and_gradients(name):
    per_token, mask, group = tensors()
    loss = aggregate_loss(per_token, mask, group, name)
    value, grad = EXPECTED[name]
    assert loss.item() == pytest.approx(value)
    (g,) = torch.autograd.grad(loss, per_token)
    torch.testing.assert_close(g, torch.tensor(grad, dtype=torch.float64))


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fully_masked_sequences_and_prompts_are_as_if_absent(name):
    # A filtered group (mask all 0) must not dilute sample- or prompt-level means.
    per_token, mask, group = tensors(extra_rows=2)
    assert aggregate_loss(per_token, mask, group, name).item() == pytest.approx(EXPECTED[name][0])


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_all_masked_batch_gives_zero_not_nan(name):
    per_token = torch.ones(2, 3, requires_grad=True)
    loss = aggregate_loss(per_token, torch.zeros(2, 3), torch.tensor([0, 1]), name)
    assert loss.item() == 0
    (g,) = torch.autograd.grad(loss, per_token)
    assert torch.all(g == 0)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_weights_sum_to_one(name):
    _, mask, group = tensors(extra_rows=1)
    assert aggregation_weights(name, mask, group).sum().item() == pytest.approx(1.0)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_micro_batches_with_full_batch_weights_match_the_full_batch(name):
    # Weights from the whole step, applied per micro-batch, accumulate to the full gradient.
    per_token, mask, group = tensors()
    full = aggregate_loss(per_token, mask, group, name)
    (g_full,) = torch.autograd.grad(full, per_token)
    weights = aggregation_weights(name, mask, group, dtype=per_token.dtype)
    parts = [(weights[i : i + 1] * per_token[i : i + 1]).sum() for i in range(3)]
    total = sum(parts)
    (g_parts,) = torch.autograd.grad(total, per_token)
    assert total.item() == pytest.approx(full.item())
    torch.testing.assert_close(g_parts, g_full)


def test_registry_names_and_unknown():
    assert AGGREGATIONS.names() == ["prompt", "sample", "token"]
    with pytest.raises(ConfigError, match="unknown loss aggregation 'seq'; known: prompt, sample, token"):
        aggregation_weights("seq", torch.ones(1, 1), torch.zeros(1))
