"""Which process group a trainer group's collectives go through: one code path, right under gloo
(CPU ranks) and NCCL (one GPU a rank).

* **Tensors** -- FSDP's all-gathers and reduce-scatters, DTensor's ``full_tensor``, the gradient
  norm, :func:`~scalerl.train.shard_generation.any_rank`, the buffers' broadcast -- go through the
  default group, on the rank's own device (:attr:`~scalerl.train.distributed.Rank.device`): NCCL
  moves CUDA tensors of the rank's GPU only.
* **Python objects and waits** -- rank 0's orders, the step's metrics, the completions gathered
  from the shards, barriers, the planning of a sharded checkpoint -- go through
  :func:`object_group`, a gloo group of the same ranks (:func:`open_object_group`, right after
  the default group). Under NCCL, torch's object collectives pickle into a tensor on the current
  GPU and back (a device copy and a synchronisation a call), and, worse, a rank waiting for rank
  0's next order waits *inside* a collective: NCCL's watchdog aborts the process once one has
  waited its timeout (10 minutes by default), so rank 0 alone for longer -- loading a large model,
  an evaluation, writing ``final/`` -- killed the other ranks. On gloo the wait is plain TCP,
  bounded by :data:`WAIT_TIMEOUT`.

A rank whose process dies closes its gloo connections, so the others fail at once instead of
waiting out :data:`WAIT_TIMEOUT`; ``scalerl train --nproc`` and torchrun also stop the whole group when one
rank exits. Across machines gloo must reach the other machines: it uses the address this
machine's host name resolves to, or the interface ``GLOO_SOCKET_IFNAME`` names.
"""

from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist

WAIT_TIMEOUT = timedelta(days=7)
"""How long a rank waits in an object collective or a barrier (gloo's timeout): the longest rank 0
may work alone (load a model, evaluate, write ``final/``) before the others give up. Not a hang
detector -- a dead rank fails the others at once (its connections close) -- only a bound."""

_objects: dist.ProcessGroup | None = None


def open_object_group() -> dist.ProcessGroup:
    """The gloo group for objects and waits, made once the default group is up (every rank,
    in the same order: ``new_group`` is itself a collective)."""
    global _objects
    _objects = dist.new_group(backend="gloo", timeout=WAIT_TIMEOUT)
    return _objects


def object_group() -> dist.ProcessGroup:
    """The group :func:`open_object_group` made. A RuntimeError where none was: falling back to the
    default group would pass every test on gloo and put objects through NCCL on GPUs."""
    if _objects is None:
        raise RuntimeError("no object group: call scalerl.train.collectives.open_object_group() after "
                           "torch.distributed.init_process_group (scalerl.train.launch does)")
    return _objects


def forget_object_group() -> None:
    """After ``destroy_process_group`` (which destroys every group): the next group opens its own."""
    global _objects
    _objects = None


def barrier() -> None:
    """Wait for every rank, on the gloo group: no device to choose (NCCL's barrier is an all-reduce
    on some GPU), and the wait may be long (rank 0 loading a model the others then only shape)."""
    dist.barrier(group=object_group())
