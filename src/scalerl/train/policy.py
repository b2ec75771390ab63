"""The policy the trainer optimises: how it is loaded, what a checkpoint holds of it, how it is saved.

    policy = load_policy(cfg, device)                   # model, tokenizer, precision, storage dtype
    policy = load_policy(cfg, device, placement="meta") # a trainer rank > 0: no weights read (FSDP)
    state = policy_weights(policy.model)                # the checkpoint's "model" entry
    load_policy_weights(policy.model, state)            # on resume
    save_policy(policy, "runs/x/final", lora_save="merged")

Loading, in order:

1. the weights in fp32 -- the master copy AdamW steps -- whatever the checkpoint is stored in
   (a bf16 hub model is upcast). With LoRA under mixed precision the frozen base stays in the
   compute dtype instead (it is never stepped, so it needs no master copy), and the adapters
   are fp32;
2. the FP32 LM head (``recipe.fp32_lm_head``);
3. LoRA adapters (``model.lora.rank > 0``, :mod:`scalerl.models.lora`);
4. gradient checkpointing (``model.gradient_checkpointing``; non-reentrant, so a frozen
   embedding under LoRA needs no ``enable_input_require_grads``).

Before 2, dropout is turned off (:mod:`scalerl.models.dropout`; ``model.keep_dropout`` keeps it):
generation samples without it, so the update must score without it.

The checkpoint holds what an exact resume needs and no more: the master weights (with LoRA,
the adapters only: the frozen base is re-read from the model it came from), beside the
optimizer state (which only ever covers trainable parameters) and the fp16 loss scale.
``final/`` is written in ``model.dtype`` -- by default the dtype the starting checkpoint was
stored in -- with LoRA merged, as the adapter, or both (``model.lora.save``).
"""

from __future__ import annotations

import contextlib
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

import torch

from scalerl.errors import ConfigError
from scalerl.models.dropout import disable_dropout
from scalerl.models.lora import add_lora, generator_state_dict, has_lora, save_adapter
from scalerl.models.stored_dtypes import kept_in_fp32, stored_dtype_of
from scalerl.train.config import TrainConfig
from scalerl.train.dtypes import storage_dtype
from scalerl.train.precision import MASTER_DTYPE, Precision


@dataclass
class Policy:
    model: Any
    """The Hugging Face model being trained (LoRA layers injected when on)."""
    tokenizer: Any
    precision: Precision
    storage_dtype: str
    """The dtype ``final/`` is written in (torch name)."""
    source: str
    """Where the model came from: a directory or hub id (a LoRA adapter's base model)."""
    config_dropout: dict[str, float] = field(default_factory=dict)
    """The checkpoint's dropout settings that training turned off (``model.keep_dropout``), written
    back into ``final/config.json``."""


def _tiny_spec(cfg: TrainConfig) -> Any:
    if cfg.model.name_or_path != "tiny":
        return None
    from scalerl.models.tiny import TinySpec

    return TinySpec(warm_start_steps=cfg.model.tiny_warm_start_steps)


#: Where :func:`load_policy` puts the weights.
Placement = Literal["device", "host", "meta"]
PLACEMENTS: tuple[Placement, ...] = get_args(Placement)


def load_policy(cfg: TrainConfig, device: torch.device, *, placement: Placement = "device", world: int = 1) -> Policy:
    """The policy of ``cfg``, ready to train (see the module docstring for the order).

    ``placement``: ``device`` -- the weights on ``device`` (one process); ``host`` -- read into
    the CPU's memory and left there, for FSDP to move each rank's shard to ``device`` one layer
    at a time (rank 0 of a trainer group: no device ever holds the whole fp32 model); ``meta`` --
    the architecture only, no weights read (ranks > 0: their shards come from rank 0).
    ``world``: the trainer ranks the state will be sharded over; a device that cannot hold this
    rank's share of it is refused before the weights are moved there (:func:`_check_fits`).
    """
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    from scalerl.models.loading import load_model, resolve_model, stored_dtype
    from scalerl.rl.fp32_head import enable_fp32_lm_head

    precision = Precision.create(cfg.precision.compute, device, init_scale=cfg.precision.fp16_init_scale)
    tiny = _tiny_spec(cfg)
    lora = cfg.model.lora
    load_dtype = precision.compute_dtype if lora.rank and precision.mixed else MASTER_DTYPE
    # A tiny model built here (a machine's first run: minutes) shows its warm start's progress.
    model, tokenizer = load_model(cfg.model.name_or_path, dtype=load_dtype, tiny_spec=tiny, weights=placement != "meta",
                                  progress=cfg.log.progress)
    # Before LoRA: an adapter's own dropout (model.lora.dropout) is a setting of its own.
    config_dropout = {} if cfg.model.keep_dropout else disable_dropout(model)
    if placement == "device":  # (sharded -- host, meta -- FSDP computes in the compute dtype with autocast off)
        _refuse_broken_autocast(model, precision)
    if cfg.recipe.fp32_lm_head:
        enable_fp32_lm_head(model)
    if lora.rank:
        add_lora(model, rank=lora.rank, alpha=lora.alpha, dropout=lora.dropout, target_modules=lora.target_modules)
    if cfg.model.gradient_checkpointing:
        if not getattr(model, "supports_gradient_checkpointing", False):
            raise ConfigError(f"{type(model).__name__} does not support gradient checkpointing; "
                              "set model.gradient_checkpointing=false")
        # Non-reentrant: no need for inputs that require grad (a frozen embedding under LoRA).
        if hasattr(model, "activation_checkpointing_enable"):  # transformers >= 5 (the old name is deprecated)
            model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    if placement != "meta":
        _check_fits(model, device, precision, cfg, world=world)
    if placement == "device":
        model.to(device)
    storage = storage_dtype(cfg.model.dtype) or stored_dtype(cfg.model.name_or_path, tiny_spec=tiny)
    return Policy(model, tokenizer, precision, storage, resolve_model(cfg.model.name_or_path, tiny_spec=tiny),
                  config_dropout)


#: Expert layers whose transformers forward cannot run under autocast: DBRX's ``DbrxExperts`` (5.25)
#: adds each expert's bf16 output into an fp32 buffer with ``index_add_`` without a cast, which
#: raises ``index_add_(): self (Float) and source (BFloat16) must have the same scalar type`` at the
#: first forward (Mixtral's experts cast first).
_NO_AUTOCAST = ("DbrxExperts",)


def _refuse_broken_autocast(model: Any, precision: Precision) -> None:
    """:class:`ConfigError` where ``precision`` autocasts a model with a layer of ``_NO_AUTOCAST``: in one
    process only; a model sharded over several (``--nproc``) computes in ``precision``'s dtype throughout,
    autocast off (:meth:`Precision.under_fsdp`), where the layer sees one dtype and works."""
    if not precision.mixed:
        return
    broken = next((type(m).__name__ for m in model.modules() if type(m).__name__ in _NO_AUTOCAST), None)
    if broken is not None:
        raise ConfigError(f"{type(model).__name__} cannot compute in {precision.mode}: transformers' {broken} adds "
                          f"the experts' {precision.mode} outputs into an fp32 buffer under autocast (index_add_ "
                          "refuses mixed dtypes); set precision.compute=fp32")


def device_copies(cfg: TrainConfig, copy_bytes: int, *, world: int) -> dict[str, int]:
    """Bytes of the copies of the policy (each ``copy_bytes`` in the generators' dtype) that rank
    0's device holds beside the training state, by what they are: rank 0's generator copy of a
    trainer group, the local pipeline's generator threads and weight snapshots."""
    from scalerl.pipeline.registry import trainer_device_copies
    from scalerl.train import memory

    off = cfg.recipe.off_policy
    return {
        memory.RANK0_COPY: copy_bytes if world > 1 and not cfg.run.generate_on_shards else 0,
        memory.PIPELINE_COPIES: copy_bytes * trainer_device_copies(off.pipeline, off.k, cfg.backend),
    }


def _check_fits(model: torch.nn.Module, device: torch.device, precision: Precision, cfg: TrainConfig, *,
                world: int) -> None:
    """Refuse, in one line that says what would fit, a device that cannot hold this rank's training
    state and the copies of the policy beside it (rank 0's generator copy of a trainer group;
    the local pipeline's generator threads and weight snapshots) before any activation."""
    from scalerl.train import memory

    capacity = memory.device_capacity(device)
    if capacity is None:
        return
    parameters = sum(p.numel() for p in model.parameters())
    copy_bytes = precision.generator_dtype.itemsize
    copies = device_copies(cfg, parameters * copy_bytes, world=world)
    # What config.group_problems refuses of a trainer group of this run, with the flags that mend it: a rank count
    # offered alone was refused next (reviews bu, bx).
    needs = [flag for flag, needed in (("--set precision.compute=bf16", precision.mode == "fp16"),
                                       ("--set run.device=cuda", bool(re.fullmatch(r"cuda:\d+", cfg.run.device.strip()))))
             if needed]
    problem = memory.memory_problem(
        memory.training_state_bytes(model, world), copies, capacity, world=world, device=str(device),
        parameters=parameters, copy_bytes_per_parameter=copy_bytes, generator_copy=not cfg.run.generate_on_shards,
        one_process="LoRA (model.lora.rank > 0) trains in one process" if cfg.model.lora.rank else "",
        with_ranks=" and ".join(needs), ranks_need_sync=cfg.run.generate_on_shards and bool(copies[memory.PIPELINE_COPIES]))
    if problem is not None:
        raise ConfigError(problem)


# ----------------------------------------------------------------------------- checkpoint


def policy_weights(model: torch.nn.Module) -> dict[str, torch.Tensor]:
    """The checkpoint's weights: the whole (fp32 master) state dict, or with LoRA the adapters only."""
    if has_lora(model):
        return {n: p.detach() for n, p in model.named_parameters() if p.requires_grad}
    return model.state_dict()


def load_policy_weights(model: torch.nn.Module, state: dict[str, torch.Tensor]) -> None:
    """Put :func:`policy_weights` back; every trainable parameter must be in ``state``."""
    if not has_lora(model):
        model.load_state_dict(state)
        return
    trainable = {n for n, p in model.named_parameters() if p.requires_grad}
    missing = sorted(trainable - set(state))
    result = model.load_state_dict(state, strict=False)
    if missing or result.unexpected_keys:
        raise ConfigError(f"the checkpoint's weights do not match this LoRA model (missing {missing[:3]}, "
                          f"unexpected {list(result.unexpected_keys)[:3]}); was model.lora changed since it was written?")


# ----------------------------------------------------------------------------- final model


def _without_tied_aliases(model: torch.nn.Module, weights: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """``weights`` without the second names of tied parameters (a tied LM head's
    ``lm_head.weight``). Gathered weights (FSDP's ``full_weights``) are separate tensors under
    every name, so ``save_pretrained`` cannot see the tie and wrote the vocabulary matrix twice;
    from_pretrained re-ties it from the config."""
    kept = {name for name, _ in model.named_parameters()}  # one name per shared tensor
    aliases = {name for name, _ in model.named_parameters(remove_duplicate=False)} - kept
    return {k: v for k, v in weights.items() if k not in aliases}


def _save_model(model: torch.nn.Module, directory: Path, dtype: str, weights: dict[str, torch.Tensor] | None,
                config_dropout: dict[str, float]) -> None:
    """An ordinary Hugging Face model directory (LoRA merged) with weights in ``dtype`` and the
    checkpoint's own dropout settings (``config_dropout``; training ran without dropout)."""
    cast = getattr(torch, dtype)
    # Aliases dropped always: cast to the stored dtype, a tied head became a tensor of its own, which
    # save_pretrained cannot tell is tied, and final/ held the vocabulary matrix twice (review co).
    weights = _without_tied_aliases(model, generator_state_dict(model) if weights is None else weights)
    kept = kept_in_fp32(model, cast)
    state = {k: v.detach().to(stored_dtype_of(k, v, cast, kept)) for k, v in weights.items()}
    model.save_pretrained(directory, state_dict=state)
    # save_pretrained records the live parameters' dtype (the fp32 master); record the stored one,
    # which is what from_pretrained(dtype="auto") loads it in.
    config_file = directory / "config.json"
    config = json.loads(config_file.read_text())
    config["dtype"] = dtype
    config.pop("torch_dtype", None)
    config.update(config_dropout)
    config_file.write_text(json.dumps(config, indent=2, sort_keys=True) + "\n")


def save_policy(policy: Policy, directory: str | os.PathLike, *, lora_save: str = "merged",
                weights: dict[str, torch.Tensor] | None = None) -> Path:
    """Write the trained policy and its tokenizer to ``directory`` (see the module docstring).

    ``weights``: the full weights (cast to the stored dtype here, a no-op where they are in it)
    when ``policy.model`` does not hold them itself (a plain copy standing in for an FSDP-sharded
    model; :mod:`scalerl.train.distributed`)."""
    directory = Path(directory)
    model = policy.model
    with _io_errors_as_os_errors(directory):
        if has_lora(model) and lora_save == "adapter":
            save_adapter(model, directory, base_model=policy.source)
        else:
            _save_model(model, directory, policy.storage_dtype, weights, policy.config_dropout)
            if has_lora(model) and lora_save == "both":
                save_adapter(model, directory / "adapter", base_model=policy.source)
        policy.tokenizer.save_pretrained(directory)
    return directory


_OS_ERROR = re.compile(r"\(os error (\d+)\)")


@contextlib.contextmanager
def _io_errors_as_os_errors(directory: Path):
    """The Rust libraries' write errors as the OSError they carry: a full disk while the weights were written came out
    as ``SafetensorError: ... I/O error: No space left on device (os error 28)`` (review ci), and while the tokenizer
    was, as the tokenizers library's bare ``Exception: No space left on device (os error 28)`` (review cj) -- a
    traceback, where a full disk is a one-line stop that says how to go on."""
    try:
        yield
    except OSError:
        raise
    except Exception as exc:  # noqa: BLE001 -- only those that carry an OS error code are converted
        found = _OS_ERROR.search(str(exc))
        if found is None:
            raise
        code = int(found.group(1))
        raise OSError(code, os.strerror(code), str(directory)) from exc
