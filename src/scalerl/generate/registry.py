"""``backend.generator`` -> how a generator process builds its engine from a spec and weights.

``hf`` runs anywhere (the :class:`~scalerl.generate.hf.HFGenerator` loop on a copy of the
policy); ``vllm`` needs a CUDA GPU and the ``vllm`` extra (:mod:`scalerl.generate.vllm`,
imported only when chosen, so that importing scalerl never needs vLLM).
"""

from __future__ import annotations

from typing import Any, Callable, Mapping

from scalerl.errors import ConfigError


def _hf(spec: Any, state_dict: Mapping[str, Any], version: int, seed: int) -> Any:
    import torch
    from transformers import AutoModelForCausalLM

    from scalerl.generate.hf import HFGenerator
    from scalerl.rl.fp32_head import enable_fp32_lm_head

    model = AutoModelForCausalLM.from_config(spec.model_config, dtype=getattr(torch, spec.dtype))
    if spec.fp32_lm_head:
        enable_fp32_lm_head(model)
    if state_dict:  # else: the weights arrive with the first update (a Ray actor's are)
        model.load_state_dict(dict(state_dict))
    model.to(spec.device).eval()
    for p in model.parameters():
        p.requires_grad_(False)
    return HFGenerator(model, spec.tokenizer, seed=seed, version=version, max_rows=spec.decode_rows)


def _vllm(spec: Any, state_dict: Mapping[str, Any], version: int, seed: int) -> Any:
    from scalerl.generate.vllm import VLLMGenerator

    gen = VLLMGenerator.from_spec(spec, seed=seed)
    if state_dict:
        gen.update_weights(state_dict, version)
    return gen


#: name -> factory(spec, state_dict, version, seed) -> a Generator.
GENERATORS: dict[str, Callable[[Any, Mapping[str, Any], int, int], Any]] = {"hf": _hf, "vllm": _vllm}


def make_generator(spec: Any, state_dict: Mapping[str, Any], version: int, *, seed: int) -> Any:
    if spec.generator not in GENERATORS:
        raise ConfigError(f"backend.generator: unknown generator {spec.generator!r}; known: {', '.join(GENERATORS)}")
    return GENERATORS[spec.generator](spec, state_dict, version, seed)
