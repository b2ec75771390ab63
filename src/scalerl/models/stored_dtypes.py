"""The dtype each tensor of a model is stored in, as a Hugging Face checkpoint keeps it.

A checkpoint "in bf16" is not bf16 throughout: transformers keeps some tensors in fp32 whatever the checkpoint's
dtype (``_keep_in_fp32_modules_strict``: DeepSeek-V3's router ``gate.weight`` and ``e_score_correction_bias``; in
fp16 also ``_keep_in_fp32_modules``), and integer buffers (DeepSeek-V4's token -> expert table) are integers. A
``final/`` that cast every entry to the checkpoint's dtype rounded the router and sent tokens to other experts
(review co); one gathered from FSDP shards in that dtype rounded them before they were cast back (review cp).
"""

from __future__ import annotations

import re
from typing import Sequence

import torch


def kept_in_fp32(model: torch.nn.Module, dtype: torch.dtype) -> list[re.Pattern]:
    """The names ``model`` keeps in fp32 in a checkpoint stored in ``dtype``, as patterns of whole name parts."""
    names: set[str] = set()
    if dtype in (torch.bfloat16, torch.float16):
        names |= set(getattr(model, "_keep_in_fp32_modules_strict", None) or ())
    if dtype == torch.float16:
        names |= set(getattr(model, "_keep_in_fp32_modules", None) or ())
    return [re.compile(rf"(^|\.){re.escape(n)}(\.|$)") for n in sorted(names)]


def stored_dtype_of(name: str, tensor: torch.Tensor, dtype: torch.dtype, kept: Sequence[re.Pattern]) -> torch.dtype:
    """The dtype entry ``name`` is stored in: its own for an integer or boolean tensor, fp32 for a name ``kept``
    (:func:`kept_in_fp32`), else ``dtype``."""
    if not tensor.is_floating_point():
        return tensor.dtype
    return torch.float32 if any(p.search(name) for p in kept) else dtype
