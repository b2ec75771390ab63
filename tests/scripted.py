"""Test doubles shared by the generation tests: a scripted length controller and a fake generator."""

from __future__ import annotations

import random
from typing import Callable, Sequence

from scalerl.generate.base import Completion, SamplingParams


class ForcedPhraseState:
    """After ``budget`` emitted tokens, force ``phrase``; then allow ``answer_budget`` more tokens."""

    def __init__(self, budget: int, phrase: Sequence[int], answer_budget: int, on_observe: Callable | None = None):
        self.budget, self.phrase, self.answer_budget = budget, list(phrase), answer_budget
        self.emitted = 0
        self.on_observe = on_observe

    def forced_token(self) -> int | None:
        k = self.emitted - self.budget
        return self.phrase[k] if 0 <= k < len(self.phrase) else None

    def observe(self, token_id: int) -> None:
        self.emitted += 1
        if self.on_observe is not None:
            self.on_observe(self)

    @property
    def finished(self) -> bool:
        return self.emitted >= self.budget + len(self.phrase) + self.answer_budget

    @property
    def interrupted(self) -> bool:
        return bool(self.phrase) and self.emitted > self.budget


class ForcedPhrase:
    """Length controller making :class:`ForcedPhraseState` s (budget drawn from ``budgets`` with the rng)."""

    def __init__(self, budgets: Sequence[int], phrase: Sequence[int], answer_budget: int, on_observe=None):
        self.budgets, self.phrase, self.answer_budget, self.on_observe = list(budgets), phrase, answer_budget, on_observe
        self.draws_budgets = len(set(self.budgets)) > 1

    def start(self, rng: random.Random) -> ForcedPhraseState:
        return ForcedPhraseState(rng.choice(self.budgets), self.phrase, self.answer_budget, self.on_observe)


class ScriptedGenerator:
    """A deterministic fake ``Generator``: the completion text for a prompt comes from ``script``.

    ``script(prompt_ids, call_index)`` returns (text, finish_reason); tokens are one per character.
    """

    def __init__(self, script: Callable[[list[int], int], tuple[str, str]]):
        self.script = script
        self.version = 0
        self.calls: list[int] = []
        self._count: dict[tuple[int, ...], int] = {}

    def generate(self, prompts, params: SamplingParams, length_control=None) -> list[Completion]:
        self.calls.append(len(prompts))
        out = []
        for p in prompts:
            key = tuple(p)
            index = self._count.get(key, 0)
            self._count[key] = index + 1
            text, reason = self.script(list(p), index)
            n = len(text)
            out.append(Completion(list(p), [ord(c) for c in text], [0.0] * n, [1] * n, [0] * n, reason, text=text))
        return out

    def update_weights(self, state_dict, version: int) -> None:
        self.version = version
