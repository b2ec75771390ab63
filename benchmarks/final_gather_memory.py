"""Rank 0's host memory while a ``--nproc`` run writes ``final/`` (CPU, gloo, FSDP2, two ranks).

    python benchmarks/final_gather_memory.py [--hidden 1536] [--layers 12] [--dtype bfloat16]

``final/`` is the one place a sharded run gathers the whole model: rank 0 collects the full
weights on its CPU and writes an ordinary Hugging Face directory in the stored dtype. Two ways,
each in a fresh pair of processes (so neither reuses memory the other freed):

``state-dict``  the full fp32 state dict at once (``get_model_state_dict(full_state_dict=True,
                cpu_offload=True)``), then cast to the stored dtype for ``save_pretrained``
                (what ``final/`` did before: 4 + 2 bytes a parameter for a bf16 model).
``streamed``    ``TrainerGroup.full_weights(dtype)``: one tensor at a time, cast as it arrives
                (what it does now: 2 bytes a parameter).

Both then write the same ``model.safetensors`` through ``save_pretrained`` (the trainer's
``_save_model``). Printed per way: rank 0's peak resident set above its resident set just before
the gather (``VmHWM`` after resetting it through ``/proc/self/clear_refs``), in GB, beside the
model's size in fp32 and in the stored dtype. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import socket
import sys
import tempfile
import time
from pathlib import Path

import torch
import torch.multiprocessing as mp

sys.path.insert(0, str(Path(__file__).resolve().parent))
from nproc_memory import status_gb  # noqa: E402  (the /proc/PID/status reader both benchmarks use)


def _model(hidden: int, layers: int, dtype: torch.dtype):
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(0)
    config = LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 8 // 3, num_hidden_layers=layers,
                         num_attention_heads=hidden // 64, num_key_value_heads=hidden // 128, vocab_size=32000,
                         tie_word_embeddings=False)
    return LlamaForCausalLM(config).to(dtype)


def _rank(rank: int, world: int, port: int, way: str, hidden: int, layers: int, stored: str, out: str, box) -> None:
    import torch.distributed as dist
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict

    from scalerl.train.collectives import forget_object_group, open_object_group
    from scalerl.train.distributed import Rank, TrainerGroup, follow, shard
    from scalerl.train.policy import _save_model
    from scalerl.train.precision import FULL

    torch.set_num_threads(1)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    open_object_group()  # the orders go through it, as in a run
    try:
        cpu = torch.device("cpu")
        model = _model(hidden, layers, torch.float32)  # the fp32 master weights, sharded below
        # Rank 0's plain copy in the compute dtype (the generators' model): what final/ is written through.
        plain = _model(hidden, layers, getattr(torch, stored)) if rank == 0 else None
        shard(model, FULL, fp32_root=False, world=world, device=cpu)
        group = TrainerGroup(model, None, None, None, FULL, Rank(rank, world, cpu), {})
        dist.barrier()
        if rank == 0:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")  # VmHWM := VmRSS: the peak from here on
            before = status_gb("self", "VmRSS")
            start = time.perf_counter()
        if way == "state-dict":
            weights = get_model_state_dict(model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        elif rank == 0:
            weights = group.full_weights(getattr(torch, stored))
        else:
            follow(group)  # rank 0's orders: full_weights, then stop
            return
        if rank == 0:
            _save_model(plain, Path(out), stored, weights, {})
            seconds = time.perf_counter() - start
            box.put((status_gb("self", "VmHWM") - before, seconds))
            if way == "streamed":
                group.stop()
    finally:
        dist.destroy_process_group()
        forget_object_group()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(way: str, hidden: int, layers: int, stored: str) -> tuple[float, float]:
    ctx = mp.get_context("spawn")
    box = ctx.SimpleQueue()
    with tempfile.TemporaryDirectory() as out:
        procs = mp.start_processes(_rank, args=(2, _free_port(), way, hidden, layers, stored, out, box), nprocs=2,
                                   join=False, start_method="spawn")
        result = box.get()
        while not procs.join():
            pass
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--hidden", type=int, default=1536)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--dtype", default="bfloat16", choices=["bfloat16", "float16", "float32"],
                    help="the stored dtype final/ is written in")
    ap.add_argument("--ways", nargs="+", default=["state-dict", "streamed"], choices=["state-dict", "streamed"])
    args = ap.parse_args()
    if not Path("/proc/self/clear_refs").exists():
        sys.exit("needs Linux (/proc/self/clear_refs)")
    params = sum(p.numel() for p in _model(args.hidden, args.layers, torch.float32).parameters())
    size = torch.tensor([], dtype=getattr(torch, args.dtype)).element_size()
    print(f"random Llama, {params / 1e6:.0f}M parameters: {4 * params / 1e9:.2f} GB in fp32, "
          f"{size * params / 1e9:.2f} GB in {args.dtype}; two gloo ranks, final/ in {args.dtype}")
    print(f"{'way':<12} {'rank 0 peak above its start (GB)':>34} {'seconds':>8}")
    for way in args.ways:
        peak, seconds = measure(way, args.hidden, args.layers, args.dtype)
        print(f"{way:<12} {peak:>34.2f} {seconds:>8.1f}")


if __name__ == "__main__":
    main()
