"""Grading a completion of the math task with math-verify, as in the paper.

    math_verify_reward("... so the answer is \\boxed{\\frac12}", "0.5")   # +1.0

The completion's final answer is what follows the last ``</think>`` (the whole completion for a
model that does not think; nothing -- reward -1 -- for one that opened ``<think>`` and never
closed it: :func:`answer_region`). math-verify extracts the answer from it (``\\boxed{}``, LaTeX,
plain expressions) and checks mathematical equivalence with the reference, which is read as the
answer a completion gives (wrapped in ``\\boxed{}``, as verl's math reward reads it).

math-verify bounds its own parsing and checking with ``signal.alarm``, which works only in the main
thread; off it, the task sends calls to a worker process (:mod:`scalerl.tasks.math_worker`). A call
math-verify's own limits stopped raises :class:`VerifyTimeout`: a timeout, counted as one
(:func:`scored_here` on the main thread, the worker's reply elsewhere), not a plain wrong answer.
"""

from __future__ import annotations

import itertools
import re
import threading
from functools import lru_cache
from typing import Any

from scalerl.tasks.encoding import THINK_CLOSE, THINK_OPEN
from scalerl.tasks.failure_tally import note_failure


def answer_region(completion: str) -> str | None:
    """The part of a completion that holds its final answer (None: still thinking)."""
    if THINK_CLOSE in completion:
        return completion.rsplit(THINK_CLOSE, 1)[1]
    if THINK_OPEN in completion:
        return None
    return completion


def on_main_thread() -> bool:
    """Whether math-verify's ``signal.alarm`` limits work here (the main thread only)."""
    return threading.current_thread() is threading.main_thread()


def parse_here(text: str) -> list:
    """math-verify's ``parse``, raising on an error or its time limit (``TimeoutException``); the limit only on the
    main thread, where its alarm works (elsewhere the task's worker process bounds the call)."""
    from math_verify import parse

    return parse(text, raise_on_error=True, **({} if on_main_thread() else {"parsing_timeout": None}))


def verify_here(gold: Any, target: Any) -> bool:
    """math-verify's ``verify``, raising as :func:`parse_here` does."""
    from math_verify import verify

    return verify(gold, target, raise_on_error=True, **({} if on_main_thread() else {"timeout_seconds": None}))


#: A ``$`` that opens or closes math in LaTeX text: one not escaped as ``\$`` (a dollar sign).
_MATH_DELIMITER = re.compile(r"(?<!\\)\$")


@lru_cache(maxsize=65536)
def read_reference(answer: str) -> Any:
    """math-verify's reading of a reference answer (a list of sympy expressions and text; [] for nothing)."""
    # A bare reference ("0.5", "x^2+1") is wrapped in \boxed{} so LaTeX extraction sees it as
    # the answer; one that already carries its own delimiters is parsed as written. An escaped
    # dollar ("\$18.90", MATH's money answers) is no delimiter: taken for one, the reference was
    # parsed as written, read as nothing, and every completion scored -1.
    text = answer if (_MATH_DELIMITER.search(answer) or "\\boxed" in answer) else f"\\boxed{{{answer}}}"
    try:
        return parse_here(text)
    except Exception:  # noqa: BLE001 -- read as nothing (math-verify's own reading; a timeout goes on up)
        return []


class VerifyTimeout(TimeoutError):
    """math-verify's own time limit ended a parse or a comparison (it returns "no match" and logs a warning):
    the call is a timeout, counted as one, not a plain wrong answer (review cw: ``99999999!`` was stopped after
    5 s and scored -1 with ``reward_timeouts`` 0)."""


def math_verify_reward(completion: str, answer: str) -> float:
    """+1 when the completion's final answer is mathematically equal to ``answer``, else -1; raises
    :class:`VerifyTimeout` where math-verify's own time limit stopped it (the worker process reports that as a
    timeout; :func:`scored_here` scores it -1 and counts it)."""
    region = answer_region(completion)
    if region is None or not region.strip():
        return -1.0
    from math_verify.errors import TimeoutException

    timed_out = False
    try:
        gold = read_reference(answer)
        pred = parse_here(region)
    except TimeoutException:  # (a BaseException: math-verify's alarm)
        raise VerifyTimeout(f"math-verify's own time limit stopped parsing (answer {answer[:40]!r})") from None
    except Exception:  # noqa: BLE001 -- a completion that breaks the parser is a wrong answer
        return -1.0
    # Each reading of the reference against each of the completion's, as verify() pairs them itself -- one at a
    # time, so that a comparison its time limit stopped is told from one that found no match.
    for g, t in itertools.product(gold, pred):
        try:
            if verify_here(g, t):
                return 1.0
        except TimeoutException:
            timed_out = True
        except Exception:  # noqa: BLE001 -- a pair sympy cannot compare is no match (verify's own reading)
            pass
    if timed_out:
        raise VerifyTimeout(f"math-verify's own time limit stopped a comparison (answer {answer[:40]!r})")
    return -1.0


def scored_here(completion: str, answer: str) -> float:
    """:func:`math_verify_reward` in this process (on its main thread, where math-verify's alarms work): a
    timeout scores -1 and is counted in the scoring's tally (``reward_timeouts``), as the worker's are."""
    try:
        return math_verify_reward(completion, answer)
    except VerifyTimeout:
        note_failure("timeouts")
        return -1.0
