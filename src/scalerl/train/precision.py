"""Mixed precision as real trainers do it: fp32 master weights and optimizer state, low-precision compute.

The trained parameters stay fp32 (the *master* weights) and AdamW's moments are fp32; the
forward and backward passes run in ``precision.compute`` under ``torch.autocast`` (matmuls in
bf16 / fp16, reductions and norms in fp32), so the gradients land in fp32 on the fp32
parameters and an update far below a bf16 ulp still accumulates. That is torch AMP, and what
accelerate and TRL do on one device; FSDP2 does the same with sharded fp32 parameters cast to
bf16 for compute (``MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32)``,
:meth:`Precision.fsdp_policy`) -- the optimizer and the checkpoint see fp32 either way.

fp16 has 5 exponent bits: small gradients underflow to 0, so the loss is scaled up before
backward and the gradients unscaled before clipping (``torch.amp.GradScaler``: dynamic scale,
halved and the step skipped on an overflow, doubled after 2,000 clean steps). bf16 has fp32's
range and needs no scaling.

The FP32 LM head (:mod:`scalerl.rl.fp32_head`) turns autocast off for the vocabulary
projection, so logits and log-probs stay fp32 in every mode, in trainer and generator alike.

    precision = Precision.create("bf16", device)
    with precision.autocast():
        loss = ...
    precision.backward(loss)
    precision.unscale_(optimizer); clip; precision.step(optimizer)

What the policy's weights are *stored* in (``model.dtype``, the dtype of ``final/``) is a
separate matter: :mod:`scalerl.train.policy`.
"""

from __future__ import annotations

import contextlib
import math
from typing import Any

import torch

from scalerl.train.dtypes import COMPUTE_DTYPE, compute_mode

#: The dtype of the trained weights and the optimizer state in every mode.
MASTER_DTYPE = torch.float32


def auto_mode(device: torch.device) -> str:
    """``auto``: bf16 on a GPU that supports it, fp16 on one that does not, fp32 elsewhere (CPU:
    bf16 matmuls are slower than fp32 ones on most CPUs, and nothing is short of memory)."""
    if device.type == "cuda":
        return "bf16" if torch.cuda.is_bf16_supported() else "fp16"
    return "fp32"


class Precision:
    """The compute dtype of a run and everything that depends on it (autocast, loss scaling)."""

    def __init__(self, mode: str, device: torch.device, *, init_scale: float = 2.0**16) -> None:
        self.mode = mode
        self.device = torch.device(device)
        self.compute_dtype: torch.dtype = getattr(torch, COMPUTE_DTYPE[mode])
        # fp16 only: bf16 shares fp32's exponent range, so its gradients do not underflow.
        self.scaler = torch.amp.GradScaler(self.device.type, init_scale=init_scale) if mode == "fp16" else None

    @classmethod
    def create(cls, mode: str, device: torch.device | str, **kwargs: Any) -> "Precision":
        """From a ``precision.compute`` value (aliases and ``auto`` resolved for ``device``)."""
        device = torch.device(device)
        mode = compute_mode(mode)
        return cls(auto_mode(device) if mode == "auto" else mode, device, **kwargs)

    @property
    def mixed(self) -> bool:
        """True when compute runs below fp32 (the master weights are fp32 regardless)."""
        return self.compute_dtype != MASTER_DTYPE

    @property
    def generator_dtype(self) -> torch.dtype:
        """The dtype a generator's own copy of the policy is held in: the compute dtype (an
        inference copy needs no master weights). Logits stay fp32 through the FP32 head."""
        return self.compute_dtype

    def autocast(self) -> contextlib.AbstractContextManager:
        """The context forward passes run in (a no-op in fp32).

        The weight-cast cache is off: torch keeps one cache for all threads and empties it whenever
        *any* thread leaves its outermost autocast. With the cache on, a weight used twice in one
        context (the shared-prompt pass runs the model on the prompt, then on the completions)
        shares one bf16 cast whose two gradients are summed in bf16 -- unless a generator thread
        emptied the cache in between, when they are summed in fp32. That made the same seed give
        different losses under load (tests/train/test_determinism.py). Without the cache every use
        casts afresh (a cast of the weights per use, a small cost) and gradients always meet in fp32.
        """
        if not self.mixed:
            return contextlib.nullcontext()
        return torch.autocast(self.device.type, dtype=self.compute_dtype, cache_enabled=False)

    # ---- backward and step ------------------------------------------------------------------
    def backward(self, loss: torch.Tensor) -> None:
        (self.scaler.scale(loss) if self.scaler is not None else loss).backward()

    def unscale_(self, optimizer: torch.optim.Optimizer) -> None:
        """Bring the gradients back to their true size (fp16) before clipping or checking them."""
        if self.scaler is not None:
            self.scaler.unscale_(optimizer)

    def step(self, optimizer: torch.optim.Optimizer) -> None:
        if self.scaler is None:
            optimizer.step()
            return
        self.scaler.step(optimizer)
        self.scaler.update()

    def skip(self, loss: float, grad_norm: float) -> str:
        """Record a step skipped for a non-finite loss or gradient; returns the reason logged.

        Under fp16 a finite loss with an infinite gradient is a loss-scale overflow: the scale
        is halved and the reason does not start with "non-finite" (the trainer's NaN streak
        counts only real divergence) -- until the scale falls below 1, where the gradient
        overflows unscaled and it is divergence after all.
        """
        plain = f"non-finite loss {loss} or grad norm {grad_norm}"
        if self.scaler is None:
            return plain
        scale = float(self.scaler.get_scale())
        self.scaler.update()  # sees the inf recorded by unscale_: halves the scale
        if math.isfinite(loss) and scale > 1.0:
            return f"fp16 gradient overflow at loss scale {scale:g}; scale lowered to {float(self.scaler.get_scale()):g}"
        return plain

    def metrics(self) -> dict[str, float]:
        return {"loss_scale": float(self.scaler.get_scale())} if self.scaler is not None else {}

    # ---- checkpoint -------------------------------------------------------------------------
    def state_dict(self) -> dict[str, Any]:
        """What an exact resume needs beyond the weights and the optimizer: the fp16 loss scale
        and its growth counter."""
        return {"mode": self.mode, "scaler": self.scaler.state_dict() if self.scaler is not None else None}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if self.scaler is not None and state.get("scaler"):
            self.scaler.load_state_dict(state["scaler"])

    # ---- multi-process training (FSDP2) -----------------------------------------------------
    def fsdp_policy(self) -> Any:
        """The same numerics for FSDP2's ``fully_shard``: parameters gathered in the compute dtype,
        gradients reduced in fp32 onto the fp32 shards (autocast is then not needed)."""
        from torch.distributed.fsdp import MixedPrecisionPolicy

        return MixedPrecisionPolicy(param_dtype=self.compute_dtype, reduce_dtype=MASTER_DTYPE)


#: fp32 compute: what a caller that passes no precision gets.
FULL = Precision("fp32", torch.device("cpu"))
