"""prime-rl's orchestrator console as it was printed before June 2026 (prime-rl's releases from July 2025,
when ``zeroband`` became ``prime_rl``, up to its train/eval overlap refactor, PrimeIntellect-ai/prime-rl
f6563ff0e): the same loguru lines, in other words::

    02:33:26 SUCCESS Step 28 | Time: 73.77s | Reward: 0.3887 | Throughput: 2408.9 tokens/s | Seq. Length: 345.6 tokens/sample | Async Level: 1 | Max. Off-Policy Level: 0
    02:40:02    INFO Running evals for checkpoint step 30
    02:41:15 SUCCESS Evaluated gsm8k in 73.12s (Avg@4=0.5123, Pass@1: 0.5123, Pass@2: 0.6010, No-response: 0.0%, Completion Length: 345.20 (±80.10, ∈[12.00, 1024.00]), Truncated: 1.2%)

A step line gives ``time/step`` (seconds) and ``train/<label>`` of each ``Label: value`` field
(``train/reward``, ``train/seq_length``, ``train/throughput``, ``train/val_reward``,
``train/async_level``, ``train/max_off_policy_level``; the fields varied over those releases). An
evaluation's line names no step: it is the one the ``Running evals ...`` line before it names (the
checkpoint evaluated, or ``at step=N``; the base model's, 0), and after ``Running final evals`` the
last step printed. Its figures under the names prime-rl's monitor gave them then --
``eval/<env>/avg@<k>`` (the mean reward; July 2025's ``Score=``: ``eval/<env>/score``),
``eval/<env>/pass@<n>``, ``eval/<env>/no_response/mean``, ``eval/<env>/completion_len/mean``,
``eval/<env>/is_truncated/mean`` (fractions) -- plus ``eval/<env>/reward`` (the same mean reward, the
name the newer console's reader gives it) and ``eval/<env>/time`` (seconds).
"""

from __future__ import annotations

import re
from typing import Any

_STEP = re.compile(r"^Step (\d+) \| Time: (\d+(?:\.\d+)?)s \| (.*)$")
#: ``Reward: 0.3887``, ``Throughput: 2408.9 tokens/s``, ``Max. Off-Policy Level: 0``.
_FIELD = re.compile(r"^([A-Za-z][A-Za-z. -]*?): (-?\d+(?:\.\d+)?|nan|-?inf)(?: (tokens/s|tokens/sample))?$")
#: The figures a step line ends with, in the releases that printed this format: a line that ends
#: otherwise was cut off.
_LAST = ("seq_length", "max_off_policy_level")
#: ``Evaluated gsm8k in 73.12s (Avg@4=0.5123, ...)``; the offline evaluation: ``Evaluated MODEL on ENV in ...``.
_EVAL = re.compile(r"^Evaluated (.+?) in (\d+(?:\.\d+)?)s \((Avg@(\d+)|Score)=(-?\d+(?:\.\d+)?|nan)(.*)\)$")
_PASS = re.compile(r", Pass@(\d+): (\d+(?:\.\d+)?|nan)")
_PERCENT = {"no_response/mean": re.compile(r", No-response: (\d+(?:\.\d+)?)%"),
            "is_truncated/mean": re.compile(r", Truncated: (\d+(?:\.\d+)?)%")}
_LENGTH = re.compile(r", Completion Length: (\d+(?:\.\d+)?|nan)")
#: The lines that say which step the evaluations after them are of.
_EVALS_AT = re.compile(r"Running evals (?:for (?:checkpoint|interval) step (\d+)|at step=(\d+))"
                       r"|Evaluating .+ at (?:step|checkpoint) (\d+)$")
_BASE_MODEL = "Running evals on base model"
_FINAL = "Running final evals"


def _key(label: str) -> str:
    return re.sub(r"[ -]+", "_", label.replace(".", "").strip()).lower()


def step_row(message: str) -> tuple[bool, dict[str, Any] | None]:
    """``(whether it is an old-style step line, its row or None where cut off or unreadable)``."""
    found = _STEP.match(message)
    if not found:
        return False, None
    figures: dict[str, float] = {}
    for field in found.group(3).split(" | "):
        parsed = _FIELD.match(field.strip())
        if not parsed:
            return True, None
        figures[_key(parsed.group(1))] = float(parsed.group(2))
    if _key(_FIELD.match(found.group(3).split(" | ")[-1].strip()).group(1)) not in _LAST:
        return True, None
    return True, {"step": int(found.group(1)), "time/step": float(found.group(2)),
                  **{f"train/{k}": v for k, v in figures.items()}}


def eval_row(message: str, step: int | None) -> tuple[bool, dict[str, Any] | None]:
    """``(whether it is an old-style evaluation line, its row at ``step`` or None where cut off,
    unreadable, or printed without a step before it)``."""
    if not message.startswith("Evaluated ") or "Step " in message[:200]:
        return False, None
    found = _EVAL.match(message)
    if not found:
        return (" in " in message and "(" in message), None
    if step is None:
        return True, None
    name, took, _, k, mean, rest = found.groups()
    env = name.rsplit(" on ", 1)[-1]
    row: dict[str, Any] = {"step": step, f"eval/{env}/time": float(took), f"eval/{env}/reward": float(mean),
                           f"eval/{env}/" + (f"avg@{k}" if k else "score"): float(mean)}
    row |= {f"eval/{env}/pass@{n}": float(v) for n, v in _PASS.findall(rest)}
    for key, pattern in _PERCENT.items():
        if (figure := pattern.search(rest)) is not None:
            row[f"eval/{env}/{key}"] = float(figure.group(1)) / 100
    if (length := _LENGTH.search(rest)) is not None:
        row[f"eval/{env}/completion_len/mean"] = float(length.group(1))
    return True, row


def evals_step(message: str, last_step: int | None) -> int | None:
    """The step the evaluations after ``message`` are of, where it is a line that says so; else None."""
    found = _EVALS_AT.search(message)
    if found:
        return int(next(g for g in found.groups() if g is not None))
    if message.startswith(_BASE_MODEL):
        return 0
    if message.startswith(_FINAL) and last_step is not None:
        return last_step
    return None
