"""bf16 checkpoints at the paper's learning rate: do the weights move, and is the update right?

For each architecture (Llama with untied embeddings, Qwen2 with tied ones, GPT-2) a random
model saved in bf16 (examples/user_model.py) takes 3 policy updates (``policy_update``, the
scalerl preset: CISPO, prompt aggregation, AdamW lr 5e-7, eps 1e-15, warm-up off so every step
is at 5e-7) on the same three rollout batches, in three set-ups:

* ``bf16 weights``   -- the weights loaded in bf16 and AdamW stepping them directly (what the
  trainer did before fp32 master weights);
* ``bf16 mixed``     -- fp32 master weights and optimizer state, bf16 autocast compute (now);
* ``fp32``           -- the reference: fp32 weights, fp32 compute.

Printed per set-up: the share of weights that moved (of all, and of those whose gradient was
non-zero -- an embedding row of a token absent from the batch gets none, and weight decay at
lr 5e-7 is below an fp32 ulp), and the update error against the fp32 reference:
``|dW - dW_ref| / |dW_ref|`` over all weights and the cosine between the two updates, plus
the first step's gradient error. fp16 (mixed, loss-scaled) is shown beside them.

    python benchmarks/mixed_precision.py [--archs llama qwen2 gpt2] [--steps 3] [--seed 0] [--device cuda]

Deterministic on a CPU (fixed seeds, one thread): the same numbers on every run of one machine. Another CPU's
kernels round bf16 differently, so its figures move in the second digit (the README's 0.034 / 0.041 / 0.056 update
errors came out 0.0363 / 0.0388 / 0.0523 on another Intel Xeon with the same torch 2.13.0+cpu -- review de).
"""

from __future__ import annotations

import argparse
import copy
import importlib.util
import sys
import tempfile
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from scalerl.generate.base import SamplingParams  # noqa: E402
from scalerl.generate.hf import HFGenerator  # noqa: E402
from scalerl.models.dropout import disable_dropout  # noqa: E402
from scalerl.rl.fp32_head import enable_fp32_lm_head  # noqa: E402
from scalerl.rl.presets import get_recipe  # noqa: E402
from scalerl.rollout.groups import Group  # noqa: E402
from scalerl.tasks.base import Problem  # noqa: E402
from scalerl.tasks.encoding import encode_prompts  # noqa: E402
from scalerl.train.precision import FULL, Precision  # noqa: E402
from scalerl.train.update import build_optimizer, policy_update  # noqa: E402


def _user_model_module():
    spec = importlib.util.spec_from_file_location("user_model", ROOT / "examples" / "user_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def make_batches(model, tokenizer, rows, steps: int, prompts: int = 8, group: int = 4, seed: int = 0):
    """``steps`` rollout batches sampled from ``model`` (fp32), rewards +1 / -1 alternating in each
    group (the update, not the reward, is under test: every group has variance)."""
    gen = HFGenerator(model, tokenizer, seed=seed)
    batches = []
    for s in range(steps):
        chosen = rows[s * prompts:(s + 1) * prompts]
        ids = encode_prompts(tokenizer, [r["prompt"] for r in chosen])
        comps = gen.generate([p for p in ids for _ in range(group)], SamplingParams(max_new_tokens=24, seed=seed + s))
        batches.append([
            Group(Problem(str(i), r["prompt"], r["answer"]), comps[i * group:(i + 1) * group],
                  [1.0 if j % 2 == 0 else -1.0 for j in range(group)], [1.0 if j % 2 == 0 else -1.0 for j in range(group)])
            for i, r in enumerate(chosen)
        ])
    return batches


def run_updates(model, batches, recipe, precision, pad_id, device="cpu"):
    """Apply the updates; returns (final fp32 weights, first step's gradients, skipped steps)."""
    optimizer, scheduler = build_optimizer(model, recipe)
    first_grads, skipped = None, 0

    def capture(opt, args, kwargs):
        nonlocal first_grads
        if first_grads is None:
            first_grads = {n: p.grad.detach().float().cpu() for n, p in model.named_parameters() if p.grad is not None}

    optimizer.register_step_pre_hook(capture)
    for groups in batches:
        result = policy_update(model, optimizer, scheduler, groups, recipe, temperature=1.0, pad_token_id=pad_id,
                               micro_batch_size=64, precision=precision, device=device)
        skipped += result.skipped
    return {n: p.detach().float().cpu() for n, p in model.named_parameters()}, first_grads, skipped


def compare(arch: str, steps: int, seed: int, device: str = "cpu") -> list[dict]:
    from transformers import AutoModelForCausalLM, AutoTokenizer

    um = _user_model_module()
    with tempfile.TemporaryDirectory() as tmp:
        path = um.save_user_model(Path(tmp) / arch, arch, seed=seed)
        tokenizer = AutoTokenizer.from_pretrained(path)

        def load(dtype):
            torch.manual_seed(seed)
            m = AutoModelForCausalLM.from_pretrained(path, dtype=dtype)
            # As the trainer does (model.keep_dropout=false). With GPT-2's dropout 0.1 left on, the
            # set-ups draw different masks on CUDA (the fused kernel's masks depend on the dtype):
            # a 0.41 gradient "error" on an H200 that was dropout, not precision.
            disable_dropout(m)
            enable_fp32_lm_head(m)
            return m.to(device)

        reference = load(torch.float32)
        start = {n: p.detach().float().cpu().clone() for n, p in reference.named_parameters()}
        batches = make_batches(copy.deepcopy(reference), tokenizer, um.math_rows(64, seed), steps, seed=seed)
        recipe = get_recipe("scalerl")
        recipe.optimizer.warmup_steps = 0  # every step at the recipe's lr (5e-7)
        pad = tokenizer.pad_token_id
        setups = {
            "fp32 (reference)": (torch.float32, FULL),
            "bf16 weights (before)": (torch.bfloat16, FULL),
            "bf16 mixed (now)": (torch.float32, Precision("bf16", torch.device(device))),
            "fp16 mixed (now)": (torch.float32, Precision("fp16", torch.device(device))),
        }
        results = {name: run_updates(load(dtype), batches, recipe, precision, pad, device)
                   for name, (dtype, precision) in setups.items()}
    ref_w, ref_g, _ = results["fp32 (reference)"]
    d_ref = torch.cat([(ref_w[n] - start[n]).flatten() for n in start])
    g_ref = torch.cat([ref_g[n].flatten() for n in ref_g])
    touched = torch.cat([(ref_g[n] != 0).flatten() if n in ref_g else torch.zeros(start[n].numel(), dtype=torch.bool)
                         for n in start])
    rows = []
    for name, (weights, grads, skipped) in results.items():
        d = torch.cat([(weights[n] - start[n]).flatten() for n in start])
        g = torch.cat([grads[n].flatten() for n in ref_g])
        moved = d != 0
        rows.append({
            "arch": arch, "setup": name, "params": d.numel(), "skipped": skipped,
            "moved_all": moved.float().mean().item(), "moved_with_grad": moved[touched].float().mean().item(),
            "update_err": ((d - d_ref).norm() / d_ref.norm()).item(),
            "update_cos": torch.nn.functional.cosine_similarity(d, d_ref, dim=0).item(),
            "grad_err": ((g - g_ref).norm() / g_ref.norm()).item(),
        })
    return rows


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--archs", nargs="+", default=["llama", "qwen2", "gpt2"])
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--device", default="cpu", help="cpu (the README's figures) or cuda")
    args = p.parse_args(argv)
    torch.set_num_threads(1)
    print(f"{args.steps} updates at lr 5e-7 (scalerl preset, warm-up off), bf16-stored random models, "
          f"torch {torch.__version__}, {args.device}\n")
    print("| model | set-up | weights moved | of those with a gradient | update error vs fp32 | cosine | 1st-step gradient error |")
    print("|---|---|---|---|---|---|---|")
    for arch in args.archs:
        for r in compare(arch, args.steps, args.seed, args.device):
            print(f"| {arch} ({r['params'] / 1e3:.0f}k) | {r['setup']} | {100 * r['moved_all']:.1f}% | "
                  f"{100 * r['moved_with_grad']:.1f}% | {r['update_err']:.3g} | {r['update_cos']:.4f} | {r['grad_err']:.3g} |"
                  + (f" ({r['skipped']} skipped)" if r["skipped"] else ""))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
