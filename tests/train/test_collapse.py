"""The rule that calls a streak of all-failing steps after training a possible collapse."""

from scalerl.train.collapse import COLLAPSE_STEPS, collapsed_steps


def _rows(passes: dict[int, float]) -> list[dict]:
    return [{"type": "train", "step": s, "train_pass_rate": p, "skipped": p == 0} for s, p in passes.items()]


def test_a_streak_after_a_trained_step_is_found():
    rows = _rows({1: 0.2, **{s: 0.0 for s in range(2, 2 + COLLAPSE_STEPS + 2)}})
    assert collapsed_steps(rows) == (2, COLLAPSE_STEPS + 3)


def test_a_run_that_never_trained_is_no_collapse():
    """A weak start on hard problems fails every completion from step 1: untrained, not collapsed."""
    assert collapsed_steps(_rows({s: 0.0 for s in range(1, 12)})) is None


def test_a_shorter_streak_or_one_broken_by_a_pass_is_none():
    assert collapsed_steps(_rows({1: 0.2, **{s: 0.0 for s in range(2, 1 + COLLAPSE_STEPS)}})) is None
    broken = {1: 0.2, 2: 0.0, 3: 0.0, 4: 0.0, 5: 0.1, 6: 0.0, 7: 0.0, 8: 0.0}
    assert collapsed_steps(_rows(broken)) is None


def test_a_trained_step_not_logged_counts_as_trained_and_breaks_a_streak():
    """log.train_every > 1 logs a trained step only now and then; a skipped one always."""
    rows = _rows({s: 0.0 for s in range(3, 3 + COLLAPSE_STEPS)})  # steps 1-2 trained, not logged
    assert collapsed_steps(rows) == (3, 2 + COLLAPSE_STEPS)
    gap = _rows({**{s: 0.0 for s in range(3, 6)}, **{s: 0.0 for s in range(7, 10)}})  # step 6 trained
    assert collapsed_steps(gap) is None
