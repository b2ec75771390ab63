"""Does the chunked LM head score every architecture as its own logits do? (``run.logits_budget_mb``)

    python benchmarks/head_chunk_archs.py                  # every architecture of benchmarks/architectures.py, ~1 min
    python benchmarks/head_chunk_archs.py --archs gemma2 cohere llama
    python benchmarks/head_chunk_archs.py --compute bf16 --fp32-head    # under bf16 autocast, as a GPU run

For each architecture a random model (fp32, vocabulary 300, the sizes of
``benchmarks/architectures.py``) scores six completions (three prompts, two completions each)
with the head in one piece and in chunks of two positions, through both scoring paths of the
update (whole sequences, and the shared-prompt pass), each against the same path in one piece.
Printed per architecture: ``chunked`` (the
head ran in chunks) or ``whole`` (the model post-processes its logits -- soft-capping, a logit
scale -- which the first call detected, so it was scored in one piece), and the largest
difference of the log-probs from the one-piece ones on each path. Anything but ``chunked`` with
float-noise differences, or ``whole`` with zeros, is a bug. ``--compute bf16`` scores under bf16
autocast (the head's matmul in bf16 unless ``--fp32-head``, ScaleRL's FP32 LM head): the chunks'
matmuls have other shapes than the whole head's, so bf16 rounds them differently -- the size of
that difference is what this mode shows.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from architectures import ARCHS  # noqa: E402  (the model sizes shared with that benchmark)

VOCAB = 300


def check(name: str, compute: str = "fp32", fp32_head: bool = False) -> tuple[str, float, float]:
    import torch
    import transformers

    from scalerl.generate import head_chunks
    from scalerl.generate.base import Completion
    from scalerl.generate.logprobs import completion_logprobs, pack_completions, shared_prompt_logprobs

    cls, kwargs = ARCHS[name]
    torch.manual_seed(0)
    cfg = getattr(transformers, cls)(vocab_size=VOCAB, pad_token_id=0, bos_token_id=1, eos_token_id=2, **kwargs)
    model = transformers.AutoModelForCausalLM.from_config(cfg).float().eval()
    if fp32_head:
        from scalerl.rl.fp32_head import enable_fp32_lm_head

        enable_fp32_lm_head(model)
    g = torch.Generator().manual_seed(1)
    comps = []
    for i in range(3):
        prompt = torch.randint(3, VOCAB, (5 + i,), generator=g).tolist()
        for n in (6, 9):
            comps.append(Completion(prompt, torch.randint(3, VOCAB, (n,), generator=g).tolist(), [0.0] * n, [1] * n,
                                    [0] * n, "length"))
    budget = 2 * VOCAB * head_chunks.LOGIT_BYTES  # two positions per chunk
    batch = pack_completions(comps, 0)
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=compute == "bf16"):
        whole = completion_logprobs(model, batch, 1.0, 0)
        chunked = completion_logprobs(model, batch, 1.0, budget)
        shared_whole = shared_prompt_logprobs(model, comps, 1.0, 0, logits_budget=0)[0]
        shared = shared_prompt_logprobs(model, comps, 1.0, 0, logits_budget=budget)[0]
    how = "chunked" if head_chunks.head_of(model) is not None else "whole"
    return how, (whole - chunked).abs().max().item(), (shared_whole - shared).abs().max().item()


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--archs", nargs="+", default=list(ARCHS), choices=list(ARCHS))
    p.add_argument("--compute", choices=["fp32", "bf16"], default="fp32", help="bf16: under bf16 autocast")
    p.add_argument("--fp32-head", action="store_true", help="the FP32 LM head (ScaleRL's), as the trainer enables it")
    args = p.parse_args()
    warnings.filterwarnings("ignore")
    import transformers

    transformers.logging.set_verbosity_error()
    counts: dict[str, int] = {}
    print(f"{'architecture':<18} {'head':<8} {'max |d| whole seqs':>18} {'max |d| shared prompt':>21}")
    for name in args.archs:
        try:
            how, d_whole, d_shared = check(name, args.compute, args.fp32_head)
            print(f"{name:<18} {how:<8} {d_whole:>18.1e} {d_shared:>21.1e}", flush=True)
        except Exception as exc:  # noqa: BLE001 -- reported, the others still run
            how = "error"
            print(f"{name:<18} error    {type(exc).__name__}: {str(exc)[:100]}", flush=True)
        counts[how] = counts.get(how, 0) + 1
    print(", ".join(f"{k}: {v}" for k, v in sorted(counts.items())))


if __name__ == "__main__":
    main()
