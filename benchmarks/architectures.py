"""Train random models of many Hugging Face architectures for a few steps: does every path hold?

    python benchmarks/architectures.py                               # every architecture, fp32 / bf16 / lora
    python benchmarks/architectures.py --archs mixtral falcon --modes lora --nproc 2

Each architecture is a randomly initialised model (2 layers, hidden 64) stored in bf16 with the
byte-level BPE tokenizer of ``examples/user_model.py``, trained ``--steps`` steps on the math JSONL
of the same script through ``scalerl train`` (a subprocess, as a user runs it) with a reward that
has variance for a random model (an even-length completion passes), so every step updates.
Modes: ``fp32`` (the CPU default), ``bf16`` (``precision.compute=bf16``), ``lora``
(``model.lora.rank=8`` + gradient checkpointing). Printed per run: exit status, steps that
trained, and the importance ratio's largest value on step 1 -- on-policy, so it must be 1 up to
the compute dtype's rounding (fp32: 1.0000; bf16: ~1.00x); anything else means the trainer
scores a different policy from the one that generated (dropout, an unmerged adapter, ...).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "examples"))

_ATTN = dict(hidden_size=64, num_hidden_layers=2, num_attention_heads=4)
#: name -> (config class name in transformers, its keyword arguments)
ARCHS: dict[str, tuple[str, dict]] = {
    "llama": ("LlamaConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "qwen3": ("Qwen3Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16)),
    "mistral": ("MistralConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "gemma2": ("Gemma2Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16, sliding_window=8)),
    "gemma3": ("Gemma3TextConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16, sliding_window=8)),
    "phi3": ("Phi3Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "gpt2": ("GPT2Config", dict(n_embd=64, n_layer=2, n_head=4)),
    "gpt_neox": ("GPTNeoXConfig", dict(_ATTN, intermediate_size=128)),
    "opt": ("OPTConfig", dict(_ATTN, ffn_dim=128, word_embed_proj_dim=64)),
    "falcon": ("FalconConfig", dict(_ATTN)),
    "bloom": ("BloomConfig", dict(hidden_size=64, n_layer=2, n_head=4)),
    "stablelm": ("StableLmConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "granite": ("GraniteConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "olmo2": ("Olmo2Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "mixtral": ("MixtralConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, num_local_experts=4,
                                      num_experts_per_tok=2)),
    "qwen3_moe": ("Qwen3MoeConfig", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32, num_key_value_heads=2,
                                         head_dim=16, num_experts=4, num_experts_per_tok=2)),
    # Added in a second round: more of what users fine-tune with RL today.
    "qwen2": ("Qwen2Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "gemma": ("GemmaConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16)),
    "phi": ("PhiConfig", dict(_ATTN, intermediate_size=128)),
    "gpt_bigcode": ("GPTBigCodeConfig", dict(n_embd=64, n_layer=2, n_head=4)),
    "gptj": ("GPTJConfig", dict(n_embd=64, n_layer=2, n_head=4, rotary_dim=8)),
    "cohere": ("CohereConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "starcoder2": ("Starcoder2Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "smollm3": ("SmolLM3Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "glm4": ("Glm4Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16)),
    "exaone4": ("Exaone4Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "ernie4_5": ("Ernie4_5Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2)),
    "deepseek_v3": ("DeepseekV3Config", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32, num_key_value_heads=4,
                                             n_routed_experts=4, num_experts_per_tok=2, n_group=1, topk_group=1,
                                             kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=8,
                                             v_head_dim=16, first_k_dense_replace=1)),
    "qwen2_moe": ("Qwen2MoeConfig", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32,
                                         shared_expert_intermediate_size=32, num_key_value_heads=2, num_experts=4,
                                         num_experts_per_tok=2)),
    "olmoe": ("OlmoeConfig", dict(_ATTN, intermediate_size=32, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2)),
    "gpt_oss": ("GptOssConfig", dict(_ATTN, intermediate_size=64, num_key_value_heads=2, num_local_experts=4,
                                     num_experts_per_tok=2, head_dim=16, sliding_window=8)),
    # Recurrent and hybrid: Mamba; short convolutions, gated delta-net and Mamba-2 beside attention.
    "mamba": ("MambaConfig", dict(hidden_size=64, num_hidden_layers=2, state_size=8)),
    "lfm2": ("Lfm2Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2,
                                layer_types=["conv", "full_attention"])),
    "qwen3_next": ("Qwen3NextConfig", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32,
                                           shared_expert_intermediate_size=32, num_key_value_heads=2, num_experts=4,
                                           num_experts_per_tok=2, head_dim=16, linear_num_value_heads=2,
                                           linear_num_key_heads=2, linear_key_head_dim=16, linear_value_head_dim=16,
                                           layer_types=["linear_attention", "full_attention"])),
    "falcon_h1": ("FalconH1Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, mamba_d_ssm=64,
                                         mamba_n_heads=4, mamba_d_head=16, mamba_d_state=8, mamba_n_groups=1)),
    # Families newer than the list above (transformers 5.2x): Qwen3.5 (gated delta-net beside attention,
    # dense and MoE), Gemma 4, Llama 4 (MoE), OLMo 3, MiniMax-M2, GLM-4.5 (MoE), Nemotron-H (Mamba-2 hybrid),
    # Seed-OSS, Ministral 3.
    "qwen3_5": ("Qwen3_5TextConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16,
                                          linear_num_value_heads=2, linear_num_key_heads=2, linear_key_head_dim=16,
                                          linear_value_head_dim=16, layer_types=["linear_attention", "full_attention"])),
    "qwen3_5_moe": ("Qwen3_5MoeTextConfig", dict(_ATTN, moe_intermediate_size=32, shared_expert_intermediate_size=32,
                                                 num_key_value_heads=2, num_experts=4, num_experts_per_tok=2, head_dim=16,
                                                 linear_num_value_heads=2, linear_num_key_heads=2, linear_key_head_dim=16,
                                                 linear_value_head_dim=16,
                                                 layer_types=["linear_attention", "full_attention"])),
    "gemma4": ("Gemma4TextConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16, sliding_window=8,
                                        hidden_size_per_layer_input=0)),
    "llama4": ("Llama4TextConfig", dict(_ATTN, intermediate_size=128, intermediate_size_mlp=128, num_key_value_heads=2,
                                        head_dim=16, num_local_experts=4, num_experts_per_tok=1)),
    "olmo3": ("Olmo3Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, sliding_window=8)),
    "minimax_m2": ("MiniMaxM2Config", dict(_ATTN, intermediate_size=32, num_key_value_heads=2, head_dim=16,
                                           num_local_experts=4, num_experts_per_tok=2)),
    "glm4_moe": ("Glm4MoeConfig", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32, num_key_value_heads=2,
                                       head_dim=16, n_routed_experts=4, num_experts_per_tok=2, first_k_dense_replace=1,
                                       n_group=1, topk_group=1)),
    "nemotron_h": ("NemotronHConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16,
                                           mamba_num_heads=4, mamba_head_dim=16, ssm_state_size=8, n_groups=1,
                                           layers_block_type=["mamba", "attention"])),
    "seed_oss": ("SeedOssConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16)),
    "ministral3": ("Ministral3Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16)),
    # A third round (transformers 5.24): multi-head latent attention (DeepSeek-V2, V3.2 with its
    # indexer, V4 with compressed attention and per-row compressor buffers in the cache), more MoE
    # (Granite MoE, Hunyuan, dots.llm1, ERNIE 4.5 MoE), Cohere 2 (sliding + full), and the Mamba
    # hybrids Jamba, Bamba and Zamba 2. Families only transformers' hub configs are public for.
    "deepseek_v2": ("DeepseekV2Config", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32, num_key_value_heads=4,
                                             n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                                             first_k_dense_replace=1, n_group=1, topk_group=1, kv_lora_rank=16,
                                             q_lora_rank=None, qk_rope_head_dim=8, qk_nope_head_dim=8, v_head_dim=16)),
    "deepseek_v32": ("DeepseekV32Config", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32,
                                               num_key_value_heads=4, n_routed_experts=4, num_experts_per_tok=2,
                                               n_shared_experts=1, first_k_dense_replace=1, n_group=1, topk_group=1,
                                               kv_lora_rank=16, q_lora_rank=16, qk_rope_head_dim=8, qk_nope_head_dim=8,
                                               v_head_dim=16)),
    "deepseek_v4": ("DeepseekV4Config", dict(_ATTN, moe_intermediate_size=32, num_key_value_heads=4, head_dim=16,
                                             n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1,
                                             q_lora_rank=16, qk_rope_head_dim=8, sliding_window=8,
                                             layer_types=["heavily_compressed_attention", "compressed_sparse_attention"])),
    "granitemoe": ("GraniteMoeConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, num_local_experts=4,
                                            num_experts_per_tok=2)),
    "hunyuan_v1_dense": ("HunYuanDenseV1Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16)),
    "hunyuan_v1_moe": ("HunYuanMoEV1Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16,
                                                  num_experts=4, num_experts_per_tok=2)),
    "cohere2": ("Cohere2Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16, sliding_window=8,
                                      layer_types=["sliding_attention", "full_attention"])),
    "dots1": ("Dots1Config", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32, num_key_value_heads=2,
                                  n_routed_experts=4, num_experts_per_tok=2, n_shared_experts=1, first_k_dense_replace=1,
                                  n_group=1, topk_group=1)),
    "ernie4_5_moe": ("Ernie4_5_MoeConfig", dict(_ATTN, intermediate_size=128, moe_intermediate_size=32,
                                                num_key_value_heads=2, num_experts=4, num_experts_per_tok=2)),
    "jamba": ("JambaConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, num_experts=4, num_experts_per_tok=2,
                                  mamba_d_state=8, mamba_dt_rank=8, attn_layer_period=2, attn_layer_offset=1,
                                  expert_layer_period=2, expert_layer_offset=1)),
    "bamba": ("BambaConfig", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, mamba_n_heads=8, mamba_d_head=16,
                                  mamba_d_state=8, mamba_n_groups=1, attn_layer_indices=[1])),
    "zamba2": ("Zamba2Config", dict(_ATTN, intermediate_size=128, num_key_value_heads=2, head_dim=16, mamba_d_state=8,
                                    layers_block_type=["mamba", "hybrid"])),
}
MODES = {
    "fp32": [],
    "bf16": ["--set", "precision.compute=bf16"],
    "lora": ["--set", "model.lora.rank=8", "--set", "model.gradient_checkpointing=true"],
}
REWARD = '''def parity(completion):
    """A reward with variance for a random model: +1 when the completion has an even length."""
    return len(completion) % 2 == 0
'''


def build(arch: str, out: Path) -> Path:
    import torch
    import transformers
    from transformers.utils import logging as hf_logging
    from user_model import build_tokenizer

    hf_logging.disable_progress_bar()
    tok = build_tokenizer()
    cls, kw = ARCHS[arch]
    config = getattr(transformers, cls)(vocab_size=len(tok), eos_token_id=tok.eos_token_id,
                                        pad_token_id=tok.pad_token_id, bos_token_id=None, **kw)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config)
    model.to(torch.bfloat16).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def train(model: Path, data: Path, reward: Path, out: Path, mode: str, steps: int, nproc: int) -> dict:
    cmd = [sys.executable, "-m", "scalerl.cli", "train", "--model", str(model), "--task", "math", "--data", str(data),
           "--reward", f"{reward}:parity", "--steps", str(steps), "--threads", "1", "--no-report", "--no-progress",
           "--output", str(out), *MODES[mode]]
    if nproc > 1:
        cmd += ["--nproc", str(nproc)]
    t0 = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    rows = []
    log = out / "runlog.jsonl"
    if log.exists():
        rows = [json.loads(line) for line in log.read_text().splitlines() if '"type":"train"' in line]
    first = rows[0] if rows else {}
    error = proc.stderr.strip().splitlines()[-1][:100] if proc.returncode else ""
    return {"rc": proc.returncode, "trained": sum(not r.get("skipped", True) for r in rows),
            "ratio_max_step1": first.get("loss/ratio_max"), "wall": wall, "error": error}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--archs", nargs="+", choices=sorted(ARCHS), default=list(ARCHS))
    p.add_argument("--modes", nargs="+", choices=list(MODES), default=list(MODES))
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--nproc", type=int, default=1, help="trainer processes (FSDP over gloo on a CPU)")
    p.add_argument("--work", help="directory for the models and runs (default: a temporary one)")
    a = p.parse_args(argv)
    from user_model import write_math_data

    work = Path(a.work or tempfile.mkdtemp(prefix="scalerl-archs-"))
    data = write_math_data(work / "math.jsonl")
    reward = work / "rewards.py"
    reward.write_text(REWARD)
    print(f"{'arch':10s} {'mode':5s} {'exit':>4s} {'trained':>7s} {'ratio max, step 1':>17s} {'wall s':>6s}", flush=True)
    failures = 0
    for arch in a.archs:
        model = build(arch, work / "models" / arch)
        for mode in a.modes:
            r = train(model, data, reward, work / "runs" / f"{arch}-{mode}", mode, a.steps, a.nproc)
            ratio = "-" if r["ratio_max_step1"] is None else f"{r['ratio_max_step1']:.4f}"
            failures += r["rc"] != 0
            print(f"{arch:10s} {mode:5s} {r['rc']:>4d} {r['trained']:>4d}/{a.steps:<2d} {ratio:>17s} {r['wall']:>6.1f}"
                  + (f"  {r['error']}" if r["error"] else ""), flush=True)
    print(f"{failures} failed; runs in {work}")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
