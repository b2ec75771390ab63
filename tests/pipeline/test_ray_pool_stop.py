"""A SIGTERM while a RayPool starts its actors stops the run as a SIGTERM (143), not as Ctrl-C (130).

No cluster here: the pool's start is replaced by what Ray's ``ray.get`` does with a stop -- the
exception our SIGTERM handler raised (Terminated) comes out of its C code as a plain
KeyboardInterrupt."""

from __future__ import annotations

import os
import signal
import time
from types import SimpleNamespace

from scalerl.errors import Terminated
from scalerl.pipeline import ray_backend
from scalerl.pipeline.ray_backend import RayPool
from scalerl.stop_signals import sigterm_stops_like_ctrl_c


def test_a_sigterm_while_the_actors_start_stays_a_sigterm(random_model, monkeypatch):
    """`kill PID` of `scalerl train --backend ray` while its generator actors started (the pool's
    ray.get on their ready calls) said "scalerl train: interrupted" and exited 130, as Ctrl-C does
    (benchmarks/kill_fuzz.py --backend ray): a batch scheduler's stop read as a user's. It is
    Terminated again ("terminated (SIGTERM)", 143)."""
    def start_actors(self, spec, cpus, gpus):
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at the next bytecode: never this long
        except Terminated:
            raise KeyboardInterrupt from None  # what ray.get makes of it

    monkeypatch.setattr(ray_backend, "_ray", lambda: SimpleNamespace())
    monkeypatch.setattr(RayPool, "_join_cluster", lambda self, address, device: None)
    monkeypatch.setattr(RayPool, "_check_resources", lambda self, size, cpus, gpus: None)
    monkeypatch.setattr(RayPool, "_start_actors", start_actors)
    stopped: BaseException | None = None
    with sigterm_stops_like_ctrl_c():
        try:
            RayPool(SimpleNamespace(generator="hf"), random_model, 0, 1)
        except KeyboardInterrupt as exc:  # (caught here: a plain one would stop pytest itself)
            stopped = exc
    assert isinstance(stopped, Terminated), repr(stopped)
