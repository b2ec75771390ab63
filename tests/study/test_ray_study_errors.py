"""A study's Ray tasks (review dd): a crashed run reported with its own error, a run wider than every node
refused rather than waited on for ever. Each test starts one small cluster in a subprocess of its own session,
killed whatever happens."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest


ray = pytest.importorskip("ray")

SRC = str(Path(__file__).resolve().parents[2] / "src")


STUDY_DRIVER = """
import pathlib, sys, json
from types import SimpleNamespace
import ray
from scalerl.errors import ScaleRLError
from scalerl.study import ray_runs

mode, threads = sys.argv[1], int(sys.argv[2])

def run(cfg, budget):  # a run that crashes (a bug, CUDA out of memory: an error that is no ScaleRLError)
    if mode == "crash":
        raise ValueError("CUDA out of memory. Tried to allocate 2.00 GiB")
    return {"label": "v", "seed": 0, "status": "trained"}

ray_runs.execute_dict = run  # (what the Ray task runs)
ray_runs.to_dict = lambda config: config
ray_runs.asdict = lambda budget: {}
ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
plans = [SimpleNamespace(config={}, name="v/seed0", variant=SimpleNamespace(label="v"), seed=0,
                         directory=pathlib.Path(sys.argv[3]))]
try:
    out = ray_runs.run_on_ray(plans, SimpleNamespace(x="step"), SimpleNamespace(ray_address=None, threads=threads,
                              parallel=1), lambda line: None, lambda o: None)
    print("OUTCOME " + json.dumps({"status": out[0].status, "error": out[0].error}))
except ScaleRLError as exc:
    print("ERROR " + str(exc))
finally:
    ray.shutdown()
"""


def _study_on_ray(tmp_path, mode: str, threads: int, timeout: float) -> tuple[str | None, str]:
    """Run the Ray study driver (a one-CPU cluster of its own); its stdout, or None if it had not ended
    within ``timeout`` seconds (then it and its whole session are killed)."""
    env = dict(os.environ, PYTHONPATH=SRC + os.pathsep + os.environ.get("PYTHONPATH", ""))
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen([sys.executable, "-c", textwrap.dedent(STUDY_DRIVER), mode, str(threads),
                             str(tmp_path / "run")], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=env, start_new_session=True)
    try:
        out, err = proc.communicate(timeout=timeout)
        return out, err
    except subprocess.TimeoutExpired:
        return None, ""
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)  # the driver and the Ray processes it started (its session)
        except OSError:
            pass
        proc.wait()


@pytest.mark.ray_cluster
def test_a_run_that_crashes_in_a_ray_task_is_reported_with_its_error(tmp_path):
    """`scalerl study --backend ray`: the study line and the report's notes for a crashed run said
    `FAILED after 0 s: RayTaskError(ValueError): ray::_execute_ray_task() (pid=27880, ip=192.0.2.2)`
    (ANSI colour codes included); the same crash on the local backend says `ValueError: CUDA out of
    memory. ...` (collect: "recorded like a failed run, on every backend alike")."""
    out, err = _study_on_ray(tmp_path, "crash", threads=1, timeout=90)
    assert out is not None, "the study driver did not end"
    outcome = next((line for line in out.splitlines() if line.startswith("OUTCOME ")), None)
    assert outcome is not None, err[-2000:]
    import json

    result = json.loads(outcome.removeprefix("OUTCOME "))
    assert result["status"] == "failed"
    assert "CUDA out of memory. Tried to allocate 2.00 GiB" in result["error"]
    assert "\x1b[" not in result["error"] and "ray::" not in result["error"]


@pytest.mark.ray_cluster
def test_a_study_whose_runs_need_more_cpus_than_the_ray_cluster_has_is_refused_not_hung(tmp_path):
    """`scalerl study --backend ray --threads 4` on this 2-core machine: "submitted gens-4/seed0 (1
    running, 1 waiting)" and then nothing, for 90 s until `timeout` stopped it (Ray's "cannot be
    scheduled" warning goes to the hidden worker logs). `scalerl train --backend ray` refuses the
    like of it up front ("3 generator actors need 3 CPU but the Ray cluster has 2"). Here: threads=2
    on a one-CPU cluster, which must be refused in one line, not wait."""
    out, err = _study_on_ray(tmp_path, "ok", threads=2, timeout=20)
    assert out is not None, "the study waited for ever for a Ray task that no node of the cluster can run"
    line = next((line for line in out.splitlines() if line.startswith("ERROR ")), None)
    assert line is not None and "CPU" in line, (out + err)[-2000:]
