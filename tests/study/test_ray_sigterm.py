"""SIGTERM to a study on the Ray backend (a batch scheduler's stop, `kill PID`) stops it as on the
local backend: exit 143 promptly, the running run stopped as on Ctrl-C, no queued run started, no
Ray process left behind."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.ray_cluster]
pytest.importorskip("ray")

DRIVER = """
import pathlib, signal, sys
# Started in the background (`scalerl study ... &` in a script, nohup, a pytest-xdist worker):
# SIGINT ignored, which the Ray workers inherit.
signal.signal(signal.SIGINT, signal.SIG_IGN)
from types import SimpleNamespace
from scalerl.study import ray_runs
from scalerl.stop_signals import sigterm_stops_like_ctrl_c

marks = sys.argv[1]

def run(cfg, budget):  # a run: stopped as on Ctrl-C, it says so
    import pathlib, time
    pathlib.Path(cfg["mark"] + ".started").write_text("")
    try:
        for _ in range(1200):  # a run's loop: Python code between short waits
            time.sleep(0.1)
    except KeyboardInterrupt:
        from scalerl.stop_signals import stop_under_way
        stop_under_way()  # as the trainer says it
        pathlib.Path(cfg["mark"] + ".stopped").write_text("")
        time.sleep(ray_runs.RAY_CANCEL_EVERY_S + 1.5)  # a clean-up the next cancel comes in (closing vLLM actors)
        pathlib.Path(cfg["mark"] + ".cleaned").write_text("")
        raise

ray_runs.execute_dict = run  # (what the Ray task runs, after its set-up)
ray_runs.to_dict = lambda config: config
ray_runs.asdict = lambda budget: {}
plans = [SimpleNamespace(config={"mark": f"{marks}/run{i}"}, name=f"run{i}", directory=pathlib.Path(marks, f"run{i}"))
         for i in range(2)]  # (no run there: new, submitted)
with sigterm_stops_like_ctrl_c():
    try:
        ray_runs.run_on_ray(plans, None, SimpleNamespace(ray_address=None, threads=1, parallel=1), print, lambda o: None)
    except KeyboardInterrupt as exc:
        sys.exit(getattr(exc, "status", 130))
"""


def _session_processes(sid: int) -> list[str]:
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            if os.getsid(int(pid)) == sid:
                with open(f"/proc/{pid}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] not in "ZX":
                        found.append(open(f"/proc/{pid}/cmdline").read().replace("\0", " ")[:100])
        except (OSError, IndexError):
            pass
    return found


@pytest.mark.extended  # (18-21 s; SIGTERM once Ray has started: tests/pipeline/test_ray_sigterm.py, in the default run)
def test_sigterm_stops_a_ray_study_at_once_and_leaves_no_ray_process(tmp_path):
    """Ray's start-up put its own crash handler on SIGTERM in the study's driver (the study called
    ray.init itself, not init_ray): `kill PID` printed a C++ stack dump and exited 1, the running
    run killed by ray.shutdown wherever it was rather than stopped. With the handler kept, ray.wait
    turned the Terminated it raised into a plain KeyboardInterrupt: exit 130, not 143. The study
    cancels a run again every few seconds until it ends; a clean-up longer than that was cut."""
    driver = subprocess.Popen([sys.executable, "-c", DRIVER, str(tmp_path)], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "run0.started").exists() and time.monotonic() < deadline:
            time.sleep(0.2)
        assert (tmp_path / "run0.started").exists(), driver.stderr.read() if driver.poll() is not None else "no run"
        t0 = time.monotonic()
        driver.send_signal(signal.SIGTERM)
        _, err = driver.communicate(timeout=60)
        took = time.monotonic() - t0
        assert driver.returncode == 143, err[-3000:]
        assert "SIGTERM received" not in err
        assert took < 30
        assert (tmp_path / "run0.stopped").exists()  # stopped as on Ctrl-C: its checkpoint intact
        assert (tmp_path / "run0.cleaned").exists()  # its clean-up not cut by the cancel repeated meanwhile
        assert not (tmp_path / "run1.started").exists()  # the queued run never started
        time.sleep(2)
        assert _session_processes(driver.pid) == []
    finally:
        try:
            os.killpg(driver.pid, signal.SIGKILL)
        except OSError:
            pass
