"""The generator's CPU speed-ups, part by part and whole, on the tiny model (CPU seconds).

    .venv/bin/python benchmarks/cpu_decode.py                 # ~2 min on 2 busy cores
    .venv/bin/python benchmarks/cpu_decode.py --rounds 20 --batch 256
    .venv/bin/python benchmarks/cpu_decode.py --whole-only --ablate --rounds 40   # each change left out in turn
    .venv/bin/python benchmarks/cpu_decode.py --roofline      # how far the generator is from the core's matmul peak

Parts (each timed in isolation at the tiny model's decode shape, best of --rounds):

* single-query attention, 128 rows x 4 heads x 28 keys x 32: torch's SDPA (``cpu_flash_attention``)
  against ``softmax(q k^T s + mask) v`` as two batched matmuls
  (:mod:`scalerl.generate.attention`), on contiguous keys and on the decode cache's strided views;
* the KV cache append: ``torch.cat`` of the whole cache (transformers' ``DynamicLayer``) against a
  write into spare room (:mod:`scalerl.generate.kvcache`);
* the KV cache's row selection (finished rows dropped, a quarter here): indexing the filled part
  and copying it into new buffers against one ``index_select`` of the whole buffers;
* drawing one token per row of a 128 x 103 distribution: ``torch.multinomial`` against
  inverse-CDF sampling (:func:`scalerl.generate.sampling.sample_categorical`);
* one AdamW step on the tiny model's 51 tensors: torch's default (a loop over tensors on the CPU)
  against ``fused=True`` (:func:`scalerl.train.update.build_optimizer`).

Whole: ``HFGenerator.generate`` on --batch rows (16 arithmetic prompts x 8, up to 48 tokens,
temperature 1) as it was (transformers' cache, SDPA, ``torch.multinomial``) and as it is, in
interleaved rounds, CPU seconds per 1,000 generated tokens (the two draw different samples of
the same distribution, so the lengths differ a little: hence per token).

Roofline (``--roofline``): where one ``generate`` call's CPU time goes by operator (``torch.profiler``:
the matmuls ``mm`` / ``addmm`` / ``bmm`` against the rest), and the rate of the decode step's
matmul shapes (each linear layer's ``[rows, in] x [in, out]`` from the model's config) against a
1024^3 matmul, the core's practical peak: a generator whose matmuls run at that peak can only
gain in the rest.

CPU seconds (``time.process_time``) of this process, one torch thread: other jobs on a shared
machine slow it less than the wall clock, but not to nothing (caches, memory bandwidth): compare
the two columns of one run, and re-run on a quiet machine for absolute figures.
"""

from __future__ import annotations

import argparse
import statistics
import time
from typing import Callable

import torch


def best(fn: Callable[[], object], rounds: int, inner: int = 100) -> float:
    """Best per-call CPU microseconds over ``rounds`` rounds of ``inner`` calls."""
    fn()
    times = []
    for _ in range(rounds):
        start = time.process_time()
        for _ in range(inner):
            fn()
        times.append((time.process_time() - start) / inner * 1e6)
    return min(times)


def parts(rounds: int) -> None:
    import torch.nn.functional as F

    from scalerl.generate.attention import decode_attention
    from scalerl.generate.sampling import sample_categorical
    from scalerl.models.loading import load_model
    from scalerl.models.tiny import tiny_model_dir
    from scalerl.rl.recipe import RecipeConfig
    from scalerl.train.update import build_optimizer

    b, h, length, d = 128, 4, 28, 32
    q = torch.randn(b, h, 1, d)
    mask = torch.ones(b, 1, 1, length, dtype=torch.bool)
    mask[:16, ..., :2] = False  # left padding on some rows
    k, v = torch.randn(b, h, length, d), torch.randn(b, h, length, d)
    spare_k, spare_v = torch.randn(b, h, length + 16, d), torch.randn(b, h, length + 16, d)
    sk, sv = spare_k[:, :, :length], spare_v[:, :, :length]
    module = torch.nn.Module()
    module.num_key_value_groups = 1
    new = torch.randn(b, h, 1, d)
    probs = torch.softmax(torch.randn(b, 103) * 3, dim=-1)
    gen = torch.Generator().manual_seed(0)
    rows = []
    with torch.inference_mode():
        rows.append(("attention, contiguous keys", best(lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask), rounds),
                     best(lambda: decode_attention(module, q, k, v, mask, scaling=d ** -0.5), rounds)))
        rows.append(("attention, decode-cache views", best(lambda: F.scaled_dot_product_attention(q, sk, sv, attn_mask=mask), rounds),
                     best(lambda: decode_attention(module, q, sk, sv, mask, scaling=d ** -0.5), rounds)))
        rows.append(("KV append (keys + values)", best(lambda: (torch.cat([k, new], 2), torch.cat([v, new], 2)), rounds),
                     best(lambda: (spare_k[:, :, length:length + 1].copy_(new), spare_v[:, :, length:length + 1].copy_(new)), rounds)))
        keep = torch.randperm(b, generator=torch.Generator().manual_seed(0))[: b * 3 // 4].sort().values  # 3/4 of the rows stay

        def select_filled_then_copy():  # index the filled views, then copy into new spare-room buffers
            for buf in (spare_k, spare_v):
                part = buf[:, :, :length][keep]
                out = part.new_empty((part.shape[0], h, length + 16, d))
                out[:, :, :length] = part

        rows.append(("KV row selection (keys + values)", best(select_filled_then_copy, rounds),
                     best(lambda: (spare_k.index_select(0, keep), spare_v.index_select(0, keep)), rounds)))
        rows.append(("draw 1 token from 128 x 103", best(lambda: torch.multinomial(probs, 1, generator=gen), rounds),
                     best(lambda: sample_categorical(probs, gen), rounds)))
    model, _ = load_model(str(tiny_model_dir()), dtype="float32")
    for p in model.parameters():
        p.grad = torch.randn_like(p) * 1e-3
    fused, _ = build_optimizer(model, RecipeConfig())
    plain = torch.optim.AdamW(model.parameters(), lr=1e-4, weight_decay=0.01)
    rows.append(("AdamW step, tiny model", best(plain.step, rounds, 20), best(fused.step, rounds, 20)))
    print("| part | before (us) | after (us) | after / before |\n|---|---|---|---|")
    for name, before, after in rows:
        print(f"| {name} | {before:.0f} | {after:.0f} | {after / before:.2f} |")


#: The generator's three CPU changes, each on or off: (decode attention, append cache, inverse-CDF sampling).
SETS = {"before": (False, False, False), "after": (True, True, True),
        "after without the decode attention": (False, True, True),
        "after without the append cache": (True, False, True),
        "after without the inverse-CDF sampling": (True, True, False)}


def tiny_prompts(batch: int) -> tuple:
    """The tiny model, its tokenizer and ``batch`` prompts: arithmetic problems, 8 rows each (a group)."""
    from scalerl.models.loading import load_model
    from scalerl.models.tiny import tiny_model_dir
    from scalerl.tasks.arithmetic import ArithmeticTask
    from scalerl.tasks.encoding import encode_prompts

    model, tok = load_model(str(tiny_model_dir()), dtype="float32")
    problems = ArithmeticTask().train_problems()[: max(batch // 8, 1)]
    return model, tok, [p for p in encode_prompts(tok, [p.prompt for p in problems]) for _ in range(8)][:batch]


def whole(rounds: int, batch: int, ablate: bool) -> None:
    import scalerl.generate.hf as hf
    import scalerl.generate.sampling as sampling
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.layout import new_cache

    model, tok, prompts = tiny_prompts(batch)
    new_cat, new_sample = hf.decode_cache, sampling.sample_categorical

    def multinomial(probs, generator):
        return torch.multinomial(probs, 1, generator=generator).squeeze(-1)

    def setup(attention: bool, cache: bool, sample: bool) -> hf.HFGenerator:
        hf.decode_cache = new_cat if cache else new_cache
        sampling.sample_categorical = new_sample if sample else multinomial
        model.set_attn_implementation("sdpa")
        gen = hf.HFGenerator(model, tok, seed=0)  # switches to the decode attention on a CPU
        if not attention:
            model.set_attn_implementation("sdpa")
        return gen

    names = list(SETS) if ablate else ["before", "after"]
    cpu: dict[str, list[float]] = {n: [] for n in names}
    tokens = {n: 0 for n in names}
    for r in range(rounds + 1):
        for name in names:
            gen = setup(*SETS[name])
            start = time.process_time()
            out = gen.generate(prompts, SamplingParams(max_new_tokens=48, temperature=1.0, seed=r))
            if r:  # round 0 warms up
                cpu[name].append(time.process_time() - start)
                tokens[name] += sum(len(c.token_ids) for c in out)
    hf.decode_cache, sampling.sample_categorical = new_cat, new_sample
    per = {n: sum(cpu[n]) / tokens[n] * 1000 for n in cpu}
    print(f"\nHFGenerator.generate, {len(prompts)} rows x <= 48 tokens, {rounds} interleaved rounds, "
          f"{torch.get_num_threads()} thread(s)\n")
    print("| generator | CPU-s per call (median) | CPU-s per 1,000 tokens | mean tokens |\n|---|---|---|---|")
    for n in cpu:
        print(f"| {n} | {statistics.median(cpu[n]):.4f} | {per[n]:.4f} | {tokens[n] / rounds / len(prompts):.1f} |")
    print(f"\nafter / before, CPU per token: {per['after'] / per['before']:.3f}")
    if ablate:
        # Each set against "after" in the same round (the machine's speed drifts between rounds);
        # the sets with the same sampler draw the same tokens, so per call is per token there (not
        # for the one without the inverse-CDF sampling: its tokens differ, a little in number).
        print("\nper round, CPU of the set / CPU of after (median [quartiles]): above 1 = the change left out helps")
        for n in names[2:]:
            ratios = [a / b for a, b in zip(cpu[n], cpu["after"])]
            q1, q2, q3 = statistics.quantiles(ratios, n=4)
            print(f"  {n}: {q2:.3f} [{q1:.3f}, {q3:.3f}]")


def roofline(rounds: int, batch: int) -> None:
    from torch.profiler import ProfilerActivity, profile

    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator

    model, tok, prompts = tiny_prompts(batch)
    gen = HFGenerator(model, tok, seed=0)
    params = SamplingParams(max_new_tokens=48, temperature=1.0, seed=0)
    gen.generate(prompts, params)  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        gen.generate(prompts, params)
    own = {e.key: e.self_cpu_time_total for e in prof.key_averages()}
    total = sum(own.values())
    share = {k: own.get(f"aten::{k}", 0.0) / total for k in ("mm", "addmm", "bmm")}
    print(f"\nHFGenerator.generate, {len(prompts)} rows x <= 48 tokens, one call under torch.profiler: "
          f"{total / 1e6:.3f} CPU-s of operators")
    print("| operators | share of the call |\n|---|---|")
    for k, v in share.items():
        print(f"| aten::{k} | {v:.0%} |")
    print(f"| everything else | {1 - sum(share.values()):.0%} |")

    def rate(m: int, k: int, n: int) -> float:
        a, b = torch.randn(m, k), torch.randn(k, n)
        return 2 * m * k * n / best(lambda: a @ b, rounds, inner=max(1, int(2e8 // (2 * m * k * n)))) / 1e3

    c = model.config
    h, i, v = c.hidden_size, c.intermediate_size, c.vocab_size
    shapes = {"1024 x 1024 x 1024 (the peak)": (1024, 1024, 1024), f"q/k/v/o projection ({batch} x {h} x {h})": (batch, h, h),
              f"MLP up / gate ({batch} x {h} x {i})": (batch, h, i), f"MLP down ({batch} x {i} x {h})": (batch, i, h),
              f"LM head ({batch} x {h} x {v})": (batch, h, v)}
    print("\n| matmul | GFLOP/s (best of rounds, one thread) |\n|---|---|")
    for name, shape in shapes.items():
        print(f"| {name} | {rate(*shape):.1f} |")


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--rounds", type=int, default=10)
    p.add_argument("--batch", type=int, default=128)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--whole-only", action="store_true", help="skip the part-by-part timings")
    p.add_argument("--roofline", action="store_true",
                   help="only the generator's operator shares and its matmuls' rate against the core's peak")
    p.add_argument("--ablate", action="store_true",
                   help="also time the whole generator with each of the three changes left out")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    if a.roofline:
        roofline(a.rounds, a.batch)
        return
    if not a.whole_only:
        parts(a.rounds)
    whole(a.rounds, a.batch, a.ablate)


if __name__ == "__main__":
    main()
