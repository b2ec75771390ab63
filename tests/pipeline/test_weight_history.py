"""Deterministic PipelineRL-k's weight snapshots: held as the generators hold their weights."""

from __future__ import annotations

import pytest
import torch
from transformers import Qwen2Config, Qwen2ForCausalLM

from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.models.lora import generator_copy
from scalerl.pipeline.landing import Landing, UpdatePlan, WeightHistory, layout_of
from scalerl.tasks.encoding import encode_prompts


@pytest.fixture
def tied(char_tokenizer):
    """A small fp32 Qwen2 whose LM head is its input embedding (one tensor under two names)."""
    tok = char_tokenizer
    cfg = Qwen2Config(vocab_size=len(tok), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=True,
                      bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(cfg).eval()
    assert model.lm_head.weight is model.model.embed_tokens.weight
    return model


def _step(model, seed):
    """Stand-in for an optimizer step: every weight moves (by more than bf16 rounds away)."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for p in model.parameters():
            p.add_(torch.randn(p.shape, generator=g) * 0.05)


def test_snapshots_are_held_in_the_generators_dtype_and_load_the_same_weights(tied, char_tokenizer):
    trainer = tied
    history = WeightHistory()
    planned = HFGenerator(generator_copy(trainer, torch.bfloat16), char_tokenizer, seed=3)
    history.store_as(layout_of(planned.model))
    _step(trainer, 1)
    history.publish(1, 1, trainer)

    (state, version), = history.state_dict(before=2).values()
    assert version == 1
    assert {t.dtype for t in state.values()} == {torch.bfloat16}
    assert state["lm_head.weight"] is state["model.embed_tokens.weight"]  # tied: one copy
    unique = {t.data_ptr(): t for t in planned.model.state_dict().values()}  # the tied tensor once
    assert history.held_bytes() == history.peak_bytes == sum(t.numel() * 2 for t in unique.values())
    assert history.held_bytes() == sum(p.numel() * 4 for p in trainer.parameters()) // 2  # half the fp32 masters

    # What a generator holds after loading the bf16 snapshot at a landing equals what it holds
    # after receiving the trainer's fp32 weights directly: the same tokens, the same log-probs.
    direct = HFGenerator(generator_copy(trainer, torch.bfloat16), char_tokenizer, seed=3)
    prompts = encode_prompts(char_tokenizer, ["1+2=", "33+4="]) * 3
    params = SamplingParams(max_new_tokens=10, seed=5)
    got = planned.generate(prompts, params, updates=Landing(UpdatePlan(start=1), history))
    want = direct.generate(prompts, params)
    assert planned.version == 1
    assert [c.token_ids for c in got] == [c.token_ids for c in want]
    assert [c.logprobs for c in got] == [c.logprobs for c in want]
    for name, t in planned.model.state_dict().items():
        assert torch.equal(t, direct.model.state_dict()[name]), name


def test_a_skipped_step_shares_its_snapshot_and_forgotten_ones_free_memory(tied, char_tokenizer):
    history = WeightHistory()
    history.store_as(layout_of(generator_copy(tied, torch.bfloat16)))
    history.publish(0, 0, tied)
    one = history.held_bytes()
    history.publish(1, 0, tied)  # a skipped step: same version, same weights
    assert history.held_bytes() == one
    _step(tied, 2)
    history.publish(2, 1, tied)
    assert history.held_bytes() == history.peak_bytes == 2 * one
    history.forget_before(2)
    assert history.held_bytes() == one and history.peak_bytes == 2 * one


def test_the_layout_is_set_before_the_first_snapshot(tied):
    history = WeightHistory()
    history.publish(0, 0, tied)  # no layout: as the trainer holds them
    assert {t.dtype for t in history.state_dict(before=1)[0][0].values()} == {torch.float32}
    with pytest.raises(RuntimeError, match="before the first"):
        history.store_as(layout_of(tied))
