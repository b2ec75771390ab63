"""GPU check: bf16 training of a ~100M-parameter model, the FP32 head's log-prob agreement, FSDP on NCCL.

Run by ``benchmarks/gpu_check.sh`` (one GPU, under 10 minutes); needs only torch and
transformers (+ this repository on PYTHONPATH): no vLLM, no peft, no scipy, no hub, no internet.

    PYTHONPATH=src python benchmarks/gpu_check.py --device cuda            # the real check
    PYTHONPATH=src python benchmarks/gpu_check.py --device cpu --tiny      # a dry run in seconds (the tests)

Stages, each printing one line per figure (and appending them to $OUT/gpu_check.txt when OUT is set):

1. **model**: a randomly initialised Qwen2 (12 layers, hidden 768: ~90M parameters; ``--tiny``:
   2 layers, hidden 64) with the character tokenizer, saved in bf16 as hub checkpoints are;
2. **logprobs**: the FP32 LM head's agreement between generator and trainer on bf16 compute:
   the generator's per-token log-probs (HF generator, autocast bf16 on the fp32 master weights,
   and on a bf16 inference copy as generator processes / Ray actors hold it) against the
   trainer's teacher-forced recomputation; |delta| mean and max, and the importance ratio's
   mean and max |ratio - 1| -- with the FP32 head on and off;
3. **train**: ``precision.compute=bf16`` training of the saved model (sync, one process) --
   weights moved, samples/s, the run's pass rates;
   **train-cudnn**: a quarter of the steps again in bf16 with cuDNN's attention kernel allowed
   (``run.cudnn_attention=true``, torch's default), then off (scalerl's default): samples/s each;
4. **fsdp**: the same run as a one-rank trainer group (FSDP2 + NCCL on the GPU; gloo on the CPU),
   with a 1 MiB logits budget (the LM head in chunks on the FSDP root), samples/s, and its losses
   against stage 3's (head whole; same seed) on the steps that sampled the same completions;
   **fsdp-fp32**: a shorter pair (a quarter of the steps) in fp32 compute, one process and one
   rank, whose generators hold the same weights, so every step's loss compares;
4b. **groups**: a one-rank trainer group joined as ``--nproc`` joins it -- NCCL bound to the GPU
   (``device_id``), the gloo group for objects and waits beside it -- an order, a barrier and the
   lockstep all-reduce through them, and a sharded checkpoint (DCP planned on gloo, CUDA shards)
   saved and loaded back: the largest weight difference (0). One rank: two NCCL ranks need two GPUs;
5. **logits**: peak device memory of one update's scoring pass (forward + backward, FP32 head,
   bf16 autocast) of 4 x 2,048-token completions with a 151,936-token vocabulary, the LM head in
   one piece against ``run.logits_budget_mb`` 256 (``scalerl.generate.head_chunks``), and the
   largest log-prob difference between the two (``--tiny``: 2 x 64 tokens, CPU, no memory figure);
6. **decode**: the Hugging Face decode loop on the stage-1 model in bf16, 32 rows x 256 new tokens
   greedy, all rows at once against 8 at a time (``run.decode_rows``): peak device memory of each
   against the KV cache ``scalerl.train.memory.kv_bytes_per_token`` predicts, seconds, and the
   share of rows whose tokens agree (``--tiny``: 6 rows x 16 tokens, 4 at a time, CPU); then the
   same in fp32 with 64 new tokens, where whole and pieces must agree on every row;
6b. **sdpa**: bf16 greedy decoding of new shapes with cuDNN's attention kernel allowed (torch's
   default), then off (``run.cudnn_attention=false``, scalerl's default), then allowed again on
   shapes it has seen: ms a decode step each (cuDNN builds a plan per new shape; on an H200 the
   first bf16 decode took 172.7 ms a step against 15-19 warm);
7. **activations**: the update's activations measured by ``scalerl.train.activation_probe`` on
   the stage-1 model (fp32 masters, bf16 autocast, FP32 head), the pass it predicts for 8 rows x
   480 tokens against the peak device memory a forward + backward of that pass reaches above
   the model and its gradients (``--tiny``: 2 x 48 tokens, CPU, the prediction only).
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import sys
import tempfile
import time
from pathlib import Path

import torch

MISSING_HINT = ("this check needs only torch and transformers (+ this repository on PYTHONPATH=src); "
                "a scalerl import failed: {exc}")

try:
    from scalerl.models.char_tokenizer import build_char_tokenizer
except ImportError as exc:  # not on PYTHONPATH, or a package the box lacks
    sys.exit(MISSING_HINT.format(exc=exc))

OUT_FILE: Path | None = None
DTYPE_NAMES = {torch.bfloat16: "bf16", torch.float32: "fp32"}


def say(line: str) -> None:
    print(line, flush=True)
    if OUT_FILE is not None:
        with open(OUT_FILE, "a") as f:
            f.write(line + "\n")


def build_model(directory: Path, tiny: bool) -> int:
    """A random Qwen2 saved in bf16 with the character tokenizer; returns its parameter count."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    tok = build_char_tokenizer()
    size = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                num_key_value_heads=2) if tiny else \
        dict(hidden_size=768, intermediate_size=2560, num_hidden_layers=12, num_attention_heads=12,
             num_key_value_heads=4)
    config = Qwen2Config(vocab_size=len(tok), max_position_embeddings=512, tie_word_embeddings=False,
                         pad_token_id=tok.pad_token_id, bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id,
                         **size)
    torch.manual_seed(0)
    model = Qwen2ForCausalLM(config).to(torch.bfloat16)
    model.save_pretrained(directory)
    tok.save_pretrained(directory)
    return sum(p.numel() for p in model.parameters())


def logprob_agreement(directory: Path, device: torch.device, tiny: bool) -> None:
    """Generator vs trainer log-probs of the same tokens, bf16 compute, FP32 head on and off."""
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.generate.logprobs import completion_logprobs, pack_completions
    from scalerl.models.loading import load_model
    from scalerl.models.lora import generator_copy
    from scalerl.rl.fp32_head import enable_fp32_lm_head
    from scalerl.train.precision import Precision

    precision = Precision.create("bf16", device)
    for head in ("fp32", "bf16"):
        model, tok = load_model(str(directory), dtype=torch.float32)  # fp32 masters, as the trainer holds them
        if head == "fp32":
            enable_fp32_lm_head(model)
        model.to(device)
        prompts = [tok(f"{a}+{b}=").input_ids for a, b in ((12, 34), (5, 61), (70, 8), (9, 99))]
        params = SamplingParams(max_new_tokens=16 if tiny else 64, temperature=1.0, seed=1)
        gens = {"autocast": HFGenerator(model, tok, seed=0, autocast_dtype=torch.bfloat16),
                "bf16-copy": HFGenerator(generator_copy(model, torch.bfloat16), tok, seed=0)}
        for name, gen in gens.items():
            comps = gen.generate([p for p in prompts for _ in range(4)], params)
            batch = pack_completions(comps, tok.pad_token_id, device)
            with torch.no_grad(), precision.autocast():
                trainer = completion_logprobs(model, batch, 1.0)
            mask = batch["completion_mask"].bool()
            width = trainer.shape[1]
            generator = torch.zeros_like(trainer)
            for i, c in enumerate(comps):
                generator[i, : len(c.logprobs)] = torch.tensor(c.logprobs[:width], device=device)
            delta = (trainer - generator)[mask].abs()
            ratio = torch.exp(trainer - generator)[mask]
            say(f"logprobs head={head} generator={name}: tokens {int(mask.sum())} |delta| mean {delta.mean():.2e} "
                f"max {delta.max():.2e}  ratio mean {ratio.mean():.6f} max|ratio-1| {(ratio - 1).abs().max():.2e}")
        del model, gens


def train_config(directory: Path, output: Path, device: torch.device, tiny: bool, steps: int, extra=()):
    from scalerl.train.config import TrainConfig, resolve

    cfg = TrainConfig()
    cfg.model.name_or_path = str(directory)
    cfg.task.settings = {"digits": 2}
    # A random model answers nothing right: every group would have equal rewards and nothing to
    # learn. This reward varies from the first step (a digit first: +1), so every step trains.
    cfg.task.reward = f"{Path(__file__).resolve()}:first_char_is_digit"
    cfg.model.dtype = "float32"  # final/ holds the fp32 master weights: "moved" counts what AdamW did
    cfg.run.output, cfg.run.steps, cfg.run.device = str(output), steps, device.type
    cfg.log.progress = False
    cfg.forecast.enabled = False  # the forecast needs scipy; not what this checks
    cfg.eval.every = steps
    # The tiny model's profile (48-token completions, budgets for the character tokenizer) at
    # lr 1e-5: a random model's completions are noise, what is checked is that it trains.
    cfg.profile = "cpu-tiny"
    overrides = ["pipeline=sync", "k=1", "precision.compute=bf16", "recipe.optimizer.lr=1e-5",
                 "recipe.optimizer.warmup_steps=0", "eval.problems=32", "eval.samples_per_problem=2"]
    if tiny:
        overrides += ["batch.prompts_per_step=4", "batch.generations_per_prompt=4"]
    return resolve(cfg, [*overrides, *extra])


def first_char_is_digit(completion: str) -> float:
    """The check's reward (see ``train_config``)."""
    return 1.0 if completion[:1].isdigit() else -1.0


def _moved(directory: Path, output: Path) -> float:
    """Share of the weights ``final/`` (fp32) changed against the starting checkpoint (bf16)."""
    from safetensors.torch import load_file

    before = {k: v for f in directory.glob("*.safetensors") for k, v in load_file(f).items()}
    after = {k: v for f in (output / "final").glob("*.safetensors") for k, v in load_file(f).items()}
    changed = sum(int((after[k].float() != v.float()).sum()) for k, v in before.items() if k in after)
    return changed / sum(v.numel() for v in before.values())


def _losses(output: Path) -> list[tuple[float, tuple]]:
    """Per training step: the loss, and what identifies the batch it was computed on."""
    import json

    rows = [json.loads(line) for line in open(output / "runlog.jsonl")][1:]
    return [(r["loss"], (r.get("mean_len"), r.get("reward_mean"))) for r in rows
            if r.get("type") == "train" and "loss" in r]


def _rate(summary) -> float:
    return summary.evals[-1]["samples"] / max(summary.seconds, 1e-9)


def train_once(directory: Path, work: Path, device: torch.device, tiny: bool, steps: int,
               compute: str = "bf16", cudnn_attention: bool = False) -> list[tuple[float, tuple]]:
    from scalerl.train.trainer import Trainer

    label = f"{compute}{', cuDNN attention allowed' if cudnn_attention else ''}"
    out = Path(tempfile.mkdtemp(prefix=f"one-process-{compute}-", dir=work)) / "run"  # a run of its own each time
    t0 = time.perf_counter()
    extra = [f"precision.compute={compute}", f"run.cudnn_attention={str(cudnn_attention).lower()}"]
    summary = Trainer(train_config(directory, out, device, tiny, steps, extra=extra)).run()
    rows = [r for r in summary.evals]
    say(f"train {label} one process: {steps} step{'s' if steps != 1 else ''} in {time.perf_counter() - t0:.1f}s, "
        f"{_rate(summary):.1f} samples/s (evaluations included), weights moved {_moved(directory, out):.1%}, "
        f"val pass rate {rows[0]['val/pass_rate']:.3f} -> {rows[-1]['val/pass_rate']:.3f}")
    return _losses(out)


def train_fsdp(directory: Path, work: Path, device: torch.device, tiny: bool, steps: int,
               reference: list[tuple[float, tuple]], compute: str = "bf16") -> None:
    from scalerl.train.launch import run_rank

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    out = work / f"fsdp-{compute}"
    t0 = time.perf_counter()
    # A 1 MiB logits budget: the full-size run's micro-batches (64 rows x ~56 positions x the
    # character vocabulary, ~1.4 MB) score the LM head in chunks on the FSDP root; --tiny's do not.
    cfg = train_config(directory, out, device, tiny, steps,
                       extra=["run.logits_budget_mb=1", f"precision.compute={compute}"])
    summary = run_rank(cfg, resume=False, rank=0, world=1,
                       local_rank=0, init_method=f"tcp://127.0.0.1:{port}")
    losses = _losses(out)
    # Under FSDP rank 0 generates with a *copy* of the weights in the compute dtype; one process
    # generates with autocast over the fp32 weights. In bf16 the two differ by ~1e-3 in a log-prob,
    # which can flip a sampled token (on an H200 every one of 20 steps had other completions), and a
    # step trained on other completions has another loss. So the gap is taken over the steps whose
    # batches are the same (same mean length and mean reward), the others are counted; the fp32 pair
    # (stage fsdp-fp32) samples the same completions, so there every step compares.
    same = [(a, b) for (a, ka), (b, kb) in zip(losses, reference) if ka == kb]
    gap = max((abs(a - b) / max(abs(b), 1e-6) for a, b in same), default=math.nan)
    backend = "nccl" if device.type == "cuda" else "gloo"
    say(f"train {compute} FSDP2 one rank ({backend}): {steps} step{'s' if steps != 1 else ''} in {time.perf_counter() - t0:.1f}s, "
        f"{_rate(summary):.1f} samples/s, weights moved {_moved(directory, out):.1%}, "
        f"largest relative loss gap to one process {gap:.2e} over {len(same)} steps "
        f"(of {len(losses)}; the others sampled different completions)")


def nccl_groups(directory: Path, work: Path, device: torch.device) -> None:
    """A one-rank trainer group joined as ``--nproc`` / torchrun join it (``launch._join_group``):
    the default group's backend and bound GPU, the gloo object group beside it, an order and a
    barrier through that group, the lockstep all-reduce on the GPU, and a sharded checkpoint (DCP,
    planned on the gloo group, the data CUDA shards) saved and read back into scrambled shards.
    One rank only: two NCCL ranks need two GPUs (NCCL refuses two ranks on one), so nothing here
    proves what only crosses GPUs (docs/distributed.md, "NCCL")."""
    import torch.distributed as dist

    from scalerl.train.collectives import barrier, object_group
    from scalerl.train.distributed import Rank, TrainerGroup, shard
    from scalerl.train.launch import _join_group, leave_group
    from scalerl.train.precision import FULL
    from scalerl.train.shard_generation import any_rank
    from scalerl.models.loading import load_model
    from scalerl.train.config import TrainConfig
    from scalerl.train.update import build_optimizer

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t0 = time.perf_counter()
    rank_device = torch.device("cuda", 0) if device.type == "cuda" else device
    _join_group(rank_device, f"tcp://127.0.0.1:{port}", 0, 1)
    clean = False
    try:
        backend, bound = dist.get_backend(), getattr(dist.group.WORLD, "bound_device_id", None)
        objects = dist.get_backend(object_group())
        box = [("stop", ())]
        dist.broadcast_object_list(box, src=0, group=object_group())
        barrier()
        flag = any_rank(True, rank_device)
        model, _ = load_model(str(directory), dtype=torch.float32)
        want = {k: v.detach().clone() for k, v in model.state_dict().items()}
        shard(model, FULL, fp32_root=True, world=1, device=rank_device)
        optimizer, scheduler = build_optimizer(model, TrainConfig().recipe)
        group = TrainerGroup(model, optimizer, scheduler, None, FULL, Rank(0, 1, rank_device), {})
        group.save_shards(work / "nccl-shards")
        with torch.no_grad():
            for p in model.parameters():
                p.zero_()
        group.load_shards(work / "nccl-shards", False, scheduler.state_dict())
        got = group.full_weights(torch.float32)
        worst = max((got[k].float() - v.float()).abs().max().item() for k, v in want.items())
        clean = True
    finally:
        leave_group(clean=clean)
    say(f"groups: default {backend} bound to {bound}, object group {objects}; order {box[0][0]!r}, barrier and lockstep all-reduce ({flag}) ok; sharded checkpoint saved and "
        f"loaded, largest weight difference {worst:.1e} ({time.perf_counter() - t0:.1f}s, one rank)")


def logits_memory(device: torch.device, tiny: bool) -> None:
    """Stage 5: the scoring pass's peak memory with the LM head whole and in chunks."""
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from scalerl.generate.base import Completion
    from scalerl.generate.logprobs import shared_prompt_logprobs
    from scalerl.rl.fp32_head import enable_fp32_lm_head

    vocab, rows, tokens = (1000, 2, 64) if tiny else (151_936, 4, 2048)
    torch.manual_seed(0)
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    model = enable_fp32_lm_head(Qwen2ForCausalLM(cfg)).to(device).train()
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(1, vocab, (32,), generator=g).tolist()
    comps = [Completion(prompt, t, [0.0] * tokens, [1] * tokens, [0] * tokens, "length")
             for t in torch.randint(1, vocab, (rows, tokens), generator=g).tolist()]
    dtype = torch.bfloat16 if device.type == "cuda" else torch.float32
    results = {}
    # --tiny: a budget of 16 positions, so that the dry run goes through the chunks too.
    chunked = 16 * vocab * 4 if tiny else 256 * 2**20
    for budget in (0, chunked):
        model.zero_grad(set_to_none=True)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
        t = time.perf_counter()
        with torch.autocast(device.type, dtype=dtype, enabled=device.type == "cuda"):
            logprobs, _, _ = shared_prompt_logprobs(model, comps, 1.0, 0, device, logits_budget=budget)
        logprobs.sum().backward()
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - t
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**30 if device.type == "cuda" else float("nan")
        results[budget] = logprobs.detach().float()
        say(f"logits: {rows} x {tokens} tokens, vocabulary {vocab:,}, logits budget {budget / 2**20:.2f} MiB: "
            f"peak {peak:.2f} GB above the model, forward + backward {seconds:.2f} s")
    say(f"logits: max |log-prob difference| chunked vs whole {(results[0] - results[chunked]).abs().max().item():.2e}")


def decode_rows(directory: Path, device: torch.device, tiny: bool, dtype: torch.dtype = torch.bfloat16,
                new: int | None = None) -> None:
    """Stage 6: the decode loop's peak memory, every row at once against a few at a time.

    In bf16 a random model's logits are full of near-ties that a GEMM tiled for another batch size
    rounds the other way (16 of 32 rows agreed on an H200), so the rows are decoded in fp32 too:
    there pieces and whole must agree, or the pieces' padding and positions are wrong.

    cuDNN's attention kernel is off here, as in scalerl's processes on CUDA (``run.cudnn_attention``):
    until commit d479ef1 this stage ran with torch's default, and its bf16 seconds on an H100 (26.4 s
    for 32 rows x 256 tokens, 103 ms a step) were mostly cuDNN planning every new key length."""
    from scalerl.generate.attention import cudnn_attention
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.loading import load_model
    from scalerl.train.memory import kv_bytes_per_token

    rows, default_new, piece = (6, 16, 4) if tiny else (32, 256, 8)
    new = new or default_new
    model, tok = load_model(str(directory), dtype=dtype)
    model.to(device)
    prompts = [tok(f"{a}+{b}=").input_ids for a, b in ((12, 34), (5, 61), (70, 8), (9, 99))]
    batch = [prompts[i % len(prompts)] for i in range(rows)]
    per_token = kv_bytes_per_token(model.config, torch.finfo(dtype).bits // 8) or 0
    kv = rows * (max(map(len, prompts)) + new) * per_token
    greedy = SamplingParams(max_new_tokens=new, temperature=0.0)
    out = {}
    before = cudnn_attention(device, False)
    for max_rows in (None, piece):
        gen = HFGenerator(model, tok, max_rows=max_rows)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
            torch.cuda.reset_peak_memory_stats(device)
            base = torch.cuda.memory_allocated(device)
        t = time.perf_counter()
        out[max_rows] = gen.generate(batch, greedy)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        seconds = time.perf_counter() - t
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20 if device.type == "cuda" else float("nan")
        tokens = sum(len(c.token_ids) for c in out[max_rows])
        say(f"decode {DTYPE_NAMES[dtype]}: {rows} rows x {new} new tokens, {max_rows or rows} at a time: peak {peak:.1f} MiB above the "
            f"model (KV cache predicted for all rows {kv / 2**20:.1f} MiB), {tokens} tokens in {seconds:.2f} s")
    if before is not None:
        cudnn_attention(device, before)
    same = sum(a.token_ids == b.token_ids for a, b in zip(out[None], out[piece]))
    say(f"decode {DTYPE_NAMES[dtype]}: rows with the same greedy tokens whole and in pieces: {same} of {rows}")


def sdpa_cold_shapes(directory: Path, device: torch.device, tiny: bool) -> None:
    """Stage 6b: decode steps on shapes cuDNN has not planned for, with its kernel allowed and not."""
    from scalerl.generate.attention import cudnn_attention
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.loading import load_model

    new = 8 if tiny else 64
    model, tok = load_model(str(directory), dtype=torch.bfloat16)
    model.to(device)
    prompts = [tok(f"{a}+{b}=").input_ids for a, b in ((12, 34), (5, 61), (70, 8), (9, 99))]
    before = cudnn_attention(device, True)
    # Row counts no earlier stage used: every (batch, length) shape is new to cuDNN the first time.
    for rows, allowed in ((24, True), (20, False), (24, True)):
        cudnn_attention(device, allowed)
        gen = HFGenerator(model, tok)
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        t = time.perf_counter()
        gen.generate([prompts[i % len(prompts)] for i in range(rows)], SamplingParams(max_new_tokens=new, temperature=0.0))
        if device.type == "cuda":
            torch.cuda.synchronize(device)
        say(f"sdpa: bf16 decode {rows} rows x {new} tokens, cuDNN attention {'allowed' if allowed else 'off'}: "
            f"{1000 * (time.perf_counter() - t) / new:.1f} ms a step")
    if before is not None:
        cudnn_attention(device, before)


def activations(directory: Path, device: torch.device, tiny: bool) -> None:
    """Stage 7: the activation probe's prediction against the allocator's peak."""
    from scalerl.generate.base import Completion
    from scalerl.generate.logprobs import shared_prompt_logprobs
    from scalerl.models.loading import load_model
    from scalerl.rl.fp32_head import enable_fp32_lm_head
    from scalerl.train.activation_probe import probe_activations
    from scalerl.train.precision import Precision

    rows, length = (2, 48) if tiny else (8, 480)
    model, tok = load_model(str(directory), dtype=torch.float32)
    model = enable_fp32_lm_head(model).to(device)
    precision = Precision.create("bf16", device)
    t = time.perf_counter()
    cost = probe_activations(model, precision, temperature=1.0, pad_token_id=tok.pad_token_id, device=device,
                             logits_budget=256 * 2**20, max_length=model.config.max_position_embeddings)
    say(f"activations: probe {time.perf_counter() - t:.2f} s: {cost.fixed / 2**20:.1f} MiB a pass + "
        f"{cost.per_token / 1024:.1f} KB a token + {cost.per_token_sq:.1f} B x length^2 a row; whole logits "
        f"{cost.logits_per_token / 1024:.2f} KB a token")
    g = torch.Generator().manual_seed(2)
    vocab = model.get_input_embeddings().num_embeddings
    comps = [Completion(t[:16], t[16:], [0.0] * (length - 16), [1] * (length - 16), [0] * (length - 16), "length")
             for t in torch.randint(1, vocab, (rows, length), generator=g).tolist()]
    # Gradients allocated first (as after the first step), so the peak above them is the pass's own.
    model.train()
    for p in model.parameters():
        p.grad = torch.zeros_like(p)
    peak = float("nan")
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        torch.cuda.reset_peak_memory_stats(device)
        base = torch.cuda.memory_allocated(device)
    with precision.autocast():
        logprobs = shared_prompt_logprobs(model, comps, 1.0, tok.pad_token_id, device, 256 * 2**20)[0]
    logprobs.sum().backward()
    if device.type == "cuda":
        torch.cuda.synchronize(device)
        peak = (torch.cuda.max_memory_allocated(device) - base) / 2**20
    say(f"activations: {rows} x {length} tokens: predicted {cost.pass_bytes(rows, length) / 2**20:.1f} MiB kept for "
        f"the backward pass, peak {peak:.1f} MiB above the model and its gradients (forward + backward)")


def main(argv: list[str] | None = None) -> int:
    global OUT_FILE
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--device", default="cuda", help="cuda (the check) or cpu (a dry run)")
    p.add_argument("--tiny", action="store_true", help="a 2-layer model and short runs (the dry mode)")
    p.add_argument("--steps", type=int, default=None, help="training steps per run (default: 20; --tiny: 2)")
    p.add_argument("--stages",
                   default="model,logprobs,train,train-cudnn,fsdp,fsdp-fp32,groups,logits,decode,sdpa,activations")
    args = p.parse_args(argv)
    device = torch.device(args.device)
    if device.type == "cuda" and not torch.cuda.is_available():
        print("gpu_check: no CUDA device visible (use --device cpu --tiny for a dry run)", file=sys.stderr)
        return 2
    if os.environ.get("OUT"):
        OUT_FILE = Path(os.environ["OUT"]) / "gpu_check.txt"
        OUT_FILE.parent.mkdir(parents=True, exist_ok=True)
    steps = args.steps or (2 if args.tiny else 20)
    stages = args.stages.split(",")
    import transformers

    name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    say(f"gpu_check: torch {torch.__version__}, transformers {transformers.__version__}, device {name}")
    work = Path(tempfile.mkdtemp(prefix="scalerl-gpu-check-"))
    directory = work / "model-bf16"
    params = build_model(directory, args.tiny)
    say(f"model: random Qwen2, {params / 1e6:.1f}M parameters, saved in bf16 at {directory}")
    if "logprobs" in stages:
        logprob_agreement(directory, device, args.tiny)
    reference: list[float] = []
    if "train" in stages:
        reference = train_once(directory, work, device, args.tiny, steps)
    if "fsdp" in stages:
        train_fsdp(directory, work, device, args.tiny, steps, reference)
    # The pairs below: a quarter of the steps (one in the dry mode: they check paths, not figures).
    short = 1 if args.tiny else max(2, steps // 4)
    if "train-cudnn" in stages:
        # The same bf16 run with cuDNN's attention allowed (torch's default), then off again
        # (scalerl's default): each new padded length costs it a plan, forward and backward.
        for allowed in (True,) if args.tiny else (True, False):  # (on a CPU the switch changes nothing)
            train_once(directory, work, device, args.tiny, short, "bf16", cudnn_attention=allowed)
    if "fsdp-fp32" in stages:
        # fp32 compute: the FSDP rank's generator copy holds the same weights as the one process's
        # model, so both runs sample the same completions and every step's loss compares.
        train_fsdp(directory, work, device, args.tiny, short, train_once(directory, work, device, args.tiny, short, "fp32"),
                   compute="fp32")
    if "groups" in stages:
        nccl_groups(directory, work, device)
    if "logits" in stages:
        logits_memory(device, args.tiny)
    if "decode" in stages:
        decode_rows(directory, device, args.tiny)
        decode_rows(directory, device, args.tiny, torch.float32, new=None if args.tiny else 64)
    if "sdpa" in stages:
        sdpa_cold_shapes(directory, device, args.tiny)
    if "activations" in stages:
        activations(directory, device, args.tiny)
    say("gpu_check: done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
