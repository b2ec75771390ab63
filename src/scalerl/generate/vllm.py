"""vLLM generator backend (GPU, ``pip install 'scalerl[vllm]'``): the :class:`~scalerl.generate.base.Generator`
protocol on vLLM's engine, with in-flight weight updates, per-token versions, the fp32 LM head and
the forced interruption.

Imported only when ``backend.generator=vllm`` (a Ray generator actor on a GPU builds it), so that
importing scalerl never needs vLLM. Written against vLLM's public engine API (``EngineArgs``,
``LLMEngine.add_request/step/abort_request/collective_rpc``, ``SamplingParams`` with
``RequestOutputKind.DELTA``, ``worker_extension_cls``); see docs/distributed.md for what was and
was not run.

How each requirement is met:

**Per-token log-probs in our convention.** ``SamplingParams(logprobs=0)`` returns the sampled
token's log-prob. Our convention (:mod:`scalerl.generate.sampling`) is fp32
``log_softmax(logits / T)`` over the full vocabulary. vLLM's default ``logprobs_mode=
"raw_logprobs"`` is taken *before* temperature; ``"processed_logprobs"`` is taken on the logits
the sampler draws from -- after temperature and after top-k/top-p masking (vLLM's
``TopKTopPSampler``). So the engine runs with ``processed_logprobs``, and ``top_p`` must be 1
(no top-k either): then the two conventions agree exactly (both fp32). ``top_p < 1`` is refused
with a clear error rather than silently recording a different quantity. (At T = 1 the modes
coincide anyway.)

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
generation models since vLLM PR #48390), and on releases that ignore it a patch of each
``LogitsProcessor`` in the workers (``scalerl_fp32_head``).

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

from scalerl.errors import ConfigError
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
        module docstring explains; ``options`` override any ``EngineArgs`` field."""
        # One engine step per step() call, in this process: the weights of every step are known.
        os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        try:
            from vllm import EngineArgs, LLMEngine
        except ImportError:
            raise ConfigError("backend.generator=vllm needs vLLM on the generator machines: "
                              "pip install 'scalerl[vllm]'") from None
        kwargs: dict[str, Any] = {
            "model": model_path, "dtype": dtype, "seed": seed,
            "logprobs_mode": "processed_logprobs",
            "worker_extension_cls": "scalerl.generate.vllm_worker.WorkerExtension",
            "enable_prefix_caching": False,
        }
        if fp32_lm_head:
            kwargs["hf_overrides"] = {"head_dtype": "float32"}
        if "async_scheduling" in EngineArgs.__dataclass_fields__:
            kwargs["async_scheduling"] = False  # outputs of step N must come back from step N
        kwargs.update(options or {})
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
                    else:  # the segment's budget ran out before the state decided: continue
                        self._force_and_continue(s, params, live)

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
        budget = params.max_new_tokens - len(s.tokens)
        if s.state is not None:
            free_run = getattr(s.state, "free_run", None)
            budget = min(budget, free_run() if free_run is not None else 1)
        if budget <= 0:
            s.reason = "length"
            self._finished(s, params, eos=False)
            return
        from vllm import SamplingParams as VSamplingParams
        from vllm.sampling_params import RequestOutputKind

        vparams = VSamplingParams(
            n=1, temperature=params.temperature, top_p=1.0, top_k=-1 if _top_k_minus_one() else 0,
            max_tokens=budget, logprobs=0, seed=_row_seed(params.seed, s.row, s.segment),
            stop_token_ids=sorted(self.eos), ignore_eos=False, detokenize=False,
            output_kind=RequestOutputKind.DELTA,
        )
        s.segment += 1
        request_id = f"scalerl-{next(self._ids)}"
        self.engine.add_request(request_id, {"prompt_token_ids": s.prompt + s.tokens}, vparams)
        live[request_id] = s


def _top_k_minus_one() -> bool:
    """vLLM spells 'no top-k' as -1 (older releases) or 0 (newer); use whichever it accepts."""
    from vllm import SamplingParams as VSamplingParams

    try:
        VSamplingParams(top_k=-1)
        return True
    except Exception:  # noqa: BLE001 - a validation error of whatever type the release raises
        return False


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
