"""A checkpoint's config.json that asks for a flash-attention kernel this machine does not have.

Models fine-tuned on GPUs are often saved with ``"attn_implementation": "flash_attention_2"`` in
their config.json (transformers writes what the training run used). transformers honours it at
every build and raises ImportError where the kernel is missing -- always on a CPU, and on a GPU
without the ``flash-attn`` package -- before a single weight is read: a traceback from
``scalerl train``'s profile choice or ``scalerl eval`` for a model that runs fine with SDPA. The
kernel changes how attention is computed, not what: the request is dropped (transformers then
picks SDPA, or eager where a model has no SDPA) with one warning that says so.
"""

from __future__ import annotations

import warnings
from typing import Any

from scalerl.errors import InputError, Note


def _flash_available(kernel: str) -> bool:
    """Whether transformers can run ``flash_attention_N`` here (``is_flash_attn_N_available``; a version this
    transformers has no check for is not here)."""
    import transformers.utils as hf_utils

    return bool(getattr(hf_utils, f"is_flash_attn_{kernel.rsplit('_', 1)[-1]}_available", lambda: False)())


def _accelerator() -> bool:
    """A GPU a hub kernel can be built for: CUDA, or (transformers' device table lists kernels for them too)
    Apple's MPS and Intel's XPU."""
    import torch

    xpu = getattr(torch, "xpu", None)
    return (torch.cuda.is_available() or torch.backends.mps.is_available()
            or bool(xpu is not None and xpu.is_available()))


#: transformers' own flash-attention names.
FLASH_KERNELS = ("flash_attention_2", "flash_attention_3", "flash_attention_4")
#: The package each needs (a hub kernel: ``kernels``).
_PACKAGES = {"flash_attention_2": "flash-attn", "flash_attention_3": "flash-attn-3 (flash_attn_interface)",
             "flash_attention_4": "flash-attn-4 (flash_attn.cute)"}


_WARNED: set[str] = set()


def _missing(requested: object) -> bool:
    """Whether ``requested`` (an ``attn_implementation``) is a flash-attention kernel this machine lacks --
    transformers' own (``flash_attention_2/3/4``) without its package, or one from the hub
    (``kernels-community/...``: GPU code fetched at load time) on a machine with no GPU."""
    kernel = requested.split("|")[-1] if isinstance(requested, str) else None  # ("paged|flash_attention_2")
    if kernel in FLASH_KERNELS:
        return not _flash_available(kernel)
    return bool(kernel and "/" in kernel) and not _accelerator()  # (a traceback on a CPU, found by review cs)


def _lacks(requested: str) -> str:
    """What this machine lacks for ``requested``: on a GPU the kernel's package (it said "no GPU" there: reviews
    cy, cz), else a GPU."""
    if _accelerator():
        return f"the {_PACKAGES.get(requested.split('|')[-1], 'kernels')} package, which is not installed"
    return "a GPU, which this machine does not have"


def refuse_missing_flash_attention(requested: object) -> None:
    """Refuse, in one line, an ``attn_implementation`` the caller asked for (not a checkpoint's config.json) that
    :func:`_missing` says cannot run here: loading went on to a "cannot load the weights" error (review cu)."""
    if _missing(requested):
        raise InputError(f"attn_implementation={requested!r} needs a flash-attention kernel and {_lacks(requested)}; leave it out "
                         "(transformers then uses SDPA where the model has it, which computes the same) or ask for "
                         "'sdpa' or 'eager'")


def drop_missing_flash_attention(config: Any) -> bool:
    """Clear ``config``'s request for a flash-attention kernel this machine lacks (:func:`_missing`; True where one
    was cleared, with a :class:`~scalerl.errors.Note` naming the request); leave any other request alone."""
    requested = getattr(config, "_attn_implementation", None)
    if not _missing(requested):
        return False
    config._attn_implementation = None  # transformers' default: SDPA where the model has it, else eager
    if requested in _WARNED:  # (the profile choice and the load both read the config: said once)
        return True
    _WARNED.add(requested)
    warnings.warn(f"the model's config.json asks for attn_implementation={requested!r}, which needs a flash-attention "
                  f"kernel and {_lacks(requested)}; using transformers' default attention instead (SDPA where the "
                  "model has it), which computes the same", Note, stacklevel=2)
    return True
