"""A trainer rank killed by a signal: the group's line says where the run stopped and how to continue."""

import pytest

import scalerl.train.launch as launch
from scalerl.errors import Terminated
from scalerl.train.launch import killed_rank_message


def test_a_stop_while_leaving_after_an_error_keeps_the_error(monkeypatch):
    """Review ay: rank 1 killed while the ranks saved a checkpoint; rank 0's collective failed, and the launcher's
    SIGTERM then landed in run_rank's leave_group, raising a bare Terminated("terminated (SIGTERM)") in place of
    the trainer's "interrupted at step N ...; resume with" -- the group's error line said neither."""
    def terminated(*, clean):
        raise Terminated("terminated (SIGTERM)")

    monkeypatch.setattr(launch, "leave_group", terminated)
    where = "interrupted at step 5, last checkpoint at step 4; resume with: scalerl train --output /tmp/run --resume"
    with pytest.raises(KeyboardInterrupt, match="interrupted at step 5"):
        try:
            raise KeyboardInterrupt(where)
        finally:
            launch._leave_after(False)
    with pytest.raises(Terminated):  # a stop while a rank that ended well leaves is the stop
        launch._leave_after(True)


def test_rank0_stop_line_is_kept():
    where = "interrupted at step 5, last checkpoint at step 4; resume with: scalerl train --output /tmp/run --resume"
    assert killed_rank_message(1, 9, 2, "/tmp/run", where).endswith(where)
    assert killed_rank_message(1, 9, 2, "/tmp/run", None).endswith("scalerl train --output /tmp/run --resume")
