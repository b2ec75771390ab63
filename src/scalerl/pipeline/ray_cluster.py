"""Starting or joining the Ray cluster that the Ray backend's generator actors run on
(:mod:`~scalerl.pipeline.ray_backend`): Ray imported when needed (without it, one line that says
which extra installs it), a cluster address where nothing answers refused at once, SIGTERM left
as it was before Ray's start-up, and the trainer's GPU hidden from a one-machine cluster started
here.
"""

from __future__ import annotations

import contextlib
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


def _check_reachable(address: str | None) -> None:
    """A cluster address (``HOST:PORT``) where nothing answers is one line at once: Ray itself retries
    for about two minutes, printing GCS time-outs, then exits the process. (``auto``, ``local`` and
    ``ray://`` client addresses are Ray's to resolve.)"""
    host, sep, port = (address or "").rpartition(":")
    if not sep or not host or "://" in address or not port.isdigit():
        return
    try:
        socket.create_connection((host.strip("[]"), int(port)), timeout=5).close()
    except OSError as exc:
        raise ConfigError(
            f"backend.ray_address {address}: no Ray cluster answers there ({exc.strerror or exc}); start one on "
            f"that machine with ray start --head --port {port}, or fix the address (backend.ray_address or "
            "RAY_ADDRESS; unset, a local cluster starts by itself)") from None


def init_ray(address: str | None) -> None:
    """Start a local Ray cluster (``address`` None) or join one, leaving SIGTERM as it was: Ray's
    start-up puts its own crash handler on it, which answers ``kill PID`` (a batch scheduler's stop)
    with a C++ stack dump and an abort. The run ends as on the local backend instead, and resumes
    from its last checkpoint either way."""
    _check_reachable(address)
    with keeps_sigterm():
        _ray().init(address=address, include_dashboard=False)
