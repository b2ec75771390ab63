"""FP32 LM head on a bf16 tiny Qwen2, with and without tied embeddings."""

from __future__ import annotations

import copy
import pickle

import pytest
import torch
from torch import nn

from scalerl.errors import ConfigError

transformers = pytest.importorskip("transformers")

from scalerl.rl.fp32_head import FP32Linear, enable_fp32_lm_head, fp32_lm_head_enabled  # noqa: E402

VOCAB = 1024


def tiny_qwen2(tie: bool) -> nn.Module:
    torch.manual_seed(0)
    config = transformers.Qwen2Config(
        vocab_size=VOCAB,
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=1,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=64,
        tie_word_embeddings=tie,
    )
    return transformers.Qwen2ForCausalLM(config).to(torch.bfloat16).eval()


@pytest.fixture(params=[False, True], ids=["untied", "tied"])
def tie(request):
    return request.param


def test_logits_are_fp32_and_closer_to_the_fp32_reference(tie):
    bf16 = tiny_qwen2(tie)
    reference = copy.deepcopy(bf16).float()  # the same (bf16-representable) weights, all in fp32
    fp32_head = enable_fp32_lm_head(copy.deepcopy(bf16))
    ids = torch.randint(0, VOCAB, (4, 32), generator=torch.Generator().manual_seed(1))
    with torch.no_grad():
        ref = torch.log_softmax(reference(ids).logits.double(), -1)
        plain_logits = bf16(ids).logits
        fp32_logits = fp32_head(ids).logits
    assert plain_logits.dtype == torch.bfloat16 and fp32_logits.dtype == torch.float32
    err_plain = (torch.log_softmax(plain_logits.double(), -1) - ref).abs().mean()
    err_fp32 = (torch.log_softmax(fp32_logits.double(), -1) - ref).abs().mean()
    # The bf16 body's own rounding remains in both; the fp32 head removes the head's share.
    assert err_fp32 < 0.95 * err_plain


def test_the_head_alone_is_exact_to_fp32_precision(tie):
    # Same bf16 hidden states and weights: the fp32 head matches a float64 matmul to fp32
    # precision; the bf16 head is off by bf16 rounding (8 significant bits, ~2e-3 relative).
    model = tiny_qwen2(tie)
    head = model.get_output_embeddings()
    hidden = torch.randn(8, 64, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16) * 4
    exact = hidden.double() @ head.weight.double().T
    with torch.no_grad():
        plain = head(hidden)
        enable_fp32_lm_head(model)
        fp32 = head(hidden)
    scale = exact.abs().max()
    assert (fp32.double() - exact).abs().max() < 1e-5 * scale
    assert (plain.double() - exact).abs().max() > 1e-3 * scale


def test_nothing_is_untied_or_copied_and_it_is_idempotent(tie):
    model = tiny_qwen2(tie)
    keys_before = {k: (v.dtype, v.shape) for k, v in model.state_dict().items()}
    weight = model.lm_head.weight
    enable_fp32_lm_head(model)
    enable_fp32_lm_head(model)
    assert fp32_lm_head_enabled(model) and type(model.lm_head) is FP32Linear
    assert model.lm_head.weight is weight and weight.dtype == torch.bfloat16
    assert (model.lm_head.weight is model.model.embed_tokens.weight) == tie
    assert {k: (v.dtype, v.shape) for k, v in model.state_dict().items()} == keys_before


def test_gradients_reach_the_bf16_weights(tie):
    model = enable_fp32_lm_head(tiny_qwen2(tie)).train()
    ids = torch.randint(0, VOCAB, (2, 8))
    logits = model(ids).logits
    torch.log_softmax(logits, -1)[..., 0].sum().backward()
    assert model.lm_head.weight.grad is not None and model.lm_head.weight.grad.dtype == torch.bfloat16
    assert model.lm_head.weight.grad.abs().sum() > 0


def test_autocast_cannot_cast_the_head_back():
    model = enable_fp32_lm_head(tiny_qwen2(tie=False).float())
    with torch.autocast("cpu", dtype=torch.bfloat16), torch.no_grad():
        logits = model(torch.randint(0, VOCAB, (1, 4))).logits
        plain = nn.Linear(4, 4)(torch.ones(1, 4))
    assert plain.dtype == torch.bfloat16  # autocast is active...
    assert logits.dtype == torch.float32  # ...but not on the head


def test_copies_keep_the_fp32_head_on_their_own_weights():
    model = enable_fp32_lm_head(tiny_qwen2(tie=True))
    clone = copy.deepcopy(model)
    assert fp32_lm_head_enabled(clone) and clone.lm_head.weight is clone.model.embed_tokens.weight
    assert clone.lm_head.weight is not model.lm_head.weight
    restored = pickle.loads(pickle.dumps(model))
    assert fp32_lm_head_enabled(restored)


def test_unsupported_heads_are_refused():
    class Odd(nn.Module):
        def get_output_embeddings(self):
            return nn.Embedding(3, 3)

    with pytest.raises(ConfigError, match="--set fp32_lm_head=false"):
        enable_fp32_lm_head(Odd())
