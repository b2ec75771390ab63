"""A user's Hugging Face checkpoint (bf16, architectures other than the tiny Qwen2) on the CPU (review co): what
final/ stores of it (tied heads once, transformers' fp32 tensors in fp32, integer buffers as integers), a generator
process's EOS ids, LoRA on a tied embedding refused.

Each test builds a small random model locally (hidden 32, 2 layers, the tiny model's character tokenizer), saved in
bf16 the way hub checkpoints are."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch
import transformers
from safetensors import safe_open

from scalerl.errors import InputError

_SMALL = dict(hidden_size=32, num_hidden_layers=2, num_attention_heads=4)


def _save(tmp_path: Path, name: str, config, tokenizer, *, dtype=torch.bfloat16, edit=None) -> Path:
    """A random model of ``config`` sized to ``tokenizer``, saved in ``dtype`` with the tokenizer beside it."""
    config.vocab_size = len(tokenizer)
    config.eos_token_id, config.pad_token_id, config.bos_token_id = (
        tokenizer.eos_token_id, tokenizer.pad_token_id, tokenizer.bos_token_id)
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config, dtype=dtype)
    if edit is not None:
        edit(model)
    out = tmp_path / name
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def _tensor_dtypes(path: Path) -> dict[str, str]:
    with safe_open(str(path / "model.safetensors"), "pt") as f:
        return {k: str(f.get_slice(k).get_dtype()) for k in f.keys()}


def _final(source: Path, out: Path) -> Path:
    """``final/`` as a run writes it (policy.save_policy) of the policy loaded from ``source`` (untrained)."""
    from scalerl.models.loading import load_model, stored_dtype
    from scalerl.train.policy import Policy, save_policy
    from scalerl.train.precision import Precision

    model, tokenizer = load_model(str(source), dtype=torch.float32)  # the fp32 master weights, as load_policy reads them
    policy = Policy(model, tokenizer, Precision.create("fp32", torch.device("cpu")), stored_dtype(str(source)), str(source))
    return save_policy(policy, out)


def test_tied_head_is_written_once_in_a_bf16_final(tmp_path, char_tokenizer):
    source = _save(tmp_path, "qwen2", transformers.Qwen2Config(**_SMALL, intermediate_size=64, num_key_value_heads=2,
                                                                tie_word_embeddings=True), char_tokenizer)
    assert "lm_head.weight" not in _tensor_dtypes(source)  # a tied checkpoint stores the matrix once
    final = _final(source, tmp_path / "final")
    assert json.loads((final / "config.json").read_text())["dtype"] == "bfloat16"
    # The same tensors as the checkpoint it came from: the head is re-tied from the config when loaded.
    assert set(_tensor_dtypes(final)) == set(_tensor_dtypes(source))


def _deepseek_v3_config():
    return transformers.DeepseekV3Config(
        **_SMALL, intermediate_size=64, moe_intermediate_size=16, num_key_value_heads=4, n_routed_experts=4,
        num_experts_per_tok=2, n_group=1, topk_group=1, kv_lora_rank=16, q_lora_rank=None, qk_rope_head_dim=8,
        qk_nope_head_dim=8, v_head_dim=8, first_k_dense_replace=1)


def _router_bias(model):
    """A router bias with digits bf16 does not keep (real checkpoints' biases are learned values)."""
    with torch.no_grad():
        for name, buffer in model.named_buffers():
            if name.endswith("e_score_correction_bias"):
                buffer.copy_(0.1 + 0.01 * torch.arange(buffer.numel(), dtype=torch.float32) / 3)


def test_final_keeps_the_checkpoints_fp32_router_tensors(tmp_path, char_tokenizer):
    source = _save(tmp_path, "deepseek_v3", _deepseek_v3_config(), char_tokenizer, edit=_router_bias)
    stored = _tensor_dtypes(source)
    kept = sorted(k for k, v in stored.items() if v == "F32")
    assert kept == ["model.layers.1.mlp.gate.e_score_correction_bias", "model.layers.1.mlp.gate.weight"]
    final = _final(source, tmp_path / "final")
    written = _tensor_dtypes(final)
    assert {k: written[k] for k in kept} == {k: "F32" for k in kept}
    with safe_open(str(source / "model.safetensors"), "pt") as a, safe_open(str(final / "model.safetensors"), "pt") as b:
        key = kept[0]
        assert torch.equal(a.get_tensor(key), b.get_tensor(key).float())


def test_a_generator_process_stops_on_the_generation_configs_eos(tmp_path, char_tokenizer):
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.generate.registry import make_generator
    from scalerl.models.loading import load_model

    extra_eos = char_tokenizer.convert_tokens_to_ids("#")  # a token no other source calls an EOS

    def always_extra_eos(model):  # Phi's head has a bias: make the model emit that token every time
        with torch.no_grad():
            model.lm_head.bias[extra_eos] = 50.0
        model.generation_config.eos_token_id = [char_tokenizer.eos_token_id, extra_eos]

    source = _save(tmp_path, "phi", transformers.PhiConfig(**_SMALL, intermediate_size=64), char_tokenizer,
                   edit=always_extra_eos)
    assert json.loads((source / "config.json").read_text())["eos_token_id"] == char_tokenizer.eos_token_id
    model, tokenizer = load_model(str(source), dtype=torch.float32)
    prompt = [tokenizer("What is 1 + 2?").input_ids]
    params = SamplingParams(max_new_tokens=8, temperature=0.0)
    own = HFGenerator(model, tokenizer, seed=0).generate(prompt, params)[0]
    assert (own.token_ids, own.finish_reason) == ([extra_eos], "stop")  # the trainer's generator, and its threads'
    spec = SimpleNamespace(generator="hf", model_config=model.config, tokenizer=tokenizer, dtype="float32",
                           fp32_lm_head=True, device="cpu", decode_rows=None, cudnn_attention=False, model_path=None,
                           generator_options={}, generation_config=model.generation_config)
    process = make_generator(spec, model.state_dict(), 0, seed=0).generate(prompt, params)[0]  # what a process builds
    assert (process.token_ids, process.finish_reason) == ([extra_eos], "stop")


def test_final_keeps_an_integer_routing_table(tmp_path, char_tokenizer):
    config = transformers.DeepseekV4Config(
        **_SMALL, moe_intermediate_size=8, num_key_value_heads=4, head_dim=16, n_routed_experts=300,
        num_experts_per_tok=2, n_shared_experts=1, q_lora_rank=16, qk_rope_head_dim=8, sliding_window=8,
        layer_types=["heavily_compressed_attention", "compressed_sparse_attention"])

    def routes(model):  # the checkpoint's token -> expert table (zeros in a random model; learned ids in a real one)
        torch.manual_seed(1)
        with torch.no_grad():
            for name, buffer in model.named_buffers():
                if name.endswith("tid2eid"):
                    buffer.copy_(torch.randint(0, config.n_routed_experts, buffer.shape))

    source = _save(tmp_path, "deepseek_v4", config, char_tokenizer, edit=routes)
    tables = sorted(k for k, v in _tensor_dtypes(source).items() if k.endswith("tid2eid"))
    assert tables and all(_tensor_dtypes(source)[k] == "I64" for k in tables)
    final = _final(source, tmp_path / "final")
    assert {k: _tensor_dtypes(final)[k] for k in tables} == {k: "I64" for k in tables}
    loaded = transformers.AutoModelForCausalLM.from_pretrained(final)
    buffers = dict(loaded.named_buffers())
    with safe_open(str(source / "model.safetensors"), "pt") as f:
        for key in tables:
            mine = buffers[key.replace(".ffn.", ".mlp.")]  # (the checkpoint's name for the layer's MoE block)
            assert torch.equal(mine.long(), f.get_tensor(key))


def test_lora_on_a_tied_embedding_samples_the_policy_it_trains(tmp_path, char_tokenizer):
    from scalerl.errors import ConfigError
    from scalerl.models.loading import load_model
    from scalerl.models.lora import add_lora, generator_copy, generator_state_dict
    from scalerl.rl.fp32_head import enable_fp32_lm_head

    source = _save(tmp_path, "qwen2", transformers.Qwen2Config(**_SMALL, intermediate_size=64, num_key_value_heads=2,
                                                                tie_word_embeddings=True), char_tokenizer)
    model, _ = load_model(str(source), dtype=torch.float32)
    enable_fp32_lm_head(model)
    try:
        add_lora(model, rank=4, alpha=8, dropout=0.0, target_modules=["embed_tokens", "q_proj"])
    except ConfigError:
        return  # refused in one line: also right
    torch.manual_seed(0)
    with torch.no_grad():  # a trained adapter (peft starts B at 0: no delta yet)
        for name, p in model.named_parameters():
            if "lora_" in name:
                p.copy_(torch.randn_like(p) * 0.05)
    ids = torch.tensor([char_tokenizer("What is 12 + 30?").input_ids])
    with torch.no_grad():
        trainer = model(ids).logits.log_softmax(-1)
        generator = generator_copy(model)(ids).logits.log_softmax(-1)  # a thread generator's copy
        plain = transformers.AutoModelForCausalLM.from_config(model.config)
        plain.load_state_dict(generator_state_dict(model))  # what a weight push (and final/) holds
        pushed = plain.eval()(ids).logits.log_softmax(-1)
    assert (generator - trainer).abs().max().item() < 1e-4
    assert (pushed - trainer).abs().max().item() < 1e-4


@pytest.mark.slow
@pytest.mark.extended  # (make test-all: the one-process final's router test is in the default run)
def test_fsdp_final_keeps_the_routers_fp32_values(tmp_path, char_tokenizer):
    """--nproc 2: final/ was gathered from the shards in the stored dtype (bf16) before the router was kept in fp32:
    F32 tensors holding bf16-rounded values (review cp). The buffer is never trained: final/ holds it exactly."""
    from scalerl.cli import main

    source = _save(tmp_path, "deepseek_v3", _deepseek_v3_config(), char_tokenizer, edit=_router_bias)
    out = tmp_path / "run"
    assert main(["train", "--nproc", "2", "--model", str(source), "--output", str(out), "--no-progress", "--steps", "1",
                 "--eval-every", "1", "--set", "pipeline=sync", "--threads", "1", "--set", "batch.prompts_per_step=4",
                 "--set", "batch.generations_per_prompt=2", "--set", "eval.problems=4",
                 "--set", "eval.samples_per_problem=1"]) == 0
    key = "model.layers.1.mlp.gate.e_score_correction_bias"
    with safe_open(str(source / "model.safetensors"), "pt") as a, safe_open(str(out / "final" / "model.safetensors"), "pt") as b:
        want, got = a.get_tensor(key), b.get_tensor(key)
    assert got.dtype == torch.float32 and torch.equal(got, want)


# A checkpoint saved by a GPU run with flash-attention (config.json: "attn_implementation": "flash_attention_2"):
# transformers raised ImportError at every build on this CPU -- a traceback from the profile choice and from eval.

def _flash_checkpoint(tmp_path: Path, tokenizer, request: str) -> Path:
    config = transformers.LlamaConfig(**_SMALL, intermediate_size=64, num_key_value_heads=2)
    path = _save(tmp_path, "fa2", config, tokenizer)
    saved = json.loads((path / "config.json").read_text())
    (path / "config.json").write_text(json.dumps({**saved, "attn_implementation": request}))
    return path


def test_a_flash_attention_request_without_the_kernel_falls_back_to_sdpa_with_one_warning(
        tmp_path, char_tokenizer, capsys, monkeypatch):
    from scalerl.cli import main
    from scalerl.models import attention_request
    from scalerl.models.loading import load_model
    from scalerl.train.profiles import count_parameters

    monkeypatch.setattr(attention_request, "_WARNED", set())
    path = _flash_checkpoint(tmp_path, char_tokenizer, "flash_attention_2")
    assert main(["eval", "--model", str(path), "--problems", "2", "--k", "1", "--sets", "val", "--no-progress"]) == 0
    err = capsys.readouterr().err
    warned = [line for line in err.splitlines() if "flash_attention_2" in line]
    assert warned == ["scalerl eval: warning: the model's config.json asks for attn_implementation='flash_attention_2', "
                      "which needs a flash-attention kernel and a GPU, which this machine does not have; using "
                      "transformers' default attention instead (SDPA where the model has it), which computes the "
                      "same"], err
    assert "Traceback" not in err
    assert count_parameters(str(path)) > 0  # (the profile choice of `scalerl train`)
    model, _ = load_model(str(path))
    assert model.config._attn_implementation == "sdpa"


def test_a_hub_kernel_request_without_cuda_falls_back_too(tmp_path, char_tokenizer, monkeypatch):
    from scalerl.models import attention_request
    from scalerl.models.loading import load_model

    monkeypatch.setattr(attention_request, "_WARNED", set())
    with pytest.warns(attention_request.Note, match="kernels-community/flash-attn2"):  # (review cs: a ValueError)
        model, _ = load_model(str(_flash_checkpoint(tmp_path, char_tokenizer, "kernels-community/flash-attn2")))
    assert model.config._attn_implementation == "sdpa"


def test_an_attention_request_this_machine_can_run_is_kept(tmp_path, char_tokenizer):
    from scalerl.models.loading import load_model

    model, _ = load_model(str(_flash_checkpoint(tmp_path, char_tokenizer, "eager")))
    assert model.config._attn_implementation == "eager"


def test_a_flash_attention_request_given_to_load_model_is_refused_in_one_line(tmp_path, char_tokenizer):
    from scalerl.models import attention_request
    from scalerl.models.loading import load_model

    if attention_request._flash_available("flash_attention_2"):
        pytest.skip("flash-attn is installed here: the request can be honoured")
    path = _flash_checkpoint(tmp_path, char_tokenizer, "eager")  # config.json asks for nothing flash
    for request in ("flash_attention_2", "kernels-community/flash-attn2"):
        # (review cu: the warning blamed config.json, then "cannot load the weights ... a cut download?")
        with pytest.raises(InputError, match=f"attn_implementation='{request}' needs a flash-attention kernel"):
            load_model(str(path), attn_implementation=request)


def test_a_flash_request_on_a_gpu_without_the_package_names_the_package(monkeypatch):
    from scalerl.models import attention_request

    monkeypatch.setattr(attention_request, "_flash_available", lambda kernel: False)  # flash-attn not installed
    monkeypatch.setattr(attention_request, "_accelerator", lambda: True)  # ... on a CUDA machine
    with pytest.raises(InputError, match="needs a flash-attention kernel and the flash-attn package, which is not "
                                         "installed"):  # (review cy: it said the machine had no GPU)
        attention_request.refuse_missing_flash_attention("flash_attention_2")


def test_a_checkpoints_flash_request_dropped_on_a_gpu_names_the_missing_package(monkeypatch):
    from scalerl.models import attention_request

    monkeypatch.setattr(attention_request, "_flash_available", lambda kernel: False)  # flash-attn not installed
    monkeypatch.setattr(attention_request, "_accelerator", lambda: True)  # ... on a CUDA machine
    monkeypatch.setattr(attention_request, "_WARNED", set())
    config = SimpleNamespace(_attn_implementation="flash_attention_2")
    with pytest.warns(attention_request.Note, match="needs a flash-attention kernel and the flash-attn package"):
        assert attention_request.drop_missing_flash_attention(config)  # (review cz: it read as "no GPU")
