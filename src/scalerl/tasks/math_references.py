"""Reference answers the math task's grading cannot match as meant, found at the start of a run.

    notes = reference_notes({"training": train, "evaluation set 'val'": val})

A reference math-verify reads as nothing (``$``, an empty ``\\boxed{}``) makes every completion
score -1 on its row; one with words or a full stop around its answer (``Answer: 7``, ``42.``) is
read, wrapped as the answer, as a product of letters or as text, so the bare right answer scores
-1. Either caps a pass rate without a word: each set's first :data:`REFERENCE_SAMPLE` references
are checked and a note names the first of each kind.
"""

from __future__ import annotations

import re
from typing import Sequence

from scalerl.tasks.base import Problem
from scalerl.tasks.math_grading import VerifyTimeout, math_verify_reward, parse_here, read_reference, verify_here


#: How many reference answers of each set are checked at the start (~1-2 ms each: a sample, not a
#: 40k-row training file's every row).
REFERENCE_SAMPLE = 256


def unreadable_references(problems: Sequence[Problem], sample: int = REFERENCE_SAMPLE) -> tuple[list[Problem], int]:
    """The problems among the first ``sample`` whose reference no completion can match: written back
    as the answer (``\\boxed{ANSWER}``), it still scores -1 (math-verify reads the reference as nothing:
    ``$``, ``\\boxed{}``, unbalanced braces) -- and how many were checked."""
    checked = list(problems[:sample])
    return [p for p in checked if _scored_quietly(f"\\boxed{{{p.answer}}}", p.answer) < 0], len(checked)


#: LaTeX the word check skips: a command (``\\sqrt``, ``\\pmod``), an environment's name
#: (``\\begin{pmatrix}``) and a ``\\text{...}`` (units math-verify reads).
_LATEX_WORDS = re.compile(r"\\(?:text|begin|end)\{[^}]*\}|\\[A-Za-z]+")
#: A word of prose: three letters or more, not glued to a number (``4abc`` is algebra); :func:`_spelled_out`
#: tells a word the reading took for letters (``Ans: 7``, ``9 pts``) from one it read (``2 and 3``).
_WORD = re.compile(r"(?<![A-Za-z0-9])[A-Za-z]{3,}(?![A-Za-z0-9])")


def misread_reference(answer: str) -> str | None:
    """How math-verify reads ``answer`` as written where that is a number or an expression the task's own
    reading (:func:`read_reference`: the reference wrapped as the answer) is not, and the reference is prose --
    words around the answer (``Answer: 7``, ``18 dollars``) or a full stop after it (``42.``), which the
    wrapped reading takes for a product of letters or leaves as text, so every right completion scores -1
    (review cw). None where the readings agree, or the reference is mathematics (``3\\sqrt{2}``, ``(1,2)``:
    read as written they lose their meaning, wrapped they keep it)."""
    from math_verify.errors import TimeoutException

    # A reference that breaks or stalls the parser is said elsewhere; only math-verify's own alarm of the
    # BaseExceptions (review db: a Ctrl-C or SIGTERM during this start-up check was swallowed and the run started).
    try:
        wrapped = read_reference(answer)
        plain = parse_here(answer)
    except (Exception, TimeoutException):  # noqa: BLE001
        return None
    if not plain or not wrapped:
        return None
    if not (all(isinstance(g, str) for g in wrapped) or _spelled_out(wrapped, answer)):
        return None
    try:
        if verify_here(wrapped, plain):
            return None
    except (Exception, TimeoutException):  # noqa: BLE001
        return None
    return str(plain[-1])


def _scored_quietly(completion: str, answer: str) -> float:
    """:func:`math_verify_reward`, a timeout a wrong answer (the start's check of the references counts none)."""
    try:
        return math_verify_reward(completion, answer)
    except VerifyTimeout:
        return -1.0


def reference_notes(sets: dict[str, Sequence[Problem]]) -> list[str]:
    """A note per set (``name -> problems``) whose sampled references math-verify reads as nothing
    (:func:`unreadable_references`) or as something else than meant (:func:`misread_reference`): every
    completion, or the bare right one, scores -1 on those rows -- a pass rate capped without a word."""
    notes = []
    for name, problems in sets.items():
        bad, checked = unreadable_references(problems)
        if bad:
            first = bad[0]
            notes.append(f"math task, {name}: {len(bad)} of the first {checked} reference answers cannot be matched "
                         f"by math-verify, even written back as the answer (e.g. row {first.meta.get('row', '?')}: "
                         f"{first.answer[:60]!r}): every completion scores -1 on such rows, the right one included "
                         "-- fix those answers (plain numbers or LaTeX math), or score with a reward function of "
                         "your own (--reward)")
        sampled = problems[:REFERENCE_SAMPLE]
        misread = [(p, plain) for p in sampled if (plain := misread_reference(p.answer)) is not None]
        if misread:
            first, plain = misread[0]
            notes.append(f"math task, {name}: {len(misread)} of the first {len(sampled)} reference answers hold words "
                         f"or a full stop around the answer (e.g. row {first.meta.get('row', '?')}: "
                         f"{first.answer[:60]!r}, which math-verify reads as {plain!r} only as written): graded as the "
                         "answer they are taken for, a completion that gives the bare answer scores -1 -- write the "
                         "bare answer (a number or LaTeX math)")
    return notes


def _spelled_out(wrapped: list, answer: str) -> bool:
    """Whether the wrapped reading took a word of ``answer`` for a product of its letters (``dollars`` ->
    d*o*l*l*a*r*s): every letter of some prose word (:data:`_WORD`) is a symbol of the reading. Not ``2 and
    3`` (read as the set {2, 3}), nor ``x=1 and x=2`` (review cy: flagged, though graded as meant)."""
    # (the letters the reading prints: a symbol may hold two of them -- "do" --, and sympy's E is the word's e)
    letters = {c for g in wrapped if not isinstance(g, str) for c in str(g).lower() if c.isalpha()}
    return any(set(word.lower()) <= letters for word in _WORD.findall(_LATEX_WORDS.sub(" ", answer)))
