"""The LM head in chunks (``run.logits_budget_mb``): the same log-probs and gradients as the whole
logits, and models whose logits are not ``head(hidden)`` scored the plain way."""

from __future__ import annotations

import copy

import pytest
import torch

from scalerl.generate import head_chunks
from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.generate.logprobs import completion_logprobs, pack_completions, shared_prompt_logprobs
from scalerl.rl.fp32_head import enable_fp32_lm_head
from scalerl.rl.presets import get_recipe
from scalerl.rollout.groups import Group
from scalerl.tasks.base import Problem
from scalerl.train.update import policy_update


@pytest.fixture
def completions(random_model, char_tokenizer):
    gen = HFGenerator(random_model, char_tokenizer, seed=0)
    prompts = [char_tokenizer(p).input_ids for p in ("12+34=", "5+6=", "7+81=")]
    return gen.generate([p for p in prompts for _ in range(3)], SamplingParams(max_new_tokens=14, seed=2))


def _tiny_budget(model, positions=5):
    """A budget that cuts the logits into chunks of ``positions`` positions."""
    return positions * model.get_output_embeddings().out_features * head_chunks.LOGIT_BYTES


def _scored(model, score):
    """Log-probs and the gradient of a weighted sum of them, on a copy of ``model``."""
    model = copy.deepcopy(model).train()
    logprobs = score(model)
    weights = torch.linspace(-1.0, 1.0, logprobs.numel()).reshape(logprobs.shape)
    (logprobs * weights).sum().backward()
    return logprobs.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.fixture
def chunk_calls(monkeypatch):
    """How many times the chunked path ran (the plain path is what the other budget runs)."""
    calls = []
    original = head_chunks.chunked_logprobs

    def spy(*args, **kwargs):
        calls.append(1)
        return original(*args, **kwargs)

    monkeypatch.setattr("scalerl.generate.logprobs.chunked_logprobs", spy)
    return calls


@pytest.mark.parametrize("shared", [False, True], ids=["whole-sequences", "shared-prompt"])
def test_chunked_head_gives_the_same_logprobs_and_gradients(random_model, completions, shared, chunk_calls):
    model = enable_fp32_lm_head(copy.deepcopy(random_model))

    def score(budget):
        if shared:
            return lambda m: shared_prompt_logprobs(m, completions, 0.7, 0, logits_budget=budget)[0]
        return lambda m: completion_logprobs(m, pack_completions(completions, 0), 0.7, budget)

    whole, whole_grads = _scored(model, score(0))
    assert not chunk_calls
    chunked, chunked_grads = _scored(model, score(_tiny_budget(model)))
    assert chunk_calls
    torch.testing.assert_close(chunked, whole, rtol=1e-5, atol=1e-6)
    assert chunked_grads.keys() == whole_grads.keys()
    for name in whole_grads:
        torch.testing.assert_close(chunked_grads[name], whole_grads[name], rtol=1e-4, atol=1e-6, msg=name)


def test_a_budget_the_logits_fit_in_runs_the_plain_path(random_model):
    head = random_model.get_output_embeddings()
    assert not head_chunks.needs_chunks(4, 10, head, 4 * 10 * head.out_features * 4)
    assert head_chunks.needs_chunks(4, 11, head, 4 * 10 * head.out_features * 4)
    assert not head_chunks.needs_chunks(400, 1000, head, 0)  # 0: never
    assert head_chunks.chunk_positions(10, 103) == 1 and head_chunks.chunk_positions(4 * 103 * 7, 103) == 7


def test_a_model_that_post_processes_its_logits_is_scored_the_plain_way(char_tokenizer, completions):
    from transformers import Gemma2Config, Gemma2ForCausalLM

    tok = char_tokenizer
    cfg = Gemma2Config(vocab_size=len(tok), hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                       num_attention_heads=2, num_key_value_heads=1, head_dim=16, final_logit_softcapping=0.5,
                       pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    model = Gemma2ForCausalLM(cfg).eval()
    batch = pack_completions(completions, 0)
    assert head_chunks.head_of(model) is not None  # a plain Linear head: only its output tells
    plain = completion_logprobs(model, batch, 1.0, 0)
    got = completion_logprobs(model, batch, 1.0, _tiny_budget(model))
    torch.testing.assert_close(got, plain)  # soft-capped logits, not head(hidden)
    assert head_chunks.head_of(model) is None  # remembered: no second try
    shared = shared_prompt_logprobs(model, completions, 1.0, 0, logits_budget=_tiny_budget(model))[0]
    torch.testing.assert_close(shared, plain, rtol=1e-5, atol=1e-5)


def test_an_update_with_the_head_in_chunks_takes_the_same_step(random_model, completions, chunk_calls):
    recipe = get_recipe("scalerl")
    rewards = [[1.0, -1.0, 1.0], [-1.0, 1.0, 1.0], [1.0, -1.0, -1.0]]
    groups = [Group(Problem(str(i), "", ""), completions[3 * i: 3 * i + 3], r, r) for i, r in enumerate(rewards)]
    models, results = [], []
    for budget in (0, _tiny_budget(random_model, 3)):
        model = copy.deepcopy(random_model)
        opt = torch.optim.SGD(model.parameters(), lr=1.0)
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 1.0)
        results.append(policy_update(model, opt, sched, groups, recipe, temperature=1.0, pad_token_id=0,
                                     micro_batch_size=4, logits_budget=budget))
        models.append(model)
    assert chunk_calls  # the second update ran its head in chunks
    assert results[0].metrics["loss"] == pytest.approx(results[1].metrics["loss"], abs=1e-6)
    for (n, a), (_, b) in zip(models[0].named_parameters(), models[1].named_parameters()):
        torch.testing.assert_close(a, b, rtol=1e-5, atol=1e-6, msg=n)
