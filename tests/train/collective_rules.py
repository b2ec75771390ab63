"""NCCL's rules for a trainer group's collectives, checked on gloo ranks as each collective is made.

The tests' trainer ranks run on gloo (no GPU here), which takes anything: CPU tensors, Python
objects through the default group, a barrier with no device. NCCL does not. :class:`CollectiveRules`
wraps the ``torch.distributed`` functions a rank calls and fails the call that would break under
NCCL (:mod:`scalerl.train.collectives` says which group each kind goes through):

* an object collective or a barrier that scalerl makes must name the gloo object group
  (through the default group, NCCL pickles into a GPU tensor, and a rank waiting for rank 0's next
  order would be aborted by NCCL's watchdog after 10 minutes);
* a tensor collective that scalerl makes must not go through the object group (gloo on every
  backend: FSDP's shards live on the rank's GPU);
* every tensor handed to a tensor collective, by scalerl or by torch (FSDP, DCP, state-dict
  loading), must be on the rank's device (NCCL takes CUDA tensors of the rank's own GPU only).
  On CPU ranks that device is the CPU: this part guards against a tensor on another device.

    CollectiveRules(rank_device).install()      # in each spawned rank, once its groups are up
    installed().seen                             # calls checked, by name (the test's own evidence)
"""

from __future__ import annotations

import inspect
import sys
from collections import Counter
from typing import Any, Callable

import torch
import torch.distributed as dist

OBJECT_CALLS = ("broadcast_object_list", "all_gather_object", "gather_object", "scatter_object_list",
                "send_object_list", "recv_object_list", "barrier", "monitored_barrier")
TENSOR_CALLS = ("broadcast", "all_reduce", "reduce", "all_gather", "all_gather_into_tensor", "reduce_scatter",
                "reduce_scatter_tensor", "gather", "scatter", "all_to_all", "all_to_all_single", "send", "recv",
                "isend", "irecv")

_installed: "CollectiveRules | None" = None


class CollectiveRules:
    """The wrapped ``torch.distributed`` functions of this process, and what they saw."""

    def __init__(self, device: torch.device) -> None:
        self.device = device
        self.seen: Counter[str] = Counter()
        """Calls checked by the scalerl-side rules, by function name."""

    def install(self) -> "CollectiveRules":
        global _installed
        for name in OBJECT_CALLS + TENSOR_CALLS:
            real = getattr(dist, name, None)
            if real is not None:
                setattr(dist, name, self._wrapped(name, real))
        _installed = self
        return self

    def _wrapped(self, name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        signature = inspect.signature(real)

        def call(*args: Any, **kwargs: Any) -> Any:
            arguments = signature.bind(*args, **kwargs).arguments
            caller = sys._getframe(1).f_globals.get("__name__", "")
            if name in TENSOR_CALLS:
                self._check_devices(name, caller, arguments)
            if caller.startswith("scalerl."):
                self._check_group(name, caller, arguments.get("group"))
                self.seen[name] += 1
            return real(*args, **kwargs)

        return call

    def _check_group(self, name: str, caller: str, group: Any) -> None:
        from scalerl.train.collectives import object_group

        objects = object_group()
        if name in OBJECT_CALLS:
            assert group is objects, (f"{caller}: dist.{name} through {_named(group)}, not the gloo object group "
                                      "(under NCCL: objects pickled into GPU tensors, waits under NCCL's watchdog)")
        else:
            assert group is not objects, f"{caller}: dist.{name} of tensors through the gloo object group"

    def _check_devices(self, name: str, caller: str, arguments: dict[str, Any]) -> None:
        for tensor in _tensors(arguments.values()):
            assert tensor.device == self.device, (f"{caller}: dist.{name} handed a tensor on {tensor.device}, "
                                                  f"not the rank's device {self.device} (NCCL moves those only)")


def installed() -> CollectiveRules:
    """This process's rules (:meth:`CollectiveRules.install`)."""
    assert _installed is not None, "CollectiveRules(...).install() first"
    return _installed


def _tensors(values: Any) -> list[torch.Tensor]:
    out: list[torch.Tensor] = []
    for v in values:
        if isinstance(v, torch.Tensor):
            out.append(v)
        elif isinstance(v, (list, tuple)):
            out.extend(_tensors(v))
    return out


def _named(group: Any) -> str:
    return "the default group" if group is None or group is dist.group.WORLD else repr(group)
