"""A policy that collapsed without a NaN: every completion failing, step after step, once the run
had trained.

A learning rate far too high can break the weights in one step without a NaN. The policy then
fails every problem, every group's rewards are alike (zero variance), every step is skipped for
want of a signal, and the run goes on to its end untrained and unremarked: ``max_nan_steps`` sees
no NaN. The trainer notes such a streak on stderr while it runs (:func:`collapse_note`), and the
run report finds it in the run log's train rows (:func:`collapsed_steps`).
"""

from __future__ import annotations

from typing import Any, Iterable

#: Consecutive steps in which every completion failed, after the run had trained, that are called
#: a possible collapse (a weak start on hard problems also fails every completion, but trains no step).
COLLAPSE_STEPS = 5


def collapse_note(first: int, last: int, lr: float) -> str:
    """What is said of steps ``first``-``last``, every completion of which failed."""
    return (f"steps {first}-{last}: every completion failed (train pass rate 0) and nothing was learnt from them: "
            f"the policy may have collapsed -- is recipe.optimizer.lr = {lr:g} too high?")


def collapsed_steps(train_rows: Iterable[dict[str, Any]]) -> tuple[int, int] | None:
    """The first and last step of the longest streak of at least :data:`COLLAPSE_STEPS`
    consecutive steps whose every completion failed (``train_pass_rate`` 0) after a step that
    trained; None where there is none. A skipped step is always logged, so a step missing from the
    rows (``log.train_every`` > 1) trained, and breaks a streak."""
    best: tuple[int, int] | None = None
    skipped_before = 0  # skipped steps before the current row's
    start = prev = None
    for row in sorted((r for r in train_rows if isinstance(r.get("step"), int)), key=lambda r: r["step"]):
        step = row["step"]
        trained_before = step - 1 - skipped_before > 0
        if row.get("train_pass_rate") == 0 and trained_before:
            if start is None or step != prev + 1:
                start = step
            prev = step
            if prev - start + 1 >= COLLAPSE_STEPS and (best is None or prev - start > best[1] - best[0]):
                best = (start, prev)
        else:
            start = prev = None
        skipped_before += bool(row.get("skipped"))
    return best
