"""LoRA adapters with the ``peft`` library, and the merged weights a generator sees.

The trainer's model is the Hugging Face model itself with LoRA layers injected
(``peft.inject_adapter_in_model``): its ``forward`` signature is the model's own (the
generator and the log-prob code inspect it), the base weights are frozen and only the
adapters are trainable. The adapters are held in fp32 (``peft``'s ``cast_adapter_dtype``)
whatever the base's dtype, so they are master weights of their own.

A generator must sample from the same policy the trainer scores: base + scale * B @ A.

* A generator that shares the trainer's model (sync and PPO-off-policy locally) runs the
  LoRA layers as they are: the adapter is active, which *is* the merged policy.
* A generator with its own copy (threads, processes, Ray actors, vLLM) holds an ordinary
  model with the adapter merged in: :func:`generator_copy` merges and unloads a copy,
  :func:`generator_state_dict` gives the merged weights under the plain model's names at
  every weight push (``peft``'s ``get_delta_weight``: the base is never modified, so it does
  not drift through repeated merge / unmerge rounding).

Without LoRA layers both functions are the plain ``deepcopy`` / ``state_dict``.
"""

from __future__ import annotations

import copy
import functools
import inspect
import json
import re
import warnings
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import torch
from torch import nn

from scalerl.errors import ConfigError

ADAPTER = "default"
#: Where ``peft`` keeps the adapter tensors of a LoRA layer (state-dict key fragment).
_LORA_KEY = ".lora_"
#: One or more ``.base_layer`` segments in a state-dict key (nested wrappers), dropped for the plain name.
_NESTED_BASE = re.compile(r"(?:\.base_layer)+\.")


def add_lora(model: nn.Module, *, rank: int, alpha: float, dropout: float, target_modules: Sequence[str]) -> nn.Module:
    """Inject LoRA adapters into ``model`` in place; freeze everything else. Returns ``model``."""
    try:
        from peft import LoraConfig, inject_adapter_in_model
        from peft.tuners.tuners_utils import cast_adapter_dtype
    except ImportError:
        raise ConfigError("model.lora needs the peft library: pip install 'scalerl[lora]' (or peft)") from None

    targets: Any = list(target_modules)
    exclude = None
    if targets == ["all-linear"]:
        targets = "all-linear"  # peft's keyword: every linear layer but the output head
        exclude = ssm_projections(model) + linears_of_their_own(model) or None
    config = LoraConfig(r=rank, lora_alpha=alpha, lora_dropout=dropout, target_modules=targets, bias="none",
                        exclude_modules=exclude)
    try:
        inject_adapter_in_model(config, model, adapter_name=ADAPTER)
    except ValueError as exc:  # e.g. target modules the model does not have
        raise ConfigError(f"model.lora: {' '.join(str(exc).split())}") from None
    _warn_of_frozen_experts(model, list(target_modules), exclude or [])
    tied = _tied_targets(model)
    if tied:
        raise ConfigError(f"model.lora: {', '.join(tied)} share{'s' if len(tied) == 1 else ''} its weight with another "
                          "layer (an input embedding tied to the output head): an adapter there changes the one and not "
                          "the other for the trainer, both in the generators' merged weights -- they would sample another "
                          "policy than the trainer scores (review co); drop it from model.lora.target_modules")
    bypassed = _unwrap_bypassed(model)
    if bypassed:
        warnings.warn(f"model.lora: the model's forward reads the weights of {', '.join(bypassed)} directly, past "
                      "any adapter (Mamba's dt_proj does): left without LoRA", stacklevel=2)
    cast_adapter_dtype(model, ADAPTER)
    for name, p in model.named_parameters():
        p.requires_grad_(_LORA_KEY in name)
    return model


#: Layer names peft's transformers v4 -> v5 conversion moves to a mixture-of-experts' fused expert weights
#: (``peft.utils.transformers_weight_conversion``: Mixtral's w1/w2/w3, the others' gate/up/down projections).
_EXPERT_NAMES = frozenset({"gate_proj", "up_proj", "down_proj", "w1", "w2", "w3"})


def _warn_of_frozen_experts(model: nn.Module, targets: list[str], exclude: list[str]) -> None:
    """Say which mixture-of-experts weights a request leaves without an adapter, where peft does so silently: plain
    layers its v4 conversion took for experts (:func:`_linears_moved_to_experts`), and, under ``all-linear``, fused
    experts it has no conversion for (:func:`_frozen_experts`)."""
    missed = _linears_moved_to_experts(model, targets, exclude)
    if missed:
        # (A second adapter pass for them, the conversion turned off, trained them -- but the adapter saved
        # then reloads through peft's conversion again, which moves them off once more: said, not mended.)
        warnings.warn(f"model.lora: {_names_text(missed)} got no adapter: peft reads the names gate_proj / up_proj / "
                      "down_proj on this mixture-of-experts model as its experts' fused weights (its conversion of "
                      "adapters written for transformers 4), so the plain layers of those names -- a dense MLP, "
                      "shared experts -- stay frozen; LoRA trains the other layers", stacklevel=3)
    frozen = _frozen_experts(model) if targets == ["all-linear"] else []
    if frozen:
        warnings.warn(f"model.lora: all-linear leaves the experts' fused weights without an adapter on this "
                      f"{getattr(model.config, 'model_type', 'model')} model ({_names_text(frozen)}: peft adapts "
                      "them only for the architectures its conversion table lists, such as Mixtral, Qwen3-MoE, "
                      "OLMoE, DeepSeek-V3); LoRA trains the other linear layers", stacklevel=3)


def _linears_moved_to_experts(model: nn.Module, targets: list[str], exclude: list[str]) -> list[str]:
    """The plain linear layers a request named (``all-linear``: any) that peft's v4 -> v5 conversion took for a
    mixture-of-experts' fused experts and left without an adapter: DeepSeek-V3's dense first layers and shared
    experts, Qwen3-MoE's ``mlp_only_layers`` -- named ``gate_proj`` / ``up_proj`` / ``down_proj`` like the
    experts v4 had (review cv: left out without a word, from ``all-linear`` and from those names alike)."""
    adapted = {name for name, _ in lora_layers(model)}
    head = model.get_output_embeddings() if hasattr(model, "get_output_embeddings") else None
    every = targets == ["all-linear"]
    return [name for name, m in model.named_modules()
            if type(m) is nn.Linear and m is not head and name.rpartition(".")[2] in _EXPERT_NAMES
            and name not in adapted and name not in exclude and ".lora_" not in name
            and not name.endswith(".base_layer")
            and (every or any(name == t or name.endswith(f".{t}") for t in targets))]


def _frozen_experts(model: nn.Module) -> list[str]:
    """The fused expert weights (3-D parameters: one matrix per expert) no adapter reaches."""
    wrapped = {name.rpartition(".lora_")[0] for name, _ in model.named_parameters() if _LORA_KEY in name}
    return [f"{owner}.{name}" for owner, m in model.named_modules() if not isinstance(m, nn.modules.conv._ConvNd)
            for name, p in m.named_parameters(recurse=False)  # (a convolution's kernel is 3-D too)
            if p.ndim == 3 and _LORA_KEY not in owner and not any(owner.startswith(w) for w in wrapped)]


def _names_text(names: list[str]) -> str:
    """The first two names, and how many more."""
    return ", ".join(names[:2]) + (f" and {len(names) - 2} more" if len(names) > 2 else "")


def _tied_targets(model: nn.Module) -> list[str]:
    """The adapted layers whose base weight another layer shares (a tied embedding and head)."""
    uses = Counter(id(p) for _, p in model.named_parameters(remove_duplicate=False))
    return [name for name, m in lora_layers(model)  # (a MoE experts module's base holds no .weight: its own parameters)
            if any(uses[id(p)] > 1 for p in m.get_base_layer().parameters(recurse=False))]


def _unwrap_bypassed(model: nn.Module) -> list[str]:
    """Put back the plain layer wherever a state-space mixer's forward never calls its adapted
    projection (it reads the weight directly): the adapter could never train (no gradient reaches
    it), and a trained-looking B there would still be merged into the generators' weights while
    the trainer's policy ignores it. Found by one 2-token forward. Only the mixers' projections are
    probed: a mixture-of-experts layer leaves the experts a short input does not route to uncalled,
    and those adapters do train."""
    mixers = set(_ssm_mixers(model))
    layers = [(n, m) for n, m in lora_layers(model) if n.rpartition(".")[0] in mixers]
    if not layers:
        return []
    called: set[str] = set()
    hooks = [m.register_forward_hook(lambda *_, n=n: called.add(n)) for n, m in layers]
    try:
        device = next(model.parameters()).device
        with torch.no_grad():
            model(input_ids=torch.zeros((1, 2), dtype=torch.long, device=device))
    except Exception:  # a model that cannot run a bare forward here (meta weights, ...): leave it as it is
        return []
    finally:
        for h in hooks:
            h.remove()
    bypassed = [n for n, _ in layers if n not in called]
    for name in bypassed:
        parent, _, child = name.rpartition(".")
        setattr(model.get_submodule(parent), child, model.get_submodule(name).get_base_layer())
    return bypassed


#: Projections of a state-space mixer that peft refuses to adapt (its out_proj feeds the selective
#: scan's fused kernel, conv1d is a convolution): peft's ``all-linear`` picks them, then raises.
SSM_EXCLUDED = ("out_proj", "conv1d")
#: The model types peft refuses them in (``peft.tuners.tuners_utils._check_lora_target_modules_mamba``).
SSM_REFUSED_IN = frozenset({"falcon_h1", "mamba", "mamba2", "falcon_mamba", "nemotron_h"})


def ssm_projections(model: nn.Module) -> list[str]:
    """Full names of the state-space mixers' projections ``all-linear`` leaves out (a mixer: a module holding the
    ``A_log`` parameter of Mamba, Mamba-2, Falcon-H1, Jamba, Qwen3-Next's linear attention ...): both of
    :data:`SSM_EXCLUDED` on the model types peft refuses them in; elsewhere an ``out_proj`` whose weight the
    mixer's code reads past the layer (:func:`_read_past`: the fused scan kernels of Bamba, Granite 4, Zamba2 --
    an adapter there trains nothing on a GPU, where :func:`_unwrap_bypassed`'s CPU probe sees the layer called).
    Jamba's and Qwen3-Next's mixers call their out_proj: adapted (review cv: left out of every mixer, 3 of 4
    Qwen3-Next layers' output projections trained nothing)."""
    refused = getattr(getattr(model, "config", None), "model_type", None) in SSM_REFUSED_IN
    return [f"{name}.{child}" for name, module in _ssm_mixers(model).items() for child in SSM_EXCLUDED
            if isinstance(getattr(module, child, None), nn.Module)
            and (refused or (child == "out_proj" and _read_past(type(module), child)))]


@functools.cache
def _read_past(mixer: type, child: str) -> bool:
    """Whether a mixer class's code -- its own or a base class's it inherits from, torch's aside (review cz: a
    subclass of Bamba's mixer) -- reads ``child``'s weight itself (``self.out_proj.weight`` handed to a fused
    kernel) rather than only calling the layer; True where that code cannot be read."""
    for klass in mixer.__mro__:
        if klass is object or klass.__module__.startswith("torch."):
            continue
        try:
            code = inspect.getsource(klass)
        except (OSError, TypeError):
            return True
        if f"{child}.weight" in code or f"{child.replace('_', '')}_weight" in code:
            return True
    return False


def linears_of_their_own(model: nn.Module) -> list[str]:
    """Full names of the layers a model's own code derives from ``nn.Linear`` with a ``forward`` of
    their own that is not a linear map of their input an adapter could add to (Llama 4's MoE router
    returns its routing scores and logits as a tuple, which peft's LoRA layer cannot add its term
    to). Left out of ``all-linear``; named in ``target_modules`` they are still adapted, as asked.
    A forward of their own that computes ``x @ W.T + b`` all the same (Falcon's ``FalconLinear``,
    every linear layer of the model) is adapted: told by :func:`_computes_linear` on a probe --
    leaving those out left Falcon with nothing to adapt ("No modules were targeted"). Quantised linear
    layers (bitsandbytes, transformers' integrations) are not the model's own code: peft has adapters
    for those."""
    return [name for name, module in model.named_modules()
            if isinstance(module, nn.Linear) and type(module).forward is not nn.Linear.forward
            and type(module).__module__.startswith("transformers.models.") and not _computes_linear(module)]


def _computes_linear(layer: nn.Linear) -> bool:
    """Whether ``layer``'s class computes ``F.linear``'s tensor with its own forward, told on a probe: a
    small fp32 CPU instance of the class (at most 16 x 16, the layer's other attributes copied, random
    weights) run on two random rows. Never the layer itself: its weights may be on the meta device (an
    FSDP rank > 0 builds its model there, and must adapt the layers rank 0 adapts), on a GPU, in bf16,
    and its hooks would fire. A forward that fails on the probe is taken as not linear."""
    inputs, outputs = min(layer.in_features, 16), min(layer.out_features, 16)
    generator = torch.Generator().manual_seed(0)
    probe = type(layer).__new__(type(layer))
    nn.Module.__init__(probe)
    probe.__dict__.update({k: v for k, v in vars(layer).items() if not k.startswith("_")})
    probe.in_features, probe.out_features = inputs, outputs
    probe.weight = nn.Parameter(torch.randn(outputs, inputs, generator=generator), requires_grad=False)
    probe.bias = (nn.Parameter(torch.randn(outputs, generator=generator), requires_grad=False)
                  if layer.bias is not None else None)
    x = torch.randn(2, inputs, generator=generator)
    try:
        with torch.no_grad():
            out = probe(x)
    except Exception:  # noqa: BLE001 -- a forward that cannot take plain rows is not one to adapt
        return False
    expected = torch.nn.functional.linear(x, probe.weight, probe.bias)
    return isinstance(out, torch.Tensor) and out.shape == expected.shape and bool(
        torch.allclose(out, expected, rtol=1e-5, atol=1e-5))


def _ssm_mixers(model: nn.Module) -> dict[str, nn.Module]:
    """The state-space mixers of ``model`` by name: modules holding an ``A_log`` parameter."""
    return {name: module for name, module in model.named_modules()
            if isinstance(getattr(module, "A_log", None), nn.Parameter)}


def lora_layers(model: nn.Module) -> list[tuple[str, nn.Module]]:
    """``(name, module)`` of every ``peft`` adapter layer in ``model``."""
    from peft.tuners.tuners_utils import BaseTunerLayer

    return [(n, m) for n, m in model.named_modules() if isinstance(m, BaseTunerLayer)]


def has_lora(model: nn.Module) -> bool:
    if not hasattr(model, "peft_config"):  # set by inject_adapter_in_model; saves importing peft
        return False
    return bool(lora_layers(model))


def _base_param(layer: nn.Module) -> torch.Tensor:
    """The base tensor a ``peft`` layer adapts: a module's ``weight`` (Linear, Embedding, ...), or the
    parameter a ``ParamWrapper`` wraps (``target_parameters``: the 3-D expert tensors of a
    mixture-of-experts layer, which "all-linear" reaches too)."""
    get_param = getattr(layer, "get_param", None)
    return get_param() if callable(get_param) else layer.get_base_layer().weight


def base_digest(model: nn.Module) -> dict[str, float]:
    """A fingerprint of a LoRA model's frozen base: each frozen tensor's sum of squares (float64).
    A LoRA checkpoint holds the adapters only and the base is re-read on resume, so the
    checkpoint carries this to tell a base that changed in between (:func:`base_changed`)."""
    return {name: float(p.detach().double().square().sum()) for name, p in model.named_parameters()
            if not p.requires_grad}


def base_changed(saved: dict[str, float], current: dict[str, float], rtol: float = 1e-5) -> list[str]:
    """Names of the frozen tensors whose fingerprint differs (``rtol``: another device may sum in
    another order; a re-saved or re-released base differs by far more)."""
    return [name for name in sorted(set(saved) | set(current))
            if name not in saved or name not in current
            or abs(saved[name] - current[name]) > rtol * max(abs(saved[name]), abs(current[name]), 1e-12)]


def generator_state_dict(model: nn.Module) -> dict[str, torch.Tensor]:
    """The weights a generator's plain copy of the policy loads: ``model.state_dict()``, with every
    LoRA layer merged (base + delta, computed in the adapter's fp32) under the plain model's name
    (every ``.base_layer`` dropped: adapters on MoE experts nest one wrapper per parameter)."""
    if not has_lora(model):
        return model.state_dict()
    with torch.no_grad():
        # Keyed by the base tensor itself, not by a name: nested wrappers and tied weights resolve alike.
        deltas: dict[int, torch.Tensor] = {}
        for _, layer in lora_layers(model):
            base = _base_param(layer)
            delta = layer.get_delta_weight(ADAPTER).float()
            deltas[id(base)] = deltas[id(base)] + delta if id(base) in deltas else delta
        merged: dict[str, torch.Tensor] = {}
        for key, value in model.state_dict(keep_vars=True).items():
            if _LORA_KEY in key:
                continue
            merged_value = value.detach().float() + deltas[id(value)] if id(value) in deltas else value.detach()
            merged[_NESTED_BASE.sub(".", key)] = merged_value
    return merged


def generator_copy(model: nn.Module, dtype: torch.dtype | None = None) -> nn.Module:
    """An inference copy of the policy: an ordinary model (LoRA merged and unloaded), frozen, in ``dtype``."""
    clone = copy.deepcopy(model)
    if has_lora(clone):
        layers = lora_layers(clone)
        for _, layer in layers:
            layer.merge(adapter_names=[ADAPTER])  # peft's own merge: base += delta, on the copy only
        # Unwrap the outermost layers only: an inner wrapper (another parameter of the same MoE
        # experts module) goes with its outer one, whose innermost base holds every merged tensor.
        unwrapped: list[str] = []
        for name, layer in layers:
            if any(name.startswith(outer + ".") for outer in unwrapped):
                continue
            parent_name, _, child = name.rpartition(".")
            setattr(clone.get_submodule(parent_name) if parent_name else clone, child, layer.get_base_layer())
            unwrapped.append(name)
        del clone.peft_config
    if dtype is not None:
        clone.to(dtype)
    for p in clone.parameters():
        p.requires_grad_(False)
    return clone.eval()


def save_adapter(model: nn.Module, directory: str | Path, base_model: str | None = None) -> Path:
    """Write the adapter in ``peft``'s format (``adapter_config.json`` + ``adapter_model.safetensors``):
    ``PeftModel.from_pretrained(base, directory)`` loads it, and so does
    ``AutoModelForCausalLM.from_pretrained(directory)`` when ``base_model`` is a path or hub id."""
    from peft import get_peft_model_state_dict
    from safetensors.torch import save_file

    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    # PeftModel prefixes its wrapped model's keys with "base_model.model."; the injected model has no wrapper.
    state = {f"base_model.model.{k}": v.detach().contiguous().cpu()
             for k, v in get_peft_model_state_dict(model, adapter_name=ADAPTER).items()}
    save_file(state, str(directory / "adapter_model.safetensors"), metadata={"format": "pt"})
    config = copy.deepcopy(model.peft_config[ADAPTER])
    config.base_model_name_or_path = base_model
    config.inference_mode = True
    config.task_type = "CAUSAL_LM"
    config.save_pretrained(str(directory))
    # peft stores the resolved target module names as a set; keep the file stable across runs.
    path = directory / "adapter_config.json"
    data = json.loads(path.read_text())
    if isinstance(data.get("target_modules"), list):
        data["target_modules"] = sorted(data["target_modules"])
    path.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n")
    return directory
