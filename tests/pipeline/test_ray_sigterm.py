"""SIGTERM (a batch scheduler's stop, `kill PID`) to a Ray-backend run ends it as on the local backend."""

from __future__ import annotations

import subprocess
import sys

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray_cluster]
pytest.importorskip("ray")

CODE = """
import os, signal, time
from scalerl.pipeline.ray_backend import init_ray
init_ray(None)
os.kill(os.getpid(), signal.SIGTERM)
time.sleep(60)
"""


def test_sigterm_after_ray_starts_is_the_default_not_rays_abort():
    """`kill PID` of `scalerl train --backend ray`: Ray's start-up had put its own handler on SIGTERM,
    which printed a C++ stack dump ('*** SIGTERM received ... PC: @ ...') and aborted (exit -6);
    the handler from before Ray is put back (here Python's default, exit -15; under the command
    line scalerl's, which stops the run as Ctrl-C does: tests/test_stop_signals.py)."""
    done = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True, timeout=120)
    assert done.returncode == -15, done.stderr[-2000:]
    assert "SIGTERM received" not in done.stderr
