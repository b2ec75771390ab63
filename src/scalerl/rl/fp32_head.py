"""FP32 LM head: logits computed in fp32 on a model whose body runs in bf16 (or fp16).

MiniMax-M1 found, and ScaleRL confirms (it moves the ceiling A), that the importance ratio
pi_train / pi_gen picks up rounding noise when the vocabulary projection runs in bf16 on
generator and trainer: bf16 keeps about 3 significant digits, and two different kernels
round the same logits differently. Computing the head in fp32 on both sides removes that
part of the mismatch.

:func:`enable_fp32_lm_head` changes the class of the model's output projection (an
``nn.Linear``) to :class:`FP32Linear`, whose forward upcasts the hidden states and the weight
for the matmul (autocast off, so an outer ``torch.autocast`` cannot cast it back). Nothing is
untied or copied: the weight stays the same bf16 parameter (shared with the input embedding
when tied), ``state_dict`` keys and dtypes are unchanged, and gradients flow back through the
cast to it. Because it is a class swap, not a closure, the model still deep-copies and
pickles correctly (a generator may hold a copy of the trainer's model).

Cost: each call casts the head weight to a temporary fp32 tensor (vocab x hidden floats) --
per decode step when generating with Hugging Face -- and the fp32 logits take twice the
memory of bf16 ones, which for long sequences is the larger of the two.

    model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
    enable_fp32_lm_head(model)      # model(...).logits.dtype == torch.float32
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import Tensor, nn

from scalerl.errors import ConfigError

__all__ = ["FP32Linear", "enable_fp32_lm_head", "fp32_lm_head_enabled"]


class FP32Linear(nn.Linear):
    """An ``nn.Linear`` whose matmul runs in fp32 whatever the parameter and input dtypes."""

    def forward(self, input: Tensor) -> Tensor:  # noqa: A002 - nn.Linear's own argument name
        with torch.autocast(device_type=input.device.type, enabled=False):
            bias = self.bias.float() if self.bias is not None else None
            return F.linear(input.float(), self.weight.float(), bias)


def enable_fp32_lm_head(model: nn.Module) -> nn.Module:
    """Make ``model`` (any Hugging Face causal LM) compute its logits in fp32. Idempotent.

    Returns the same model, modified in place.
    """
    get_head = getattr(model, "get_output_embeddings", None)
    head = get_head() if callable(get_head) else None
    if isinstance(head, FP32Linear):
        return model
    if type(head) is not nn.Linear:  # a user's model: said in one line by the CLI, not a traceback
        raise ConfigError(
            f"cannot enable the FP32 LM head: {type(model).__name__}.get_output_embeddings() returned "
            f"{type(head).__name__}, not torch.nn.Linear; train this model with --set fp32_lm_head=false"
        )
    head.__class__ = FP32Linear
    return model


def fp32_lm_head_enabled(model: nn.Module) -> bool:
    get_head = getattr(model, "get_output_embeddings", None)
    return callable(get_head) and isinstance(get_head(), FP32Linear)
