"""Length control: forced interruptions, plain truncation, and DAPO's overlong penalty.

ScaleRL's *forced interruption* is a per-sequence state machine a generator drives token
by token (the :class:`~scalerl.generate.base.LengthController` protocol)::

    THINKING --natural </think>------------------------------> ANSWERING --answer budget--> FINISHED
    THINKING --thinking budget (uniform in [lo, hi])--> FORCING --phrase done--> ANSWERING
    any phase --max_new_tokens----------------------------------------------------------> FINISHED

In FORCING, :meth:`InterruptionState.forced_token` returns the next token of the
interruption phrase (``Okay, time is up. ... </think>``), which the generator emits with
log-prob 0 and loss mask 0; the phrase is injected at most once per sequence. Stopping at
EOS is the generator's business, not the state's.

The other modes: ``truncate`` (cut at ``max_new_tokens``) and ``overlong_penalty`` (cut at
``max_new_tokens`` and shape the reward with :func:`overlong_penalty`). Modes are a registry
(:data:`LENGTH_MODES`, the one list of what ``length.mode`` may be): each entry says how the
generator is controlled, how the reward is shaped, and which budgets must fit together
(:func:`budget_problems`: an interrupted sequence needs room for its thinking budget, the
phrase -- whose length depends on the tokenizer -- and its answer budget).
:func:`scalerl.rl.components.resolve_recipe` looks the mode up once per run. This module needs
no torch.
"""

from __future__ import annotations

import copy
import enum
import random
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Sequence

from scalerl.rl.recipe import INTERRUPTION_PHRASE, LengthConfig
from scalerl.rl.registry import Registry

__all__ = [
    "LENGTH_MODES",
    "budget_problems",
    "EndThinkText",
    "InterruptionController",
    "InterruptionState",
    "LengthMode",
    "Phase",
    "TruncationController",
    "TruncationState",
    "is_truncated",
    "is_interrupted",
    "keep_in_loss",
    "length_controller",
    "overlong_penalty",
    "phrase_ids",
    "phrase_tokens",
    "shape_reward",
]


class Phase(enum.Enum):
    THINKING = "thinking"
    FORCING = "forcing"
    ANSWERING = "answering"
    FINISHED = "finished"


def _encode(tokenizer: Any, text: str) -> list[int]:
    try:
        return list(tokenizer.encode(text, add_special_tokens=False))
    except TypeError:  # simple tokenizers without the keyword
        return list(tokenizer.encode(text))


# ----------------------------------------------------------------------------- interruption


class InterruptionState:
    """Length control of one sequence under forced interruption (see the module docstring)."""

    def __init__(self, controller: "InterruptionController", think_budget: int) -> None:
        self._c = controller
        self.think_budget = think_budget
        """This sequence's thinking budget, drawn in [lo, hi]."""
        self.phase = Phase.THINKING
        self.num_tokens = 0
        self.think_tokens = 0
        self.answer_tokens = 0
        self._forced = 0  # tokens of the phrase emitted so far
        self._interrupted = False
        self._truncated = False
        self._tail: deque[int] = deque(maxlen=controller.tail_tokens)
        if think_budget == 0:
            self._start_forcing()

    # -- the LengthState protocol

    def forced_token(self) -> int | None:
        if self.phase is Phase.FORCING:
            return self._c.phrase_ids[self._forced]
        return None

    def observe(self, token_id: int) -> None:
        if self.phase is Phase.FINISHED:
            raise RuntimeError("observe() called after the sequence finished")
        self.num_tokens += 1
        if self.phase is Phase.THINKING:
            self.think_tokens += 1
            self._tail.append(token_id)
            if self._ends_thinking():
                self.phase = Phase.ANSWERING
            elif self.think_tokens >= self.think_budget:
                self._start_forcing()
        elif self.phase is Phase.FORCING:
            expected = self._c.phrase_ids[self._forced]
            if token_id != expected:
                raise ValueError(f"the generator emitted token {token_id} while token {expected} was forced")
            self._forced += 1
            if self._forced == len(self._c.phrase_ids):
                self.phase = Phase.ANSWERING
        else:  # ANSWERING
            self.answer_tokens += 1
            if self.answer_tokens >= self._c.answer_budget:
                self._finish(truncated=True)
        if self.phase is not Phase.FINISHED and self.num_tokens >= self._c.max_new_tokens:
            self._finish(truncated=True)

    @property
    def finished(self) -> bool:
        return self.phase is Phase.FINISHED

    @property
    def interrupted(self) -> bool:
        """The thinking budget ran out and the phrase was (or is being) forced."""
        return self._interrupted

    # -- extras

    def free_run(self) -> int:
        """How many tokens may be sampled in a row before this state can force a token or finish:
        what an engine that cannot be called back per token (vLLM) asks for in one request. In
        THINKING a natural ``</think>`` may end the run earlier; the tokens past it are replayed
        through :meth:`observe` all the same, which cuts them where the state decides."""
        left = self._c.max_new_tokens - self.num_tokens
        if self.phase is Phase.THINKING:
            return max(0, min(left, self.think_budget - self.think_tokens))
        if self.phase is Phase.ANSWERING:
            return max(0, min(left, self._c.answer_budget - self.answer_tokens))
        return 0  # FORCING or FINISHED

    @property
    def truncated(self) -> bool:
        """A token budget (answer budget or max_new_tokens) ended the sequence."""
        return self._truncated

    def _start_forcing(self) -> None:
        self.phase = Phase.FORCING
        self._interrupted = True

    def _finish(self, *, truncated: bool) -> None:
        self.phase = Phase.FINISHED
        self._truncated = truncated

    def _ends_thinking(self) -> bool:
        tail = list(self._tail)
        if any(len(v) <= len(tail) and tail[len(tail) - len(v) :] == v for v in self._c.end_think_ids):
            return True
        # The marker as text: only a token whose piece holds its last character can complete it.
        c = self._c
        return c.end_think_text is not None and tail[-1] in c.closer_ids and c.end_think_text.text in c.decode(tail)


@dataclass(frozen=True)
class EndThinkText:
    """The end-of-thinking marker as text: ``text``; ``decode`` (token ids -> text, special tokens
    kept); ``closer_ids``, the tokens whose piece holds the marker's last character -- the only
    ones that can complete it, so the last tokens are decoded only after one of them."""

    text: str
    decode: Callable[[list[int]], str]
    closer_ids: frozenset[int]

    @classmethod
    def of(cls, tokenizer: Any, text: str) -> "EndThinkText | None":
        """``text`` with ``tokenizer``'s decoding; None for a tokenizer that cannot list its pieces."""
        if not text or not hasattr(tokenizer, "convert_ids_to_tokens") or not hasattr(tokenizer, "decode"):
            return None
        # A piece is the token as stored: printable ASCII is itself in byte-level BPE and
        # SentencePiece alike, and a byte-fallback piece (<0x3E>) holds '>' too (a superset is fine).
        pieces = tokenizer.convert_ids_to_tokens(list(range(len(tokenizer))))
        last = text[-1]
        closers = frozenset(i for i, piece in enumerate(pieces) if isinstance(piece, str) and last in piece)

        # Its own copy: generator threads share one controller, and a fast tokenizer another
        # thread is encoding with must not be called at the same time (rollout/context.py).
        own = copy.deepcopy(tokenizer)

        def decode(ids: list[int]) -> str:
            return own.decode(ids, skip_special_tokens=False)

        return cls(text, decode, closers)


class InterruptionController:
    """Makes one :class:`InterruptionState` per sequence, drawing its thinking budget.

    ``phrase_ids`` are forced verbatim; ``end_think_ids`` lists token sequences any of which,
    as a suffix of the sampled thinking, ends it naturally (a tokenizer can split ``</think>``
    differently after a space, hence several). ``end_think_text`` (:meth:`from_tokenizer` sets it)
    also ends it on the marker's *text* in the last tokens decoded: how a tokenizer splits
    ``</think>`` depends on what precedes it, and no list of spellings covers every context --
    a byte-level BPE merges ``.</`` after a full stop; a SentencePiece-style tokenizer
    (``▁`` for spaces: Llama 2, Mistral, Gemma) encodes the marker alone with a leading ``▁``,
    which a ``</think>`` written straight after a word or a newline does not have. Undetected,
    the thinking budget forced the interruption phrase into the answer.
    """

    def __init__(
        self,
        *,
        phrase_ids: Sequence[int],
        end_think_ids: Sequence[Sequence[int]],
        think_budget: tuple[int, int],
        answer_budget: int,
        max_new_tokens: int,
        end_think_text: EndThinkText | None = None,
    ) -> None:
        lo, hi = think_budget
        if not 0 <= lo <= hi:
            raise ValueError(f"think_budget must be (lo, hi) with 0 <= lo <= hi, got {think_budget}")
        if not phrase_ids or not end_think_ids or not all(end_think_ids):
            raise ValueError("phrase_ids and every end_think_ids entry must be non-empty")
        if answer_budget < 1 or max_new_tokens < 1:
            raise ValueError("answer_budget and max_new_tokens must be >= 1")
        self.phrase_ids = list(phrase_ids)
        self.end_think_ids = [list(v) for v in end_think_ids]
        self.end_think_text = end_think_text
        self.closer_ids = end_think_text.closer_ids if end_think_text is not None else frozenset()
        self.decode = end_think_text.decode if end_think_text is not None else None
        # Tokens a state keeps to match: the longest spelling; for the text, one token a character at most, and one more.
        self.tail_tokens = max([len(v) for v in self.end_think_ids]
                               + ([len(end_think_text.text) + 1] if end_think_text is not None else []))
        self.think_budget = (lo, hi)
        self.answer_budget = answer_budget
        self.max_new_tokens = max_new_tokens

    @classmethod
    def from_tokenizer(
        cls,
        tokenizer: Any,
        *,
        think_budget: tuple[int, int],
        answer_budget: int,
        max_new_tokens: int,
        phrase: str = INTERRUPTION_PHRASE,
        end_think: str = "</think>",
    ) -> "InterruptionController":
        variants: list[list[int]] = []
        for text in (end_think, " " + end_think, "\n" + end_think):
            ids = _encode(tokenizer, text)
            # " </think>" may tokenize as [" ", "</think>"]: its suffix is then the plain form,
            # already covered; keep only genuinely different spellings.
            if ids and not any(ids[len(ids) - len(v) :] == v for v in variants if len(v) <= len(ids)):
                variants.append(ids)
        return cls(
            phrase_ids=_encode(tokenizer, phrase),
            end_think_ids=variants,
            end_think_text=EndThinkText.of(tokenizer, end_think),
            think_budget=think_budget,
            answer_budget=answer_budget,
            max_new_tokens=max_new_tokens,
        )

    @property
    def draws_budgets(self) -> bool:
        """A thinking budget drawn per sequence, where the range holds more than one."""
        return self.think_budget[0] < self.think_budget[1]

    def start(self, rng: random.Random) -> InterruptionState:
        lo, hi = self.think_budget
        return InterruptionState(self, rng.randint(lo, hi))


# ----------------------------------------------------------------------------- truncation


class TruncationState:
    """Plain truncation: never forces a token, finishes after ``max_new_tokens``."""

    def __init__(self, max_new_tokens: int) -> None:
        self.max_new_tokens = max_new_tokens
        self.num_tokens = 0

    def forced_token(self) -> int | None:
        return None

    def observe(self, token_id: int) -> None:
        if self.finished:
            raise RuntimeError("observe() called after the sequence finished")
        self.num_tokens += 1

    @property
    def finished(self) -> bool:
        return self.num_tokens >= self.max_new_tokens

    @property
    def interrupted(self) -> bool:
        return False

    def free_run(self) -> int:
        """Tokens that may be sampled in a row (see :meth:`InterruptionState.free_run`)."""
        return self.max_new_tokens - self.num_tokens

    @property
    def truncated(self) -> bool:
        return self.finished


class TruncationController:
    draws_budgets = False  # (one budget for every sequence)

    def __init__(self, max_new_tokens: int) -> None:
        if max_new_tokens < 1:
            raise ValueError(f"max_new_tokens must be >= 1, got {max_new_tokens}")
        self.max_new_tokens = max_new_tokens

    def start(self, rng: random.Random) -> TruncationState:
        return TruncationState(self.max_new_tokens)


# ----------------------------------------------------------------------------- rewards and masks


def overlong_penalty(length: int, max_len: int, cache: int) -> float:
    """DAPO's soft overlong punishment ``clip((L_max - len) / L_cache - 1, -1, 0)``.

    0 up to ``L_max - L_cache`` tokens, then a linear ramp down to -1 at ``L_max`` and beyond.
    """
    return min(0.0, max(-1.0, (max_len - length) / cache - 1.0))


def is_truncated(finish_reason: str) -> bool:
    """Whether a :class:`~scalerl.generate.base.Completion` was cut by a token budget."""
    return finish_reason in ("length", "interrupted_length")


def is_interrupted(finish_reason: str) -> bool:
    """Whether a :class:`~scalerl.generate.base.Completion` had its thinking cut by a forced interruption."""
    return finish_reason.startswith("interrupted")


def keep_in_loss(cfg: LengthConfig, finish_reason: str) -> bool:
    """False for a truncated completion when ``mask_truncated`` is on (DAPO's overlong filtering), and for an
    interrupted one when ``mask_interrupted`` is."""
    return not ((cfg.mask_truncated and is_truncated(finish_reason))
                or (cfg.mask_interrupted and is_interrupted(finish_reason)))


# ----------------------------------------------------------------------------- modes


@dataclass(frozen=True)
class LengthMode:
    """What a ``length.mode`` does to generation and to rewards."""

    controller: Callable[[LengthConfig, Any], Any]
    """(length config, tokenizer) -> a LengthController for the generator."""
    reward: Callable[[LengthConfig, float, int], float]
    """(length config, task reward, completion length in tokens) -> the reward trained on."""
    budgets: Callable[[LengthConfig, "int | None"], list[str]] = lambda cfg, phrase: []  # nothing to fit
    """(length config, the interruption phrase's token count or None if the tokenizer is not known
    yet) -> budgets that do not fit together, each phrased as what to do."""


def _unshaped(cfg: LengthConfig, reward: float, length: int) -> float:
    return reward


def _penalised(cfg: LengthConfig, reward: float, length: int) -> float:
    return reward + overlong_penalty(length, cfg.overlong_max_len, cfg.overlong_cache)


def _interrupt_controller(cfg: LengthConfig, tokenizer: Any) -> InterruptionController:
    return InterruptionController.from_tokenizer(
        tokenizer,
        think_budget=tuple(cfg.think_budget),  # type: ignore[arg-type]
        answer_budget=cfg.answer_budget,
        max_new_tokens=cfg.max_new_tokens,
        phrase=cfg.interruption_phrase,
        end_think=cfg.end_think,
    )


def _truncation_controller(cfg: LengthConfig, tokenizer: Any) -> TruncationController:
    return TruncationController(cfg.max_new_tokens)


def _interrupt_budgets(cfg: LengthConfig, phrase: int | None) -> list[str]:
    # The longest interrupted sequence: the whole thinking budget, the forced phrase, the whole
    # answer budget. If that exceeds max_new_tokens the hard cap cuts the answer short.
    hi = cfg.think_budget[1]
    need = hi + (phrase or 0) + cfg.answer_budget
    if need <= cfg.max_new_tokens:
        return []
    if phrase is not None:
        counted, advice = f" + the interruption phrase ({phrase} tokens with this tokenizer)", f"{need}"
    else:
        # Checked before the tokenizer is read: the phrase's tokens are not known yet, and advising `need`
        # alone sent the user to a second refusal once they were counted. A token is at least one byte
        # (byte-level BPE, character and byte-fallback tokenizers; +1 for a SentencePiece word start).
        most = len(cfg.interruption_phrase.encode()) + 1
        counted, advice = "", f"{need + most} ({need} + up to {most} for the interruption phrase, whose tokens are counted once the tokenizer is read)"
    return [
        f"length: an interrupted sequence needs think_budget hi ({hi}){counted} + answer_budget "
        f"({cfg.answer_budget}) = {need} tokens, more than max_new_tokens ({cfg.max_new_tokens}), which would cut "
        f"answers short; set length.max_new_tokens={advice} or lower length.think_budget / length.answer_budget"
    ]


LENGTH_MODES: Registry[LengthMode] = Registry("length mode")
LENGTH_MODES.register("interrupt")(LengthMode(_interrupt_controller, _unshaped, _interrupt_budgets))
LENGTH_MODES.register("truncate")(LengthMode(_truncation_controller, _unshaped))
LENGTH_MODES.register("overlong_penalty")(LengthMode(_truncation_controller, _penalised))


def phrase_tokens(cfg: LengthConfig, tokenizer: Any) -> int:
    """How many tokens the interruption phrase takes with ``tokenizer``."""
    return len(phrase_ids(cfg, tokenizer))


def phrase_ids(cfg: LengthConfig, tokenizer: Any) -> list[int]:
    """The token ids the generator forces for the interruption phrase with ``tokenizer``."""
    return _encode(tokenizer, cfg.interruption_phrase)


def budget_problems(cfg: LengthConfig, tokenizer: Any = None, *, phrase: int | None = None) -> list[str]:
    """Budgets of ``cfg.mode`` that do not fit together; the phrase is counted when ``tokenizer`` is given, or
    ``phrase`` gives its tokens counted already (None: not counted)."""
    if tokenizer is not None:
        phrase = phrase_tokens(cfg, tokenizer)
    return LENGTH_MODES.get(cfg.mode).budgets(cfg, phrase)


def length_controller(cfg: LengthConfig, tokenizer: Any) -> Any:
    """The LengthController ``cfg.mode`` asks for, built with ``tokenizer`` (for the phrase's ids)."""
    return LENGTH_MODES.get(cfg.mode).controller(cfg, tokenizer)


def shape_reward(cfg: LengthConfig, reward: float, length: int) -> float:
    """The reward trained on, given the task's reward and the completion's length in tokens."""
    return LENGTH_MODES.get(cfg.mode).reward(cfg, reward, length)
