"""The vLLM generator.

On CPU (no vLLM): its driving logic -- segments sized by the length state, forced interruption,
per-token versions across in-flight weight updates -- against a fake engine with vLLM's
``LLMEngine`` surface (``add_request`` / ``step`` / ``abort_request`` / ``collective_rpc``), checked
against a per-token reference loop. On a GPU with vLLM installed (``-m gpu``): the real engine on
the tiny model saved locally.
"""

from __future__ import annotations

import math
import sys
import threading
import time
import types

import pytest

from scalerl.generate.base import SamplingParams
from scalerl.generate.vllm import VLLMGenerator
from scalerl.rl.length import InterruptionController, TruncationController

EOS = 0
END_THINK = 9
PHRASE = [7, 8, END_THINK]


# ----------------------------------------------------------------------------- a fake engine


class _Params:
    """What the generator passes to vllm.SamplingParams (recorded, not interpreted beyond the fake)."""

    def __init__(self, **kwargs):
        self.__dict__.update(kwargs)


@pytest.fixture()
def fake_vllm(monkeypatch):
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = _Params
    sampling = types.ModuleType("vllm.sampling_params")
    sampling.RequestOutputKind = types.SimpleNamespace(DELTA="delta")
    monkeypatch.setitem(sys.modules, "vllm", vllm)
    monkeypatch.setitem(sys.modules, "vllm.sampling_params", sampling)


class FakeEngine:
    """One token per running request per step, from ``script(row tokens so far, weights) -> token``;
    DELTA outputs with the sampled token's log-prob; stops at stop_token_ids or max_tokens."""

    def __init__(self, script, on_step=None):
        self.script = script
        self.on_step = on_step
        self.weights = 0
        self.requests: dict[str, dict] = {}
        self.log: list[tuple[str, list[int], int]] = []  # (request id, prompt, max_tokens)
        self.steps = 0
        self.params = []

    def add_request(self, request_id, prompt, params):
        self.requests[request_id] = {"ids": list(prompt["prompt_token_ids"]), "params": params, "made": 0}
        self.params.append(params)
        self.log.append((request_id, list(prompt["prompt_token_ids"]), params.max_tokens))

    def abort_request(self, ids):
        for i in ids:
            self.requests.pop(i, None)

    def collective_rpc(self, method, args=()):
        assert method == "scalerl_load_weights"
        self.weights = args[0][0][1]  # the fake "state dict": [("w", weights id)]

    def step(self):
        self.steps += 1
        if self.on_step is not None:
            self.on_step(self)
        outs = []
        for rid, r in list(self.requests.items()):
            token = self.script(r["ids"], self.weights)
            r["ids"].append(token)
            r["made"] += 1
            stop = token in r["params"].stop_token_ids
            done = stop or r["made"] >= r["params"].max_tokens
            reason = "stop" if stop else ("length" if done else None)
            lp = {token: types.SimpleNamespace(logprob=-0.25 - 0.01 * self.weights)}
            outs.append(types.SimpleNamespace(request_id=rid, finished=done,
                                              outputs=[types.SimpleNamespace(token_ids=[token], logprobs=[lp],
                                                                             finish_reason=reason)]))
            if done:
                del self.requests[rid]
        return outs


class Weights:
    """A stand-in tensor: update_weights snapshots it with .detach().to(...)."""

    def __init__(self, n):
        self.n = n

    def detach(self):
        return self

    def to(self, *args, **kwargs):
        return self.n


class FakeTokenizer:
    def batch_decode(self, rows, skip_special_tokens=True):
        return [" ".join(map(str, r)) for r in rows]


def reference(prompt, script, controller, params, seed_state):
    """The per-token loop the Hugging Face generator runs, on the same token stream."""
    state = controller.start(seed_state)
    ids, tokens, mask = list(prompt), [], []
    reason = None
    while reason is None:
        forced = state.forced_token()
        token = forced if forced is not None else script(ids, 0)
        ids.append(token)
        tokens.append(token)
        mask.append(0 if forced is not None else 1)
        state.observe(token)
        if token == EOS and forced is None:
            reason = "stop"
        elif state.finished or len(tokens) >= params.max_new_tokens:
            reason = "length"
    return tokens, mask, (f"interrupted_{reason}" if state.interrupted else reason)


def controller(lo, hi, answer=4, max_new=30):
    return InterruptionController(phrase_ids=PHRASE, end_think_ids=[[END_THINK]], think_budget=(lo, hi),
                                  answer_budget=answer, max_new_tokens=max_new)


# ----------------------------------------------------------------------------- CPU tests (fake engine)


@pytest.mark.parametrize("script_name", ["rambling", "early_end_think", "eos_while_thinking", "eos_in_answer"])
def test_segments_reproduce_the_per_token_loop(fake_vllm, script_name):
    import random

    scripts = {
        "rambling": lambda ids, w: 5,  # never ends thinking: interrupted at the budget
        "early_end_think": lambda ids, w: END_THINK if len(ids) == 4 else 5,  # natural </think>, then the answer budget
        "eos_while_thinking": lambda ids, w: EOS if len(ids) == 5 else 5,
        "eos_in_answer": lambda ids, w: EOS if len(ids) == 2 + 6 + len(PHRASE) + 2 else 5,
    }
    script = scripts[script_name]
    ctl = controller(6, 6)
    params = SamplingParams(max_new_tokens=30, temperature=1.0, seed=3)
    engine = FakeEngine(script)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    out = gen.generate([[1, 2]], params, ctl)[0]
    tokens, mask, reason = reference([1, 2], script, ctl, params, random.Random(3))
    assert out.token_ids == tokens and out.loss_mask == mask and out.finish_reason == reason
    assert [lp for lp, m in zip(out.logprobs, out.loss_mask) if not m] == [0.0] * mask.count(0)
    assert all(lp == -0.25 for lp, m in zip(out.logprobs, out.loss_mask) if m)
    assert not engine.requests  # nothing left running in the engine


def test_an_interrupted_sequence_continues_from_prompt_plus_phrase(fake_vllm):
    engine = FakeEngine(lambda ids, w: 5)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    out = gen.generate([[1, 2]], SamplingParams(max_new_tokens=30, seed=0), controller(6, 6, answer=4))[0]
    assert out.finish_reason == "interrupted_length"
    # Segment 1 asks for exactly the thinking budget; segment 2 starts after the phrase, for the answer budget.
    assert [(prompt, budget) for _, prompt, budget in engine.log] == [([1, 2], 6), ([1, 2] + [5] * 6 + PHRASE, 4)]
    assert out.token_ids == [5] * 6 + PHRASE + [5] * 4
    assert out.loss_mask == [1] * 6 + [0] * 3 + [1] * 4


def test_weights_updated_mid_sequence_are_used_and_versioned(fake_vllm):
    gen = None

    def push_at_step_4(engine):  # another thread (the trainer) pushing weights while the loop runs
        if engine.steps == 4:
            t = threading.Thread(target=gen.update_weights, args=({"w": Weights(1)}, 1))
            t.start()
            t.join()

    engine = FakeEngine(lambda ids, w: 20 + w, on_step=push_at_step_4)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    outs = gen.generate([[1], [2]], SamplingParams(max_new_tokens=10, seed=0), TruncationController(10))
    for out in outs:
        # Steps 1-4 ran on version 0 (the update was queued during step 4), the rest on version 1 ...
        assert out.versions == [0] * 4 + [1] * 6
        # ... and the new weights really produced those tokens.
        assert out.token_ids == [20] * 4 + [21] * 6
    assert gen.version == 1 and gen.latest_version == 1


def test_update_when_idle_applies_at_once(fake_vllm):
    engine = FakeEngine(lambda ids, w: 5)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=-1)
    gen.update_weights({"w": Weights(3)}, 3)
    assert gen.version == 3 and engine.weights == 3


def test_rows_sharing_a_prompt_get_distinct_seeds(fake_vllm):
    engine = FakeEngine(lambda ids, w: EOS)
    VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0).generate([[1], [1], [1]],
                                                                      SamplingParams(max_new_tokens=4, seed=11))
    assert len({params.seed for params in engine.params}) == 3  # else G generations of a prompt would be equal


def test_top_p_below_one_is_refused(fake_vllm):
    from scalerl.errors import ConfigError

    gen = VLLMGenerator(FakeEngine(lambda ids, w: 5), FakeTokenizer(), [EOS])
    with pytest.raises(ConfigError, match="top_p"):
        gen.generate([[1]], SamplingParams(max_new_tokens=4, top_p=0.9))


# ----------------------------------------------------------------------------- GPU tests (real vLLM)

gpu = pytest.mark.gpu


@pytest.fixture(scope="module")
def vllm_tiny(tmp_path_factory):
    """The tiny model saved locally, and a vLLM generator on it (float32, eager: small and exact)."""
    torch = pytest.importorskip("torch")
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    pytest.importorskip("vllm")
    from scalerl.models.loading import load_model

    model, tokenizer = load_model("tiny")
    path = tmp_path_factory.mktemp("tiny-for-vllm")
    model.save_pretrained(path)
    tokenizer.save_pretrained(path)
    gen = VLLMGenerator.build(str(path), tokenizer, seed=0, dtype="float32", fp32_lm_head=True,
                              options={"enforce_eager": True, "gpu_memory_utilization": 0.3, "max_model_len": 512})
    return model, tokenizer, gen


@gpu
def test_vllm_logprobs_follow_the_trainer_convention(vllm_tiny):
    import torch

    from scalerl.generate.logprobs import completion_logprobs, pack_completions
    from scalerl.tasks.arithmetic import ArithmeticTask
    from scalerl.tasks.encoding import encode_prompts

    model, tokenizer, gen = vllm_tiny
    gen.update_weights(model.state_dict(), 0)
    prompts = encode_prompts(tokenizer, [p.prompt for p in ArithmeticTask().train_problems()[:16]])
    for temperature in (1.0, 0.7):
        outs = gen.generate(prompts, SamplingParams(max_new_tokens=40, temperature=temperature, seed=1))
        batch = pack_completions(outs, tokenizer.pad_token_id)
        with torch.no_grad():
            ref = completion_logprobs(model.float(), batch, temperature)
        for i, c in enumerate(outs):
            assert torch.allclose(torch.tensor(c.logprobs), ref[i, : len(c.token_ids)], atol=2e-3), temperature


@gpu
def test_vllm_in_flight_update_switches_versions_mid_sequence(vllm_tiny):
    import copy

    import torch

    model, tokenizer, gen = vllm_tiny
    uniform = copy.deepcopy(model)
    with torch.no_grad():
        uniform.model.norm.weight.zero_()  # every logit 0: each sampled token's log-prob is -log V
    gen.update_weights(model.state_dict(), 10)
    pushed = threading.Event()

    def push_soon():
        while gen.engine.get_num_unfinished_requests() == 0:
            time.sleep(0.001)
        gen.update_weights(uniform.state_dict(), 11)
        pushed.set()

    t = threading.Thread(target=push_soon)
    t.start()
    outs = gen.generate([[1, 2, 3]] * 8, SamplingParams(max_new_tokens=200, temperature=1.0, seed=2),
                        TruncationController(200))
    t.join()
    log_v = math.log(model.config.vocab_size)
    assert pushed.is_set()
    assert any(10 in c.versions and 11 in c.versions for c in outs)
    for c in outs:
        assert c.versions == sorted(c.versions)
        for v, lp in zip(c.versions, c.logprobs):
            if v == 11:
                assert lp == pytest.approx(-log_v, abs=1e-4)


@gpu
def test_vllm_forced_interruption(vllm_tiny):
    from scalerl.rl.recipe import LengthConfig
    from scalerl.rl.length import length_controller

    model, tokenizer, gen = vllm_tiny
    gen.update_weights(model.state_dict(), 0)
    cfg = LengthConfig(mode="interrupt", think_budget=(2, 4), answer_budget=4, max_new_tokens=48)
    ctl = length_controller(cfg, tokenizer)
    outs = gen.generate([[1, 2, 3]] * 8, SamplingParams(max_new_tokens=48, seed=0), ctl)
    forced = [c for c in outs if c.interrupted]
    assert forced
    for c in forced:
        zeros = [i for i, m in enumerate(c.loss_mask) if m == 0]
        assert [c.token_ids[i] for i in zeros] == ctl.phrase_ids and all(c.logprobs[i] == 0.0 for i in zeros)


def test_the_eos_ids_are_read_from_the_files_the_hf_generator_reads(tmp_path):
    """An EOS id that only config.json lists (no generation_config.json) ended the HF generator's
    completions and not the vLLM generator's: both read the generation config, the config and the tokenizer."""
    from types import SimpleNamespace

    from transformers import LlamaConfig

    from scalerl.errors import InputError
    from scalerl.generate.vllm import _eos_ids

    LlamaConfig(vocab_size=16, hidden_size=8, num_hidden_layers=1, num_attention_heads=1, intermediate_size=8,
                eos_token_id=[5, 7]).save_pretrained(tmp_path)
    assert not (tmp_path / "generation_config.json").exists()
    assert _eos_ids(SimpleNamespace(eos_token_id=2), str(tmp_path)) == [2, 5, 7]
    with pytest.raises(InputError, match="the model defines no end-of-sequence token"):
        _eos_ids(SimpleNamespace(eos_token_id=None), str(tmp_path / "nothing"))
