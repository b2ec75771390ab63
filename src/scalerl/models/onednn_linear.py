"""Which GEMM library an fp32 model's linear layers use on a CPU: oneDNN where MKL runs below the
core's vector width (AMD CPUs with AVX-512), MKL (torch's default) everywhere else.

torch computes an fp32 ``nn.Linear`` on a CPU with MKL's ``sgemm``. MKL chooses its kernels by
CPU vendor: on an AMD EPYC with AVX-512 (Zen 5, torch 2.13's MKL 2024.2) it ran the tiny model's
decode shapes at 110 GFLOP/s, where oneDNN -- the other GEMM library in every torch CPU build,
choosing by instruction set -- ran them at 213 (128 x 128 x 512, one thread); a training pass
(forward and backward of 128 sequences of 64 tokens) took 0.41-0.45 CPU-s instead of 0.67-0.72
(``python benchmarks/onednn_linear.py``). oneDNN pays ~10 us more per call, so below :data:`MIN_ROWS` rows MKL stays faster and keeps them.

A switched layer (:func:`use_onednn_linear`, a class swap) runs every fp32 CPU pass of
:data:`MIN_ROWS` rows or more on oneDNN: the generator's decode steps (no gradients: oneDNN's
linear op) and the trainer's passes (:class:`_OneDNNLinearFn`: the forward on that op, the
backward's two products on it too, as ``grad @ W`` and ``grad.T @ x``). The two libraries sum
the same products in another order (~1e-6 apart), so a switched run differs from an unswitched
one at float rounding -- but which library a call takes depends only on its shape, so a seeded
run repeats itself, and a resumed run takes the same paths as the uninterrupted one.

    from scalerl.models.onednn_linear import use_onednn_linear
    use_onednn_linear(model)   # True when switched (an fp32 model on an AMD CPU with AVX-512)
    logits = model(...)        # its linear layers with >= MIN_ROWS rows run on oneDNN
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

import torch

#: Rows (the input's leading dimensions flattened) from which oneDNN is used: its fixed cost per call
#: (~10 us) made it slower at 8 rows and faster from 32 (128 -> 512 features, one thread, Zen 5).
MIN_ROWS = 32


def _onednn(x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
    """``x @ weight.T + bias`` on oneDNN (its fp32 inner-product primitive)."""
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


class _OneDNNLinearFn(torch.autograd.Function):
    """``F.linear`` with its forward and backward products on oneDNN. The backward is plain algebra
    (``dx = g @ W``, ``dW = g.T @ x``, ``db = sum g``), written as linear ops: ``dW`` as the linear of
    ``g.T`` by ``x.T`` -- the op makes its input view contiguous itself and reads the weight view in
    place (at 8192 x 128 x 128, Zen 5, one thread, ``benchmarks/onednn_linear.py``: MKL 2.5 ms,
    explicit transposed copies of both 2.0-2.2 -- 4.1 in a fresh process, whose allocator maps every
    copy's pages anew --, views 1.4-1.6) --, ``dx`` with a transposed copy of the (small)
    weight. Only what a gradient asked for needs is kept and computed (a frozen weight, LoRA's base:
    neither the input kept nor ``dW`` computed, as torch's own linear). A backward that is itself
    differentiated (``create_graph=True``: a gradient penalty) runs on torch's differentiable ops,
    since oneDNN's op has no derivative of its own."""

    @staticmethod
    def forward(ctx: Any, x: torch.Tensor, weight: torch.Tensor, bias: torch.Tensor | None) -> torch.Tensor:
        wants_dx, wants_dw, _ = ctx.needs_input_grad
        ctx.save_for_backward(x if wants_dw else None, weight if wants_dx else None)
        ctx.x_shape = x.shape
        return _onednn(x, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: torch.Tensor) -> tuple[torch.Tensor | None, ...]:
        x, weight = ctx.saved_tensors
        wants_dx, wants_dw, wants_db = ctx.needs_input_grad
        grad_rows = grad.reshape(-1, grad.shape[-1]).contiguous()
        x_rows = x.reshape(-1, x.shape[-1]).contiguous() if wants_dw else None
        dx = dw = db = None
        if torch.is_grad_enabled():  # create_graph: the products recorded for a second backward
            if wants_dx:
                dx = (grad_rows @ weight).reshape(ctx.x_shape)
            if wants_dw:
                dw = grad_rows.t() @ x_rows
        else:
            if wants_dx:
                dx = _onednn(grad_rows, weight.t().contiguous(), None).reshape(ctx.x_shape)
            if wants_dw:
                dw = _onednn(grad_rows.t(), x_rows.t(), None)
        if wants_db:
            db = grad_rows.sum(0)
        return dx, dw, db


#: Whether a ``torch.func`` transform (grad, vmap, jvp) is running: the autograd function above defines
#: no rules for them, torch's linear does. (torch's own query, looked up once; a torch without it: never.)
_functorch_active = getattr(torch._C, "_are_functorch_transforms_active", lambda: False)


def _forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``nn.Linear.forward``; on oneDNN for fp32 CPU calls of MIN_ROWS rows or more, with or without
    gradients (:class:`_OneDNNLinearFn` where autograd records the call).

    Checked at every call, not only when the layer was switched: a switched model pickled or copied to
    a machine where oneDNN is not chosen keeps torch's path there; so does torch's own switch
    (``torch.backends.mkldnn.flags(enabled=False)``), autocast, a call traced by ``torch.compile``
    (which knows torch's linear, not this function) or transformed by ``torch.func``, a weight that is
    not a plain parameter (an FSDP or tensor-parallel shard), and a bias that is not contiguous (a strided or expanded view), which
    oneDNN's op reads as if it were (wrong numbers; past its storage at stride 0)."""
    weight, bias = self.weight, self.bias
    if (x.dim() >= 2 and x.numel() >= MIN_ROWS * x.shape[-1]
            and x.dtype == torch.float32 and weight.dtype == torch.float32 and type(weight) is torch.nn.Parameter
            and (bias is None or bias.is_contiguous())
            and not torch.is_autocast_enabled("cpu") and x.device.type == "cpu"
            and not torch.compiler.is_compiling() and not _functorch_active()
            and torch.backends.mkldnn.enabled and onednn_faster()):
        if torch.is_grad_enabled() and (x.requires_grad or weight.requires_grad
                                        or (bias is not None and bias.requires_grad)):
            return _OneDNNLinearFn.apply(x, weight, bias)
        return _onednn(x, weight, bias)
    return torch.nn.Linear.forward(self, x)


@functools.cache
def onednn_faster() -> bool:
    """Whether this machine is one where oneDNN's fp32 GEMM beat MKL's: an AMD CPU with AVX-512 (read
    from /proc/cpuinfo: Linux), with oneDNN in the torch build, and its linear op giving F.linear's
    numbers on a probe. Elsewhere nothing is switched (Intel CPUs: MKL runs AVX-512 there; AVX2-only
    CPUs: both libraries run the same width, and oneDNN's fixed cost would make it slower)."""
    try:
        amd = "AuthenticAMD" in Path("/proc/cpuinfo").read_text(errors="replace")
    except OSError:
        return False
    if not (amd and torch.backends.cpu.get_cpu_capability().startswith("AVX512") and torch.backends.mkldnn.is_available()):
        return False
    try:
        generator = torch.Generator().manual_seed(0)
        x, w, b = (torch.randn(shape, generator=generator) for shape in ((MIN_ROWS, 1, 16), (8, 16), (8,)))
        with torch.no_grad():
            ours = _onednn(x, w, b)
        return bool(torch.allclose(ours, torch.nn.functional.linear(x, w, b), rtol=1e-5, atol=1e-5))
    except (AttributeError, RuntimeError):  # a torch build without the op
        return False


class OneDNNLinear(torch.nn.Linear):
    """An ``nn.Linear`` whose fp32 CPU passes may run on oneDNN (:func:`_forward`). A class swap, not a
    bound method in the instance: the model still pickles (``torch.save``, Ray) and deep-copies."""

    forward = _forward


def use_onednn_linear(model: Any) -> bool:
    """Switch ``model``'s ``nn.Linear`` layers to :class:`OneDNNLinear` when it computes in fp32 on a CPU
    where :func:`onednn_faster`; True if it did (or had). Their weights and state dict are untouched.
    The output projection stays as it is: :mod:`scalerl.rl.fp32_head` swaps that one's class itself."""
    try:
        weight = next(model.parameters())
    except (StopIteration, AttributeError, TypeError):
        return False
    if weight.device.type != "cpu" or weight.dtype != torch.float32 or not onednn_faster():
        return False
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    for module in model.modules():
        if type(module) is torch.nn.Linear and module is not head:
            module.__class__ = OneDNNLinear
    return True
