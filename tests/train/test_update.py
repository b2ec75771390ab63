"""One policy update on a real (random, tiny) Qwen2: micro-batching, filtering, skipping."""

import copy
from pathlib import Path

import pytest
import torch

from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.rl.presets import get_recipe
from scalerl.tasks.base import Problem
from scalerl.rollout.groups import Group
from scalerl.train.update import build_optimizer, policy_update

# _grads swaps optimizer.step for a no-op to read the gradients; the scheduler notices.
pytestmark = pytest.mark.filterwarnings(r"ignore:Seems like `optimizer.step\(\)` has been overridden")


@pytest.fixture(scope="module")
def groups(random_model, char_tokenizer):
    gen = HFGenerator(random_model, char_tokenizer, seed=0)
    prompts = [char_tokenizer("12+34=").input_ids, char_tokenizer("5+6=").input_ids, char_tokenizer("7+1=").input_ids]
    comps = gen.generate([p for p in prompts for _ in range(4)], SamplingParams(max_new_tokens=12, seed=1))
    rewards = [[1.0, -1.0, -1.0, 1.0], [-1.0, -1.0, -1.0, -1.0], [1.0, -1.0, 1.0, 1.0]]  # group 1: zero variance
    return [Group(Problem(str(i), "p", "a"), comps[4 * i: 4 * i + 4], rewards[i], rewards[i]) for i in range(3)]


def _grads(model, groups, recipe, micro, share_prompt=True):
    model = copy.deepcopy(model)
    opt, sched = build_optimizer(model, recipe)
    opt.step = lambda *a, **k: None  # keep the gradients: compare them, do not apply them
    opt.zero_grad = lambda *a, **k: None
    res = policy_update(model, opt, sched, groups, recipe, temperature=1.0, pad_token_id=0, micro_batch_size=micro,
                        share_prompt=share_prompt)
    return res, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("aggregation", ["prompt", "sample", "token"])
@pytest.mark.parametrize("share_prompt", [True, False], ids=["shared-prompt", "whole-sequences"])
def test_micro_batches_give_the_full_batch_gradient(random_model, groups, aggregation, share_prompt):
    recipe = get_recipe("scalerl")
    recipe.aggregation = aggregation
    full_res, full = _grads(random_model, groups, recipe, micro=100, share_prompt=False)
    part_res, part = _grads(random_model, groups, recipe, micro=3, share_prompt=share_prompt)
    assert full and full.keys() == part.keys()
    for name in full:
        torch.testing.assert_close(part[name], full[name], rtol=1e-4, atol=1e-7)
    assert part_res.metrics["loss"] == pytest.approx(full_res.metrics["loss"], rel=1e-5, abs=1e-8)


def test_zero_variance_groups_leave_the_loss(random_model, groups):
    recipe = get_recipe("scalerl")
    res, _ = _grads(random_model, groups, recipe, micro=100)
    assert res.metrics["filtered_frac"] == pytest.approx(4 / 12)
    recipe.filtering.zero_variance = False
    res, _ = _grads(random_model, groups, recipe, micro=100)
    assert res.metrics["filtered_frac"] == 0.0


def test_a_batch_with_nothing_to_learn_is_skipped(random_model, groups):
    recipe = get_recipe("scalerl")
    flat = [Group(g.problem, g.completions, [-1.0] * 4, [-1.0] * 4) for g in groups]
    model = copy.deepcopy(random_model)
    before = {n: p.clone() for n, p in model.named_parameters()}
    opt, sched = build_optimizer(model, recipe)
    res = policy_update(model, opt, sched, flat, recipe, temperature=1.0, pad_token_id=0, micro_batch_size=8)
    assert res.skipped and "no trainable tokens" in res.reason
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters())


def test_an_update_moves_the_policy_towards_the_rewarded_completions(random_model, groups):
    from scalerl.generate.logprobs import completion_logprobs, pack_completions

    recipe = get_recipe("scalerl")
    recipe.optimizer.lr, recipe.optimizer.warmup_steps = 1e-2, 0
    model = copy.deepcopy(random_model)
    opt, sched = build_optimizer(model, recipe)
    comps = [c for g in groups for c in g.completions]
    rewards = torch.tensor([r for g in groups for r in g.rewards])
    batch = pack_completions(comps, 0)
    with torch.no_grad():
        before = (completion_logprobs(model, batch, 1.0) * batch["loss_mask"]).sum(1)
    res = policy_update(model, opt, sched, groups, recipe, temperature=1.0, pad_token_id=0, micro_batch_size=8)
    assert not res.skipped
    with torch.no_grad():
        after = (completion_logprobs(model, batch, 1.0) * batch["loss_mask"]).sum(1)
    delta = after - before
    keep = torch.tensor([True] * 4 + [False] * 4 + [True] * 4)  # group 1 was filtered
    assert delta[keep & (rewards > 0)].mean() > delta[keep & (rewards < 0)].mean()


def test_an_empty_batch_is_skipped_with_its_reason(random_model):
    # DAPO's dynamic sampling can run out of rounds with no group kept: the step is skipped, not a crash.
    recipe = get_recipe("qwen-dapo")
    model = copy.deepcopy(random_model)
    before = {n: p.clone() for n, p in model.named_parameters()}
    opt, sched = build_optimizer(model, recipe)
    res = policy_update(model, opt, sched, [], recipe, temperature=1.0, pad_token_id=0, micro_batch_size=8)
    assert res.skipped and res.reason.startswith("empty batch") and "10 rounds" in res.reason
    assert res.trained_tokens == 0 and res.lag_counts == {}
    assert all(torch.equal(before[n], p) for n, p in model.named_parameters())


@pytest.mark.parametrize("basis, filtered", [("correctness", 8 / 12), ("shaped", 4 / 12)])
def test_the_filter_judges_groups_on_its_basis(random_model, groups, basis, filtered):
    # Group 0: all wrong, but overlong penalties make the shaped rewards differ. On correctness (DAPO,
    # Magistral) it carries no signal and leaves the loss; on the shaped rewards it stays.
    recipe = get_recipe("scalerl")
    recipe.filtering.basis = basis
    penalised = [Group(groups[0].problem, groups[0].completions, [-1.0] * 4, [-1.0, -1.25, -1.0, -1.5]), *groups[1:]]
    res, _ = _grads(random_model, penalised, recipe, micro=100)
    assert res.metrics["filtered_frac"] == pytest.approx(filtered)


@pytest.mark.skipif(not Path("/proc/self/statm").exists(), reason="reads the resident set from /proc (Linux)")
def test_the_step_reports_the_process_peak_memory(random_model, groups):
    """``memory/peak_gb``: on the CPU the process's peak resident set, which a fresh process that
    writes a 256 MiB tensor sees rise by that much."""
    import subprocess
    import sys

    from scalerl.train.memory import peak_memory_gb

    res, _ = _grads(random_model, groups, get_recipe("scalerl"), micro=100)
    assert 0 < res.metrics["memory/peak_gb"] <= peak_memory_gb("cpu")
    # The resident set now (statm: pages) plus the tensor is a floor for the new peak.
    code = ("import os, torch; from scalerl.train.memory import peak_memory_gb as p; a = p('cpu'); "
            "now = int(open('/proc/self/statm').read().split()[1]) * os.sysconf('SC_PAGE_SIZE') / 1024**3; "
            "t = torch.ones(64 * 1024 * 1024); print(a, now, p('cpu'))")
    before, resident, after = map(float, subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                        check=True).stdout.split())
    assert resident + 0.24 <= after <= max(before, resident) + 0.3


def test_a_step_with_no_trainable_token_says_when_a_length_mask_may_have_left_them_out():
    """A batch every completion of which length.mask_interrupted left out was skipped as "every group
    filtered", though no group was (review ae)."""
    from scalerl.rl.recipe import RecipeConfig
    from scalerl.train.update import _no_tokens_reason

    recipe = RecipeConfig()
    assert _no_tokens_reason(recipe) == "no trainable tokens (every group filtered)"
    recipe.length.mask_interrupted = True
    assert _no_tokens_reason(recipe) == ("no trainable tokens (every group filtered, or every completion left out "
                                         "of the loss by length.mask_interrupted)")


def test_the_length_masks_share_is_logged_apart_from_the_filters(random_model, groups):
    """Review ae: under length.mask_truncated / mask_interrupted nothing counted the completions the mask left
    out apart from zero-variance filtering's (filtered_frac mixes the two)."""
    import dataclasses

    truncated = {0, 5, 9}  # one in group 0, one in the zero-variance group 1, one in group 2
    cut = [Group(g.problem, [dataclasses.replace(c, finish_reason="length" if 4 * i + j in truncated else "stop")
                             for j, c in enumerate(g.completions)], g.rewards, g.shaped) for i, g in enumerate(groups)]
    recipe = get_recipe("scalerl")
    res, _ = _grads(random_model, cut, recipe, micro=100)
    assert "length_masked_frac" not in res.metrics  # no mask on: no column
    recipe.length.mask_truncated = True
    res, _ = _grads(random_model, cut, recipe, micro=100)
    assert res.metrics["length_masked_frac"] == pytest.approx(3 / 12)
    assert res.metrics["filtered_frac"] == pytest.approx(6 / 12)  # group 1's four, and one each of groups 0 and 2
