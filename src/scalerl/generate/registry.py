"""``backend.generator`` -> how a generator process builds its engine from a spec and weights.

``hf`` runs anywhere (the :class:`~scalerl.generate.hf.HFGenerator` loop on a copy of the
policy); ``vllm`` needs a CUDA GPU and the ``vllm`` extra (:mod:`scalerl.generate.vllm`,
imported only when chosen, so that importing scalerl never needs vLLM).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping, Protocol

from scalerl.errors import ConfigError
from scalerl.generate.base import Generator


class EngineSpec(Protocol):
    """What an engine is built from, as a generator process receives it (the pipeline's
    ``WorkerSpec`` is one): read here by name, so this layer needs nothing of the pipeline's."""

    generator: str
    """Engine name: a key of :data:`GENERATORS`."""
    model_config: Any
    """The policy's Hugging Face config (architecture only; the weights come separately)."""
    tokenizer: Any
    dtype: str
    """torch dtype name the engine holds the policy in."""
    fp32_lm_head: bool
    device: str
    decode_rows: int | None
    """hf: decode at most this many rows at once (None: all)."""
    cudnn_attention: bool
    """hf on CUDA: let SDPA use cuDNN's kernel (:func:`scalerl.generate.attention.cudnn_attention`)."""
    model_path: str | None
    """vllm: where the architecture and tokenizer are loaded from."""
    generator_options: dict[str, Any]
    """vllm: engine keyword arguments."""
    generation_config: Any
    """hf: the policy's generation config (EOS ids beyond the config's), or None."""


def _hf(spec: EngineSpec, state_dict: Mapping[str, Any], version: int, seed: int) -> Generator:
    import torch
    from transformers import AutoModelForCausalLM

    from scalerl.generate.attention import cudnn_attention
    from scalerl.generate.hf import HFGenerator
    from scalerl.rl.fp32_head import enable_fp32_lm_head

    cudnn_attention(spec.device, spec.cudnn_attention)  # the process is this engine's alone
    model = AutoModelForCausalLM.from_config(spec.model_config, dtype=getattr(torch, spec.dtype))
    if spec.generation_config is not None:  # (from_config makes one of the config: the checkpoint's EOS ids lost)
        model.generation_config = spec.generation_config
    if spec.fp32_lm_head:
        enable_fp32_lm_head(model)
    if state_dict:  # else: the weights arrive with the first update (a Ray actor's are)
        model.load_state_dict(dict(state_dict))
    model.to(spec.device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return HFGenerator(model, spec.tokenizer, seed=seed, version=version, max_rows=spec.decode_rows)


def _vllm(spec: EngineSpec, state_dict: Mapping[str, Any], version: int, seed: int) -> Generator:
    from scalerl.generate.vllm import VLLMGenerator

    if spec.model_path is None:
        raise ConfigError("backend.generator=vllm needs model.name_or_path to be a model directory or hub id")
    gen = VLLMGenerator.build(spec.model_path, spec.tokenizer, seed=seed, dtype=spec.dtype,
                              fp32_lm_head=spec.fp32_lm_head, options=spec.generator_options)
    if state_dict:
        gen.update_weights(state_dict, version)
    return gen


#: name -> factory(spec, state_dict, version, seed) -> a Generator.
GENERATORS: dict[str, Callable[[EngineSpec, Mapping[str, Any], int, int], Generator]] = {"hf": _hf, "vllm": _vllm}


def make_generator(spec: EngineSpec, state_dict: Mapping[str, Any], version: int, *, seed: int) -> Generator:
    if spec.generator not in GENERATORS:
        raise ConfigError(f"backend.generator: unknown generator {spec.generator!r}; known: {', '.join(GENERATORS)}")
    return GENERATORS[spec.generator](spec, state_dict, version, seed)
