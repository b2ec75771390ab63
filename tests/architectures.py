"""Small random configs of Hugging Face causal-LM architectures other than the tiny Qwen2, each with
what makes it differ (the generator's tests in test_hf_generator.py, the trainer's in
train/test_architecture_runs.py). ``ARCHITECTURES[name]()`` is a fresh config, hidden size 32, 2 layers."""

import transformers

_SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4)
ARCHITECTURES = {
    "llama": lambda: transformers.LlamaConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2),
    "gemma2": lambda: transformers.Gemma2Config(**_SMALL, intermediate_size=64, num_key_value_heads=2, head_dim=8,
                                                sliding_window=8),  # sliding window + logit soft-capping
    "phi3": lambda: transformers.Phi3Config(**_SMALL, intermediate_size=64, num_key_value_heads=2),  # fused qkv
    "gpt2": lambda: transformers.GPT2Config(n_embd=32, n_layer=2, n_head=4),  # learned absolute positions
    "gpt_neox": lambda: transformers.GPTNeoXConfig(**_SMALL, intermediate_size=64),  # partial rotary
    "opt": lambda: transformers.OPTConfig(**_SMALL, ffn_dim=64, word_embed_proj_dim=32),  # positions from the mask
    "falcon": lambda: transformers.FalconConfig(**_SMALL),
    "bloom": lambda: transformers.BloomConfig(hidden_size=32, n_layer=2, n_head=4),  # ALiBi from the mask
    "mixtral": lambda: transformers.MixtralConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2,
                                                  num_local_experts=4, num_experts_per_tok=2),
    # Recurrent layers, whose cache rows cannot be selected (a group's prompt is prefilled per row,
    # finished rows stay in the batch) and, in pure Mamba, whose decode steps take no mask.
    "mamba": lambda: transformers.MambaConfig(hidden_size=32, num_hidden_layers=2, state_size=8),
    "lfm2": lambda: transformers.Lfm2Config(**_SMALL, num_key_value_heads=2, intermediate_size=64,
                                            layer_types=["conv", "full_attention"]),  # short convolutions + attention
    "qwen3_next": lambda: transformers.Qwen3NextConfig(  # gated delta-net linear attention + attention + MoE
        **_SMALL, num_key_value_heads=2, intermediate_size=64, moe_intermediate_size=16,
        shared_expert_intermediate_size=16, num_experts=4, num_experts_per_tok=2, head_dim=8, linear_num_value_heads=2,
        linear_num_key_heads=2, linear_key_head_dim=8, linear_value_head_dim=8,
        layer_types=["linear_attention", "full_attention"]),
    "falcon_h1": lambda: transformers.FalconH1Config(  # Mamba-2 and attention in every layer
        **_SMALL, num_key_value_heads=2, intermediate_size=64, mamba_d_ssm=32, mamba_n_heads=4, mamba_d_head=8,
        mamba_d_state=8, mamba_n_groups=1),
    # Checked in a later round (transformers 5.25): what users fine-tune with RL beside the above.
    "gemma3": lambda: transformers.Gemma3TextConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2, head_dim=8,
                                                    sliding_window=8),  # text-only Gemma3ForCausalLM
    "qwen3": lambda: transformers.Qwen3Config(**_SMALL, intermediate_size=64, num_key_value_heads=2, head_dim=8),
    "qwen3_moe": lambda: transformers.Qwen3MoeConfig(**_SMALL, intermediate_size=64, moe_intermediate_size=16,
                                                     num_key_value_heads=2, head_dim=8, num_experts=4, num_experts_per_tok=2),
    "olmo2": lambda: transformers.Olmo2Config(**_SMALL, intermediate_size=64, num_key_value_heads=2),
    "granite": lambda: transformers.GraniteConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2),
    "granitemoe": lambda: transformers.GraniteMoeConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2,
                                                        num_local_experts=4, num_experts_per_tok=2),
    "deepseek_v3": lambda: transformers.DeepseekV3Config(  # multi-head latent attention, a dense first layer
        **_SMALL, intermediate_size=64, moe_intermediate_size=16, num_key_value_heads=4, n_routed_experts=4,
        num_experts_per_tok=2, n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=8,
        qk_nope_head_dim=8, v_head_dim=8, first_k_dense_replace=1),
    "glm4": lambda: transformers.Glm4Config(**_SMALL, intermediate_size=64, num_key_value_heads=2, head_dim=8),
    "smollm3": lambda: transformers.SmolLM3Config(**_SMALL, intermediate_size=64, num_key_value_heads=2),
    "phi": lambda: transformers.PhiConfig(**_SMALL, intermediate_size=64),  # partial rotary, parallel block
    "starcoder2": lambda: transformers.Starcoder2Config(**_SMALL, intermediate_size=64, num_key_value_heads=2),
    "cohere": lambda: transformers.CohereConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2),  # logit scale
    "dbrx": lambda: transformers.DbrxConfig(d_model=32, n_layers=2, n_heads=4, max_seq_len=256,
                                            attn_config=dict(kv_n_heads=2, clip_qkv=8.0, rope_theta=10000.0),
                                            ffn_config=dict(ffn_hidden_size=64, moe_num_experts=4, moe_top_k=2)),
    "phimoe": lambda: transformers.PhimoeConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2,
                                                num_local_experts=4, num_experts_per_tok=2),
    "minimax": lambda: transformers.MiniMaxConfig(  # lightning (linear) attention beside softmax attention, MoE
        **_SMALL, intermediate_size=64, num_key_value_heads=2, head_dim=8, num_local_experts=4, num_experts_per_tok=2,
        block_size=4, layer_types=["linear_attention", "full_attention"]),
}
