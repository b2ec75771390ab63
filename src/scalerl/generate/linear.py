"""Which GEMM library the decode loop's linear layers use on a CPU: oneDNN where MKL runs below the
core's vector width (AMD CPUs with AVX-512), MKL (torch's default) everywhere else.

torch computes an fp32 ``nn.Linear`` on a CPU with MKL's ``sgemm``. MKL chooses its kernels by
CPU vendor: on an AMD EPYC with AVX-512 (Zen 5, torch 2.13's MKL 2024.2) it ran the tiny model's
decode shapes at 110 GFLOP/s, where oneDNN -- the other GEMM library in every torch CPU build,
choosing by instruction set -- ran them at 213 (128 x 128 x 512, one thread). oneDNN pays ~10 us
more per call, so below :data:`MIN_ROWS` rows MKL stays faster and keeps them.

Only the generator's own forward passes switch (:func:`decoding` around them, thread-local): the
trainer's passes -- with or without gradients, in any thread -- keep MKL, so ``pi_train`` is
computed exactly as before, and the generator's log-probs agree with it to float rounding (the
two libraries sum the same products in another order; ~1e-6, as the decode attention already
differs). Which library a call takes depends only on its shape, so a seeded run repeats itself.

    from scalerl.generate.linear import decoding, use_decode_linear
    use_decode_linear(model)         # True when switched (an fp32 model on an AMD CPU with AVX-512)
    with decoding():
        logits = model(...)          # its linear layers with >= MIN_ROWS rows run on oneDNN
"""

from __future__ import annotations

import contextlib
import functools
import threading
from pathlib import Path
from typing import Any, Iterator

import torch

#: Rows (the input's leading dimensions flattened) from which oneDNN is used: its fixed cost per call
#: (~10 us) made it slower at 8 rows and faster from 32 (128 -> 512 features, one thread, Zen 5).
MIN_ROWS = 32

_state = threading.local()  # .on: this thread is in a generator's forward pass


@contextlib.contextmanager
def decoding() -> Iterator[None]:
    """Let switched linear layers use oneDNN for the forward passes run inside, in this thread only."""
    before = getattr(_state, "on", False)
    _state.on = True
    try:
        yield
    finally:
        _state.on = before


def _forward(self: torch.nn.Linear, x: torch.Tensor) -> torch.Tensor:
    """``nn.Linear.forward``; on oneDNN inside :func:`decoding`, for fp32, no-grad calls of MIN_ROWS rows.

    Checked at every call, not only when the layer was switched: a switched model pickled or copied to
    a machine where oneDNN is not chosen keeps torch's path there; so does torch's own switch
    (``torch.backends.mkldnn.flags(enabled=False)``); and a bias that is not contiguous (a strided or
    expanded view), which oneDNN's op reads as if it were (wrong numbers; past its storage at stride 0)."""
    weight, bias = self.weight, self.bias
    if (getattr(_state, "on", False) and x.dim() >= 2 and x.numel() >= MIN_ROWS * x.shape[-1]
            and x.dtype == torch.float32 and weight.dtype == torch.float32 and type(weight) is torch.nn.Parameter
            and (bias is None or bias.is_contiguous())
            and not torch.is_grad_enabled() and not torch.is_autocast_enabled("cpu") and x.device.type == "cpu"
            and torch.backends.mkldnn.enabled and onednn_faster()):
        return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")
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
            ours = torch.ops.mkldnn._linear_pointwise(x, w, b, "none", [], "")
        return bool(torch.allclose(ours, torch.nn.functional.linear(x, w, b), rtol=1e-5, atol=1e-5))
    except (AttributeError, RuntimeError):  # a torch build without the op
        return False


class DecodeLinear(torch.nn.Linear):
    """An ``nn.Linear`` whose forward passes inside :func:`decoding` may run on oneDNN (:func:`_forward`).
    A class swap, not a bound method in the instance: the model still pickles (``torch.save``, Ray)
    and deep-copies."""

    forward = _forward


def use_decode_linear(model: Any) -> bool:
    """Switch ``model``'s ``nn.Linear`` layers to :class:`DecodeLinear` when it computes in fp32 on a CPU
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
            module.__class__ = DecodeLinear
    return True
