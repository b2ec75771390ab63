"""Two Ray nodes on one host (a head and a joined node, one CPU each, token authentication):
PipelineRL-8 with two generator actors, one per node, runs to the end. The multi-node steps of
docs/distributed.md, on one machine."""

from __future__ import annotations

import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from scalerl.runlog import read_runlog

# `extended` (make test-all, ~55 s with the two nodes' start): test_ray_backend.py runs the same
# generator actors on a one-node cluster in the default run.
pytestmark = [pytest.mark.slow, pytest.mark.ray_cluster, pytest.mark.extended]
pytest.importorskip("ray")
RAY = shutil.which("ray", path=str(Path(sys.executable).parent)) or shutil.which("ray")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ours(marker: str) -> list[int]:
    """Processes whose command line names our cluster's own temp directory (nobody else's)."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit() and int(proc.name) != os.getpid():
            try:
                if marker.encode() in (proc / "cmdline").read_bytes():
                    found.append(int(proc.name))
            except OSError:  # gone meanwhile, or not ours to read
                pass
    return found


def _stop(marker: str) -> None:
    """Stop this cluster's processes only. (`ray stop` would stop every Ray node on the host --
    on a shared CI machine, other jobs' too.)"""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in _ours(marker):
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass
        deadline = time.time() + 10
        while _ours(marker) and time.time() < deadline:  # SIGKILL only for what SIGTERM left
            time.sleep(0.2)


def _join(address: str, temp: Path, env: dict, tries: int = 3) -> None:
    """Join a node to the head, again if it fails: on a loaded machine (two xdist workers) a joined
    node's start timed out once in three CI runs, with the head healthy."""
    for attempt in range(1, tries + 1):
        proc = subprocess.run([RAY, "start", "--address", address, "--num-cpus", "1", "--temp-dir", str(temp),
                               "--disable-usage-stats"], env=env, capture_output=True, text=True, timeout=180)
        if proc.returncode == 0:
            return
        if attempt == tries:
            raise AssertionError(f"the second node did not join in {tries} tries:\n{proc.stderr[-2000:]}")
        time.sleep(5 * attempt)


@pytest.fixture
def two_nodes():
    """A head (--num-cpus 1) and a second node joined to it (--num-cpus 1), both with token
    authentication (Ray >= 2.59 turns it on: a node or driver without the token is refused)."""
    if RAY is None:
        pytest.skip("the ray command is not installed")
    # Unique (it marks our processes for the finalizer) and short: Ray puts its AF_UNIX sockets
    # under it (107 bytes at most), and pytest's own temp path made the joined node's
    # ".../session_<time>_<pid>/sockets/plasma_store.1" 108 bytes once pytest's run counter had two
    # digits (/tmp/pytest-of-root/pytest-19/popen-gw1/ray0): "the second node did not join".
    temp = Path(tempfile.mkdtemp(prefix="ray-", dir="/tmp"))
    port = _free_port()
    env = dict(os.environ, RAY_AUTH_MODE="token", RAY_AUTH_TOKEN=secrets.token_hex(32))
    address = f"127.0.0.1:{port}"
    try:
        subprocess.run([RAY, "start", "--head", "--port", str(port), "--num-cpus", "1", "--temp-dir", str(temp),
                        "--include-dashboard=false", "--disable-usage-stats"],
                       env=env, check=True, capture_output=True, timeout=120)
        _join(address, temp, env)
        yield env, address
    finally:
        _stop(str(temp))
        shutil.rmtree(temp, ignore_errors=True)


def test_the_finalizer_finds_processes_by_their_temp_dir(tmp_path):
    marker = str(tmp_path / "marker-dir")
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", marker])
    try:
        deadline = time.time() + 30  # until the child has exec'd (its cmdline is pytest's before that)
        while proc.pid not in _ours(marker) and time.time() < deadline:
            time.sleep(0.05)
        assert proc.pid in _ours(marker)
        _stop(marker)
        assert proc.wait(timeout=10) != 0 and not _ours(marker)
    finally:
        proc.kill()


def test_pipeline_rl_8_with_one_generator_actor_per_node(two_nodes, tiny_dir, tmp_path):
    env, address = two_nodes
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "scalerl.cli", "train", "--model", "tiny", "--output", str(out), "--no-progress",
           "--steps", "4", "--eval-every", "2", "--backend", "ray", "--set", f"backend.ray_address={address}",
           "--set", "backend.generators=2", "--set", "pipeline=pipeline-rl-k", "--set", "k=8",
           "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4", "--set", "eval.problems=16",
           "--set", "eval.samples_per_problem=2", "--set", "forecast.enabled=false"]
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    _, rows, _ = read_runlog(out / "runlog.jsonl")
    evals = [r for r in rows if r["type"] == "eval"]
    assert [r["step"] for r in evals] == [0, 2, 4]  # to the end
    # Each node has one CPU and each actor reserves one: one actor per node.
    assert evals[-1]["pipeline/generator_nodes"] == 2
    assert evals[-1]["pipeline/actors_lost"] == 0
    assert max(r["lag_max"] for r in rows if r["type"] == "train") <= 8
