"""A trainer's memory: the peak it reached (the run log's ``memory/peak_gb`` on every train row),
and, before loading, whether a device can hold the training state at all (:func:`memory_problem`).

On a GPU it is the most memory torch's allocator has held allocated on the device since the
process started (``torch.cuda.max_memory_allocated``; verl logs the same as
``perf/max_memory_allocated_gb``); on the CPU, the process's peak resident set (``getrusage``'s
``ru_maxrss``), which counts the interpreter, the libraries and generator threads too. Under
``--nproc N`` the row holds the largest over the ranks: the one that runs out first.
"""

from __future__ import annotations

import resource
import sys
from typing import Any, Mapping

import torch

GIB = 1024**3


def peak_memory_gb(device: torch.device | str) -> float:
    """This process's peak memory so far on ``device`` (GiB)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / GIB
    # Linux reports kilobytes, macOS bytes.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / GIB


# ----------------------------------------------------------------------------- before loading

#: Bytes a trainable parameter adds to its weight: the fp32 gradient and AdamW's two fp32 moments.
TRAINING_BYTES_PER_PARAMETER = 4 + 8
#: The share of a device the training state may fill when a number of ranks is suggested: the
#: rest is for activations, the allocator's slack and the CUDA context.
STATE_SHARE = 0.7


def device_capacity(device: torch.device | str) -> int | None:
    """Total bytes of memory on ``device``: a GPU's; None on the CPU (host memory is not checked:
    it swaps rather than failing, and a CPU run is a small model)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).total_memory
    return None


def training_state_bytes(model: torch.nn.Module, world: int = 1) -> int:
    """What training ``model`` holds on each of ``world`` FSDP ranks before any activation: the
    weights as loaded (fp32 masters; LoRA's frozen base in the compute dtype) and, for every
    trainable parameter, its fp32 gradient and AdamW's two moments."""
    weights = sum(p.numel() * p.element_size() for p in model.parameters())
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    return -(-(weights + trainable * TRAINING_BYTES_PER_PARAMETER) // world)


#: What a copy of the policy on the trainer's device is called in :func:`memory_problem`'s copies.
RANK0_COPY = "rank 0's generator copy"
PIPELINE_COPIES = "pipeline-rl-k's generator threads and weight snapshots"


def memory_problem(state: int, copies: Mapping[str, int], capacity: int, *, world: int, device: str,
                   parameters: int, copy_bytes_per_parameter: int, generator_copy: bool = True,
                   one_process: str = "", with_ranks: str = "", ranks_need_sync: bool = False) -> str | None:
    """Why a run cannot fit on ``device`` (``capacity`` bytes), or None. ``state``: the training
    state per rank (:func:`training_state_bytes`); ``copies``: bytes of the other copies of the
    policy this device holds, by what they are (:data:`RANK0_COPY`, :data:`PIPELINE_COPIES`).
    Refused only where these alone, before any activation, exceed the device -- a certain
    out-of-memory error, minutes into loading -- with what would fit, each fix enough on its own:
    more ranks for the state, no copies beside it, or both. ``generator_copy``: rank 0 of a trainer
    group would hold a generator copy of the whole model (not under ``run.generate_on_shards``);
    ``one_process``: why this run cannot be sharded (LoRA), so no rank count is offered;
    ``with_ranks``: what sharding it needs besides ``--nproc`` (fp16: ``--set precision.compute=bf16``; one GPU named:
    ``--set run.device=cuda``); ``ranks_need_sync``: a trainer group of this run cannot keep the pipeline's generator
    threads (generation on the shards), so more ranks come only with the copies gone."""
    copies = {what: b for what, b in copies.items() if b}
    if state + sum(copies.values()) <= capacity:
        return None
    gb = lambda b: f"{b / GIB:.1f} GB"  # noqa: E731
    total = state * world
    where = f"{gb(state)} on each of {world} ranks" if world > 1 else "it all on one device"
    what = (f"the training state of this {parameters / 1e9:.2f}B-parameter model (fp32 weights, gradients and "
            f"AdamW's moments: {gb(total)}) needs {where}")
    for name, b in copies.items():
        what += f" plus {gb(b)} for {name}"
    # Each fix offered must fit on its own, followed as written (review bs: "--nproc 3; or --set pipeline=sync" for
    # 8B beside the pipeline's copies, each refused again; bu: --nproc for LoRA and fp16, which refuse it, 65 ranks
    # counting a generator copy a run on its shards has not). Rank 0 of a trainer group holds a generator copy of
    # the whole model beside its shard; the pipeline's copies stay with the trainer whatever the number of ranks.
    pipeline, rank0 = copies.get(PIPELINE_COPIES, 0), copies.get(RANK0_COPY, 0)
    whole = parameters * copy_bytes_per_parameter

    def ranks(beside: int) -> int | None:
        """Ranks whose share of the state fits in STATE_SHARE of the device beside ``beside`` bytes (None: no room);
        none where the run cannot be sharded."""
        room = int(STATE_SHARE * capacity) - beside
        return max(world + 1, -(-total // room)) if room > 0 and not one_process else None

    def shard(n: int) -> str:
        return f"shard it over more devices: {with_ranks + ' and ' if with_ranks else ''}--nproc {n} (or torchrun with {n} ranks)"

    off = ("--set pipeline=sync (the trainer generates on its own weights), or --backend ray with GPUs of their own "
           "(backend.generator_gpus=1)")
    fixes = []
    n = None if ranks_need_sync else ranks(whole * generator_copy + pipeline)
    if n is not None:
        fixes.append(shard(n))
    if pipeline and state + rank0 <= capacity:
        fixes.append(f"keep the generators' copies off this device: {off}")
    if not fixes and pipeline and ranks(whole * generator_copy) is not None:
        n = ranks(whole * generator_copy)
        fixes.append(f"both {shard(n)}, and keep the generators' copies off this device, {off}: neither alone fits")
    if not fixes and one_process:  # (review bx: the pipeline's copies were left out of the size it named)
        fixes.append(f"{one_process}: it needs a device with more than {gb(state + rank0 + pipeline)} of memory"
                     + (f", or {gb(state + rank0)} with the generators' copies kept off it, {off}" if pipeline else ""))
    if not fixes:
        n = ranks(0)
        fixes.append(f"{shard(n)}, with --set run.generate_on_shards=true and --set pipeline=sync or --backend ray: "
                     f"its weights alone ({gb(whole)} in the compute dtype) do not fit on one device beside a shard")
    return f"{what}, and {device} has {gb(capacity)}: {'; or '.join(fixes)}"


# ----------------------------------------------------------------------------- generation

#: Layer kinds whose cache grows by keys and values per token (a sliding window stops growing:
#: counted in full, an upper bound).
_KV_LAYERS = {"full_attention", "sliding_attention", "attention"}


def kv_bytes_per_token(config: Any, dtype_bytes: int) -> int | None:
    """Bytes of KV cache one token takes in a decoder of standard attention layers: keys and
    values x layers x KV heads x head size x ``dtype_bytes``. None where the formula does not
    describe the cache (multi-head latent attention, linear-attention or state-space layers)."""
    text = config.get_text_config() if hasattr(config, "get_text_config") else config
    layers, heads = getattr(text, "num_hidden_layers", None), getattr(text, "num_attention_heads", None)
    if not isinstance(layers, int) or not isinstance(heads, int) or heads < 1 or getattr(text, "kv_lora_rank", None):
        return None
    kinds = getattr(text, "layer_types", None)
    if kinds and any(kind not in _KV_LAYERS for kind in kinds):
        return None
    kv_heads = getattr(text, "num_key_value_heads", None) or heads
    head_dim = getattr(text, "head_dim", None) or getattr(text, "hidden_size", 0) // heads
    if not isinstance(kv_heads, int) or not isinstance(head_dim, int) or head_dim < 1:
        return None
    return 2 * layers * kv_heads * head_dim * dtype_bytes


#: Share of what the training state and the policy's copies leave free on the device that the
#: decode loop's KV cache may take. The rest is for the cache's growth (a buffer re-copied into a
#: larger one holds both for a moment: scalerl.generate.kvcache), the sampling logits, the prompt
#: pass's activations and the allocator's fragmentation.
KV_SHARE = 0.5


def rows_that_fit(tokens: int, per_token: int, free: int, generators: int = 1) -> int:
    """Rows of up to ``tokens`` tokens that each of ``generators`` concurrent decode loops can hold
    in :data:`KV_SHARE` of ``free`` bytes (0: not even one)."""
    return max(0, int(KV_SHARE * free)) // (max(1, generators) * tokens * per_token)


def decode_fit(rows: int, tokens: int, per_token: int | None, capacity: int | None, held: int,
               generators: int = 1) -> int | None:
    """How many of ``rows`` sequences of up to ``tokens`` tokens each of ``generators`` Hugging Face
    decode loops can hold at once on a device of ``capacity`` bytes, ``held`` of them taken by the
    training state and the policy's copies: None when all of them fit, or when the device or the
    cache's size per token is unknown; else the rows that fit (0: not even one)."""
    if capacity is None or per_token is None:
        return None
    fit = rows_that_fit(tokens, per_token, capacity - held, generators)
    return None if fit >= rows else fit


def decode_note(rows: int, tokens: int, per_token: int, capacity: int, held: int, device: str, fit: int, *,
                cut: bool) -> str:
    """The one-line note for :func:`decode_fit`'s answer ``fit``: ``cut``, the loop now decodes
    ``max(fit, 1)`` rows at a time; else only what to set."""
    def size(b: int) -> str:
        return f"{b / GIB:.1f} GB" if b >= GIB else f"{b / 2**20:.1f} MB"

    head = (f"{rows} rows of up to {tokens} tokens hold {size(rows * tokens * per_token)} of KV cache "
            f"({per_token / 1024:.0f} KB a token); {device} has {size(capacity)}, {size(held)} of it taken by the "
            "training state and the policy's copies")
    faster = "vLLM actors decode faster (--backend ray --set backend.generator=vllm)"
    if fit < 1:
        how = "decoding one row at a time, which may still run out of memory" if cut else "set --set run.decode_rows=1"
        return (f"{head}: not even one row fits beside them; {how}: lower length.max_new_tokens, shard the training "
                f"state (--nproc), or generate elsewhere: {faster}")
    if cut:
        return f"{head}: decoding {fit} rows at a time (run.decode_rows sets another number); {faster}"
    return f"{head}: set --set run.decode_rows={fit} (every rank then cuts its share alike); {faster}"


# ----------------------------------------------------------------------------- the update's passes

#: Share of what the training state and the policy's copies leave free on the device that one
#: update pass's activations may take (the other half is the decode loop's KV cache: under
#: PipelineRL-k on the trainer's device both are held at once). The passes are cut so that
#: their measured activations stay within it; what the probe does not count -- the backward
#: pass's transient gradients, a checkpointed layer's recomputation, the allocator's
#: fragmentation -- must fit beside them (synchronously, the KV cache's half is free while the
#: update runs; under PipelineRL-k on the trainer's device it is not: a margin, not a guarantee).
ACTIVATION_SHARE = 0.5


def update_tokens_note(capacity: int, held: int, device: str, longest: int, configured: int, fit: int,
                       per_token: float, per_pass: float, checkpointing: bool) -> str:
    """The one-line note when the update's passes must hold fewer padded tokens than
    ``run.micro_batch_tokens`` (``configured``; 0: no limit) to fit: ``fit`` tokens, from the
    measured ``per_token`` bytes (in passes of ``longest``-token sequences) and ``per_pass``
    bytes, beside ``held`` of the device's ``capacity``."""
    def size(b: float) -> str:
        return f"{b / GIB:.1f} GB" if b >= GIB else f"{b / 2**20:.1f} MB" if b >= 2**20 else f"{b / 1024:.0f} KB"

    head = (f"the update's activations, measured on the model, take {per_token / 1024:.0f} KB a token (in passes "
            f"of {longest:,}-token sequences) and {size(per_pass)} a pass; {device} has {size(capacity)}, "
            f"{size(held)} of it taken by the training state and the policy's copies")
    if fit >= longest:
        was = f"{configured:,}" if configured else "no limit"
        return (f"{head}: passes of at most {fit:,} padded tokens (run.micro_batch_tokens: {was}); the gradient is "
                "the same however the passes are cut")
    fixes = ["model.gradient_checkpointing=true"] if not checkpointing else []
    fixes += ["a shorter length.max_new_tokens", "more ranks for the training state (--nproc)"]
    return (f"{head}: even one sequence may not fit ({max(fit, 0):,} tokens do); passes of one sequence from here; "
            f"try {', '.join(fixes)}")
