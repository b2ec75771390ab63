"""Children that die with their parent: the parent gone before the child's prctl ran."""

import os
import subprocess
import sys

import pytest

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")

CHILD = "from scalerl.parent_death import die_with_parent; die_with_parent({arg}); print('alive')"


def _run(arg: str, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", CHILD.format(arg=arg)], capture_output=True, text=True, env=env)


def test_a_child_whose_parent_is_not_the_one_it_was_told_exits_at_once():
    """The parent died between starting the child and the child's prctl: the child was adopted (its
    parent pid is another), no death signal will ever come, so it exits instead of living on."""
    assert os.getppid() != 1
    told_someone_else = _run("parent=1")  # (this process is the child's parent, not pid 1)
    assert told_someone_else.returncode == 0 and "alive" not in told_someone_else.stdout
    told_right = _run(f"parent={os.getpid()}")
    assert told_right.returncode == 0 and "alive" in told_right.stdout, told_right.stderr


def test_the_parent_pid_from_the_environment_by_default():
    from scalerl.parent_death import PARENT_PID_ENV

    stale = _run("", env={**os.environ, PARENT_PID_ENV: "1"})
    assert "alive" not in stale.stdout
    assert "alive" in _run("", env={k: v for k, v in os.environ.items() if k != PARENT_PID_ENV}).stdout
