"""vLLM generator backend (GPU, ``pip install 'scalerl[vllm]'``): the :class:`~scalerl.generate.base.Generator`
protocol on vLLM's engine, with in-flight weight updates, per-token versions, the fp32 LM head and
the forced interruption.

Imported only when ``backend.generator=vllm`` (a Ray generator actor on a GPU builds it), so that
importing scalerl never needs vLLM. Written against vLLM's public engine API (``EngineArgs``,
``LLMEngine.add_request/step/abort_request/collective_rpc``, ``SamplingParams`` with
``RequestOutputKind.DELTA``, ``worker_extension_cls``). Every call, argument and return shape used
here and in :mod:`scalerl.generate.vllm_worker` was read against the source of vLLM 0.11.0,
0.11.2, 0.12.0, 0.14.1, 0.17.1, 0.20.2, 0.23.0, 0.26.0, 0.29.0, 0.31.0, 0.33.0 and 0.34.0; see
docs/distributed.md for what was and was not run.

How each requirement is met:

**Per-token log-probs in our convention.** ``SamplingParams(logprobs=0)`` returns the sampled
token's log-prob (``CompletionOutput.logprobs[i][token].logprob``: a list of ``{token: Logprob}``
dicts, or -- with ``flat_logprobs``, 0.11.2 on, off by default -- a ``FlatLogprobs`` indexed the
same way). Our convention (:mod:`scalerl.generate.sampling`) is fp32 ``log_softmax(logits / T)``
over the full vocabulary. vLLM's default ``logprobs_mode="raw_logprobs"`` is ``log_softmax`` of
the model's logits *before* temperature (and before penalties, logit bias, bad words).
``"processed_logprobs"`` is taken on the logits the sampler draws from: upcast to fp32, logits
processors and penalties applied (none is active with our parameters), divided by T, then min-p /
top-k / top-p masking. In 0.11-0.33's ``Sampler`` that is ``TopKTopPSampler``'s ``log_softmax``;
in the model runner v2 (``VLLM_USE_V2_MODEL_RUNNER=1`` from 0.12, vLLM's own choice where it can
in later 0.2x-0.33, the only runner in 0.34) the fp32 ``log_softmax`` of ``apply_sampling_params``'
result, which at T = 1 with no filter is the raw logits themselves. So the engine runs with
``processed_logprobs`` (pinned, :data:`PINNED_ENGINE_ARGS`), and ``top_p`` must be 1, ``top_k`` 0
and ``min_p`` 0: then the two conventions agree exactly in every release checked. ``top_p < 1`` is
refused with a clear error rather than silently recording a different quantity.

**In-flight weight updates, with exact per-token versions.** The engine core runs in this
process (``VLLM_ENABLE_V1_MULTIPROCESSING=0``) with synchronous scheduling, so one
``engine.step()`` is one forward of the model and the weights that computed a step's tokens are
known exactly. ``update_weights`` (any thread) queues new weights; the loop applies them
between two steps -- via ``collective_rpc("scalerl_load_weights")`` into the workers' models
(:mod:`scalerl.generate.vllm_worker`) -- and running sequences continue on their KV cache. Each
token records the version in force for the step that sampled it. Prefix caching is off by
default: a cached prompt prefix computed by older weights would otherwise enter new sequences
unrecorded (turn it on with ``backend.generator_options`` if the speed matters more).

**FP32 LM head.** ``hf_overrides={"head_dtype": "float32"}`` (vLLM's own option, honoured for
generation models by 0.26; 0.11-0.23 warn and keep the model dtype), and on releases that ignore it
a patch of each ``LogitsProcessor`` in the workers (``scalerl_fp32_head``).

**Forced interruption.** vLLM cannot call back per token, so each sequence runs in *segments*:
a request gets ``max_tokens`` = the most tokens its length state allows before it may force a
token or finish (:meth:`~scalerl.rl.length.InterruptionState.free_run`); the tokens that come
back are replayed through the state one by one (exactly as the Hugging Face loop drives it);
when the state asks for forced tokens, any tokens vLLM produced past that point are dropped,
the phrase is appended (log-prob 0, loss mask 0, the current version), and a continuation
request carries on from prompt + everything so far. The continuation re-reads the earlier
tokens with the current weights (no KV reuse across segments); the recorded log-probs and
versions remain those of the weights that sampled each token, which is what the importance
ratio needs.
"""

from __future__ import annotations

import itertools
import os
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from scalerl.errors import ConfigError, ScaleRLError
from scalerl.generate.base import Completion, InFlightUpdates, LengthController, SamplingParams
from scalerl.generate.text import completion_texts


@dataclass
class _Sequence:
    """One completion being built across segments."""

    row: int
    prompt: list[int]
    state: Any
    tokens: list[int] = field(default_factory=list)
    logprobs: list[float] = field(default_factory=list)
    mask: list[int] = field(default_factory=list)
    versions: list[int] = field(default_factory=list)
    segment: int = 0
    reason: str | None = None  # set when finished

    def emit(self, token: int, logprob: float, mask: int, version: int) -> None:
        self.tokens.append(token)
        self.logprobs.append(logprob)
        self.mask.append(mask)
        self.versions.append(version)
        if self.state is not None:
            self.state.observe(token)


#: ``EngineArgs`` fields the generator sets and ``backend.generator_options`` may not change (each
#: applied where the installed vLLM has the field): ``logprobs_mode`` -- the sampled token's
#: log-prob of the logits it was drawn from, i.e. after temperature (vLLM's default,
#: ``raw_logprobs``, is before it); ``worker_extension_cls`` -- the weight loading and the fp32
#: head; ``async_scheduling`` -- off, so step N returns step N's tokens (on by default in newer
#: releases); ``stream_interval`` -- 1, so a DELTA output carries this step's tokens only (more
#: would be labelled with the weights of the last step, and a forced token would come late).
PINNED_ENGINE_ARGS: dict[str, Any] = {
    "logprobs_mode": "processed_logprobs",
    "worker_extension_cls": "scalerl.generate.vllm_worker.WorkerExtension",
    "async_scheduling": False,
    "stream_interval": 1,
}


#: ``EngineArgs`` fields ``backend.generator_options`` may not set at all, and why: each would make the
#: generator's tokens or log-probs something the trainer does not score, or its weight updates wrong.
REFUSED_ENGINE_ARGS: dict[str, str] = {
    "quantization": "the trainer's weights are loaded into the engine as they are (model.load_weights), which is "
                    "right only for an unquantized engine, and a quantized policy's log-probs are not the trained one's",
    "speculative_config": "tokens a draft model proposes are accepted by rejection sampling whose log-probs were not "
                          "checked against the trainer's",
}


def _row_seed(seed: int | None, row: int, segment: int) -> int | None:
    """Distinct seeds per row (G rows share a prompt) and per segment, reproducible from the call's seed."""
    if seed is None:
        return None
    return (seed * 1_000_003 + row * 7919 + segment * 104_729) & 0x7FFFFFFF


class VLLMGenerator(InFlightUpdates):
    """Sampling with vLLM's engine (see the module docstring). One ``generate`` call at a time."""

    def __init__(self, engine: Any, tokenizer: Any, eos_ids: Sequence[int], *, seed: int = 0, version: int = -1) -> None:
        """Drive an already built engine (:meth:`build` makes one); ``version``: of the weights it holds."""
        self.engine = engine
        # Prompt + completion may not exceed it: a segment asks for no more, and a sequence that fills
        # it ends ("length") instead of continuing with a prompt vLLM refuses.
        self.max_model_len = int(engine.model_config.max_model_len)
        self.tokenizer = tokenizer
        self.eos = set(eos_ids)
        self.version = version
        self._py_rng = random.Random(seed)
        self._ids = itertools.count()
        self._busy = threading.Lock()  # held by a generate call, or by an update applied while idle
        self._pending_lock = threading.Lock()
        self._pending: tuple[str, Any, int] | None = None  # (kind, payload, version)
        self._applied = threading.Condition()

    @classmethod
    def build(cls, model_path: str, tokenizer: Any, *, seed: int = 0, dtype: str = "auto", fp32_lm_head: bool = True,
              options: Mapping[str, Any] | None = None) -> "VLLMGenerator":
        """An engine for ``model_path`` (a directory or hub id readable on this machine) set up as the
        module docstring explains; ``options`` override any ``EngineArgs`` field but those in
        :data:`PINNED_ENGINE_ARGS`, which the recorded log-probs and versions depend on."""
        # One engine step per step() call, in this process: the weights of every step are known. Set,
        # not defaulted: with the engine core in a background process (vLLM's default, and what a
        # VLLM_ENABLE_V1_MULTIPROCESSING=1 left in the environment asks for) it steps on its own, and
        # neither the per-token versions nor an update "between two steps" would hold.
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"
        try:
            from vllm import EngineArgs, LLMEngine
        except ImportError:
            raise ConfigError("backend.generator=vllm needs vLLM on the generator machines: "
                              "pip install 'scalerl[vllm]'") from None
        fields = EngineArgs.__dataclass_fields__
        options = dict(options or {})
        pinned = {name: value for name, value in PINNED_ENGINE_ARGS.items() if name in fields}
        changed = sorted(name for name in pinned if name in options and options[name] != pinned[name])
        if changed:
            raise ConfigError("backend.generator_options may not change " + ", ".join(
                f"{name} (the vllm generator needs {pinned[name]!r})" for name in changed))
        refused = sorted(name for name in REFUSED_ENGINE_ARGS if options.get(name) not in (None, {}, ""))
        if refused:
            raise ConfigError("backend.generator_options may not set " + "; ".join(
                f"{name}: {REFUSED_ENGINE_ARGS[name]}" for name in refused))
        kwargs: dict[str, Any] = {"model": model_path, "dtype": dtype, "seed": seed, "enable_prefix_caching": False}
        kwargs.update(options)
        kwargs.update(pinned)
        if fp32_lm_head:
            # Merged into the user's overrides, not replacing them: the patch that stands in for this
            # option (older releases) matches one _get_logits signature, and releases that honour
            # the option need it to skip the patch.
            overrides = kwargs.get("hf_overrides") or {}
            if not isinstance(overrides, Mapping):
                raise ConfigError("backend.generator_options.hf_overrides must be a mapping with recipe.fp32_lm_head "
                                  "(the fp32 head is set there as head_dtype)")
            kwargs["hf_overrides"] = {**overrides, "head_dtype": "float32"}
        engine = LLMEngine.from_engine_args(EngineArgs(**kwargs))
        if fp32_lm_head:
            engine.collective_rpc("scalerl_fp32_head")
        return cls(engine, tokenizer, _eos_ids(tokenizer, model_path), seed=seed)

    # ---- weights ------------------------------------------------------------------------------
    @property
    def latest_version(self) -> int:
        with self._pending_lock:
            return self._pending[2] if self._pending is not None else self.version

    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        """Queue a state dict (CPU tensors, Hugging Face names); applied between two engine steps."""
        snapshot = [(name, t.detach().to("cpu", copy=True)) for name, t in state_dict.items()]
        with self._pending_lock:
            self._pending = ("tensors", snapshot, version)
        self._apply_if_idle()

    def init_weight_broadcast(self, master_address: str, master_port: int, rank: int, world_size: int) -> None:
        """Join the trainer's NCCL group (the Ray backend's ``nccl`` weight sync) as ``rank``."""
        self.engine.collective_rpc("scalerl_init_broadcast", args=(master_address, master_port, rank, world_size))

    def receive_weight_broadcast(self, names_dtypes_shapes: list, version: int) -> None:
        """Receive one broadcast of every tensor, between two engine steps; returns once loaded
        (the trainer's broadcasts complete when every generator has posted its receives)."""
        with self._pending_lock:
            self._pending = ("broadcast", names_dtypes_shapes, version)
        self._apply_if_idle()
        with self._applied:
            self._applied.wait_for(lambda: self.version >= version)

    def _apply_pending(self) -> None:
        """Load queued weights into the engine. Call only while holding ``_busy``."""
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        kind, payload, version = pending
        if kind == "tensors":
            self.engine.collective_rpc("scalerl_load_weights", args=(payload,))
        else:
            self.engine.collective_rpc("scalerl_receive_broadcast", args=(payload,))
        with self._applied:
            self.version = version
            self._applied.notify_all()

    # ---- sampling -----------------------------------------------------------------------------
    def generate(self, prompts: Sequence[Sequence[int]], params: SamplingParams,
                 length_control: LengthController | None = None) -> list[Completion]:
        if params.top_p != 1.0:
            raise ConfigError("the vllm generator records log-probs after top-p masking, which differ from the "
                              "trainer's convention (scalerl.generate.sampling); use sampling.top_p=1")
        if not prompts:
            return []
        longest = max(len(p) for p in prompts)
        if longest >= self.max_model_len:  # (vLLM's own ValueError named no setting to change)
            raise ConfigError(f"a prompt of {longest} tokens leaves no room for a completion in vLLM's max_model_len "
                              f"{self.max_model_len}: raise backend.generator_options.max_model_len (at most the "
                              "model's positions) or shorten the prompts")
        py_rng = self._py_rng if params.seed is None else random.Random(params.seed)
        seqs = [_Sequence(i, list(p), length_control.start(py_rng) if length_control is not None else None)
                for i, p in enumerate(prompts)]
        with self._busy:
            self._apply_pending()
            self._run(seqs, params)
        self._apply_if_idle()
        texts = completion_texts(self.tokenizer, [s.tokens for s in seqs])
        return [Completion(prompt_ids=s.prompt, token_ids=s.tokens, logprobs=s.logprobs, loss_mask=s.mask,
                           versions=s.versions, finish_reason=s.reason or "length", text=t)
                for s, t in zip(seqs, texts)]

    def _run(self, seqs: list[_Sequence], params: SamplingParams) -> None:
        live: dict[str, _Sequence] = {}
        for s in seqs:
            self._force_and_continue(s, params, live)
        while live:
            self._apply_pending()  # in-flight update: between two engine steps, KV cache kept
            version = self.version
            for out in self.engine.step():
                s = live.get(out.request_id)
                if s is None:
                    continue  # aborted at a forced token, or another caller's request
                o = out.outputs[0]
                for j, token in enumerate(o.token_ids):
                    lp = o.logprobs[j][token].logprob if o.logprobs else 0.0
                    s.emit(token, float(lp), 1, version)
                    if self._finished(s, params, eos=token in self.eos):
                        break
                    if s.state is not None and s.state.forced_token() is not None:
                        break
                if s.reason is not None or (s.state is not None and s.state.forced_token() is not None):
                    if not out.finished:
                        self.engine.abort_request([out.request_id])  # tokens past this point are not ours
                    del live[out.request_id]
                    self._force_and_continue(s, params, live)
                elif out.finished:
                    del live[out.request_id]
                    if o.finish_reason == "stop":  # EOS / a stop token the state did not see as one
                        s.reason = "stop"
                    elif o.finish_reason == "length":  # the segment's budget (or the context) ran out
                        self._force_and_continue(s, params, live)
                    else:  # "abort", and newer releases' "error" / "repetition": not ours to continue
                        if live:
                            self.engine.abort_request(list(live))
                        raise ScaleRLError(f"vLLM ended a completion with finish_reason={o.finish_reason!r} "
                                           f"after {len(s.tokens)} tokens; the batch cannot be completed")

    def _finished(self, s: _Sequence, params: SamplingParams, *, eos: bool) -> bool:
        if eos:
            s.reason = "stop"
        elif (s.state is not None and s.state.finished) or len(s.tokens) >= params.max_new_tokens:
            s.reason = "length"
        if s.reason is not None and s.state is not None and s.state.interrupted:
            s.reason = f"interrupted_{s.reason}"
        return s.reason is not None

    def _force_and_continue(self, s: _Sequence, params: SamplingParams, live: dict[str, _Sequence]) -> None:
        """Emit the tokens the length state forces, then submit the sequence's next segment."""
        while s.reason is None and s.state is not None and (forced := s.state.forced_token()) is not None:
            s.emit(forced, 0.0, 0, self.version)
            self._finished(s, params, eos=False)
        if s.reason is not None:
            return
        budget = min(params.max_new_tokens - len(s.tokens), self.max_model_len - len(s.prompt) - len(s.tokens))
        if s.state is not None:
            free_run = getattr(s.state, "free_run", None)
            budget = min(budget, free_run() if free_run is not None else 1)
        if budget <= 0:
            s.reason = "length"
            self._finished(s, params, eos=False)
            return
        from vllm import SamplingParams as VSamplingParams
        from vllm.sampling_params import RequestOutputKind

        # top_k=0 and min_p=0 (the defaults) disable both filters in every release >= 0.11; with
        # top_p=1 the processed log-probs are exactly log_softmax(logits / T).
        vparams = VSamplingParams(
            n=1, temperature=params.temperature, top_p=1.0, top_k=0, min_p=0.0,
            max_tokens=budget, logprobs=0, seed=_row_seed(params.seed, s.row, s.segment),
            stop_token_ids=sorted(self.eos), ignore_eos=False, detokenize=False,
            output_kind=RequestOutputKind.DELTA,
        )
        s.segment += 1
        request_id = f"scalerl-{next(self._ids)}"
        self.engine.add_request(request_id, _token_prompt(s.prompt + s.tokens), vparams)
        live[request_id] = s


#: Constructors of vLLM's already-tokenized engine input ``{"type": "token", "prompt_token_ids":
#: ...}`` in ``vllm.inputs``, newest name first (``token_inputs`` in 0.11-0.17, ``tokens_input`` by
#: 0.20). Releases >= 0.17 take such a dict as is; a raw ``{"prompt_token_ids": ...}`` goes through
#: the renderer, a path they log as deprecated ("will be removed"). Releases before 0.17 read the
#: dict as a ``TokensPrompt`` (its ``type`` key unused).
TOKEN_PROMPT_BUILDERS = ("tokens_input", "token_inputs")


def _token_prompt(token_ids: list[int]) -> Any:
    import vllm.inputs

    for name in TOKEN_PROMPT_BUILDERS:
        build = getattr(vllm.inputs, name, None)
        if build is not None:
            return build(token_ids)
    return {"type": "token", "prompt_token_ids": token_ids}


def _eos_ids(tokenizer: Any, model_path: str) -> list[int]:
    """The ids that end a completion, from the files the HF generator reads them from (its model's
    generation config and config, and the tokenizer): a ``config.json`` that alone lists an EOS id
    was honoured by the HF generator and not by this one, whose completions ran on past it."""
    from transformers import AutoConfig, GenerationConfig

    from scalerl.generate.layout import eos_ids_of

    sources: list[Any] = [tokenizer]
    for load in (GenerationConfig.from_pretrained, AutoConfig.from_pretrained):
        try:
            sources.append(load(model_path))
        except Exception:  # noqa: BLE001 - no such file (no generation_config.json): the others decide
            pass
    return eos_ids_of(*sources)
