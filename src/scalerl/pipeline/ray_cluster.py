"""Starting or joining the Ray cluster that the Ray backend's generator actors run on
(:mod:`~scalerl.pipeline.ray_backend`): Ray imported when needed (without it, one line that says
which extra installs it), a cluster address where nothing answers refused at once, SIGTERM left
as it was before Ray's start-up, and the trainer's GPU hidden from a one-machine cluster started
here.
"""

from __future__ import annotations

import contextlib
import math
import os
import socket
from typing import TYPE_CHECKING

from scalerl.errors import ConfigError
from scalerl.stop_signals import keeps_sigterm

if TYPE_CHECKING:
    import torch


def _ray():
    try:
        import ray
    except ImportError:
        raise ConfigError("--backend ray needs Ray: pip install 'scalerl[ray]'") from None
    return ray


@contextlib.contextmanager
def _without_trainer_gpu(device: "torch.device", address: str | None):
    """Starting a one-machine cluster from a trainer on a GPU: hide that GPU from Ray, so that no
    generator actor is placed on it (the trainer's CUDA context already exists and is unaffected).
    A cluster started with ``ray start`` is the user's to lay out (docs/distributed.md)."""
    if address is not None or device.type != "cuda":
        yield
        return
    import torch

    visible = os.environ.get("CUDA_VISIBLE_DEVICES")
    ids = visible.split(",") if visible else [str(i) for i in range(torch.cuda.device_count())]
    index = device.index if device.index is not None else torch.cuda.current_device()
    os.environ["CUDA_VISIBLE_DEVICES"] = ",".join(g for i, g in enumerate(ids) if i != index)
    try:
        yield
    finally:
        if visible is None:
            os.environ.pop("CUDA_VISIBLE_DEVICES", None)
        else:
            os.environ["CUDA_VISIBLE_DEVICES"] = visible


def check_reachable(address: str | None, name: str = "backend.ray_address") -> None:
    """A cluster address (``HOST:PORT``, or a Ray Client's ``ray://HOST:PORT``) where nothing answers
    is one line at once: Ray itself retries for about two minutes, printing GCS time-outs, then exits
    the process (a client retries for 30 s, then raises). (``auto`` and ``local`` are Ray's to resolve.)"""
    rest = (address or "").removeprefix("ray://")
    host, sep, port = rest.rpartition(":")
    if not sep or not host or "://" in rest or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        start = ("ray start --head (a Ray Client listens on its --ray-client-server-port, 10001)"
                 if address.startswith("ray://") else f"ray start --head --port {port}")
        raise ConfigError(
            f"{name} {address}: no Ray cluster answers there ({exc.strerror or exc}); start one on "
            f"that machine with {start}, or fix the address ({name} or RAY_ADDRESS; unset, a local cluster starts "
            "by itself)") from None


def init_ray(address: str | None, name: str = "backend.ray_address", **options) -> None:
    """Start a local Ray cluster (``address`` and ``RAY_ADDRESS`` unset) or join one, leaving SIGTERM
    as it was: Ray's start-up puts its own crash handler on it, which answers ``kill PID`` (a batch
    scheduler's stop) with a C++ stack dump and an abort. The run ends as on the local backend
    instead, and resumes from its last checkpoint either way. ``name``: the setting that gave the
    address, for the messages; ``options``: more of ``ray.init``'s arguments."""
    address = address or os.environ.get("RAY_ADDRESS") or None
    check_reachable(address, name)
    ray = _ray()
    try:
        with keeps_sigterm():
            ray.init(address=address, include_dashboard=False, **options)
    except ConnectionError as exc:  # `auto` with no cluster running, a client that timed out: a traceback
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), type(exc).__name__)
        first = first.split(". ")[0]  # (Ray's next sentence names its own flag and RAY_ADDRESS)
        if address is None:
            raise ConfigError(f"Ray could not start a local cluster: {first} (see the Ray logs under "
                              "/tmp/ray/session_latest/logs)") from None
        raise ConfigError(f"{name} {address}: {first.rstrip('.')}; start a cluster with ray start --head, or unset "
                          f"{name} and RAY_ADDRESS (a local cluster then starts by itself)") from None


def nodes_hold(ray, cpus: float, gpus: float = 0.0) -> float:
    """How many tasks or actors of ``cpus`` CPUs and ``gpus`` GPUs each the live nodes of the cluster hold at once
    (each runs on one node: two 3-CPU nodes hold two of 2 CPUs, not three -- review dg). One that no node can take
    waits for ever, said only in Ray's workers' logs. inf where they ask for nothing."""
    total = 0.0
    for node in ray.nodes():
        if not node.get("Alive"):
            continue
        have = node.get("Resources", {})
        total += min((math.floor(have.get(name, 0.0) / need + 1e-9) for name, need in (("CPU", cpus), ("GPU", gpus))
                      if need > 0), default=math.inf)
    return total
