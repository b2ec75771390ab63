"""Methods scalerl adds to vLLM's GPU workers (``worker_extension_cls``), called with ``collective_rpc``.

vLLM builds its worker with this class mixed in (``EngineArgs(worker_extension_cls=
"scalerl.generate.vllm_worker.WorkerExtension")``), so ``self`` is a vLLM ``Worker``:
``self.model_runner.get_model()`` is the loaded model (``model_runner.model`` may be a CUDA-graph
or micro-batch wrapper around it, vLLM 0.11-0.33), ``self.device`` its GPU. Imported only inside a
vLLM worker process.

* :meth:`WorkerExtension.scalerl_load_weights` -- tensors handed over in-process (the object-store path:
  the actor pulled a state dict) loaded with the model's own ``load_weights``, which maps
  Hugging Face names onto vLLM's fused layers (qkv, gate_up) and handles tied embeddings;
* :meth:`WorkerExtension.scalerl_init_broadcast` / :meth:`WorkerExtension.scalerl_receive_broadcast`
  -- the NCCL path: join a group with the trainer (rank 0) through vLLM's
  ``StatelessProcessGroup`` + ``PyNcclCommunicator`` (independent of vLLM's own
  torch.distributed world), receive each tensor by broadcast, load it;
* :meth:`WorkerExtension.scalerl_fp32_head` -- logits in fp32 (ScaleRL's FP32 LM head). vLLM
  >= 0.26 does this natively when ``hf_overrides={"head_dtype": "float32"}`` (which
  :class:`~scalerl.generate.vllm.VLLMGenerator` passes; its ``LogitsProcessor`` then has
  ``head_dtype == float32``); releases that ignore that override for generation models (a
  warning, then the model dtype: 0.11 to 0.23 at least) get each ``LogitsProcessor`` instance patched to upcast the
  hidden states and the head weight for the matmul (the approach prime-rl and open-instruct
  take), leaving the bf16 weight -- and a tied embedding -- as is.
"""

from __future__ import annotations

import types
from typing import Any


def _unquantized_methods() -> tuple[type, ...]:
    """The quant methods of a plain-weight ``lm_head``: a quantization config that leaves the head
    out hands it ``UnquantizedLinearMethod`` rather than the embedding's own (vLLM >= 0.26 accepts
    both for its fp32 head too)."""
    from vllm.model_executor.layers.linear import UnquantizedLinearMethod
    from vllm.model_executor.layers.vocab_parallel_embedding import UnquantizedEmbeddingMethod

    return UnquantizedEmbeddingMethod, UnquantizedLinearMethod


def _fp32_get_logits(self: Any, hidden_states: Any, lm_head: Any, embedding_bias: Any, skip_gather: bool = False) -> Any:
    """``LogitsProcessor._get_logits`` with the projection in fp32 (unquantized heads only).
    ``skip_gather``: the argument vLLM >= 0.29 passes (its callers gather the shards themselves)."""
    import torch
    import torch.nn.functional as F

    if not isinstance(lm_head.quant_method, _unquantized_methods()):
        raise ValueError("the fp32 LM head needs an unquantized lm_head; set recipe.fp32_lm_head=false")
    bias = embedding_bias.float() if embedding_bias is not None else None
    logits = F.linear(hidden_states.to(torch.float32), lm_head.weight.to(torch.float32), bias)
    if skip_gather:
        return logits
    logits = self._gather_logits(logits)  # tensor parallelism: gather the vocabulary shards
    if logits is not None:
        logits = logits[..., : self.org_vocab_size]  # drop the vocabulary padding
    return logits


class WorkerExtension:
    """Mixed into vLLM's ``Worker``; every method runs on each worker (one per GPU)."""

    def scalerl_load_weights(self, named_tensors: list[tuple[str, Any]]) -> int:
        model = self.model_runner.get_model()  # type: ignore[attr-defined]
        device = self.device  # type: ignore[attr-defined]
        loaded = model.load_weights(weights=[(name, t.to(device, non_blocking=True)) for name, t in named_tensors])
        return len(loaded) if loaded is not None else len(named_tensors)

    def scalerl_init_broadcast(self, master_address: str, master_port: int, rank_offset: int, world_size: int) -> None:
        from vllm.distributed.device_communicators.pynccl import PyNcclCommunicator
        from vllm.distributed.parallel_state import get_world_group
        from vllm.distributed.utils import StatelessProcessGroup

        rank = get_world_group().rank + rank_offset  # a tensor-parallel engine has several workers
        group = StatelessProcessGroup.create(host=master_address, port=master_port, rank=rank, world_size=world_size)
        self._scalerl_comm = PyNcclCommunicator(group, device=self.device)  # type: ignore[attr-defined]

    def scalerl_receive_broadcast(self, names_dtypes_shapes: list[tuple[str, str, tuple[int, ...]]]) -> None:
        import torch

        model = self.model_runner.get_model()  # type: ignore[attr-defined]
        for name, dtype, shape in names_dtypes_shapes:
            buffer = torch.empty(shape, dtype=getattr(torch, dtype), device=self.device)  # type: ignore[attr-defined]
            self._scalerl_comm.broadcast(buffer, src=0, stream=torch.cuda.current_stream())
            model.load_weights(weights=[(name, buffer)])
        torch.cuda.synchronize()

    def scalerl_fp32_head(self) -> int:
        """Make every logits processor compute in fp32; returns how many had to be patched (0 when
        vLLM already honours ``head_dtype``)."""
        import torch
        from vllm.model_executor.layers.logits_processor import LogitsProcessor

        patched = 0
        for module in self.model_runner.get_model().modules():  # type: ignore[attr-defined]
            if isinstance(module, LogitsProcessor) and getattr(module, "head_dtype", None) != torch.float32:
                module._get_logits = types.MethodType(_fp32_get_logits, module)
                patched += 1
        return patched
