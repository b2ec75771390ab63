"""Does the activation probe predict what an update pass keeps, on every architecture?

    python benchmarks/activation_probe.py                     # every architecture of benchmarks/architectures.py
    python benchmarks/activation_probe.py --archs gpt2 llama --compute bf16 --checkpointing

For each architecture a random model (the sizes of ``benchmarks/architectures.py``, vocabulary
300, fp32 master weights, the FP32 LM head, train mode) is probed by
``scalerl.train.activation_probe.probe_activations`` -- one-row sequences of at most 512
tokens -- and the fitted cost predicts two larger passes the probe never saw: 6 rows x 700
tokens with the head in chunks, and 2 x 200 tokens with the head whole (a 1 MiB logits budget).
Each prediction is compared with the bytes autograd actually saves for that pass (the same
``saved_tensors_hooks`` count); printed per architecture: the probe's terms, the two ratios
predicted / saved, and a summary (median and worst). This checks the extrapolation in length
and rows, not the device's allocator (that is ``benchmarks/gpu_check.py``'s stage 7).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from architectures import ARCHS  # noqa: E402  (the model sizes shared with that benchmark)

VOCAB = 300


def measure(model, precision, rows: int, length: int, budget: int) -> int:
    import torch

    from scalerl.generate.base import Completion
    from scalerl.generate.logprobs import shared_prompt_logprobs
    from scalerl.train.activation_probe import saved_bytes

    g = torch.Generator().manual_seed(1)
    comps = [Completion(t[:16], t[16:], [0.0] * (length - 16), [1] * (length - 16), [0] * (length - 16), "length")
             for t in torch.randint(3, VOCAB, (rows, length), generator=g).tolist()]
    device = next(model.parameters()).device

    def run():
        with torch.enable_grad(), precision.autocast():
            return shared_prompt_logprobs(model, comps, 1.0, 0, device, budget)[0]

    return saved_bytes(run)


def check(name: str, compute: str, checkpointing: bool) -> tuple[str, float, float, float]:
    import torch
    import transformers

    from scalerl.rl.fp32_head import enable_fp32_lm_head
    from scalerl.train.activation_probe import probe_activations
    from scalerl.train.precision import Precision

    cls, kwargs = ARCHS[name]
    torch.manual_seed(0)
    cfg = getattr(transformers, cls)(vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=2, **kwargs)
    model = enable_fp32_lm_head(transformers.AutoModelForCausalLM.from_config(cfg).float())
    if checkpointing:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    model.train()
    precision = Precision.create(compute, torch.device("cpu"))
    budget = 2**20
    positions = next((getattr(cfg, a) for a in ("max_position_embeddings", "n_positions")
                      if isinstance(getattr(cfg, a, None), int)), None)
    t = time.perf_counter()
    cost = probe_activations(model, precision, temperature=1.0, pad_token_id=0, device=torch.device("cpu"),
                             logits_budget=budget, max_length=positions)
    probe_s = time.perf_counter() - t
    big = min(700, positions or 700)
    chunked = cost.pass_bytes(6, big) / measure(model, precision, 6, big, 1)
    small = min(200, positions or 200)
    whole = cost.pass_bytes(2, small) / measure(model, precision, 2, small, budget)
    terms = (f"{cost.fixed / 2**20:6.2f} MiB + rows x ({cost.per_row / 2**20:5.2f} MiB + "
             f"{cost.per_token / 1024:6.1f} KB/token + {cost.per_token_sq:6.1f} B x L^2), "
             f"whole logits {cost.logits_per_token / 1024:5.2f} KB/token")
    return terms, chunked, whole, probe_s


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--archs", nargs="*", default=sorted(ARCHS))
    p.add_argument("--compute", default="fp32", choices=["fp32", "bf16"], help="autocast dtype on the fp32 weights")
    p.add_argument("--checkpointing", action="store_true", help="gradient (activation) checkpointing on")
    args = p.parse_args(argv)
    warnings.filterwarnings("ignore")
    import torch

    torch.set_num_threads(2)
    ratios: list[float] = []
    failed = []
    for name in args.archs:
        try:
            terms, chunked, whole, probe_s = check(name, args.compute, args.checkpointing)
        except Exception as exc:  # an architecture this transformers cannot build or run on the CPU
            failed.append(name)
            print(f"{name:16s} failed: {type(exc).__name__}: {str(exc)[:120]}", flush=True)
            continue
        ratios += [chunked, whole]
        print(f"{name:16s} {terms} | predicted/saved: 6 x 700 in chunks {chunked:.3f}, 2 x 200 whole {whole:.3f} "
              f"(probe {probe_s:.2f} s)", flush=True)
    if ratios:
        print(f"\n{len(ratios) // 2} architectures ({args.compute}{', checkpointing' if args.checkpointing else ''}): "
              f"predicted/saved median {statistics.median(ratios):.3f}, range {min(ratios):.3f}-{max(ratios):.3f}; "
              f"failed to run: {', '.join(failed) or 'none'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
