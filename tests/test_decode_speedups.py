"""The generator's CPU speed-ups compute what they replace: the append-in-place KV cache, the
single-query attention path, inverse-CDF sampling, and the fused AdamW."""

import copy

import pytest
import torch
from transformers.integrations.sdpa_attention import sdpa_attention_forward

import scalerl.generate.hf as hf_module
from scalerl.generate.attention import NAME, decode_attention, use_decode_attention
from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.generate.kvcache import GROW, AppendLayer, decode_cache
from scalerl.generate.layout import new_cache
from scalerl.generate.sampling import sample_categorical
from scalerl.rl.recipe import RecipeConfig
from scalerl.train.update import build_optimizer

PROMPTS = ["1+2=", "47+38=", "9+90=", "123+4567="]


@pytest.fixture()
def model(random_model):
    return copy.deepcopy(random_model)  # these tests switch attention implementations


@pytest.fixture()
def prompts(char_tokenizer):
    return [char_tokenizer(p).input_ids for p in PROMPTS] * 2


def test_decode_cache_replaces_full_attention_layers(model):
    cache = decode_cache(model)
    assert cache.layers and all(isinstance(layer, AppendLayer) for layer in cache.layers)


@pytest.mark.parametrize("compact", [0.0, 1.0])  # rows dropped as soon as they finish / never
def test_append_cache_gives_the_same_tokens_and_logprobs_as_transformers_cache(
    model, char_tokenizer, prompts, compact, monkeypatch
):
    """Bit for bit: same attention inputs, only where the keys are stored differs. Long enough
    (40 tokens) for the buffers to grow several times; compaction selects rows mid-way."""
    model.set_attn_implementation("sdpa")
    params = SamplingParams(max_new_tokens=40, temperature=1.0, seed=3)

    def run(cache_factory):
        monkeypatch.setattr(hf_module, "decode_cache", cache_factory)
        gen = HFGenerator(model, char_tokenizer, seed=0, compact_fraction=compact)
        model.set_attn_implementation("sdpa")  # keep SDPA on both sides: this test is about the cache
        return gen.generate(prompts, params)

    ours, reference = run(decode_cache), run(new_cache)
    assert max(len(c.token_ids) for c in ours) > 2 * GROW
    for a, b in zip(ours, reference):
        assert a.token_ids == b.token_ids
        assert a.logprobs == b.logprobs


def test_append_layer_refuses_what_it_does_not_implement():
    layer = AppendLayer()
    layer.update(torch.zeros(2, 1, 3, 4), torch.zeros(2, 1, 3, 4))
    assert layer.get_seq_length() == 3 and layer.keys.shape == (2, 1, 3, 4)
    with pytest.raises(NotImplementedError):
        layer.crop(-1)


def test_use_decode_attention_switches_cpu_sdpa_models_only(model):
    model.set_attn_implementation("sdpa")
    assert use_decode_attention(model) and model.config._attn_implementation == NAME
    assert use_decode_attention(model)  # idempotent
    model.set_attn_implementation("eager")
    assert not use_decode_attention(model) and model.config._attn_implementation == "eager"


@pytest.mark.parametrize("groups", [1, 2])
def test_single_query_attention_matches_sdpa(groups):
    torch.manual_seed(0)
    module = torch.nn.Module()
    module.num_key_value_groups = groups
    q = torch.randn(5, 4, 1, 8)
    k, v = torch.randn(5, 4 // groups, 9, 8), torch.randn(5, 4 // groups, 9, 8)
    mask = torch.ones(5, 1, 1, 9, dtype=torch.bool)
    mask[1, ..., :4] = False  # left padding
    strided_k = torch.cat([k, torch.randn(5, 4 // groups, 3, 8)], dim=2)[:, :, :9]  # the decode cache's views
    with torch.no_grad():
        ours, _ = decode_attention(module, q, strided_k, v, mask, scaling=8 ** -0.5)
        reference, _ = sdpa_attention_forward(module, q, k, v, mask, scaling=8 ** -0.5)
    assert ours.shape == reference.shape == (5, 1, 4, 8)
    torch.testing.assert_close(ours, reference, rtol=1e-5, atol=1e-6)


def test_training_calls_keep_sdpa_exactly():
    """With gradients on (the trainer's passes) or a longer query, the result is SDPA's own."""
    module = torch.nn.Module()
    module.num_key_value_groups = 1
    q, k, v = torch.randn(2, 2, 3, 4), torch.randn(2, 2, 3, 4), torch.randn(2, 2, 3, 4)
    ours, _ = decode_attention(module, q, k, v, None, scaling=0.5)
    reference, _ = sdpa_attention_forward(module, q, k, v, None, scaling=0.5)
    assert torch.equal(ours, reference)
    q1 = torch.randn(2, 2, 1, 4, requires_grad=True)
    ours, _ = decode_attention(module, q1, k, v, None, scaling=0.5)
    reference, _ = sdpa_attention_forward(module, q1, k, v, None, scaling=0.5)
    assert torch.equal(ours, reference)


def test_generator_logprobs_agree_with_the_trainers_sdpa_recomputation(model, char_tokenizer, prompts):
    from scalerl.generate.logprobs import completion_logprobs, pack_completions

    gen = HFGenerator(model, char_tokenizer, seed=0)
    assert gen.decode_attention
    out = gen.generate(prompts, SamplingParams(max_new_tokens=24, temperature=1.0, seed=1))
    batch = pack_completions(out, char_tokenizer.pad_token_id)
    with torch.no_grad():
        recomputed = completion_logprobs(model, batch, 1.0)  # a multi-token query: SDPA
    recorded = torch.zeros_like(recomputed)
    for i, c in enumerate(out):
        recorded[i, : len(c.logprobs)] = torch.tensor(c.logprobs)
    torch.testing.assert_close(recomputed, recorded, rtol=0, atol=1e-5)


def test_sample_categorical_draws_from_the_distribution_and_never_a_zero():
    probs = torch.tensor([[0.1, 0.0, 0.6, 0.3], [0.0, 0.0, 2.0, 0.0], [0.5, 0.5, 0.0, 0.0]]).repeat(20000, 1)
    draws = sample_categorical(probs, torch.Generator().manual_seed(0)).view(20000, 3)
    freq = torch.stack([torch.bincount(draws[:, j], minlength=4) for j in range(3)]).float() / 20000
    expected = probs[:3] / probs[:3].sum(-1, keepdim=True)
    assert torch.all(freq[expected == 0] == 0)
    assert torch.allclose(freq, expected, atol=0.015)  # ~4 standard errors at n = 20000
    again = sample_categorical(probs, torch.Generator().manual_seed(0)).view(20000, 3)
    assert torch.equal(draws, again)  # seeded: reproducible


def test_sample_categorical_rejects_non_finite_probabilities():
    with pytest.raises(ValueError, match="inf or nan"):
        sample_categorical(torch.tensor([[0.5, float("nan")]]), None)


def test_cpu_optimizer_is_fused(model):
    optimizer, _ = build_optimizer(model, RecipeConfig())
    assert optimizer.defaults["fused"] is True


def test_a_switched_layer_runs_onednn_with_and_without_gradients(onednn):
    layer = torch.nn.Linear(16, 8)
    assert onednn.use_onednn_linear(layer) and onednn.use_onednn_linear(layer)  # idempotent
    x = torch.randn(5, 3, 16, requires_grad=True)
    mkl = torch.nn.functional.linear(x, layer.weight, layer.bias)
    with torch.no_grad():
        dnn = torch.ops.mkldnn._linear_pointwise(x, layer.weight, layer.bias, "none", [], "")
        assert torch.equal(layer(x), dnn)  # the generator's passes
    torch.testing.assert_close(dnn, mkl, rtol=1e-5, atol=1e-6)  # the two libraries agree to rounding
    y = layer(x)  # a trainer's pass: oneDNN, differentiable
    assert torch.equal(y.detach(), dnn)
    upstream = torch.randn_like(y)
    got = torch.autograd.grad(y, (x, layer.weight, layer.bias), upstream)
    expected = torch.autograd.grad(mkl, (x, layer.weight, layer.bias), upstream)
    for g, e in zip(got, expected):
        torch.testing.assert_close(g, e, rtol=1e-5, atol=1e-5)


def test_generator_on_onednn_agrees_with_the_trainers_recomputation(onednn, model, char_tokenizer, prompts):
    """The generator's log-probs and the trainer's teacher-forced ones, both on oneDNN, agree to rounding
    (the switch changes the trainer's passes too: they differ from MKL's at float rounding only)."""
    from scalerl.generate.logprobs import completion_logprobs, pack_completions

    probe = pack_completions(HFGenerator(copy.deepcopy(model), char_tokenizer, seed=0).generate(
        prompts, SamplingParams(max_new_tokens=24, temperature=1.0, seed=1)), char_tokenizer.pad_token_id)
    with torch.no_grad():
        before = completion_logprobs(model, probe, 1.0)
    gen = HFGenerator(model, char_tokenizer, seed=0)
    assert gen.decode_linear
    with torch.no_grad():
        torch.testing.assert_close(completion_logprobs(model, probe, 1.0), before, rtol=0, atol=1e-5)
    out = gen.generate(prompts, SamplingParams(max_new_tokens=24, temperature=1.0, seed=1))
    batch = pack_completions(out, char_tokenizer.pad_token_id)
    with torch.no_grad():
        recomputed = completion_logprobs(model, batch, 1.0)
    recorded = torch.zeros_like(recomputed)
    for i, c in enumerate(out):
        recorded[i, : len(c.logprobs)] = torch.tensor(c.logprobs)
    torch.testing.assert_close(recomputed, recorded, rtol=0, atol=1e-5)


def test_decode_linear_is_chosen_by_the_cpu():
    """On an AMD CPU with AVX-512 (where MKL runs at half oneDNN's rate) the generator switches; elsewhere not."""
    from pathlib import Path

    from scalerl.models.onednn_linear import onednn_faster

    cpuinfo = Path("/proc/cpuinfo").read_text() if Path("/proc/cpuinfo").exists() else ""
    expected = ("AuthenticAMD" in cpuinfo and torch.backends.cpu.get_cpu_capability().startswith("AVX512")
                and torch.backends.mkldnn.is_available())
    assert onednn_faster() == expected


def test_a_switched_model_still_pickles_and_deep_copies_and_keeps_its_head(onednn, model):
    """The switch is a class swap (as the FP32 head's): a bound method set on each layer made
    ``torch.save(model)`` and Ray's pickling fail ("'Linear' object has no attribute '_forward'")."""
    import io
    import pickle

    head = model.get_output_embeddings()
    head_class = type(head)
    assert onednn.use_onednn_linear(model)
    switched = [m for m in model.modules() if isinstance(m, onednn.OneDNNLinear)]
    assert switched and type(model.get_output_embeddings()) is head_class  # the head is fp32_head's to swap
    again = pickle.loads(pickle.dumps(model))
    buffer = io.BytesIO()
    torch.save(model, buffer)
    buffer.seek(0)
    loaded = torch.load(buffer, weights_only=False)
    ids = torch.tensor([[1, 2, 3, 4]])
    with torch.no_grad():
        expected = model(input_ids=ids).logits
        for other in (again, copy.deepcopy(model), loaded):
            assert torch.equal(other(input_ids=ids).logits, expected)
