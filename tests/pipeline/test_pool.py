"""undone_if_raised: what a pool's constructor closes when it fails part-way, and which error the
caller then sees (the constructor's own, never one from the clean-up)."""

from __future__ import annotations

import pytest

from scalerl.pipeline.pool import undone_if_raised


def test_undo_runs_on_any_error_ctrl_c_included_and_not_on_success():
    undone = []
    with undone_if_raised(lambda: undone.append(True)):
        pass
    assert undone == []
    for error in (ValueError("bad config"), KeyboardInterrupt()):
        with pytest.raises(type(error)) as caught:
            with undone_if_raised(lambda: undone.append(True)):
                raise error
        assert caught.value is error
    assert undone == [True, True]


@pytest.mark.parametrize("cleanup_error", [RuntimeError("actor already gone"), KeyboardInterrupt()], ids=type)
def test_an_undo_that_fails_does_not_hide_the_original_error(capsys, cleanup_error):
    def undo():
        raise cleanup_error

    original = ValueError("the cluster has 2 CPU")
    with pytest.raises(ValueError) as caught:
        with undone_if_raised(undo):
            raise original
    assert caught.value is original
    said = f"closing the half-started generator pool failed too: {type(cleanup_error).__name__}"
    assert said in capsys.readouterr().err
