"""The generator interface every backend (Hugging Face, vLLM) implements.

A generator turns prompts (token ids) into :class:`Completion` objects that carry what the
trainer needs for an exact importance ratio: the generator's own per-token log-probs (fp32),
the policy version that produced each token (PipelineRL-k swaps weights mid-sequence), and
a loss mask (0 for tokens the generator was *forced* to emit, e.g. the interruption phrase).

Length control (ScaleRL's forced interruption, plain truncation) is a per-sequence state
machine the generator drives token by token; see :class:`LengthController`.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable


#: The least sampling temperature above 0: vLLM treats temperatures under this as greedy (its ``_SAMPLING_EPS``),
#: and sampling at them is greedy in all but name until, near 1e-38, ``logits / T`` overflows float32 (a NaN then
#: blamed on the weights -- review da; the reason corrected in review db).
MIN_TEMPERATURE = 1e-5

#: Why a temperature in (0, MIN_TEMPERATURE) is refused, as the messages say it.
BELOW_MIN_TEMPERATURE = "sampling is greedy in all but name (vLLM's threshold), and near 1e-38 logits / T overflow"


@dataclass
class SamplingParams:
    """How to sample one batch."""

    max_new_tokens: int = 64
    """Hard cap on completion tokens (forced tokens included)."""
    temperature: float = 1.0
    """Softmax temperature; 0 means greedy."""
    top_p: float = 1.0
    """Nucleus sampling mass; 1.0 disables it."""
    seed: int | None = None
    """Seed for this call's sampling (None: continue the generator's own RNG stream)."""


@dataclass
class Completion:
    """One generated completion and everything the trainer needs about it."""

    prompt_ids: list[int]
    token_ids: list[int]
    """Completion tokens (sampled and forced), in order, EOS included when emitted."""
    logprobs: list[float]
    """Generator log-prob of each completion token under the sampling policy (fp32); 0.0 for forced tokens."""
    loss_mask: list[int]
    """1 where the policy sampled the token, 0 where it was forced (not trained on)."""
    versions: list[int]
    """Policy version (trainer step count) of the weights that produced each token."""
    finish_reason: str
    """'stop' (EOS), 'length' (a token budget ran out), or 'interrupted_stop' / 'interrupted_length'
    when the thinking budget forced the interruption phrase first."""
    text: str = ""
    """Decoded completion (special tokens removed)."""
    meta: dict[str, Any] = field(default_factory=dict)
    """Free slot for the caller (problem id, group index, ...)."""
    prefilled_tokens: int | None = None
    """Prompt tokens the generator ran its prompt pass over for this completion (the compute's FLOPs): a group's
    shared prompt, prefilled once, counts on one of its rows and 0 on the others. None: not reported -- the whole
    prompt is counted, as a generator that prefills every sample's prompt (vLLM without prefix caching) spends."""

    def __post_init__(self) -> None:
        n = len(self.token_ids)
        if not (len(self.logprobs) == len(self.loss_mask) == len(self.versions) == n):
            raise ValueError(
                f"Completion fields disagree in length: tokens={n}, logprobs={len(self.logprobs)}, "
                f"loss_mask={len(self.loss_mask)}, versions={len(self.versions)}"
            )

    @property
    def interrupted(self) -> bool:
        return self.finish_reason.startswith("interrupted")


@runtime_checkable
class LengthState(Protocol):
    """Length control of one sequence, driven by the generator token by token.

    Per decode step the generator calls :meth:`forced_token`; if it returns a token id the
    generator emits that token (log-prob 0.0, loss mask 0) instead of sampling; otherwise it
    samples. Either way it then calls :meth:`observe` with the emitted token. When
    :attr:`finished` turns true the sequence gets no more tokens.

    Optionally a state offers ``free_run() -> int``: the most tokens that may be sampled in a
    row before it can force a token or finish. An engine that samples many tokens per request
    (vLLM) uses it to size each request, then replays the tokens through :meth:`observe` and
    cuts where the state decides; without it such an engine goes one token per request.
    """

    def forced_token(self) -> int | None: ...

    def observe(self, token_id: int) -> None: ...

    @property
    def finished(self) -> bool: ...

    @property
    def interrupted(self) -> bool: ...


@runtime_checkable
class LengthController(Protocol):
    """Makes one :class:`LengthState` per sequence (e.g. draws its thinking budget)."""

    draws_budgets: bool
    """Whether each sequence draws a budget of its own (``rng``): two greedy decodes of one prompt then differ."""

    def start(self, rng: random.Random) -> LengthState: ...


class ScheduledUpdates(Protocol):
    """In-flight weight updates at fixed decode steps instead of whenever they arrive.

    Deterministic PipelineRL-k (:mod:`scalerl.pipeline.landing`) decides, from seeds, at which
    decode step of a batch each new policy version lands; the generator asks before the prompt
    pass (step 0) and before computing the logits of every later token, and loads what it is
    given -- keeping its KV cache, as an in-flight update does. Same schedule, same weights:
    the same tokens, whatever the threads' timing.
    """

    def weights_at(self, step: int) -> tuple[Mapping[str, Any], int] | None:
        """The weights (state dict, policy version) to hold from decode step ``step`` on, or None
        to keep the current ones. May block until those weights exist."""
        ...


class GenerationCancelled(RuntimeError):
    """A generate call stopped at a decode step because its generator was cancelled (closed)."""


@runtime_checkable
class Generator(Protocol):
    """A sampling backend. ``version`` is the policy version of the weights it holds.

    ``generate(..., updates=...)`` (optional): a :class:`ScheduledUpdates`; only generators that
    support deterministic in-flight updates accept it (the Hugging Face loop does).
    """

    version: int

    def generate(
        self,
        prompts: Sequence[Sequence[int]],
        params: SamplingParams,
        length_control: LengthController | None = None,
    ) -> list[Completion]: ...

    def update_weights(self, state_dict: Mapping[str, Any], version: int) -> None:
        """Queue new weights; they take effect between two decode steps (in-flight update)."""
        ...


class InFlightUpdates:
    """Mixin of the generators that accept new weights while they generate.

    A subclass holds ``self._busy`` (a lock held for a whole generate call) and implements
    ``_apply_pending()`` (load queued weights; called only while holding ``_busy``). A generate
    call applies queued weights between two decode steps; an update that arrives while no call
    runs is applied at once here.
    """

    _busy: Any

    def _apply_pending(self) -> None:  # pragma: no cover - implemented by the generator
        raise NotImplementedError

    def _apply_if_idle(self) -> None:
        # If a generate call holds the lock it applies the update before its next step; it also
        # calls this after releasing the lock, so an update that raced its last step is not lost.
        if self._busy.acquire(blocking=False):
            try:
                self._apply_pending()
            finally:
                self._busy.release()
