"""Built-in ``arithmetic-mix`` task: addition with a mix of operand lengths, where a ceiling exists.

The ``arithmetic`` task's 2-digit sums are fully learnable by the tiny model, so every fitted
curve ends at A = 1 and no ceiling can be measured or moved. Here each problem has a number of
columns ``d`` drawn uniformly from ``[min_digits, max_digits]`` (the longer operand has exactly
``d`` digits), with the same column-by-column scratchpad and the same +1/-1 reward as
``arithmetic`` (see :mod:`scalerl.tasks.arithmetic`)::

    <think>4+8+0=12
    3+0+1=4
    2+9+0=11
    </think>1142                (234+908=)

The scratchpad grows by 8-9 tokens per column (``x+y+c=s`` and a newline, spelled out by the
character tokenizer), so a problem with ``d`` columns needs ``2 + 8d .. 2 + 9d`` thinking
tokens, the two think tags included (:func:`thinking_tokens`): 18-20 at 2 columns, 26-29 at
3, 34-38 at 4. Under ScaleRL's forced interruption with a thinking budget
drawn in ``[lo, hi]``, a problem whose scratchpad does not fit is cut and must be answered from
a partial computation. That caps the pass rate *by construction*: :meth:`ArithmeticMixTask.ceiling`
is the share of problems a perfect scratchpad policy can finish within the budget, and the
measured curves plateau at or below it. The mechanisms behind the paper's ceiling movers on
this task:

* generation length: a longer thinking budget admits longer problems (a higher cap);
* model size: the lookup of the i-th digit from the right of each operand gets harder with
  longer operands, and smaller models make more per-column errors (measured:
  ``benchmarks/workload_movers.py``);
* batch size: measured, not assumed (docs/study.md).

Evaluation sets (all from the held-out partition, shared with ``arithmetic``: a pair held out
there is held out here, so no warm start ever saw an evaluation problem):

* ``val`` -- stratified over lengths: the same number of problems of every length, so the
  set's composition adds no noise and its ceiling is exact;
* ``len<d>`` -- ``n_per_length`` problems with exactly ``d`` columns each (the mechanism, per length).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from functools import cached_property
from typing import Sequence

from scalerl.errors import InputError
from scalerl.tasks.arithmetic import THINK_CLOSE, THINK_OPEN, final_answer, is_held_out, reference_completion, scratchpad
from scalerl.tasks.base import Problem

#: Draws allowed per wanted pair when sampling distinct pairs of one length (bounded loops).
_DRAWS_PER_PAIR = 50


def thinking_tokens(a: int, b: int) -> int:
    """Thinking tokens of the reference completion for the tiny model's character tokenizer:
    ``<think>`` and ``</think>`` (one token each) plus one token per scratchpad character."""
    return len(scratchpad(a, b)) + 2


def pairs_of_length(d: int) -> int:
    """How many ordered pairs have exactly ``d`` columns (the longer operand has ``d`` digits)."""
    return 10 ** (2 * d) - (10 ** (2 * (d - 1)) if d > 1 else 0)


def fits_budget_share(need: int, budget: tuple[int, int]) -> float:
    """Probability that a thinking budget drawn uniformly from ``[lo, hi]`` is at least ``need``."""
    lo, hi = budget
    if need <= lo:
        return 1.0
    if need > hi:
        return 0.0
    return (hi - need + 1) / (hi - lo + 1)


@dataclass(frozen=True)
class ArithmeticMixTask:
    """Addition with ``min_digits``..``max_digits`` columns per problem; rewards +1 / -1."""

    min_digits: int = 2
    """Fewest columns of a problem (the longer operand's digits)."""
    max_digits: int = 4
    """Most columns of a problem. Problems of every length in between are equally frequent."""
    n_train: int = 20_000
    """Training pool size, split evenly over the lengths (fewer for a length with fewer train pairs)."""
    n_val: int = 1000
    """Size of the ``val`` set, split evenly over the lengths (the first lengths get the remainder)."""
    n_per_length: int = 200
    """Size of each ``len<d>`` set; 0 drops them."""
    held_out_fraction: float = 0.1
    """Share of the pair space reserved for evaluation (the same partition as ``arithmetic``)."""
    seed: int = 0
    """Seeds which held-out problems form the eval sets and the order of the training pool."""
    split_salt: str = "scalerl-arithmetic-v1"
    """Key of the train/held-out partition (``arithmetic``'s: the two tasks share it)."""
    verify_scratchpad: bool = False
    """Reward +1 only when the thinking is the complete reference scratchpad (every column
    written, right, and nothing cut) *and* the sum is right. Off (the default): the sum alone
    decides, so a policy can pass a cut problem by working out the last columns without writing
    them, and curves creep past :meth:`ceiling`. On: a cut problem always fails, so
    :meth:`ceiling` is a hard upper bound of the pass rate (a process-verified reward)."""
    name: str = field(default="arithmetic-mix", init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.min_digits <= self.max_digits <= 12:
            raise InputError(f"arithmetic-mix task: need 1 <= min_digits <= max_digits <= 12, "
                             f"got min_digits={self.min_digits}, max_digits={self.max_digits}")
        if not 0.0 < self.held_out_fraction < 1.0:
            raise InputError(f"arithmetic-mix task: held_out_fraction must be in (0, 1), got {self.held_out_fraction}")
        for n in ("n_train", "n_val"):
            if getattr(self, n) < 1:
                raise InputError(f"arithmetic-mix task: {n} must be >= 1, got {getattr(self, n)}")
        if not isinstance(self.verify_scratchpad, bool):  # YAML "yes"/"no" are bools; a typo is not
            raise InputError(f"arithmetic-mix task: verify_scratchpad must be true or false, got {self.verify_scratchpad!r}")
        if self.n_per_length < 0:
            raise InputError(f"arithmetic-mix task: n_per_length must be >= 0, got {self.n_per_length}")
        # The shortest length must hold enough held-out pairs for its share of val (1 column: 10).
        share = -(-self.n_val // len(self.lengths))
        available = pairs_of_length(self.min_digits) * self.held_out_fraction
        if available < 2 * share:
            raise InputError(f"arithmetic-mix task: {self.min_digits}-column problems have only ~{available:.0f} "
                             f"held-out pairs for {share} val problems each; raise min_digits or lower n_val")

    @property
    def lengths(self) -> list[int]:
        return list(range(self.min_digits, self.max_digits + 1))

    # ---- the Task protocol -------------------------------------------------------------------
    def train_problems(self) -> list[Problem]:
        return self._train

    def eval_sets(self) -> dict[str, list[Problem]]:
        sets = {"val": self._val}
        if self.n_per_length:
            sets.update({f"len{d}": self._by_length[d] for d in self.lengths})
        return sets

    def reward(self, problem: Problem, completion: str) -> float:
        if self.verify_scratchpad:
            passed = self._after_reference_scratchpad(problem, completion)
        else:
            answer = final_answer(completion)
            passed = answer is not None and str(answer) == problem.answer
        return 1.0 if passed else -1.0

    @staticmethod
    def _after_reference_scratchpad(problem: Problem, completion: str) -> bool:
        """The right sum right after the complete reference scratchpad (nothing cut, skipped or wrong)."""
        thinking = f"{THINK_OPEN}{scratchpad(problem.meta['a'], problem.meta['b'])}{THINK_CLOSE}"
        text = completion.strip()
        return text.startswith(thinking) and text[len(thinking):].strip() == problem.answer

    # ---- extras ------------------------------------------------------------------------------
    def reference_completion(self, problem: Problem) -> str:
        """The scratchpad-and-answer completion the supervised warm start imitates."""
        return reference_completion(problem.meta["a"], problem.meta["b"])

    def ceiling(self, think_budget: tuple[int, int], problems: Sequence[Problem] | None = None) -> float:
        """The pass rate of a perfect scratchpad policy under forced interruption: the share of
        ``problems`` (default ``val``) whose reference thinking fits a budget drawn in ``[lo, hi]``."""
        problems = self._val if problems is None else problems
        needs = [thinking_tokens(p.meta["a"], p.meta["b"]) for p in problems]
        return sum(fits_budget_share(n, tuple(think_budget)) for n in needs) / len(needs)

    def settings(self) -> dict:
        """Everything that determines the problems (for cache keys and run-log headers)."""
        return {"name": self.name, "min_digits": self.min_digits, "max_digits": self.max_digits,
                "n_train": self.n_train, "n_val": self.n_val, "n_per_length": self.n_per_length,
                "held_out_fraction": self.held_out_fraction, "seed": self.seed, "split_salt": self.split_salt,
                "verify_scratchpad": self.verify_scratchpad}

    # ---- construction ------------------------------------------------------------------------
    @staticmethod
    def _problem(a: int, b: int) -> Problem:
        return Problem(id=f"{a}+{b}", prompt=f"{a}+{b}=", answer=str(a + b), meta={"a": a, "b": b})

    def _pairs(self, d: int, held_out: bool, count: int, rng: random.Random) -> list[tuple[int, int]]:
        """Up to ``count`` distinct pairs with exactly ``d`` columns from one side of the partition."""
        hi, lo = 10**d, (10 ** (d - 1) if d > 1 else 0)
        if pairs_of_length(d) <= 20 * count:  # small space: enumerate, then draw without replacement
            pool = [(a, b) for a in range(hi) for b in range(hi)
                    if max(a, b) >= lo and is_held_out(a, b, self.held_out_fraction, self.split_salt) == held_out]
            return rng.sample(pool, min(count, len(pool)))
        seen: dict[tuple[int, int], None] = {}
        for _ in range(_DRAWS_PER_PAIR * count):
            if len(seen) == count:
                break
            a, b = rng.randrange(hi), rng.randrange(hi)
            if max(a, b) < lo or (a, b) in seen:
                continue
            if is_held_out(a, b, self.held_out_fraction, self.split_salt) == held_out:
                seen[(a, b)] = None
        return list(seen)

    def _split_evenly(self, total: int) -> dict[int, int]:
        n, extra = divmod(total, len(self.lengths))
        return {d: n + (i < extra) for i, d in enumerate(self.lengths)}

    @cached_property
    def _train(self) -> list[Problem]:
        rng = random.Random(f"{self.seed}:mix-train")
        pairs = [p for d, n in self._split_evenly(self.n_train).items() for p in self._pairs(d, False, n, rng)]
        rng.shuffle(pairs)
        return [self._problem(a, b) for a, b in pairs]

    @cached_property
    def _val(self) -> list[Problem]:
        # Interleaved by length (2, 3, 4, ..., 2, 3, ...): the first N of the set -- what
        # eval.problems takes -- stay stratified.
        rng = random.Random(f"{self.seed}:mix-val")
        per = {d: self._pairs(d, True, n, rng) for d, n in self._split_evenly(self.n_val).items()}
        out = []
        for i in range(max(map(len, per.values()))):
            out += [self._problem(*per[d][i]) for d in self.lengths if i < len(per[d])]
        return out

    @cached_property
    def _by_length(self) -> dict[int, list[Problem]]:
        out = {}
        for d in self.lengths:
            rng = random.Random(f"{self.seed}:mix-len{d}")
            out[d] = [self._problem(a, b) for a, b in self._pairs(d, True, self.n_per_length, rng)]
        return out
