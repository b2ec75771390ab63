"""ms-swift's progress text (``'12/94'``, ``'1d 2h 3m 4s'``) read as numbers, and only where a log lacks the column."""

import pytest

from scalerl.curves.progress_columns import duration_seconds, step_of_max, with_progress_columns


@pytest.mark.parametrize("text, seconds", [("36s", 36.0), ("1m 2s", 62.0), ("1h 1m 32s", 3692.0),
                                           ("4d 3h 37m 48s", ((4 * 24 + 3) * 60 + 37) * 60 + 48.0), ("2.5s", 2.5),
                                           ("", None), ("soon", None), ("1:02:03", 3723.0), ("02:03", None), (62, None)])
def test_duration_seconds(text, seconds):
    assert duration_seconds(text) == seconds


def test_step_of_max():
    assert step_of_max("12/94") == 12 and step_of_max(" 3 / 10000 ") == 3
    assert step_of_max("12") is None and step_of_max(12) is None


def test_a_log_that_has_the_column_keeps_its_own():
    rows = [{"step": 5, "global_step/max_steps": "12/94", "elapsed_time": "1m 0s", "wall_time": 9.0}]
    out, keys, notes = with_progress_columns(rows, set(rows[0]), step="step", wall_time="wall_time")
    assert out == rows and notes == {}


def test_rows_without_the_text_get_no_value():
    rows = [{"global_step/max_steps": "1/10", "elapsed_time": "36s"}, {"loss": 0.1}]
    out, keys, notes = with_progress_columns(rows, set().union(*rows), step="step", wall_time="wall_time")
    assert out[0]["step"] == 1 and out[0]["wall_time"] == pytest.approx(0.01) and "step" not in out[1]
    assert {"step", "wall_time"} <= keys and set(notes) == {"step", "wall_time"}
