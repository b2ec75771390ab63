import threading

import pytest
import torch
import transformers
from transformers import DynamicCache

from scalerl.generate.base import Generator, SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.generate.layout import forward_kwargs, rows_selectable
from scalerl.generate.logprobs import completion_logprobs, pack_completions, shared_prompt_logprobs
from scalerl.generate.sampling import nucleus_filter, token_logprobs

from architectures import ARCHITECTURES
from scripted import ForcedPhrase

PROMPTS = ["1+2=", "47+38=", "9+90=", "123+4567="]


@pytest.fixture()
def prompts(char_tokenizer):
    return [char_tokenizer(p).input_ids for p in PROMPTS]


@pytest.fixture()
def gen(random_model, char_tokenizer):
    return HFGenerator(random_model, char_tokenizer, seed=0)


def eos_model(tokenizer, p_eos):
    """A model whose next-token distribution is fixed: EOS with probability p_eos, else uniform."""
    from scalerl.models.tiny import TinyArchitecture, build_tiny_model

    model = build_tiny_model(tokenizer, TinyArchitecture(hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                                         num_attention_heads=2, num_key_value_heads=2))
    vocab = model.config.vocab_size
    head = torch.nn.Linear(32, vocab, bias=True)
    with torch.no_grad():
        head.weight.zero_()
        head.bias.zero_()
        head.bias[tokenizer.eos_token_id] = torch.log(torch.tensor(p_eos / (1 - p_eos) * (vocab - 1)))
    model.lm_head = head
    return model


def test_implements_the_protocol_and_shapes(gen, prompts):
    assert isinstance(gen, Generator)
    out = gen.generate(prompts, SamplingParams(max_new_tokens=12, temperature=1.0, seed=0))
    assert len(out) == len(prompts)
    for c, p in zip(out, prompts):
        assert c.prompt_ids == p
        assert 1 <= len(c.token_ids) <= 12
        assert len(c.logprobs) == len(c.loss_mask) == len(c.versions) == len(c.token_ids)
        assert all(lp <= 0 for lp in c.logprobs) and set(c.loss_mask) == {1} and set(c.versions) == {0}
        assert c.finish_reason in ("stop", "length")


@pytest.mark.parametrize("compact", [0.0, 1.0])
@pytest.mark.parametrize("temperature", [1.0, 0.7])
def test_logprobs_match_a_teacher_forced_recomputation(random_model, char_tokenizer, prompts, compact, temperature):
    gen = HFGenerator(random_model, char_tokenizer, seed=1, compact_fraction=compact)
    out = gen.generate(prompts * 3, SamplingParams(max_new_tokens=24, temperature=temperature, seed=5))
    batch = pack_completions(out, char_tokenizer.pad_token_id)
    with torch.no_grad():
        recomputed = completion_logprobs(random_model, batch, temperature)
    mask = batch["completion_mask"].bool()
    generated = torch.zeros_like(recomputed)
    for i, c in enumerate(out):
        generated[i, : len(c.logprobs)] = torch.tensor(c.logprobs)
    assert torch.allclose(generated[mask], recomputed[mask], atol=1e-4), (generated - recomputed).abs().max()


def test_logprobs_follow_the_temperature_convention(char_tokenizer, prompts):
    # Fixed distribution: P(EOS) = 0.2, every other token (1 - 0.2) / (V - 1); at temperature T
    # the recorded log-prob is log_softmax(logits / T), computed in fp32, top-p not folded in.
    model = eos_model(char_tokenizer, 0.2)
    for temperature, top_p in ((1.0, 1.0), (0.5, 1.0), (0.5, 0.9)):
        out = HFGenerator(model, char_tokenizer).generate(
            prompts, SamplingParams(max_new_tokens=6, temperature=temperature, top_p=top_p, seed=0)
        )
        logits = model.lm_head.bias.detach()
        expected = torch.log_softmax(logits / temperature, -1)
        for c in out:
            assert c.logprobs == pytest.approx(expected[c.token_ids].tolist(), abs=1e-5)


def test_greedy_is_deterministic_and_ignores_seed(gen, prompts):
    a = gen.generate(prompts, SamplingParams(max_new_tokens=16, temperature=0.0, seed=1))
    b = gen.generate(prompts, SamplingParams(max_new_tokens=16, temperature=0.0, seed=2))
    assert [c.token_ids for c in a] == [c.token_ids for c in b]
    assert [c.logprobs for c in a] == [c.logprobs for c in b]


def test_seeded_sampling_is_reproducible(gen, prompts):
    params = SamplingParams(max_new_tokens=16, temperature=1.0, seed=11)
    a, b = gen.generate(prompts, params), gen.generate(prompts, params)
    c = gen.generate(prompts, SamplingParams(max_new_tokens=16, temperature=1.0, seed=12))
    assert [x.token_ids for x in a] == [x.token_ids for x in b]
    assert [x.token_ids for x in a] != [x.token_ids for x in c]


def test_unseeded_calls_continue_the_generator_stream(random_model, char_tokenizer, prompts):
    params = SamplingParams(max_new_tokens=16, temperature=1.0)
    g1, g2 = HFGenerator(random_model, char_tokenizer, seed=4), HFGenerator(random_model, char_tokenizer, seed=4)
    first = [c.token_ids for c in g1.generate(prompts, params)]
    assert first == [c.token_ids for c in g2.generate(prompts, params)]
    assert first != [c.token_ids for c in g1.generate(prompts, params)]


def test_top_p_tiny_equals_greedy(gen, prompts):
    greedy = gen.generate(prompts, SamplingParams(max_new_tokens=10, temperature=0.0))
    nucleus = gen.generate(prompts, SamplingParams(max_new_tokens=10, temperature=1.0, top_p=1e-6, seed=0))
    assert [c.token_ids for c in greedy] == [c.token_ids for c in nucleus]


def test_nucleus_filter_keeps_the_smallest_top_set():
    lp = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert nucleus_filter(lp, 0.7)[0].tolist() == pytest.approx([0.5, 0.3, 0.0, 0.0])
    assert nucleus_filter(lp, 0.8)[0].tolist() == pytest.approx([0.5, 0.3, 0.0, 0.0])
    assert nucleus_filter(lp, 0.81)[0].tolist() == pytest.approx([0.5, 0.3, 0.15, 0.0])


@pytest.mark.parametrize("compact", [0.0, 0.25, 1.0])
def test_eos_stops_rows_and_max_new_tokens_caps_the_rest(char_tokenizer, prompts, compact):
    model = eos_model(char_tokenizer, 0.15)
    gen = HFGenerator(model, char_tokenizer, compact_fraction=compact)
    out = gen.generate(prompts * 16, SamplingParams(max_new_tokens=10, temperature=1.0, seed=3))
    eos = char_tokenizer.eos_token_id
    reasons = {c.finish_reason for c in out}
    assert reasons == {"stop", "length"}
    for c in out:
        assert len(c.token_ids) <= 10
        if c.finish_reason == "stop":
            assert c.token_ids[-1] == eos and eos not in c.token_ids[:-1]
        else:
            assert len(c.token_ids) == 10 and eos not in c.token_ids
    assert "<eos>" not in out[0].text


def test_max_new_tokens_zero_and_empty_input(gen, prompts):
    out = gen.generate(prompts, SamplingParams(max_new_tokens=0))
    assert all(c.token_ids == [] and c.finish_reason == "length" for c in out)
    assert gen.generate([], SamplingParams()) == []
    with pytest.raises(ValueError, match="at least one token"):
        gen.generate([[]], SamplingParams())


def test_a_groups_shared_prompt_counts_as_prefilled_once(gen, prompts):
    """The compute's FLOPs count the prompt tokens the generator ran (review cl: G x a group's prompt was counted,
    where the prompt pass runs each distinct prompt once); no decode step, no prompt pass."""
    a, b = prompts[0], prompts[1]
    out = gen.generate([a, a, a, b, b], SamplingParams(max_new_tokens=4, temperature=1.0, seed=0))
    assert [c.prefilled_tokens for c in out] == [len(a), 0, 0, len(b), 0]
    assert [c.prefilled_tokens for c in gen.generate([a, b], SamplingParams(max_new_tokens=4))] == [len(a), len(b)]
    assert [c.prefilled_tokens for c in gen.generate([a, a], SamplingParams(max_new_tokens=0))] == [0, 0]


def test_forced_tokens_get_mask_zero_and_logprob_zero(gen, prompts, char_tokenizer):
    phrase = char_tokenizer(" Time is up.</think>", add_special_tokens=False).input_ids
    control = ForcedPhrase(budgets=[3, 5], phrase=phrase, answer_budget=2)
    out = gen.generate(prompts * 4, SamplingParams(max_new_tokens=40, temperature=1.0, seed=2), control)
    interrupted = [c for c in out if c.interrupted]
    assert interrupted, "the model should rarely emit EOS within 3-5 tokens"
    budgets = set()
    for c in interrupted:
        start = c.loss_mask.index(0)
        budgets.add(start)
        end = start + len(phrase)
        assert c.token_ids[start:end] == phrase
        assert c.loss_mask[start:end] == [0] * len(phrase) and c.logprobs[start:end] == [0.0] * len(phrase)
        assert set(c.loss_mask[:start]) == {1} and all(lp < 0 for lp in c.logprobs[:start])
        # After the phrase: the answer budget (2 sampled tokens) unless EOS came first.
        assert c.finish_reason in ("interrupted_length", "interrupted_stop")
        if c.finish_reason == "interrupted_length":
            assert len(c.token_ids) == end + 2 and c.loss_mask[end:] == [1, 1]
        assert "Time is up.</think>" in c.text
    assert budgets <= {3, 5}


def test_length_states_drawn_from_a_seeded_rng(gen, prompts, char_tokenizer):
    phrase = char_tokenizer("</think>", add_special_tokens=False).input_ids
    control = ForcedPhrase(budgets=list(range(1, 30)), phrase=phrase, answer_budget=1)
    params = SamplingParams(max_new_tokens=40, temperature=1.0, seed=9)
    a, b = gen.generate(prompts, params, control), gen.generate(prompts, params, control)
    assert [c.loss_mask for c in a] == [c.loss_mask for c in b]


def _update_at(step, gen, new_state, version):
    """An observe hook that pushes new weights once the first row has emitted `step` tokens
    (inside generate, as the trainer's thread would between two decode steps)."""
    fired = []

    def hook(state):
        if state.emitted == step and not fired:
            fired.append(True)
            gen.update_weights(new_state, version)

    return ForcedPhrase(budgets=[10_000], phrase=[], answer_budget=0, on_observe=hook)


def test_weights_updated_mid_generation_apply_from_the_next_step(random_model, char_tokenizer, prompts):
    from scalerl.models.tiny import build_tiny_model

    other = build_tiny_model(char_tokenizer, _arch(random_model), seed=123)
    model = build_tiny_model(char_tokenizer, _arch(random_model), seed=0)
    gen = HFGenerator(model, char_tokenizer, version=0)
    params = SamplingParams(max_new_tokens=20, temperature=1.0, seed=4)
    control = _update_at(6, gen, other.state_dict(), version=1)
    out = gen.generate(prompts[:1], params, control)[0]
    assert out.versions == [0] * 6 + [1] * (len(out.token_ids) - 6)
    assert gen.version == 1

    # The new weights are really used, on top of the KV cache the old ones built: replay
    # the prefix with the old model, then the rest with the new one on the same cache.
    old = build_tiny_model(char_tokenizer, _arch(random_model), seed=0)
    ids = torch.tensor([out.prompt_ids + out.token_ids])
    p = len(out.prompt_ids)
    cache_arg, _ = forward_kwargs(old)  # "cache" (transformers >= 5.2x) or "past_key_values"
    with torch.no_grad():
        cache = DynamicCache(config=old.config)
        first = old(input_ids=ids[:, : p + 5], use_cache=True, **{cache_arg: cache}).logits
        rest = other(input_ids=ids[:, p + 5 : -1], use_cache=True, **{cache_arg: cache}).logits
    logits = torch.cat([first[:, p - 1 :], rest], dim=1)[0]
    expected = token_logprobs(logits, torch.tensor(out.token_ids), 1.0)
    assert torch.allclose(torch.tensor(out.logprobs), expected, atol=1e-4)
    # ... and they differ from what the old weights would have given from step 6 on.
    stale = token_logprobs(old(input_ids=ids).logits[0, p - 1 : -1], torch.tensor(out.token_ids), 1.0)
    assert torch.allclose(torch.tensor(out.logprobs[:6]), stale[:6], atol=1e-4)
    assert (torch.tensor(out.logprobs[6:]) - stale[6:]).abs().max() > 1e-2


def _arch(model):
    from scalerl.models.tiny import TinyArchitecture

    c = model.config
    return TinyArchitecture(c.hidden_size, c.intermediate_size, c.num_hidden_layers, c.num_attention_heads,
                            c.num_key_value_heads, c.max_position_embeddings)


def test_update_weights_from_another_thread_while_generating(char_tokenizer, prompts, random_model):
    from scalerl.models.tiny import build_tiny_model

    model = build_tiny_model(char_tokenizer, _arch(random_model), seed=0)
    gen = HFGenerator(model, char_tokenizer)
    new = build_tiny_model(char_tokenizer, _arch(random_model), seed=1).state_dict()
    started = threading.Event()

    def hook(state):
        started.set()

    control = ForcedPhrase(budgets=[10_000], phrase=[], answer_budget=0, on_observe=hook)
    result = []
    worker = threading.Thread(
        target=lambda: result.extend(gen.generate(prompts * 8, SamplingParams(max_new_tokens=200, seed=0), control))
    )
    worker.start()
    started.wait(10)
    gen.update_weights(new, 7)  # never blocks on the decode loop
    worker.join(60)
    assert gen.version == 7
    for c in result:
        # One switch at most, from 0 to 7, never back.
        assert c.versions == sorted(c.versions) and set(c.versions) <= {0, 7}
    assert any(7 in c.versions for c in result)
    assert torch.equal(model.model.embed_tokens.weight, new["model.embed_tokens.weight"])


def test_update_weights_when_idle_applies_at_once_and_copies(char_tokenizer, random_model):
    from scalerl.models.tiny import build_tiny_model

    model = build_tiny_model(char_tokenizer, _arch(random_model), seed=0)
    gen = HFGenerator(model, char_tokenizer)
    source = build_tiny_model(char_tokenizer, _arch(random_model), seed=1)
    gen.update_weights(source.state_dict(), 3)
    assert gen.version == 3
    assert torch.equal(model.lm_head.weight, source.lm_head.weight)
    with torch.no_grad():
        source.lm_head.weight.add_(1.0)  # the trainer keeps training its own copy
    assert not torch.equal(model.lm_head.weight, source.lm_head.weight)
    gen.update_weights({}, 4)  # a shared model: only the version moves
    assert gen.version == 4


def test_update_weights_rejects_unknown_names_and_shapes(gen):
    with pytest.raises(KeyError, match="no parameter"):
        gen.update_weights({"nope.weight": torch.zeros(1)}, 1)
    with pytest.raises(ValueError, match="shape"):
        gen.update_weights({"lm_head.weight": torch.zeros(1, 1)}, 1)
    assert gen.version == 0


def test_generation_leaves_the_model_mode_alone(random_model, char_tokenizer, prompts):
    random_model.train()
    try:
        HFGenerator(random_model, char_tokenizer).generate(prompts, SamplingParams(max_new_tokens=2))
        assert random_model.training
    finally:
        random_model.eval()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_logprobs_match_and_updates_apply(char_tokenizer, prompts):
    from scalerl.models.tiny import TinyArchitecture, build_tiny_model

    arch = TinyArchitecture(hidden_size=64, intermediate_size=128, num_hidden_layers=2)
    model = build_tiny_model(char_tokenizer, arch, seed=0).cuda()
    gen = HFGenerator(model, char_tokenizer, seed=0)
    out = gen.generate(prompts * 4, SamplingParams(max_new_tokens=24, temperature=0.8, seed=1))
    batch = pack_completions(out, char_tokenizer.pad_token_id, device="cuda")
    with torch.no_grad():
        recomputed = completion_logprobs(model, batch, 0.8).cpu()
    mask = batch["completion_mask"].bool().cpu()
    generated = torch.zeros_like(recomputed)
    for i, c in enumerate(out):
        generated[i, : len(c.logprobs)] = torch.tensor(c.logprobs)
    assert torch.allclose(generated[mask], recomputed[mask], atol=1e-3)
    other = build_tiny_model(char_tokenizer, arch, seed=1)  # on the CPU: copied to the GPU on update
    gen.update_weights(other.state_dict(), 1)
    assert gen.version == 1 and torch.equal(model.lm_head.weight.cpu(), other.lm_head.weight)


def test_shared_prompt_logprobs_equal_the_full_forward(random_model, char_tokenizer):
    """One prompt pass per group + completions on its expanded KV cache == the whole sequences."""
    import torch

    from scalerl.generate.logprobs import completion_logprobs, pack_completions, shared_prompt_logprobs

    gen = HFGenerator(random_model, char_tokenizer, seed=3)
    prompts = [char_tokenizer(t).input_ids for t in ("12+34=", "5+6=", "123+4=") for _ in range(3)]
    comps = gen.generate(prompts, SamplingParams(max_new_tokens=10, seed=4))
    full = completion_logprobs(random_model, pack_completions(comps, char_tokenizer.pad_token_id), 0.7)
    shared, ids, mask = shared_prompt_logprobs(random_model, comps, 0.7, char_tokenizer.pad_token_id)
    torch.testing.assert_close(shared, full, atol=1e-5, rtol=1e-5)
    g_full = torch.autograd.grad(full.sum(), list(random_model.parameters()), allow_unused=True)
    g_shared = torch.autograd.grad(
        shared_prompt_logprobs(random_model, comps, 0.7, char_tokenizer.pad_token_id)[0].sum(),
        list(random_model.parameters()), allow_unused=True)
    for a, b in zip(g_full, g_shared):
        if a is not None:
            torch.testing.assert_close(b, a, atol=1e-4, rtol=1e-4)


class _Schedule:
    """ScheduledUpdates: start on ``start`` (weights, version), switch to ``later`` at decode step ``at``."""

    def __init__(self, start, later, at):
        self.start, self.later, self.at = start, later, at
        self.asked: list[int] = []

    def weights_at(self, step):
        self.asked.append(step)
        return self.start if step == 0 else (self.later if step == self.at else None)


def test_scheduled_weights_land_at_their_decode_step_whatever_the_generator_held(random_model, char_tokenizer, prompts):
    # Deterministic PipelineRL-k: the schedule, not the arrival time, decides which weights make
    # which token -- and the generator loads the starting weights even if it held others.
    from scalerl.models.tiny import build_tiny_model

    a = {k: v.clone() for k, v in build_tiny_model(char_tokenizer, _arch(random_model), seed=0).state_dict().items()}
    b = {k: v.clone() for k, v in build_tiny_model(char_tokenizer, _arch(random_model), seed=123).state_dict().items()}
    params = SamplingParams(max_new_tokens=20, temperature=1.0, seed=4)

    reference = HFGenerator(build_tiny_model(char_tokenizer, _arch(random_model), seed=0), char_tokenizer, version=0)
    control = _update_at(6, reference, b, version=1)  # the timing-driven path, landing at step 6
    expected = reference.generate(prompts[:1], params, control)[0]

    held = HFGenerator(build_tiny_model(char_tokenizer, _arch(random_model), seed=7), char_tokenizer, version=5)
    schedule = _Schedule((a, 0), (b, 1), at=6)
    out = held.generate(prompts[:1], params, updates=schedule)[0]
    assert out.versions == [0] * 6 + [1] * (len(out.token_ids) - 6) and held.version == 1
    assert out.token_ids == expected.token_ids
    torch.testing.assert_close(torch.tensor(out.logprobs), torch.tensor(expected.logprobs))
    assert schedule.asked == list(range(len(out.token_ids)))  # before the prompt pass and every later token
    # Weights delivered by the timing-driven path between calls change nothing a schedule decides.
    held.update_weights(a, version=9)
    again = held.generate(prompts[:1], params, updates=_Schedule((a, 0), (b, 1), at=6))[0]
    assert again.token_ids == out.token_ids and again.versions == out.versions


def _random_model_of(arch: str, tok, **settings):
    """A random model of ``arch`` (tests/architectures.py) for ``tok``, in eval mode; ``settings``: config fields."""
    config = ARCHITECTURES[arch]()
    config.vocab_size, config.pad_token_id, config.eos_token_id = len(tok), tok.pad_token_id, tok.eos_token_id
    for name, value in settings.items():
        setattr(config, name, value)
    torch.manual_seed(0)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


@pytest.mark.parametrize("arch", sorted(ARCHITECTURES))
def test_logprobs_match_an_unpadded_forward_on_other_architectures(arch, char_tokenizer, prompts):
    """Left padding, position ids and the KV cache are every architecture's own: the generator's
    log-probs equal the teacher-forced recomputation and a plain forward over each row alone."""
    tok = char_tokenizer
    model = _random_model_of(arch, tok)
    out = HFGenerator(model, tok, seed=1).generate(prompts * 2, SamplingParams(max_new_tokens=16, temperature=1.0, seed=5))
    batch = pack_completions(out, tok.pad_token_id)
    with torch.no_grad():
        recomputed = completion_logprobs(model, batch, 1.0)
        for i, c in enumerate(out):
            ids = torch.tensor([list(c.prompt_ids) + list(c.token_ids)])
            alone = model(ids).logits[0, len(c.prompt_ids) - 1 : -1].float().log_softmax(-1)
            alone = alone.gather(-1, torch.tensor(c.token_ids)[:, None])[:, 0]
            torch.testing.assert_close(torch.tensor(c.logprobs), alone, rtol=0, atol=1e-4)
            torch.testing.assert_close(recomputed[i, : len(c.logprobs)], alone, rtol=0, atol=1e-4)
        shared, _, _ = shared_prompt_logprobs(model, out, 1.0, tok.pad_token_id)  # the trainer's default pass
        torch.testing.assert_close(shared, recomputed, rtol=0, atol=1e-4)


@pytest.mark.parametrize("arch", ["mixtral", "qwen3_next"])
def test_a_moe_checkpoint_saved_with_router_logits_on_generates_and_scores(arch, char_tokenizer, prompts):
    """A mixture-of-experts checkpoint whose config says ``output_router_logits: true`` (one saved
    after training with the router's load-balancing loss) makes every forward compute that loss from
    the attention mask, which in a decode step or a pass over a KV cache covers the cached positions
    while the router saw only the new ones: the first decode step raised "The size of tensor a (8)
    must match the size of tensor b (256)" (transformers' own generate does too). No loss here
    uses it (transformers adds it only with labels): the forwards ask for no router logits."""
    tok = char_tokenizer
    model = _random_model_of(arch, tok, output_router_logits=True)
    out = HFGenerator(model, tok, seed=1).generate(prompts * 2, SamplingParams(max_new_tokens=8, temperature=1.0, seed=5))
    batch = pack_completions(out, tok.pad_token_id)
    with torch.no_grad():
        recomputed = completion_logprobs(model, batch, 1.0)
        chunked = completion_logprobs(model, batch, 1.0, logits_budget=4 * len(tok))  # the head a position at a time
        shared, _, _ = shared_prompt_logprobs(model, out, 1.0, tok.pad_token_id)
    for i, c in enumerate(out):
        torch.testing.assert_close(torch.tensor(c.logprobs), recomputed[i, : len(c.logprobs)], rtol=0, atol=1e-4)
    torch.testing.assert_close(chunked, recomputed, rtol=0, atol=1e-5)
    torch.testing.assert_close(shared, recomputed, rtol=0, atol=1e-4)


@pytest.mark.skipif(not hasattr(transformers, "DeepseekV4Config"), reason="transformers without DeepSeek-V4")
def test_deepseek_v4_compressor_state_keeps_its_rows(char_tokenizer, prompts):
    """DeepSeek-V4's cache layers keep compressor buffers per row beyond keys and values, which
    only their reorder_cache selects: rows are not selected (a group's prompt prefilled per row,
    finished rows kept), and generator and trainer agree. (Selecting them failed: 8 rows of
    buffer against 16 of keys.) transformers' compressor also counts left-pad positions in its
    windows, so a padded row's log-probs differ from the same row alone, in the generator and the
    trainer alike: only the unpadded row is compared with its plain forward."""
    from scalerl.generate.kvcache import decode_cache

    tok = char_tokenizer
    config = transformers.DeepseekV4Config(
        hidden_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=4, head_dim=16,
        q_lora_rank=16, qk_rope_head_dim=8, moe_intermediate_size=32, n_routed_experts=4, num_experts_per_tok=2,
        sliding_window=8, layer_types=["heavily_compressed_attention", "compressed_sparse_attention"],
        vocab_size=len(tok), pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    assert not rows_selectable(decode_cache(model))
    out = HFGenerator(model, tok, seed=1).generate(prompts * 2, SamplingParams(max_new_tokens=16, temperature=1.0, seed=5))
    batch = pack_completions(out, tok.pad_token_id)
    with torch.no_grad():
        recomputed = completion_logprobs(model, batch, 1.0)
        for i, c in enumerate(out):
            torch.testing.assert_close(torch.tensor(c.logprobs), recomputed[i, : len(c.logprobs)], rtol=0, atol=1e-4)
        shared, _, _ = shared_prompt_logprobs(model, out, 1.0, tok.pad_token_id)
        torch.testing.assert_close(shared, recomputed, rtol=0, atol=1e-4)
        longest = max(range(len(out)), key=lambda i: len(out[i].prompt_ids))
        c = out[longest]
        ids = torch.tensor([list(c.prompt_ids) + list(c.token_ids)])
        alone = model(ids).logits[0, len(c.prompt_ids) - 1 : -1].float().log_softmax(-1)
        alone = alone.gather(-1, torch.tensor(c.token_ids)[:, None])[:, 0]
        torch.testing.assert_close(torch.tensor(c.logprobs), alone, rtol=0, atol=1e-4)


def test_a_cache_layer_whose_extra_state_only_reorder_cache_knows_is_not_row_selectable():
    from transformers.cache_utils import DynamicLayer

    from scalerl.generate.layout import _selection_covers_reorder

    class Buffered(DynamicLayer):  # per-row state beyond keys and values, reordered for beam search
        def reorder_cache(self, beam_idx):
            super().reorder_cache(beam_idx)

    class BufferedAndSelected(Buffered):
        def batch_select_indices(self, indices):
            super().batch_select_indices(indices)

    assert _selection_covers_reorder(DynamicLayer)
    assert not _selection_covers_reorder(Buffered)
    assert _selection_covers_reorder(BufferedAndSelected)


# ---- decoding a batch a few rows at a time (max_rows) ------------------------------------------

def test_a_batch_cut_into_pieces_is_greedy_decoded_as_a_whole(random_model, char_tokenizer, prompts):
    many = [p for p in prompts for _ in range(3)]  # 12 rows, groups of 3 sharing a prompt
    greedy = SamplingParams(max_new_tokens=12, temperature=0.0)
    whole = HFGenerator(random_model, char_tokenizer).generate(many, greedy)
    cut = HFGenerator(random_model, char_tokenizer, max_rows=5).generate(many, greedy)  # 5 + 5 + 2
    assert [c.token_ids for c in cut] == [c.token_ids for c in whole]
    assert [c.prompt_ids for c in cut] == many
    torch.testing.assert_close(torch.tensor([lp for c in cut for lp in c.logprobs]),
                               torch.tensor([lp for c in whole for lp in c.logprobs]))
    with pytest.raises(ValueError, match="max_rows"):
        HFGenerator(random_model, char_tokenizer, max_rows=0)


def test_pieces_draw_from_one_seeded_stream(random_model, char_tokenizer, prompts):
    same = [prompts[1]] * 6
    params = SamplingParams(max_new_tokens=12, temperature=1.0, seed=3)
    gen = HFGenerator(random_model, char_tokenizer, max_rows=2)
    first, again = gen.generate(same, params), gen.generate(same, params)
    assert [c.token_ids for c in first] == [c.token_ids for c in again]  # the seed decides
    pieces = [tuple(tuple(c.token_ids) for c in first[i: i + 2]) for i in (0, 2, 4)]
    assert len(set(pieces)) == 3  # the seed is not restarted per piece


def test_every_piece_replays_the_weight_schedule(random_model, char_tokenizer, prompts):
    from scalerl.models.tiny import build_tiny_model

    a = {k: v.clone() for k, v in build_tiny_model(char_tokenizer, _arch(random_model), seed=0).state_dict().items()}
    b = {k: v.clone() for k, v in build_tiny_model(char_tokenizer, _arch(random_model), seed=123).state_dict().items()}
    greedy = SamplingParams(max_new_tokens=20, temperature=0.0)
    rows = [prompts[0], prompts[2], prompts[0], prompts[2]]
    # (Held as version 5: a version names its weights, so version 0 would be taken for a.)
    whole = HFGenerator(build_tiny_model(char_tokenizer, _arch(random_model), seed=7), char_tokenizer, version=5)
    want = whole.generate(rows, greedy, updates=_Schedule((a, 0), (b, 1), at=4))
    cut = HFGenerator(build_tiny_model(char_tokenizer, _arch(random_model), seed=7), char_tokenizer, version=5,
                      max_rows=2)
    got = cut.generate(rows, greedy, updates=_Schedule((a, 0), (b, 1), at=4))
    # Each piece starts on the schedule's first weights and switches at its step 4, as the whole did.
    assert [c.versions for c in got] == [c.versions for c in want]
    assert all(c.versions[:4] == [0] * 4 and set(c.versions[4:]) <= {1} for c in got)
    assert [c.token_ids for c in got] == [c.token_ids for c in want]


def test_in_lockstep_a_rank_with_fewer_pieces_runs_the_others_forwards(random_model, char_tokenizer, prompts):
    """Two generators in lockstep (a stand-in for FSDP ranks, whose every forward is a collective):
    5 rows against 2 in pieces of 2 -- the short one decodes stand-ins until the long one is done,
    both call the lockstep the same number of times, and each returns its own rows only."""
    import copy

    barrier = threading.Barrier(2, timeout=60)  # a mismatched call count fails here instead of hanging
    votes: list[bool] = []
    calls = [0, 0]

    def any_rank(rank, here):
        calls[rank] += 1
        votes.append(here)
        barrier.wait()
        answer = any(votes[-2:])
        barrier.wait()
        if rank == 0:
            votes.clear()
        barrier.wait()
        return answer

    shares = {0: [prompts[i % 4] for i in range(5)], 1: prompts[:2]}
    greedy = SamplingParams(max_new_tokens=10, temperature=0.0)
    out: dict[int, list] = {}

    def rank(r):
        gen = HFGenerator(copy.deepcopy(random_model), char_tokenizer, max_rows=2,
                          lockstep=lambda here: any_rank(r, here))
        out[r] = gen.generate(shares[r], greedy)

    threads = [threading.Thread(target=rank, args=(r,)) for r in (0, 1)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert calls[0] == calls[1] > 0
    alone = HFGenerator(random_model, char_tokenizer)
    for r in (0, 1):
        assert [c.token_ids for c in out[r]] == [c.token_ids for c in alone.generate(shares[r], greedy)]
