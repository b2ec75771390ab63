"""Refuse a checkpoint whose weights do not all reach the model.

``from_pretrained`` initialises every parameter the checkpoint does not name at random, prints
its load report (MISSING / UNEXPECTED) and returns the model: a state dict saved from a
``torch.compile``'d model (every key under ``_orig_mod.``) or a DDP-wrapped one (``module.``), or
weight files that lost some tensors, would train and evaluate a random model with exit 0.

    model, info = AutoModelForCausalLM.from_pretrained(source, output_loading_info=True)
    refusal = unloaded_weights(model, info, name_or_path)   # one line, or None when all loaded
"""

from __future__ import annotations

from typing import Any, Iterable

#: How many key names a refusal shows of each kind (a 7B model can miss hundreds).
SHOWN = 3


def unloaded_weights(model: Any, info: dict[str, Any], name_or_path: str) -> str | None:
    """Why the model loaded from ``name_or_path`` is (partly) random, as one line, or None.

    ``info``: ``from_pretrained(..., output_loading_info=True)``'s second value. Its missing keys
    already leave out what transformers fills in itself -- a head tied to the embedding (no
    ``lm_head.weight`` in the checkpoint), the model's ``_keys_to_ignore_on_load_missing`` --;
    buffers are left out here too: the model computes them at init (rotary frequencies, a causal
    mask), whatever checkpoint it loads. Unexpected keys alone are no refusal (the model has all
    its weights; TRL's value head ``v_head.*`` is one such extra), only a clue beside missing ones.
    """
    buffers = {name for name, _ in model.named_buffers()}
    missing = sorted(k for k in info.get("missing_keys") or () if k not in buffers)
    if not missing:
        return None
    unexpected = sorted(info.get("unexpected_keys") or ())
    total = sum(1 for k in model.state_dict() if k not in buffers)
    share = (f"none of its {total} weights is in the checkpoint: all" if len(missing) >= total
             else f"{len(missing)} of its {total} weights are not in the checkpoint and")
    line = f"cannot load model {name_or_path!r}: {share} would be initialised at random ({_some(missing)})"
    if unexpected:
        line += f", while it holds {len(unexpected)} weights the model has no place for ({_some(unexpected)})"
    prefix, under = common_prefix(missing, unexpected)
    if prefix is not None:
        which = "every missing weight is" if under == len(missing) else f"{under} of the missing weights are"
        return (f"{line}: {which} in the checkpoint under the prefix {prefix!r}, which a wrapped model's state "
                "dict adds (torch.compile: '_orig_mod.', DistributedDataParallel: 'module.'); strip the prefix "
                "and re-save -- save_pretrained of the unwrapped model (model._orig_mod, model.module), or "
                "rename the keys of the weight files")
    if unexpected:
        return (f"{line}: the weights are named for another model -- is config.json the one saved with them "
                "(and the weights saved with model.save_pretrained)?")
    return (f"{line}: the weight files hold part of the model only (a state dict saved by hand, or a tensor "
            "left out); save the whole model with model.save_pretrained(DIR)")


def common_prefix(missing: Iterable[str], unexpected: Iterable[str]) -> tuple[str | None, int]:
    """The prefix (ending in '.') under which the most missing keys appear among the unexpected
    ones, and how many: ``('_orig_mod.', 21)`` where ``_orig_mod.lm_head.weight`` stands for
    ``lm_head.weight`` and so on; ``(None, 0)`` where no unexpected key is a missing one prefixed."""
    missing = set(missing)
    counts: dict[str, int] = {}
    for key in unexpected:
        # Each '.' of the key is a place the model's own name could start (module._orig_mod.model....).
        for i, char in enumerate(key):
            if char == "." and key[i + 1:] in missing:
                counts[key[:i + 1]] = counts.get(key[:i + 1], 0) + 1
    if not counts:
        return None, 0
    prefix = max(counts, key=counts.__getitem__)
    return prefix, counts[prefix]


def _some(keys: list[str]) -> str:
    """The first few of ``keys``, and how many more."""
    more = f", ... {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(keys[:SHOWN]) + more
