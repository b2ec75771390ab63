"""The vLLM generator.

On CPU (no vLLM): its driving logic -- segments sized by the length state, forced interruption,
per-token versions across in-flight weight updates -- against a fake engine with vLLM's
``LLMEngine`` surface (``add_request`` / ``step`` / ``abort_request`` / ``collective_rpc``), checked
against a per-token reference loop. On a GPU with vLLM installed (``-m gpu``): the real engine on
the tiny model saved locally.
"""

from __future__ import annotations

import collections.abc
import dataclasses
import enum
import math
import os
import random
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
#
# The fakes follow the real vLLM source read for each layout (docs/distributed.md lists the
# releases): "0.11" is vLLM 0.11.0, "0.34" vLLM 0.34.0. Where the two differ the fake follows the
# layout it is built for, so the generator is checked against both.

LAYOUTS = ("0.11", "0.34")


class RequestOutputKind(enum.Enum):
    """vllm.sampling_params.RequestOutputKind (same in both layouts)."""

    CUMULATIVE = 0
    DELTA = 1
    FINAL_ONLY = 2


@dataclasses.dataclass(kw_only=True)
class FakeSamplingParams:
    """vllm.SamplingParams: the fields the generator passes, with the real names, defaults and
    checks (a msgspec struct there: an unknown keyword is a TypeError)."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int = 0
    min_p: float = 0.0
    seed: int | None = None
    stop_token_ids: list | None = None
    ignore_eos: bool = False
    max_tokens: int | None = 16
    logprobs: int | None = None
    detokenize: bool = True
    output_kind: RequestOutputKind = RequestOutputKind.CUMULATIVE

    def __post_init__(self):
        if not 0.0 < self.top_p <= 1.0:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}.")
        if self.top_k < -1:
            raise ValueError(f"top_k must be 0 (disable), or at least 1, got {self.top_k}.")
        if not 0.0 <= self.min_p <= 1.0:
            raise ValueError(f"min_p must be in [0, 1], got {self.min_p}.")
        if self.max_tokens is not None and self.max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {self.max_tokens}.")
        if self.logprobs is not None and self.logprobs != -1 and self.logprobs < 0:
            raise ValueError(f"logprobs must be non-negative or -1, got {self.logprobs}.")


@dataclasses.dataclass
class Logprob:
    logprob: float
    rank: int | None = None
    decoded_token: str | None = None


class FlatLogprobs(collections.abc.Sequence):
    """vllm.logprobs.FlatLogprobs (0.11.2 on, with flat_logprobs): flat lists, a position read as
    a fresh {token: Logprob} dict."""

    def __init__(self, positions):
        self.token_ids, self.logprobs, self.starts, self.ends = [], [], [], []
        for position in positions:
            self.starts.append(len(self.logprobs))
            for token, lp in position.items():
                self.token_ids.append(token)
                self.logprobs.append(lp.logprob)
            self.ends.append(len(self.logprobs))

    def __len__(self):
        return len(self.starts)

    def __getitem__(self, i):
        return {self.token_ids[k]: Logprob(self.logprobs[k]) for k in range(self.starts[i], self.ends[i])}


def _tokens_input(prompt_token_ids):
    """vllm.inputs.tokens_input (0.34) / token_inputs (0.11): the already-tokenized engine input."""
    return {"type": "token", "prompt_token_ids": prompt_token_ids}


@pytest.fixture(params=LAYOUTS)
def layout(request):
    return request.param


@pytest.fixture()
def fake_vllm(monkeypatch, layout):
    vllm = types.ModuleType("vllm")
    vllm.SamplingParams = FakeSamplingParams
    sampling = types.ModuleType("vllm.sampling_params")
    sampling.RequestOutputKind = RequestOutputKind
    inputs = types.ModuleType("vllm.inputs")
    setattr(inputs, "tokens_input" if layout == "0.34" else "token_inputs", _tokens_input)
    vllm.inputs = inputs
    for name, module in (("vllm", vllm), ("vllm.sampling_params", sampling), ("vllm.inputs", inputs)):
        monkeypatch.setitem(sys.modules, name, module)
    return layout


class FakeEngine:
    """vllm.LLMEngine as the generator drives it, one token per running request per step, from
    ``script(row tokens so far, weights) -> token``; with the real engine's rules:

    * ``add_request(request_id, prompt, params)``: ``prompt`` an engine input ``{"type": "token",
      ...}`` or a raw ``{"prompt_token_ids": ...}`` (0.34: accepted with a deprecation warning,
      counted in ``raw_prompts``); a prompt longer than ``max_model_len`` (0.34: or as long) is a
      ValueError; the request is known inside by the id plus a random suffix (0.14 on), its outputs
      and ``abort_request`` by the caller's id;
    * outputs: DELTA or CUMULATIVE as ``output_kind`` asks, ``logprobs`` only when asked (a list of
      dicts, or ``FlatLogprobs`` with ``flat``); finish "stop" at a stop token, "length" at
      ``max_tokens`` or when prompt + output reach ``max_model_len``; ``finish_with`` forces
      another finish reason (0.34's "error", ...) on the first step.
    """

    def __init__(self, script, on_step=None, *, layout="0.34", max_model_len=512, flat=False, finish_with=None):
        self.script = script
        self.on_step = on_step
        self.layout = layout
        self.model_config = types.SimpleNamespace(max_model_len=max_model_len)
        self.flat = flat
        self.finish_with = finish_with
        self.weights = 0
        self.requests: dict[str, dict] = {}
        self.log: list[tuple[str, list[int], int]] = []  # (request id, prompt, max_tokens)
        self.steps = 0
        self.params = []
        self.raw_prompts = 0
        self.rpc: list[str] = []

    def add_request(self, request_id, prompt, params, arrival_time=None, lora_request=None,
                    tokenization_kwargs=None, trace_headers=None, priority=0):
        assert isinstance(request_id, str) and isinstance(params, FakeSamplingParams)
        if prompt.get("type") != "token":
            if self.layout == "0.34":
                self.raw_prompts += 1  # "Passing raw prompts to InputProcessor is deprecated ..."
        ids = list(prompt["prompt_token_ids"])
        limit = self.model_config.max_model_len
        if len(ids) > limit or (self.layout == "0.34" and len(ids) == limit):
            raise ValueError(f"The decoder prompt (length {len(ids)}) is longer than the maximum model length")
        internal = f"{request_id}-{random.getrandbits(32):08x}" if self.layout == "0.34" else request_id
        self.requests[internal] = {"external": request_id, "ids": ids, "params": params, "out": [], "lps": []}
        self.params.append(params)
        self.log.append((request_id, list(ids), params.max_tokens))

    def abort_request(self, request_ids):
        for internal, r in list(self.requests.items()):
            if r["external"] in request_ids:
                del self.requests[internal]

    def collective_rpc(self, method, timeout=None, args=(), kwargs=None):
        self.rpc.append(method)
        if method == "scalerl_load_weights":
            self.weights = args[0][0][1]  # the fake "state dict": [("w", weights id)]
        return [None]

    def get_num_unfinished_requests(self):
        return len(self.requests)

    def step(self):
        self.steps += 1
        if self.on_step is not None:
            self.on_step(self)
        outs = []
        for internal, r in list(self.requests.items()):
            p = r["params"]
            token = self.script(r["ids"], self.weights)
            r["ids"].append(token)
            r["out"].append(token)
            r["lps"].append({token: Logprob(-0.25 - 0.01 * self.weights, rank=1)})
            stop = token in (p.stop_token_ids or ())
            length = len(r["out"]) >= p.max_tokens or len(r["ids"]) >= self.model_config.max_model_len
            reason = "stop" if stop else ("length" if length else None)
            if self.finish_with is not None:
                reason, self.finish_with = self.finish_with, None
            delta = p.output_kind == RequestOutputKind.DELTA
            token_ids = [token] if delta else list(r["out"])
            lps = ([r["lps"][-1]] if delta else list(r["lps"])) if p.logprobs is not None else None
            if lps is not None and self.flat:
                lps = FlatLogprobs(lps)
            outs.append(types.SimpleNamespace(
                request_id=r["external"], finished=reason is not None,
                outputs=[types.SimpleNamespace(index=0, text="", token_ids=token_ids, cumulative_logprob=None,
                                               logprobs=lps, finish_reason=reason)]))
            if reason is not None:
                del self.requests[internal]
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


@pytest.mark.parametrize("flat", [False, True], ids=["dict_logprobs", "flat_logprobs"])
@pytest.mark.parametrize("script_name", ["rambling", "early_end_think", "eos_while_thinking", "eos_in_answer"])
def test_segments_reproduce_the_per_token_loop(fake_vllm, script_name, flat):
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
    engine = FakeEngine(script, layout=fake_vllm, flat=flat)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    out = gen.generate([[1, 2]], params, ctl)[0]
    tokens, mask, reason = reference([1, 2], script, ctl, params, random.Random(3))
    assert out.token_ids == tokens and out.loss_mask == mask and out.finish_reason == reason
    assert [lp for lp, m in zip(out.logprobs, out.loss_mask) if not m] == [0.0] * mask.count(0)
    assert all(lp == -0.25 for lp, m in zip(out.logprobs, out.loss_mask) if m)
    assert not engine.requests  # nothing left running in the engine


def test_an_interrupted_sequence_continues_from_prompt_plus_phrase(fake_vllm):
    engine = FakeEngine(lambda ids, w: 5, layout=fake_vllm)
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

    engine = FakeEngine(lambda ids, w: 20 + w, on_step=push_at_step_4, layout=fake_vllm)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    outs = gen.generate([[1], [2]], SamplingParams(max_new_tokens=10, seed=0), TruncationController(10))
    for out in outs:
        # Steps 1-4 ran on version 0 (the update was queued during step 4), the rest on version 1 ...
        assert out.versions == [0] * 4 + [1] * 6
        # ... and the new weights really produced those tokens.
        assert out.token_ids == [20] * 4 + [21] * 6
    assert gen.version == 1 and gen.latest_version == 1


def test_update_when_idle_applies_at_once(fake_vllm):
    engine = FakeEngine(lambda ids, w: 5, layout=fake_vllm)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=-1)
    gen.update_weights({"w": Weights(3)}, 3)
    assert gen.version == 3 and engine.weights == 3


def test_rows_sharing_a_prompt_get_distinct_seeds(fake_vllm):
    engine = FakeEngine(lambda ids, w: EOS, layout=fake_vllm)
    VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0).generate([[1], [1], [1]],
                                                                      SamplingParams(max_new_tokens=4, seed=11))
    assert len({params.seed for params in engine.params}) == 3  # else G generations of a prompt would be equal


def test_top_p_below_one_is_refused(fake_vllm):
    from scalerl.errors import ConfigError

    gen = VLLMGenerator(FakeEngine(lambda ids, w: 5, layout=fake_vllm), FakeTokenizer(), [EOS])
    with pytest.raises(ConfigError, match="top_p"):
        gen.generate([[1]], SamplingParams(max_new_tokens=4, top_p=0.9))


def test_requests_use_the_engine_input_not_the_deprecated_raw_prompt(fake_vllm):
    """vLLM >= 0.17 logs a raw {"prompt_token_ids": ...} as deprecated ("will be removed"); the
    tokenized engine input ({"type": "token", ...}, from vllm.inputs) is what it takes as is."""
    engine = FakeEngine(lambda ids, w: 5, layout=fake_vllm)
    VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0).generate(
        [[1, 2]], SamplingParams(max_new_tokens=8, seed=0), controller(3, 3, answer=2, max_new=8))
    assert len(engine.log) == 2 and engine.raw_prompts == 0
    params = engine.params[0]
    assert (params.logprobs, params.top_p, params.top_k, params.min_p) == (0, 1.0, 0, 0.0)
    assert params.output_kind == RequestOutputKind.DELTA and params.detokenize is False


@pytest.mark.parametrize("max_new", [30, 7])
def test_a_sequence_that_fills_the_context_ends_with_length(fake_vllm, max_new):
    """vLLM ends a request "length" when prompt + output reach max_model_len; that is not a segment
    budget running out, and a continuation from there is a prompt vLLM refuses (ValueError)."""
    engine = FakeEngine(lambda ids, w: 5, layout=fake_vllm, max_model_len=12)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    out = gen.generate([[1, 2]], SamplingParams(max_new_tokens=max_new, seed=0), controller(4, 4, answer=30, max_new=max_new))[0]
    n = min(max_new, 10)
    assert out.finish_reason == "interrupted_length" and len(out.token_ids) == n
    assert out.token_ids == ([5] * 4 + PHRASE + [5] * 30)[:n]
    assert all(len(prompt) + budget <= 12 for _, prompt, budget in engine.log)  # never past the context
    assert not engine.requests


def test_a_prompt_that_fills_the_context_is_refused_naming_the_setting(fake_vllm):
    """A prompt at or past max_model_len (set lower than the model's positions in generator_options)
    was vLLM's own ValueError from add_request, naming no setting: refused before any request."""
    from scalerl.errors import ConfigError

    engine = FakeEngine(lambda ids, w: 5, layout=fake_vllm, max_model_len=12)
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    with pytest.raises(ConfigError, match="a prompt of 12 tokens .* max_model_len 12: raise backend.generator_options"):
        gen.generate([[1, 2], list(range(1, 13))], SamplingParams(max_new_tokens=4, seed=0))
    assert not engine.log
    assert len(gen.generate([list(range(1, 12))], SamplingParams(max_new_tokens=4, seed=0))[0].token_ids) == 1


def test_an_unknown_finish_reason_fails_the_call(fake_vllm):
    """vLLM 0.34 can end a request "error" or "repetition" (and any release "abort"): neither a stop
    nor a budget, so not continued as one (that could loop); the other requests are aborted."""
    from scalerl.errors import ScaleRLError

    engine = FakeEngine(lambda ids, w: 5, layout=fake_vllm, finish_with="error")
    gen = VLLMGenerator(engine, FakeTokenizer(), [EOS], version=0)
    with pytest.raises(ScaleRLError, match="finish_reason='error'"):
        gen.generate([[1], [2]], SamplingParams(max_new_tokens=8, seed=0))
    assert not engine.requests


# ----------------------------------------------------------------------------- build (fake EngineArgs)


def _engine_args_class(layout):
    """vllm.EngineArgs: a dataclass; the fields scalerl or a test sets, as each layout has them
    (stream_interval is new in 0.11.2; an unknown field is a TypeError)."""
    fields = [("model", str, None), ("dtype", str, "auto"), ("seed", int, 0), ("logprobs_mode", str, "raw_logprobs"),
              ("worker_extension_cls", str, ""), ("enable_prefix_caching", object, None),
              ("hf_overrides", object, None), ("async_scheduling", object, None), ("enforce_eager", bool, False),
              ("gpu_memory_utilization", float, 0.9), ("max_model_len", object, None),
              ("quantization", object, None), ("speculative_config", object, None)]
    if layout == "0.34":
        fields.append(("stream_interval", int, 1))
    return dataclasses.make_dataclass("EngineArgs", [(n, t, dataclasses.field(default=d)) for n, t, d in fields])


@pytest.fixture()
def fake_build(fake_vllm, monkeypatch):
    import scalerl.generate.vllm as module

    built = []
    engine_args = _engine_args_class(fake_vllm)

    class LLMEngine:
        @classmethod
        def from_engine_args(cls, args, usage_context=None, stat_loggers=None, enable_multiprocessing=False):
            built.append((args, os.environ.get("VLLM_ENABLE_V1_MULTIPROCESSING")))
            return FakeEngine(lambda ids, w: 5, layout=fake_vllm, max_model_len=args.max_model_len or 512)

    sys.modules["vllm"].EngineArgs = engine_args
    sys.modules["vllm"].LLMEngine = LLMEngine
    monkeypatch.setattr(module, "_eos_ids", lambda tokenizer, path: [EOS])
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "1")  # left in a user's environment
    return built


def test_build_pins_what_the_log_probs_and_versions_depend_on(fake_build, fake_vllm):
    gen = VLLMGenerator.build("/m", FakeTokenizer(), seed=3, dtype="bfloat16", fp32_lm_head=True,
                              options={"enforce_eager": True, "hf_overrides": {"rope_theta": 5.0}, "max_model_len": 64})
    (args, multiprocessing), = fake_build
    assert multiprocessing == "0"  # the engine core steps in this process, one step per step()
    assert args.logprobs_mode == "processed_logprobs" and args.async_scheduling is False
    assert args.worker_extension_cls == "scalerl.generate.vllm_worker.WorkerExtension"
    assert args.hf_overrides == {"rope_theta": 5.0, "head_dtype": "float32"}  # merged, not replaced
    assert (args.model, args.dtype, args.seed, args.enforce_eager, args.enable_prefix_caching) == ("/m", "bfloat16", 3, True, False)
    if fake_vllm == "0.34":
        assert args.stream_interval == 1
    assert gen.engine.rpc == ["scalerl_fp32_head"] and gen.max_model_len == 64


@pytest.mark.parametrize("option", [{"logprobs_mode": "raw_logprobs"}, {"async_scheduling": True},
                                    {"worker_extension_cls": "x.Y"}])
def test_build_refuses_options_that_change_a_pinned_field(fake_build, option):
    from scalerl.errors import ConfigError

    with pytest.raises(ConfigError, match=next(iter(option))):
        VLLMGenerator.build("/m", FakeTokenizer(), options=option)
    assert not fake_build
    VLLMGenerator.build("/m", FakeTokenizer(), options={"logprobs_mode": "processed_logprobs"})  # the same value is fine


@pytest.mark.parametrize("option", [{"quantization": "fp8"}, {"speculative_config": {"method": "ngram"}}])
def test_build_refuses_a_quantized_or_speculative_engine(fake_build, option):
    """A quantized engine would take the trainer's unquantized weights as they are, and speculative decoding's
    accepted tokens carry log-probs never checked against the trainer's: refused before an engine is built."""
    from scalerl.errors import ConfigError

    with pytest.raises(ConfigError, match=f"may not set {next(iter(option))}"):
        VLLMGenerator.build("/m", FakeTokenizer(), options=option)
    assert not fake_build
    VLLMGenerator.build("/m", FakeTokenizer(), options={"quantization": None})  # vLLM's own default is fine


# ----------------------------------------------------------------------------- the worker extension (fake vLLM layers)


@pytest.fixture()
def fake_layers(monkeypatch):
    """vllm.model_executor.layers' LogitsProcessor (its _get_logits called with skip_gather from
    0.29 on), UnquantizedEmbeddingMethod and UnquantizedLinearMethod."""
    torch = pytest.importorskip("torch")

    class UnquantizedEmbeddingMethod:
        pass

    class UnquantizedLinearMethod:
        pass

    class LogitsProcessor(torch.nn.Module):
        def __init__(self, vocab, head_dtype=None):
            super().__init__()
            self.org_vocab_size = vocab
            self.gathered = 0
            if head_dtype is not None:
                self.head_dtype = head_dtype

        def _gather_logits(self, logits):
            self.gathered += 1
            return logits

    modules = {}
    for name, attrs in (("vllm.model_executor.layers.logits_processor", {"LogitsProcessor": LogitsProcessor}),
                        ("vllm.model_executor.layers.vocab_parallel_embedding",
                         {"UnquantizedEmbeddingMethod": UnquantizedEmbeddingMethod}),
                        ("vllm.model_executor.layers.linear", {"UnquantizedLinearMethod": UnquantizedLinearMethod})):
        modules[name] = types.ModuleType(name)
        modules[name].__dict__.update(attrs)
        monkeypatch.setitem(sys.modules, name, modules[name])
    return types.SimpleNamespace(LogitsProcessor=LogitsProcessor, UnquantizedEmbeddingMethod=UnquantizedEmbeddingMethod,
                                 UnquantizedLinearMethod=UnquantizedLinearMethod)


class _CUDAGraphWrapper:
    """vLLM 0.11-0.33's CUDAGraphWrapper: not a module; attributes read through to the model."""

    def __init__(self, runnable):
        self.runnable = runnable

    def __getattr__(self, key):
        if hasattr(self.runnable, key):
            return getattr(self.runnable, key)
        raise AttributeError(key)

    def unwrap(self):
        return self.runnable


class _ModelRunner:
    """A model runner whose ``model`` is wrapped and ``get_model()`` the model (as in every release checked)."""

    def __init__(self, model):
        self.model = _CUDAGraphWrapper(model)

    def get_model(self):
        return self.model.unwrap()


def test_fp32_head_patch_takes_every_signature_and_skips_native_heads(fake_layers):
    import torch

    from scalerl.generate.vllm_worker import WorkerExtension

    vocab, hidden = 6, 4
    model = torch.nn.Module()
    model.old = fake_layers.LogitsProcessor(vocab)  # 0.11-0.23: head_dtype ignored, no attribute
    model.native = fake_layers.LogitsProcessor(vocab, head_dtype=torch.float32)  # >= 0.26 with the override
    worker = types.SimpleNamespace(model_runner=_ModelRunner(model))
    assert WorkerExtension.scalerl_fp32_head(worker) == 1
    assert "_get_logits" in vars(model.old) and "_get_logits" not in vars(model.native)

    torch.manual_seed(0)
    weight = torch.randn(vocab + 2, hidden).to(torch.bfloat16)  # vocabulary padding: 2 rows
    lm_head = types.SimpleNamespace(weight=weight, quant_method=fake_layers.UnquantizedEmbeddingMethod())
    h = torch.randn(3, hidden).to(torch.bfloat16)
    expected = h.float() @ weight.float().T
    logits = model.old._get_logits(h, lm_head, None)  # 0.11-0.26's call
    assert logits.dtype == torch.float32 and torch.equal(logits, expected[:, :vocab]) and model.old.gathered == 1
    shard = model.old._get_logits(h, lm_head, None, True)  # >= 0.29: skip_gather, passed positionally
    assert torch.equal(shard, expected) and model.old.gathered == 1
    lm_head.quant_method = fake_layers.UnquantizedLinearMethod()  # a quant config that leaves the head out
    assert torch.equal(model.old._get_logits(h, lm_head, None, skip_gather=False), expected[:, :vocab])
    lm_head.quant_method = object()
    with pytest.raises(ValueError, match="unquantized"):
        model.old._get_logits(h, lm_head, None)


def test_weights_load_into_the_unwrapped_model():
    torch = pytest.importorskip("torch")
    from scalerl.generate.vllm_worker import WorkerExtension

    loaded = []

    class Model(torch.nn.Module):
        def load_weights(self, weights):
            loaded.extend(name for name, _ in weights)
            return {name for name in loaded}

    worker = types.SimpleNamespace(model_runner=_ModelRunner(Model()), device=torch.device("cpu"))
    assert WorkerExtension.scalerl_load_weights(worker, [("a", torch.zeros(1)), ("b", torch.ones(2))]) == 2
    assert loaded == ["a", "b"]


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
