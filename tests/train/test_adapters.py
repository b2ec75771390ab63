"""Gradient checkpointing and LoRA adapters (peft): same gradients, adapter-only training, merged generators."""

import copy
import json

import pytest
import torch

from scalerl.config import apply_overrides
from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.generate.logprobs import checkpointing_enabled, completion_logprobs, pack_completions
from scalerl.models.lora import generator_copy, generator_state_dict, has_lora
from scalerl.pipeline.landing import Landing, UpdatePlan, WeightHistory
from scalerl.rl.presets import get_recipe
from scalerl.rollout.groups import Group
from scalerl.tasks.base import Problem
from scalerl.tasks.encoding import encode_prompts
from scalerl.train.config import TrainConfig
from scalerl.train.policy import load_policy, load_policy_weights, policy_weights, save_policy
from scalerl.train.update import build_optimizer, policy_update

CPU = torch.device("cpu")
pytestmark = pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated")


def _policy(path, *overrides):
    cfg = apply_overrides(TrainConfig(), [f"model.name_or_path={path}", "precision.compute=fp32", *overrides])
    return load_policy(cfg.validate(), CPU)


def _groups(model, tokenizer, prompts=4, group=4, seed=0):
    gen = HFGenerator(model, tokenizer, seed=seed)
    ids = encode_prompts(tokenizer, [f"Compute {a} * 3." for a in range(prompts)])
    comps = gen.generate([p for p in ids for _ in range(group)], SamplingParams(max_new_tokens=12, seed=seed))
    rewards = [1.0 if j % 2 == 0 else -1.0 for j in range(group)]
    return [Group(Problem(str(i), "", ""), comps[i * group:(i + 1) * group], rewards, rewards) for i in range(prompts)]


def _recipe(lr=1e-3):
    recipe = get_recipe("scalerl")
    recipe.optimizer.lr, recipe.optimizer.warmup_steps = lr, 0
    return recipe


def _gradients(policy, groups, share_prompt=True):
    policy = copy.deepcopy(policy)  # the step is taken: keep the caller's weights
    optimizer, scheduler = build_optimizer(policy.model, _recipe())
    grads = {}
    optimizer.register_step_pre_hook(lambda opt, a, k: grads.update(
        {n: p.grad.clone() for n, p in policy.model.named_parameters() if p.grad is not None}))
    policy_update(policy.model, optimizer, scheduler, groups, _recipe(), temperature=1.0,
                  pad_token_id=policy.tokenizer.pad_token_id, micro_batch_size=3, share_prompt=share_prompt)
    return grads


@pytest.fixture(scope="module")
def llama(user_model):
    return user_model("llama", dtype="float32")


def test_gradient_checkpointing_gives_the_same_gradients(llama):
    plain = _policy(llama)
    checkpointed = _policy(llama, "model.gradient_checkpointing=true")
    assert checkpointing_enabled(checkpointed.model) and not checkpointing_enabled(plain.model)
    groups = _groups(copy.deepcopy(plain.model), plain.tokenizer)
    reference = _gradients(plain, groups)
    for share_prompt in (True, False):  # the shared-prompt pass falls back to whole sequences (no KV cache)
        grads = _gradients(checkpointed, groups, share_prompt)
        assert grads.keys() == reference.keys()
        for name in reference:
            torch.testing.assert_close(grads[name], reference[name], rtol=1e-4, atol=1e-7)


@pytest.fixture(scope="module")
def lora_policy(llama):
    return _policy(llama, "model.lora.rank=4", "model.lora.alpha=8")


def test_lora_trains_only_the_adapters(lora_policy, llama):
    policy = copy.deepcopy(lora_policy)
    model = policy.model
    adapters = {n for n, p in model.named_parameters() if p.requires_grad}
    assert adapters and all(".lora_A." in n or ".lora_B." in n for n in adapters)
    assert {p.dtype for n, p in model.named_parameters() if n in adapters} == {torch.float32}
    optimizer, scheduler = build_optimizer(model, _recipe())
    assert sum(len(g["params"]) for g in optimizer.param_groups) == len(adapters)
    before = {n: p.detach().clone() for n, p in model.named_parameters()}
    groups = _groups(generator_copy(model), policy.tokenizer)
    for _ in range(3):
        result = policy_update(model, optimizer, scheduler, groups, _recipe(), temperature=1.0,
                               pad_token_id=policy.tokenizer.pad_token_id, micro_batch_size=8)
        assert not result.skipped
    after = dict(model.named_parameters())
    assert all(torch.equal(after[n], before[n]) for n in before if n not in adapters)  # the base is frozen
    assert any(not torch.equal(after[n], before[n]) for n in adapters if ".lora_B." in n)
    assert len(optimizer.state_dict()["state"]) == len(adapters)  # optimizer state: adapters only
    # The checkpoint holds the adapters only, and restores the policy exactly.
    weights = policy_weights(model)
    assert set(weights) == adapters
    fresh = _policy(llama, "model.lora.rank=4", "model.lora.alpha=8")
    load_policy_weights(fresh.model, copy.deepcopy(weights))
    batch = pack_completions([c for g in groups for c in g.completions], 0)
    with torch.no_grad():
        torch.testing.assert_close(completion_logprobs(fresh.model.eval(), batch, 1.0),
                                   completion_logprobs(model.eval(), batch, 1.0), rtol=0, atol=0)


def _trained_lora(lora_policy):
    """The LoRA policy after a few steps (B != 0, so base + adapter differs from the base)."""
    policy = copy.deepcopy(lora_policy)
    optimizer, scheduler = build_optimizer(policy.model, _recipe(lr=1e-2))
    groups = _groups(generator_copy(policy.model), policy.tokenizer)
    for _ in range(3):
        policy_update(policy.model, optimizer, scheduler, groups, _recipe(lr=1e-2), temperature=1.0,
                      pad_token_id=policy.tokenizer.pad_token_id, micro_batch_size=8)
    return policy


def test_generators_see_the_merged_weights(lora_policy, llama):
    policy = _trained_lora(lora_policy)
    model, tok = policy.model.eval(), policy.tokenizer
    # 1. A generator with its own copy (threads): an ordinary model, adapter merged in.
    copy_ = generator_copy(model)
    assert not has_lora(copy_)
    comps = HFGenerator(copy_, tok, seed=3).generate(encode_prompts(tok, ["Compute 7 * 3."]) * 6,
                                                     SamplingParams(max_new_tokens=12, seed=3))
    batch = pack_completions(comps, tok.pad_token_id)
    with torch.no_grad():
        trainer_lp = completion_logprobs(model, batch, 1.0)
    generator_lp = torch.zeros_like(trainer_lp)
    for i, c in enumerate(comps):
        generator_lp[i, :len(c.logprobs)] = torch.tensor(c.logprobs)
    torch.testing.assert_close(generator_lp, trainer_lp, rtol=1e-5, atol=1e-5)
    # 2. A generator that receives weight pushes (processes, Ray, vLLM): plain names, merged values.
    stale = _policy(llama)  # the base model, no adapter
    stale_gen = HFGenerator(generator_copy(stale.model), tok, seed=3)
    stale_gen.update_weights(generator_state_dict(model), version=1)
    pushed = stale_gen.generate(encode_prompts(tok, ["Compute 7 * 3."]) * 6, SamplingParams(max_new_tokens=12, seed=3))
    assert [c.token_ids for c in pushed] == [c.token_ids for c in comps]
    assert torch.allclose(torch.tensor([x for c in pushed for x in c.logprobs]),
                          torch.tensor([x for c in comps for x in c.logprobs]), atol=1e-5)
    # 2b. Seeded PipelineRL-k (the local default): the weights the trainer publishes after a step, which
    # thread generators load at their planned decode steps, are the merged ones too.
    history = WeightHistory()
    history.publish(1, 1, model)
    planned_gen = HFGenerator(generator_copy(stale.model), tok, seed=3)
    planned = planned_gen.generate(encode_prompts(tok, ["Compute 7 * 3."]) * 6, SamplingParams(max_new_tokens=12, seed=3),
                                   updates=Landing(UpdatePlan(start=1), history))
    assert planned_gen.version == 1 and [c.versions[0] for c in planned] == [1] * 6
    assert [c.token_ids for c in planned] == [c.token_ids for c in comps]
    # 3. The trainer's own model (sync modes) generates with the adapter active: the same policy.
    shared = HFGenerator(model, tok, seed=3).generate(encode_prompts(tok, ["Compute 7 * 3."]) * 6,
                                                      SamplingParams(max_new_tokens=12, seed=3))
    assert [c.token_ids for c in shared] == [c.token_ids for c in comps]


@pytest.mark.parametrize("save", ["merged", "adapter", "both"])
def test_the_final_lora_model_is_merged_or_the_adapter(lora_policy, llama, tmp_path, save):
    from peft import PeftModel
    from transformers import AutoModelForCausalLM

    policy = _trained_lora(lora_policy)
    save_policy(policy, tmp_path / "final", lora_save=save)
    ids = torch.tensor([encode_prompts(policy.tokenizer, ["Compute 2 * 3."])[0]])
    with torch.no_grad():
        expected = policy.model.eval()(input_ids=ids).logits
    if save in ("merged", "both"):
        merged = AutoModelForCausalLM.from_pretrained(tmp_path / "final", dtype=torch.float32)
        with torch.no_grad():
            torch.testing.assert_close(merged(input_ids=ids).logits, expected, rtol=1e-4, atol=1e-5)
        assert json.loads((tmp_path / "final" / "config.json").read_text())["dtype"] == "float32"
    adapter_dir = {"adapter": tmp_path / "final", "both": tmp_path / "final" / "adapter"}.get(save)
    if adapter_dir is not None:
        assert (adapter_dir / "adapter_config.json").exists() and (adapter_dir / "adapter_model.safetensors").exists()
        base = AutoModelForCausalLM.from_pretrained(llama, dtype=torch.float32)
        with torch.no_grad():
            loaded = PeftModel.from_pretrained(base, adapter_dir)(input_ids=ids).logits
        torch.testing.assert_close(loaded, expected, rtol=1e-4, atol=1e-5)


def test_a_bf16_checkpoint_is_saved_back_in_bf16(user_model, tmp_path):
    from safetensors import safe_open

    for overrides, expected in (((), "bfloat16"), (("model.dtype=fp32",), "float32")):
        policy = _policy(user_model("qwen2"), "precision.compute=bf16", *overrides)
        assert {p.dtype for p in policy.model.parameters()} == {torch.float32}  # training: fp32 masters
        out = save_policy(policy, tmp_path / expected)
        assert json.loads((out / "config.json").read_text())["dtype"] == expected
        with safe_open(str(out / "model.safetensors"), "pt") as f:
            assert {str(f.get_tensor(k).dtype) for k in f.keys()} == {f"torch.{expected}"}


def test_a_checkpoint_whose_config_names_no_dtype_is_saved_back_in_its_weights_dtype(user_model, tmp_path, monkeypatch):
    """An older or hand-written config.json names no dtype: final/ of bf16 weights was written in
    float32 (twice the size, config saying float32), where transformers' dtype="auto" reads bf16.
    Reading it does not touch transformers 5's deprecated ``torch_dtype`` (review av: every run of
    such a model printed "`torch_dtype` is deprecated! Use `dtype` instead!")."""
    import shutil

    import transformers

    from scalerl.models.loading import stored_dtype

    monkeypatch.setattr(transformers.PretrainedConfig, "torch_dtype",
                        property(lambda self: pytest.fail("read the deprecated config.torch_dtype")))

    src = tmp_path / "no-dtype"
    shutil.copytree(user_model("llama", dtype="bfloat16"), src)
    config = json.loads((src / "config.json").read_text())
    config.pop("dtype", None), config.pop("torch_dtype", None)
    (src / "config.json").write_text(json.dumps(config))
    assert stored_dtype(str(src)) == "bfloat16"
    out = save_policy(_policy(src), tmp_path / "final")
    assert json.loads((out / "config.json").read_text())["dtype"] == "bfloat16"


def test_a_bin_only_checkpoint_whose_config_names_no_dtype_is_read_as_its_weights_dtype(user_model, tmp_path):
    """The same for a checkpoint saved before safetensors (``pytorch_model.bin``): its dtype was
    taken as float32, and bf16 weights were saved back at twice their size."""
    from safetensors.torch import load_file

    from scalerl.models.loading import stored_dtype

    src = tmp_path / "bin-no-dtype"
    src.mkdir()
    model = user_model("llama", dtype="bfloat16")
    for f in model.iterdir():
        if f.suffix != ".safetensors":
            (src / f.name).write_bytes(f.read_bytes())
    torch.save(load_file(str(model / "model.safetensors")), src / "pytorch_model.bin")
    config = json.loads((src / "config.json").read_text())
    config.pop("dtype", None), config.pop("torch_dtype", None)
    (src / "config.json").write_text(json.dumps(config))
    assert stored_dtype(str(src)) == "bfloat16"
    torch.save(load_file(str(model / "model.safetensors")), src / "pytorch_model.bin", _use_new_zipfile_serialization=False)
    assert stored_dtype(str(src)) == "bfloat16"  # the legacy format too


def test_an_adapter_missing_some_of_its_weights_is_refused_not_merged_part_untrained(lora_policy, tmp_path):
    """peft loads an adapter whose files lack some of the weights its config asks for, warns, and leaves
    those layers as initialised: `scalerl eval --model ADAPTER_DIR` scored a model part trained, part not.
    The whole adapter still loads; one with weights dropped is refused, naming them."""
    from safetensors.torch import load_file, save_file

    from scalerl.errors import InputError
    from scalerl.models.loading import load_model

    policy = _trained_lora(lora_policy)
    save_policy(policy, tmp_path / "adapter", lora_save="adapter")
    load_model(str(tmp_path / "adapter"))  # whole: loads
    weights_file = tmp_path / "adapter" / "adapter_model.safetensors"
    state = load_file(str(weights_file))
    dropped = sorted(k for k in state if "lora_B" in k)[:2]
    save_file({k: v for k, v in state.items() if k not in dropped}, str(weights_file), metadata={"format": "pt"})
    with pytest.raises(InputError, match="do not hold every adapter weight") as refused:
        load_model(str(tmp_path / "adapter"))
    assert "lora_B" in str(refused.value)
