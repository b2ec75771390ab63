"""Peak memory of one update's scoring pass with the LM head whole or in chunks (``run.logits_budget_mb``).

    python benchmarks/logits_memory.py                         # ~1 min, up to ~6 GB of RAM
    python benchmarks/logits_memory.py --rows 8 --tokens 1024 --budgets 0 256 64

A random Qwen2 with a real vocabulary (Qwen2.5's 151,936 tokens) and a small body (hidden 256,
2 layers: the head is what matters here) scores ``--rows`` completions of ``--tokens`` tokens
each (one micro-batch) with gradients, under the FP32 head, as the trainer's update does
(``scalerl.generate.logprobs.shared_prompt_logprobs``), then runs the backward pass. Each
budget runs in a fresh process; printed: the peak resident set of that process (``ru_maxrss``,
which includes ~0.5 GB of torch and transformers), the time of forward + backward, and the
largest difference from the one-piece log-probs (they must agree). On the CPU; a GPU's
allocator peak would differ in the constant, not in the logits term
(rows x tokens x vocabulary x 4 bytes, several times over in one piece).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time


def worker(rows: int, tokens: int, budget_mb: int, vocab: int) -> dict:
    import torch
    from transformers import Qwen2Config, Qwen2ForCausalLM

    from scalerl.generate.base import Completion
    from scalerl.generate.logprobs import shared_prompt_logprobs
    from scalerl.rl.fp32_head import enable_fp32_lm_head

    torch.manual_seed(0)
    torch.set_num_threads(1)
    cfg = Qwen2Config(vocab_size=vocab, hidden_size=256, intermediate_size=512, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, tie_word_embeddings=False)
    model = enable_fp32_lm_head(Qwen2ForCausalLM(cfg)).train()
    g = torch.Generator().manual_seed(1)
    prompt = torch.randint(1, vocab, (16,), generator=g).tolist()
    comps = [Completion(prompt, t, [0.0] * tokens, [1] * tokens, [0] * tokens, "length")
             for t in torch.randint(1, vocab, (rows, tokens), generator=g).tolist()]
    base = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    start = time.perf_counter()
    logprobs, _, _ = shared_prompt_logprobs(model, comps, 1.0, 0, logits_budget=budget_mb * 2**20)
    logprobs.sum().backward()
    seconds = time.perf_counter() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**20
    return {"peak_gb": peak, "before_gb": base, "seconds": seconds, "logprobs": logprobs.detach().flatten().tolist()}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rows", type=int, default=4, help="completions in the micro-batch")
    p.add_argument("--tokens", type=int, default=512, help="tokens per completion")
    p.add_argument("--vocab", type=int, default=151_936)
    p.add_argument("--budgets", type=int, nargs="+", default=[0, 1024, 256, 64],
                   help="run.logits_budget_mb values (the default is 256)")
    p.add_argument("--worker", nargs=4, type=int, help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.worker:
        print(json.dumps(worker(*args.worker)))
        return
    logits_gb = args.rows * args.tokens * args.vocab * 4 / 2**30
    print(f"{args.rows} completions x {args.tokens} tokens, vocabulary {args.vocab:,}: "
          f"the fp32 logits of the micro-batch are {logits_gb:.2f} GB")
    print(f"{'logits_budget_mb':>16}  {'peak RSS (GB)':>13}  {'forward+backward (s)':>20}  max |dlogprob|")
    reference = None
    for budget in args.budgets:
        out = subprocess.run([sys.executable, __file__, "--worker", str(args.rows), str(args.tokens), str(budget),
                              str(args.vocab)], capture_output=True, text=True, check=True)
        r = json.loads(out.stdout.strip().splitlines()[-1])
        reference = reference or r["logprobs"]
        diff = max(abs(a - b) for a, b in zip(r["logprobs"], reference))
        label = "0 (one piece)" if budget == 0 else str(budget)
        print(f"{label:>16}  {r['peak_gb']:>13.2f}  {r['seconds']:>20.2f}  {diff:.1e}")


if __name__ == "__main__":
    main()
