"""Hugging Face generator backend: a batched KV-cache sampling loop that accepts new weights mid-call.

Why not ``model.generate``: the trainer needs, per token, the generator's own fp32 log-prob
(for the importance ratio), the policy version that produced it (PipelineRL-k swaps weights
*between two decode steps* and keeps the KV cache), and tokens *forced* by the length
controller (the interruption phrase, loss mask 0). The loop below does exactly that:

1. left-pad the prompts; position ids count real tokens only, so a row's positions do not
   depend on its padding (:mod:`scalerl.generate.layout`, which the trainer's recomputation in
   :mod:`scalerl.generate.logprobs` shares);
2. prefill once with ``logits_to_keep=1``; then one forward of one token per step on the cache;
3. per step: sample (temperature / top-p), override with forced tokens, record, stop rows on
   EOS / budget / ``max_new_tokens``, apply queued weights -- or, given a schedule
   (``updates``), the weights scheduled for the next step --, drop finished rows from the batch
   (and the cache) once enough have finished.

A call with more rows than ``max_rows`` is decoded ``max_rows`` rows at a time (one RNG stream
through the pieces, each replaying the weight schedule from its start): the KV cache of every
row is held until the batch ends, and on a GPU that, not the weights, is what runs out.

Log-probs follow :mod:`scalerl.generate.sampling` (fp32, after temperature, no top-p).

    from scalerl.generate.hf import HFGenerator
    gen = HFGenerator(model, tokenizer, seed=0)
    completions = gen.generate(prompt_ids, SamplingParams(max_new_tokens=64, temperature=1.0))
"""

from __future__ import annotations

import random
import sys
import threading
from typing import Any, Callable, Mapping, Sequence

import torch

from scalerl.generate.attention import use_decode_attention
from scalerl.generate.base import (Completion, GenerationCancelled, InFlightUpdates, LengthController, SamplingParams,
                                   ScheduledUpdates)
from scalerl.generate.kvcache import decode_cache
from scalerl.generate.layout import (attends, eos_ids, forward_kwargs, left_pad, no_router_logits, pad_id_of, position_ids,
                                     rows_selectable)
from scalerl.generate.sampling import sample_next
from scalerl.generate.text import completion_texts
from scalerl.models.onednn_linear import use_onednn_linear


def _sharded(model: Any) -> bool:
    """Whether ``model``'s parameters are FSDP shards (DTensors). Looked up in ``sys.modules``, not
    imported: a DTensor exists only where its module was imported, and a generator should not pay
    that import (0.8 s measured) in a process that has none."""
    dtensor = sys.modules.get("torch.distributed.tensor")
    return dtensor is not None and any(isinstance(p, dtensor.DTensor) for p in model.parameters())


class HFGenerator(InFlightUpdates):
    """Batched sampling with a KV cache on a Hugging Face causal LM (implements ``Generator``).

    ``update_weights`` may be called from any thread at any time: the new weights are copied at
    once (the caller may keep training its own tensors) and applied by the decode loop before
    its next step, or immediately when no ``generate`` call is running. Concurrent ``generate``
    calls are serialised.
    """

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        *,
        version: int = 0,
        seed: int = 0,
        compact_fraction: float = 0.25,
        autocast_dtype: torch.dtype | None = None,
        lockstep: Callable[[bool], bool] | None = None,
        max_rows: int | None = None,
    ) -> None:
        """``compact_fraction``: drop finished rows from the batch and the KV cache once at least
        this share of the rows still in it have finished (1.0 never drops them; see the benchmark).
        ``autocast_dtype``: run the forward passes under ``torch.autocast`` in this dtype (bf16 /
        fp16 compute on a model that holds fp32 master weights: the trainer's own, shared).

        An ``sdpa`` model on a CPU is switched to :data:`scalerl.generate.attention.NAME`: SDPA
        everywhere except single-query no-grad steps (the decode loop), so a trainer sharing the
        model computes its passes exactly as before.

        ``lockstep``: for a model whose forward is a collective (FSDP shards: every rank runs every
        forward). Called once before the prompt pass and after every decode step with whether
        this generator still has rows to decode; returns whether any rank has. While one has,
        every rank steps on (its finished rows idle on padding), so all run the same forwards.

        ``max_rows``: decode at most this many rows at once (their KV cache); a larger call is cut
        into consecutive pieces decoded one after the other. None: every row at once."""
        if max_rows is not None and max_rows < 1:
            raise ValueError(f"HFGenerator: max_rows must be >= 1 or None, got {max_rows}")
        self.model = model
        self.tokenizer = tokenizer
        self.version = version
        self.compact_fraction = compact_fraction
        self.autocast_dtype = autocast_dtype
        self.lockstep = lockstep
        self.max_rows = max_rows
        # No inference mode on FSDP shards: the all-gather buffers a forward fills are reused by
        # the training passes, and an inference tensor cannot be written outside inference mode.
        self._grad_off = torch.no_grad if _sharded(model) else torch.inference_mode
        self.device = next(model.parameters()).device
        self.pad_id = pad_id_of(model, tokenizer)
        self.eos = torch.tensor(eos_ids(model, tokenizer), device=self.device)
        self._cache_arg, self._keep_arg = forward_kwargs(model)
        self._fixed_kwargs = no_router_logits(model)
        # CPU decode steps: batched-matmul attention instead of SDPA's per-head loop (attention.py).
        self.decode_attention = use_decode_attention(model)
        # AMD CPUs with AVX-512: the linear layers on oneDNN, which runs them ~2x MKL's rate there
        # (models/onednn_linear.py); shards keep torch's path (their parameters are gathered per forward).
        self.decode_linear = not _sharded(model) and use_onednn_linear(model)
        self._torch_rng = torch.Generator(device=self.device).manual_seed(seed)
        self._py_rng = random.Random(seed)
        self._busy = threading.Lock()  # held for a whole generate call
        self._pending_lock = threading.Lock()
        self._pending: tuple[dict[str, torch.Tensor], int] | None = None
        self._cancelled = threading.Event()

    def cancel(self) -> None:
        """Stop the generate call in progress at its next decode step -- it raises
        :class:`~scalerl.generate.base.GenerationCancelled` -- and every later call at once. For a
        generator being closed: a stop must not wait for a long generation (minutes on a real
        model) to run to its end. Not for lockstep generators (every rank must run every forward)."""
        self._cancelled.set()

    def _check_cancelled(self) -> None:
        if self._cancelled.is_set():
            raise GenerationCancelled("the generator was cancelled (its pool is closing)")

    # ---- weights -----------------------------------------------------------------------------
    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        """Queue new weights (all or some of the model's state-dict entries) as policy ``version``.

        An empty mapping only sets the version (a generator sharing the trainer's model object).
        Names and shapes are checked here, so a mismatch raises in the caller's thread.
        """
        snapshot: dict[str, torch.Tensor] = {}
        targets = self._targets()
        with torch.no_grad():
            for name, value in state_dict.items():
                target = targets.get(name)
                if target is None:
                    raise KeyError(f"update_weights: the generator's model has no parameter or buffer {name!r}")
                if tuple(value.shape) != tuple(target.shape):
                    raise ValueError(
                        f"update_weights: {name!r} has shape {tuple(value.shape)}, expected {tuple(target.shape)}"
                    )
                snapshot[name] = value.detach().to(device=target.device, dtype=target.dtype, copy=True)
        with self._pending_lock:
            if self._pending is not None:  # an unapplied partial update: the newer entries win
                snapshot = {**self._pending[0], **snapshot}
            self._pending = (snapshot, version)
        self._apply_if_idle()

    @property
    def latest_version(self) -> int:
        """The version of the newest weights received (applied or still queued)."""
        with self._pending_lock:
            return self._pending[1] if self._pending is not None else self.version

    def _targets(self) -> dict[str, torch.Tensor]:
        # Looked up on every update rather than once: a module swapped after construction (an
        # FP32 LM head, say) must receive the weights, not its discarded predecessor.
        return self.model.state_dict(keep_vars=True)  # name -> live tensor (tied names alias)

    def _apply_pending(self) -> None:
        """Copy queued weights into the model. Call only while holding ``_busy``."""
        with self._pending_lock:
            pending, self._pending = self._pending, None
        if pending is None:
            return
        self._load(*pending)

    def _load(self, tensors: Mapping[str, torch.Tensor], version: int) -> None:
        targets = self._targets()
        with torch.inference_mode(False), torch.no_grad():
            for name, value in tensors.items():
                targets[name].copy_(value)
        self.version = version

    def _scheduled(self, updates: ScheduledUpdates | None, step: int) -> None:
        """Load the weights ``updates`` schedules for decode step ``step`` (deterministic mode)."""
        if updates is None:
            return
        weights = updates.weights_at(step)
        if weights is not None and weights[1] != self.version:  # a version names its weights
            self._load(*weights)

    # ---- sampling ----------------------------------------------------------------------------
    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        length_control: LengthController | None = None,
        *,
        updates: ScheduledUpdates | None = None,
    ) -> list[Completion]:
        """Sample completions of ``prompts``. ``updates``: load new weights at the decode steps it
        schedules (deterministic PipelineRL-k) instead of whenever :meth:`update_weights` delivers them."""
        if params.max_new_tokens < 0 or not 0.0 < params.top_p <= 1.0:
            raise ValueError(f"HFGenerator.generate: need max_new_tokens >= 0 and 0 < top_p <= 1, got {params}")
        if not prompts:
            return []
        if any(len(p) == 0 for p in prompts):
            raise ValueError("HFGenerator.generate: every prompt needs at least one token")
        self._check_cancelled()
        with self._busy:
            self._apply_pending()
            was_training = self.model.training
            self.model.eval()
            try:
                with self._grad_off():
                    completions = self._generate_pieces(prompts, params, length_control, updates)
            finally:
                self.model.train(was_training)
        self._apply_if_idle()
        return completions

    def _generate_pieces(self, prompts: Sequence[Sequence[int]], params: SamplingParams,
                         length_control: LengthController | None, updates: ScheduledUpdates | None) -> list[Completion]:
        """All rows at once, or ``max_rows`` at a time through one RNG stream (a seed drawn once per
        call: pieces never repeat each other's samples)."""
        if params.seed is None:
            rngs = (self._torch_rng, self._py_rng)
        else:
            rngs = (torch.Generator(device=self.device).manual_seed(params.seed), random.Random(params.seed))
        size = self.max_rows
        if size is None:
            return self._generate(prompts, params, length_control, updates, rngs)
        pieces = [prompts[i: i + size] for i in range(0, len(prompts), size)]
        if self.lockstep is None:
            return [c for piece in pieces for c in self._generate(piece, params, length_control, updates, rngs)]
        # In lockstep every rank runs every forward: while any rank has a piece left, one with none
        # decodes a stand-in (its first prompt again) whose completion it drops.
        out: list[Completion] = []
        i = 0
        while self.lockstep(i < len(pieces)):
            done = self._generate(pieces[i] if i < len(pieces) else prompts[:1], params, length_control, updates, rngs)
            if i < len(pieces):
                out.extend(done)
            i += 1
        return out

    def _forward(self, ids: torch.Tensor, mask: torch.Tensor | None, positions: torch.Tensor, cache: Any) -> torch.Tensor:
        kwargs = {self._cache_arg: cache, "use_cache": True, **self._fixed_kwargs}
        if self._keep_arg:
            kwargs["logits_to_keep"] = 1
        # cache_enabled=False: see Precision.autocast (torch's cast cache is shared by all threads).
        with torch.autocast(self.device.type, dtype=self.autocast_dtype, enabled=self.autocast_dtype is not None,
                            cache_enabled=False):
            out = self.model(input_ids=ids, attention_mask=mask, position_ids=positions, **kwargs)
        return out.logits[:, -1, :]

    def _prefill(self, prompts, ids, mask, positions, cache) -> tuple[torch.Tensor, list[bool]]:
        """The prompt pass. A group's G rows share one prompt: run each distinct prompt once and
        expand its KV cache and last logits to its rows (same numbers, 1/G of the prefill) --
        where the cache's rows can be selected (not a recurrent layer's: see rows_selectable).
        ``(last logits, whether each row's prompt was run)``."""
        keys: dict[tuple[int, ...], int] = {}
        inverse = [keys.setdefault(tuple(p), len(keys)) for p in prompts]
        if len(keys) == len(prompts) or not rows_selectable(cache):
            return self._forward(ids, mask, positions, cache), [True] * len(prompts)
        firsts = [inverse.index(j) for j in range(len(keys))]
        first = torch.tensor(firsts, device=ids.device)
        logits = self._forward(ids[first], mask[first], positions[first], cache)
        index = torch.tensor(inverse, device=ids.device)
        cache.batch_select_indices(index)
        run = set(firsts)
        return logits[index], [i in run for i in range(len(prompts))]

    @staticmethod
    def _force(states, row_list, live, tokens, logprobs, forced, rows, t) -> None:
        """Replace sampled tokens by the length controller's forced ones (log-prob 0, mask 0)."""
        live_list = live.tolist()
        overrides = [
            (b, f) for b, i in enumerate(row_list) if live_list[b] and (f := states[i].forced_token()) is not None
        ]
        if overrides:
            where = torch.tensor([b for b, _ in overrides], device=tokens.device)
            tokens[where] = torch.tensor([f for _, f in overrides], device=tokens.device)
            logprobs[where] = 0.0
            forced[rows[where], t] = True

    @staticmethod
    def _observe(states, row_list, live, tokens, stop) -> torch.Tensor:
        """Feed the emitted tokens to the length states; rows whose budget ran out."""
        live_list, token_list, stop_list = live.tolist(), tokens.tolist(), stop.tolist()
        done = [False] * len(row_list)
        for b, i in enumerate(row_list):
            if live_list[b]:
                states[i].observe(token_list[b])
                done[b] = not stop_list[b] and states[i].finished
        return torch.tensor(done, dtype=torch.bool, device=tokens.device)

    def _any_live(self, live: torch.Tensor) -> bool:
        """Whether to run another forward: a row of this batch (or, in lockstep, of any rank's) decodes."""
        here = bool(live.any())
        return self.lockstep(here) if self.lockstep is not None else here

    def _generate(
        self, prompts: Sequence[Sequence[int]], params: SamplingParams, length_control: LengthController | None,
        updates: ScheduledUpdates | None, rngs: tuple[torch.Generator, random.Random],
    ) -> list[Completion]:
        n, dev, max_new = len(prompts), self.device, params.max_new_tokens
        torch_rng, py_rng = rngs
        states = [length_control.start(py_rng) for _ in range(n)] if length_control is not None else None

        ids, mask = left_pad(prompts, self.pad_id, extra=max_new)  # the mask grows by slicing, not concatenation
        width = ids.shape[1]
        ids, mask = ids.to(dev), mask.to(dev)
        positions = position_ids(mask[:, :width])

        out_tokens = torch.full((n, max_new), self.pad_id, dtype=torch.long, device=dev)
        out_logprobs = torch.zeros((n, max_new), dtype=torch.float32, device=dev)
        forced = torch.zeros((n, max_new), dtype=torch.bool, device=dev)
        lengths = torch.zeros(n, dtype=torch.long, device=dev)
        stopped = torch.zeros(n, dtype=torch.bool, device=dev)  # ended on EOS (else: a budget)
        step_versions: list[int] = []

        rows = torch.arange(n, device=dev)  # original index of each row still in the batch
        row_list = list(range(n))
        live = torch.ones(n, dtype=torch.bool, device=dev)  # per batch row: not finished yet
        if states is not None:
            live = torch.tensor([not s.finished for s in states], device=dev)
        cache = decode_cache(self.model)  # appends in place: no per-step concatenation
        selectable = rows_selectable(cache)  # else finished rows stay in the batch, idle on padding
        attention = attends(cache)  # else (Mamba) decode steps take no attention mask
        decoding = max_new > 0 and self._any_live(live)
        prefilled = [False] * n  # (no decode step, no prompt pass)
        if decoding:
            self._scheduled(updates, 0)
            logits, prefilled = self._prefill(prompts, ids, mask[:, :width], positions, cache)
        next_pos = positions[:, -1] + 1

        for t in range(max_new if decoding else 0):
            self._check_cancelled()
            step_versions.append(self.version)  # the weights that computed `logits`
            tokens, logprobs = sample_next(logits, params.temperature, params.top_p, torch_rng)
            if states is not None:
                self._force(states, row_list, live, tokens, logprobs, forced, rows, t)
            # Rows finished but not yet dropped from the batch write nothing.
            live_rows = rows[live]
            out_tokens[live_rows, t] = tokens[live]
            out_logprobs[live_rows, t] = logprobs[live]
            lengths[live_rows] = t + 1
            stop = torch.isin(tokens, self.eos) & live
            stopped[rows[stop]] = True
            ended = stop
            if states is not None:
                ended = stop | self._observe(states, row_list, live, tokens, stop)
            live &= ~ended
            if t + 1 == max_new or not self._any_live(live):
                break

            # In-flight weight update: between two decode steps, cache kept -- at the step the
            # schedule says (deterministic), or whenever new weights arrived (timing-driven).
            if updates is not None:
                self._scheduled(updates, t + 1)
            else:
                self._apply_pending()
            finished_share = 1.0 - live.sum().item() / live.numel()
            # (All finished happens only in lockstep, while another rank decodes: keep the rows.)
            if 0 < finished_share < 1 and finished_share >= self.compact_fraction and selectable:
                keep = live.nonzero().squeeze(-1)
                cache.batch_select_indices(keep)
                rows, mask, next_pos, tokens = rows[keep], mask[keep], next_pos[keep], tokens[keep]
                row_list = rows.tolist()
                live = torch.ones(len(row_list), dtype=torch.bool, device=dev)
            else:
                tokens = tokens.masked_fill(~live, self.pad_id)  # finished rows idle on padding
            mask[:, width + t] = 1
            step_mask = mask[:, : width + t + 1] if attention else None
            logits = self._forward(tokens[:, None], step_mask, next_pos[:, None], cache)
            next_pos = next_pos + 1

        lengths_list = lengths.tolist()
        reasons = ["stop" if s else "length" for s in stopped.tolist()]
        if states is not None:
            reasons = [f"interrupted_{r}" if s.interrupted else r for r, s in zip(reasons, states)]
        token_rows = out_tokens.tolist()
        logprob_rows = out_logprobs.tolist()
        forced_rows = forced.tolist()
        token_ids = [token_rows[i][: lengths_list[i]] for i in range(n)]
        texts = completion_texts(self.tokenizer, token_ids)
        return [
            Completion(
                prompt_ids=list(prompts[i]),
                token_ids=token_ids[i],
                logprobs=logprob_rows[i][: lengths_list[i]],
                loss_mask=[0 if f else 1 for f in forced_rows[i][: lengths_list[i]]],
                versions=step_versions[: lengths_list[i]],
                finish_reason=reasons[i],
                text=texts[i],
                prefilled_tokens=len(prompts[i]) if prefilled[i] else 0,
            )
            for i in range(n)
        ]
