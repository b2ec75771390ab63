"""Built-in arithmetic task: procedurally generated addition with a digit-by-digit scratchpad.

A problem is ``"47+38="``; the reference completion thinks column by column, least
significant digit first, with the carry made explicit, then answers::

    <think>7+8+0=15
    4+3+1=8
    </think>85

The scratchpad is what makes length control matter: cut the thinking short (forced
interruption) and the model must answer from a partial computation. The reward reads only
what follows the last ``</think>``.

Difficulty is the number of digits per operand (operands are uniform in ``[0, 10**digits)``).
Train and held-out problems are disjoint *by construction*: each pair ``(a, b)`` is assigned to
the held-out partition by a keyed hash of the pair alone (not of the run seed, nor the
difficulty), so a problem held out for one run is held out for every run and for the tiny
model's supervised warm start. Evaluation sets, drawn from the held-out partition:

* ``val``  -- iid with training (uniform over held-out pairs); the set the forecast fits;
* ``hard`` -- a harder, downstream-like split: at least one operand is shorter than ``digits``
  digits, so the scratchpad pads it with zero columns. It is the same procedure in a rarer
  form (19% of the pairs at any difficulty), and rarity is what makes it harder for a
  warm-started policy. Measured on the default tiny model (``benchmarks/tiny_warm_start.py``):
  mean@8 at temperature 1 0.082 on ``hard`` against 0.096 on ``val``, greedy 0.273 against
  0.395 (at 200 warm-start steps: 0.223 against 0.308, greedy 0.470 against 0.775). (A split of all-carry pairs, the obvious candidate, measured no harder than ``val``.)
  No ``hard`` set at ``digits=1``, where no operand can be shorter.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import dataclass, field
from functools import cached_property
from typing import Iterator

from scalerl.errors import InputError
from scalerl.tasks.base import Problem

THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
#: Enumerate the whole pair space up to this size; sample it (rejection + dedupe) above.
_ENUMERATE_LIMIT = 200_000
#: Training pool size when the space is too large to enumerate and n_train is not given.
_DEFAULT_SAMPLED_TRAIN = 50_000
_ANSWER = re.compile(r"-?\d{1,40}")


def columns(a: int, b: int) -> list[tuple[int, int, int, int]]:
    """Column-wise addition, least significant first: ``(digit_a, digit_b, carry_in, column_sum)``."""
    out, carry = [], 0
    while True:
        x, y = a % 10, b % 10
        s = x + y + carry
        out.append((x, y, carry, s))
        carry, a, b = s // 10, a // 10, b // 10
        if a == 0 and b == 0:
            return out


def scratchpad(a: int, b: int) -> str:
    """The thinking part of the reference completion (without the think tags)."""
    return "".join(f"{x}+{y}+{c}={s}\n" for x, y, c, s in columns(a, b))


def reference_completion(a: int, b: int) -> str:
    """What a perfect policy writes after the prompt (EOS not included)."""
    return f"{THINK_OPEN}{scratchpad(a, b)}{THINK_CLOSE}{a + b}"


def final_answer(completion: str) -> int | None:
    """The integer after the last ``</think>``, or None when there is none or anything else is there."""
    if THINK_CLOSE not in completion:
        return None
    tail = completion.rsplit(THINK_CLOSE, 1)[1].strip()
    return int(tail) if _ANSWER.fullmatch(tail) else None


def is_held_out(a: int, b: int, fraction: float, salt: str) -> bool:
    """Whether pair ``(a, b)`` belongs to the held-out partition (a pure function of the pair)."""
    h = hashlib.blake2b(f"{salt}:{a}+{b}".encode(), digest_size=8).digest()
    return int.from_bytes(h, "big") < fraction * 2**64


def has_short_operand(a: int, b: int, digits: int) -> bool:
    """At least one operand has fewer than ``digits`` digits (the ``hard`` split)."""
    return min(len(str(a)), len(str(b))) < digits


@dataclass(frozen=True)
class ArithmeticTask:
    """Addition of two ``digits``-digit numbers with a scratchpad; rewards +1 / -1."""

    digits: int = 2
    """Difficulty: digits per operand. Measured warm starts of the tiny model on one CPU core:
    2 digits, 175 steps (~17 s) -> val 0.10 sampled / 0.40 greedy; 3 digits, 250 steps (~33 s)
    -> 0.10 / 0.36 (an earlier vocabulary, one token smaller)."""
    n_train: int | None = None
    """Training pool size; None: the whole train partition (or 50,000 sampled pairs when larger)."""
    n_val: int = 200
    """Size of the iid ``val`` set."""
    n_hard: int = 200
    """Size of the ``hard`` set (a short operand); 0 drops the set. Smaller when fewer exist."""
    held_out_fraction: float = 0.1
    """Share of the pair space reserved for evaluation."""
    seed: int = 0
    """Seeds which held-out problems form the eval sets and the order of the training pool."""
    split_salt: str = "scalerl-arithmetic-v1"
    """Key of the train/held-out partition; change it only to get a different partition."""
    name: str = field(default="arithmetic", init=False)

    def __post_init__(self) -> None:
        if not 1 <= self.digits <= 12:
            raise InputError(f"arithmetic task: digits must be in 1..12, got {self.digits}")
        if not 0.0 < self.held_out_fraction < 1.0:
            raise InputError(f"arithmetic task: held_out_fraction must be in (0, 1), got {self.held_out_fraction}")
        for n in ("n_val", "n_hard"):
            if getattr(self, n) < 0:
                raise InputError(f"arithmetic task: {n} must be >= 0, got {getattr(self, n)}")
        if self.n_train is not None and self.n_train < 1:
            raise InputError(f"arithmetic task: n_train must be >= 1, got {self.n_train}")

    # ---- the Task protocol -------------------------------------------------------------------
    def train_problems(self) -> list[Problem]:
        return self._train

    def eval_sets(self) -> dict[str, list[Problem]]:
        sets = {"val": self._val}
        if self.n_hard and self.digits > 1:
            sets["hard"] = self._hard
        return sets

    def reward(self, problem: Problem, completion: str) -> float:
        answer = final_answer(completion)
        return 1.0 if answer is not None and str(answer) == problem.answer else -1.0

    # ---- extras ------------------------------------------------------------------------------
    def reference_completion(self, problem: Problem) -> str:
        """The scratchpad-and-answer completion the supervised warm start imitates."""
        return reference_completion(problem.meta["a"], problem.meta["b"])

    def settings(self) -> dict:
        """Everything that determines the problems (for cache keys and run-log headers)."""
        return {
            "name": self.name,
            "digits": self.digits,
            "n_train": self.n_train,
            "n_val": self.n_val,
            "n_hard": self.n_hard,
            "held_out_fraction": self.held_out_fraction,
            "seed": self.seed,
            "split_salt": self.split_salt,
        }

    # ---- construction ------------------------------------------------------------------------
    def _problem(self, a: int, b: int) -> Problem:
        return Problem(id=f"{a}+{b}", prompt=f"{a}+{b}=", answer=str(a + b), meta={"a": a, "b": b})

    def _held_out(self, a: int, b: int) -> bool:
        return is_held_out(a, b, self.held_out_fraction, self.split_salt)

    def _space(self) -> int:
        return 10 ** (2 * self.digits)

    def _enumerate(self, held_out: bool) -> list[tuple[int, int]]:
        n = 10**self.digits
        return [(a, b) for a in range(n) for b in range(n) if self._held_out(a, b) == held_out]

    def _sample(self, rng: random.Random, held_out: bool, count: int, accept=None) -> Iterator[tuple[int, int]]:
        """Distinct random pairs of one partition (for spaces too large to enumerate)."""
        seen: set[tuple[int, int]] = set()
        n = 10**self.digits
        budget = 200 * count + 10_000  # a bounded loop even for a nearly empty accept set
        while len(seen) < count and budget > 0:
            budget -= 1
            pair = (rng.randrange(n), rng.randrange(n))
            if pair in seen or self._held_out(*pair) != held_out or (accept and not accept(*pair)):
                continue
            seen.add(pair)
            yield pair

    @cached_property
    def _held_out_pairs(self) -> list[tuple[int, int]] | None:
        return self._enumerate(True) if self._space() <= _ENUMERATE_LIMIT else None

    @cached_property
    def _train(self) -> list[Problem]:
        rng = random.Random(f"{self.seed}:train")
        if self._space() <= _ENUMERATE_LIMIT:
            pairs = self._enumerate(False)
            rng.shuffle(pairs)
            pairs = pairs[: self.n_train] if self.n_train else pairs
        else:
            pairs = list(self._sample(rng, False, self.n_train or _DEFAULT_SAMPLED_TRAIN))
        return [self._problem(a, b) for a, b in pairs]

    def _draw_held_out(self, tag: str, count: int, accept=None) -> list[Problem]:
        rng = random.Random(f"{self.seed}:{tag}")
        if self._held_out_pairs is not None:
            pool = [p for p in self._held_out_pairs if accept is None or accept(*p)]
            pairs = rng.sample(pool, min(count, len(pool)))
        else:
            pairs = list(self._sample(rng, True, count, accept))
        # A small space (1 digit) holds fewer held-out problems than asked: use them all, but an
        # empty evaluation set is an error, not a silent column of NaNs.
        if count and not pairs:
            raise InputError(
                f"arithmetic task: no held-out problems available for {tag!r} at digits={self.digits}; "
                f"set n_{tag}=0 or raise held_out_fraction"
            )
        return [self._problem(a, b) for a, b in pairs]

    @cached_property
    def _val(self) -> list[Problem]:
        return self._draw_held_out("val", self.n_val)

    @cached_property
    def _hard(self) -> list[Problem]:
        return self._draw_held_out("hard", self.n_hard, lambda a, b: has_short_operand(a, b, self.digits))
