"""Which attention kernels the passes use: SDPA, except for the decode loop's single-query steps on
a CPU (one batched matmul-softmax-matmul), and on CUDA without cuDNN's kernel unless asked for.

torch's CPU SDPA kernel (``cpu_flash_attention``) runs a query of length 1 as a loop of tiny
per-(row, head) GEMVs; on the tiny model's decode step (128 rows x 4 heads, ~30 keys) it took
422 us a layer against 284 us for ``softmax(q k^T * s + mask) v`` as two batched matmuls, and
483 vs 329 us on the decode cache's strided views (``benchmarks/cpu_decode.py``). The
math is transformers' own eager attention; only single-query, no-grad calls on a CPU take this
path -- prefill, the trainer's forward and backward, and every accelerator keep SDPA, so the
trainer's log-probs are computed exactly as before and the generator's agree with them to
float rounding (~1e-6, as two SDPA kernels would).

It is registered with transformers' ``AttentionInterface`` (and SDPA's mask builder) under
:data:`NAME`, the documented way to plug an attention function into any model that uses the
interface; :func:`use_decode_attention` switches a model on a CPU from ``sdpa`` to it.

    from scalerl.generate.attention import use_decode_attention
    use_decode_attention(model)      # True when switched (an sdpa model on a CPU)

**cuDNN attention on CUDA** (:func:`cudnn_attention`, ``run.cudnn_attention``, off by default).
torch (2.11 on an H200, seen) sends bf16/fp16 SDPA calls with a padding mask to cuDNN's kernel
first, and cuDNN builds an execution plan for every new shape (batch, query and key lengths). RL
passes have a new shape almost every call: each decode step has one more key, rows finish and
leave the batch, and every update's micro-batches have their own padded length. On one H200 the
first bf16 decode of 32 rows x 64 tokens of a 90M Qwen2 took 172.7 ms a step, the same decode
again 15-19 ms, as fp32 (no cuDNN kernel) did the first time (``benchmarks/figures/
gpu_check_h200.txt``); a published report of the same (FunASR issue 3704, torch 2.11 on a B200)
measured 0.44 s a forward and 0.55 s a backward per new shape, and the same steady-state speed
without it. So scalerl's processes that compute on CUDA turn it off (the flash and memory-efficient
kernels take those calls); ``--set run.cudnn_attention=true`` leaves torch's choice.
"""

from __future__ import annotations

from typing import Any

import torch
from transformers import AttentionInterface
from transformers.integrations.sdpa_attention import repeat_kv, sdpa_attention_forward
from transformers.masking_utils import AttentionMaskInterface, sdpa_mask

NAME = "sdpa_cpu_decode"


def decode_attention(
    module: torch.nn.Module,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: torch.Tensor | None,
    dropout: float = 0.0,
    scaling: float | None = None,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """``sdpa_attention_forward``, with single-query no-grad CPU calls done as batched matmuls."""
    single = query.shape[2] == 1 and query.device.type == "cpu" and not torch.is_grad_enabled()
    plain = kwargs.get("position_bias") is None and kwargs.get("s_aux") is None and kwargs.get("softcap") is None
    if not (single and plain):
        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    groups = getattr(module, "num_key_value_groups", 1)
    key, value = repeat_kv(key, groups), repeat_kv(value, groups)
    scale = scaling if scaling is not None else query.shape[-1] ** -0.5
    scores = torch.matmul(query, key.transpose(2, 3)) * scale  # [B, H, 1, L]
    if attention_mask is not None:
        if attention_mask.dtype == torch.bool:  # SDPA's mask: True = attend
            scores = scores.masked_fill(~attention_mask, torch.finfo(scores.dtype).min)
        else:
            scores = scores + attention_mask
    weights = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(weights, value).transpose(1, 2).contiguous(), None  # [B, 1, H, D], as SDPA's


AttentionInterface.register(NAME, decode_attention)
AttentionMaskInterface.register(NAME, sdpa_mask)  # the same boolean masks SDPA gets


def cudnn_attention(device: torch.device | str, enabled: bool) -> bool | None:
    """Let SDPA use cuDNN's attention kernel on CUDA (``enabled``) or not; returns the setting it
    replaced, to restore at the end (None off CUDA, where nothing is changed). torch's switch is
    process-wide: one setting for every model of the process."""
    if torch.device(device).type != "cuda":
        return None
    previous = torch.backends.cuda.cudnn_sdp_enabled()
    torch.backends.cuda.enable_cudnn_sdp(enabled)
    return previous


def use_decode_attention(model: Any) -> bool:
    """Switch ``model`` from ``sdpa`` to :data:`NAME` when it runs on a CPU; True if it did (or had)."""
    config = getattr(model, "config", None)
    current = getattr(config, "_attn_implementation", None)
    if current == NAME:
        return True
    try:
        device = next(model.parameters()).device
    except (StopIteration, AttributeError, TypeError):
        return False
    if current != "sdpa" or device.type != "cpu" or not hasattr(model, "set_attn_implementation"):
        return False
    model.set_attn_implementation(NAME)
    return getattr(model.config, "_attn_implementation", None) == NAME
