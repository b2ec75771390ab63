"""A device too small for the training state is refused before loading, in one line that says how
many ranks would hold it (and when the generator copy must go: ``run.generate_on_shards``)."""

import math
import re

import torch

from scalerl.cli import main
from scalerl.pipeline.config import BackendConfig
from scalerl.pipeline.registry import trainer_device_copies
from scalerl.train import memory
from scalerl.train.memory import GIB, PIPELINE_COPIES, RANK0_COPY, memory_problem, training_state_bytes

from .conftest import small_args


def test_the_training_state_counts_weights_gradients_and_both_adamw_moments(random_model):
    n = sum(p.numel() for p in random_model.parameters())
    assert training_state_bytes(random_model) == 16 * n  # fp32: 4 + 4 + 8 bytes a parameter
    assert training_state_bytes(random_model, world=4) == -(-16 * n // 4)


def test_what_is_refused_and_what_is_suggested():
    b8, b70, h100 = 8 * 10**9, 70 * 10**9, 80 * GIB
    # 8B in one process: 128 GB of state on an 80 GB device -> 3 ranks at 70% of each.
    problem = memory_problem(16 * b8, {}, h100, world=1, device="cuda:0", parameters=b8, copy_bytes_per_parameter=2)
    assert "8.00B-parameter" in problem and "--nproc 3" in problem and "generate_on_shards" not in problem
    # 70B over 8 ranks, each 140 GB of state, rank 0 also a 140 GB bf16 copy: the copy must go.
    problem = memory_problem(16 * b70 // 8, {RANK0_COPY: 2 * b70}, h100, world=8, device="cuda:0", parameters=b70,
                             copy_bytes_per_parameter=2)
    assert "generator copy" in problem and "--nproc 19" in problem and "run.generate_on_shards=true" in problem
    # What fits is not refused (activations are not estimated: only a certain failure is).
    assert memory_problem(16 * b8 // 2, {RANK0_COPY: 2 * b8}, h100, world=2, device="cuda:0", parameters=b8,
                          copy_bytes_per_parameter=2) is None


def test_the_local_pipelines_copies_on_the_trainers_device_are_counted():
    threads = BackendConfig(generators=2)
    # Seeded pipeline-rl-k on two generator threads: two copies, and window(8, 2) + 2 = 3 snapshots.
    assert trainer_device_copies("pipeline-rl-k", 8, threads) == 5
    assert trainer_device_copies("pipeline-rl-k", 8, BackendConfig(generators=2, updates="timing")) == 2
    assert trainer_device_copies("pipeline-rl-k", 1, BackendConfig()) == 1 + 2
    for mode in ("sync", "ppo-off-policy-k"):  # the trainer generates on its own weights
        assert trainer_device_copies(mode, 8, threads) == 0
    assert trainer_device_copies("pipeline-rl-k", 8, BackendConfig(generators=2, workers="processes")) == 0
    assert trainer_device_copies("pipeline-rl-k", 8, BackendConfig(name="ray", generators=2)) == 0

    # 8B on an 80 GB device: the state alone (128 GB) is refused with both remedies; 1B's state
    # (16 GB) fits, but not beside 40 bf16 copies -- only the copies' remedy is offered.
    b1, b8, h100 = 10**9, 8 * 10**9, 80 * GIB
    problem = memory_problem(16 * b8, {PIPELINE_COPIES: 5 * 2 * b8}, h100, world=1, device="cuda:0", parameters=b8,
                             copy_bytes_per_parameter=2)
    assert "74.5 GB for pipeline-rl-k's generator threads" in problem  # 80e9 bytes
    assert "--nproc" in problem and "pipeline=sync" in problem
    problem = memory_problem(16 * b1, {PIPELINE_COPIES: 40 * 2 * b1}, h100, world=1, device="cuda:0", parameters=b1,
                             copy_bytes_per_parameter=2)
    assert "--nproc" not in problem and "pipeline=sync" in problem and "--backend ray" in problem
    assert memory_problem(16 * b1, {PIPELINE_COPIES: 5 * 2 * b1}, h100, world=1, device="cuda:0", parameters=b1,
                          copy_bytes_per_parameter=2) is None


def test_a_run_on_a_device_too_small_stops_before_loading_in_one_line(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(memory, "device_capacity", lambda device: 64 * 1024)  # a 64 KB device
    assert main(small_args(tmp_path / "run", "--steps", "1")) == 2
    err = capsys.readouterr().err
    assert "the training state of this" in err and "--nproc" in err and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1


def test_the_kv_cache_per_token_of_standard_attention_and_none_where_the_formula_does_not_hold():
    from transformers import DeepseekV3Config, LlamaConfig, Qwen3NextConfig

    llama = LlamaConfig(num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8, hidden_size=4096)
    assert memory.kv_bytes_per_token(llama, 2) == 2 * 32 * 8 * 128 * 2  # Llama-3-8B: 128 KB a token in bf16
    assert memory.kv_bytes_per_token(DeepseekV3Config(), 2) is None  # latent attention: another cache
    assert memory.kv_bytes_per_token(Qwen3NextConfig(), 2) is None  # linear-attention layers
    # 768 rows x 14,848 tokens of that (the paper's batch and length) do not fit beside an 8B
    # model's training state on an 80 GB GPU: 17 rows do, in half the 64 GiB left (a row: 1.9 GB).
    state = 16 * GIB
    assert memory.decode_fit(768, 14_848, 131_072, 80 * GIB, state) == 17
    note = memory.decode_note(768, 14_848, 131_072, 80 * GIB, state, "cuda:0", 17, cut=True)
    assert "768 rows of up to 14848 tokens hold 1392.0 GB of KV cache (128 KB a token)" in note
    assert "decoding 17 rows at a time" in note and "backend.generator=vllm" in note
    assert "run.decode_rows=17" in memory.decode_note(768, 14_848, 131_072, 80 * GIB, state, "cuda:0", 17, cut=False)
    assert memory.decode_fit(768, 14_848, 131_072, 80 * GIB, state, generators=4) == 4  # threads share the room
    assert memory.decode_fit(768, 14_848, 131_072, 80 * GIB, 79 * GIB) == 0
    assert "not even one row" in memory.decode_note(768, 14_848, 131_072, 80 * GIB, 79 * GIB, "cuda:0", 0, cut=True)
    assert memory.decode_fit(128, 4_096, 12_288, 80 * GIB, 8 * GIB) is None  # all fit
    assert memory.decode_fit(768, 14_848, None, 80 * GIB, 0) is None  # unknown: say nothing
    assert memory.decode_fit(768, 14_848, 131_072, None, 0) is None  # the CPU


def test_a_run_whose_generation_cannot_fit_decodes_a_few_rows_at_a_time(monkeypatch, tmp_path, capsys):
    # The tiny model's state (16 bytes x 1.08M parameters, 16.4 MiB) fits in 19 MiB; its evaluation's
    # 32 rows of up to 55 tokens at 4 KB a token (4 layers x 4 heads x 32 x fp32, keys and values)
    # do not: the 2.6 MiB left, halved, holds 5 of them (220 KB each).
    from scalerl.generate.hf import HFGenerator

    monkeypatch.setattr(memory, "device_capacity", lambda device: 19 * 2**20)
    decoded = []  # rows of every decode loop run
    real = HFGenerator._generate
    monkeypatch.setattr(HFGenerator, "_generate", lambda self, prompts, *a: decoded.append(len(prompts)) or
                        real(self, prompts, *a))
    assert main(small_args(tmp_path / "run", "--steps", "1", "--set", "pipeline=sync", "--set", "k=1",
                           "--no-report")) == 0
    err = capsys.readouterr().err
    assert "note: 32 rows of up to 55 tokens hold 6.9 MB of KV cache" in err and "decoding 5 rows at a time" in err
    # Two evaluations of 32 rows and a batch of 16, five rows at a time.
    assert max(decoded) == 5 and sum(decoded) == 2 * 32 + 16


def test_which_generators_decode_on_the_trainers_device():
    from scalerl.pipeline.registry import trainer_device_generators

    assert trainer_device_generators("sync", BackendConfig(generators=3)) == 1  # the trainer's own model
    assert trainer_device_generators("pipeline-rl-k", BackendConfig(generators=3)) == 3
    assert trainer_device_generators("pipeline-rl-k", BackendConfig(generators=3, workers="processes")) == 0
    assert trainer_device_generators("sync", BackendConfig(name="ray")) == 0


def test_decode_rows_set_by_hand_cuts_every_decode_loop_on_the_trainers_device(monkeypatch, tmp_path, capsys):
    from scalerl.generate.hf import HFGenerator

    decoded = []
    real = HFGenerator._generate
    monkeypatch.setattr(HFGenerator, "_generate", lambda self, prompts, *a: decoded.append(len(prompts)) or
                        real(self, prompts, *a))
    # The default pipeline: PipelineRL-k's generator threads, and the trainer's own evaluations.
    assert main(small_args(tmp_path / "run", "--steps", "2", "--set", "run.decode_rows=4", "--no-report")) == 0
    assert max(decoded) == 4 and sum(decoded) >= 2 * 32 + 2 * 16
    assert "note:" not in capsys.readouterr().err
    assert main(small_args(tmp_path / "bad", "--set", "run.decode_rows=-1")) == 2
    assert "run.decode_rows must be >= 0" in capsys.readouterr().err


# Review bs: each fix the refusal offers, followed as written, fits
def _llama3_8b_on_meta():
    """A Llama-3-8B-shaped model on the meta device (no weights: only the parameter count matters)."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    config = LlamaConfig(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
                         num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False)
    with torch.device("meta"):
        return AutoModelForCausalLM.from_config(config)


def _refusal(monkeypatch, model, cfg, world, capacity=80 * GIB):
    """The one-line refusal of scalerl.train.policy._check_fits on a pretend 80 GB GPU (None: fits)."""
    from scalerl.errors import ConfigError
    from scalerl.train import memory
    from scalerl.train.policy import _check_fits
    from scalerl.train.precision import Precision

    monkeypatch.setattr(memory, "device_capacity", lambda device: capacity)
    precision = Precision.create(cfg.precision.compute, "cuda:0")
    try:
        _check_fits(model, torch.device("cuda:0"), precision, cfg, world=world)
    except ConfigError as e:
        return str(e)
    return None


def _apply(cfg, alternative):
    """(config, world) a user gets by following one alternative of the refusal's advice."""
    from scalerl.config import apply_overrides

    world = 1
    m = re.search(r"--nproc (\d+)", alternative)
    if m:
        world = int(m.group(1))
    if "pipeline=sync" in alternative:
        cfg = apply_overrides(cfg, ["pipeline=sync"])
    return cfg, world


def test_memory_refusal_alternatives_each_fit(monkeypatch):
    # The README's own example (an 8B model on an 80 GB GPU), with the default recipe (pipeline-rl-k, local
    # generator threads). Each fix the one-line refusal offers, followed as written, must make the run fit.
    from scalerl.train.config import TrainConfig

    model = _llama3_8b_on_meta()
    cfg = TrainConfig()
    message = _refusal(monkeypatch, model, cfg, world=1)
    assert message is not None and "--nproc" in message
    advice = re.split(r" has [\d.]+ GB: ", message, maxsplit=1)[1]  # what the line says to do
    alternatives = advice.split("; or ")
    still_refused = []
    for alternative in alternatives:
        fixed_cfg, world = _apply(cfg, alternative)
        again = _refusal(monkeypatch, model, fixed_cfg, world=world)
        if again is not None:
            still_refused.append(f"{alternative[:45]!r} -> refused again: ...{again[-90:]}")
    assert not still_refused, "\n".join(still_refused)


# Review bu: the advice of LoRA, fp16, generation on the shards, the pipeline's copies
_SHAPES = {
    "8B": dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336, num_hidden_layers=32,
               num_attention_heads=32, num_key_value_heads=8, tie_word_embeddings=False),
    "70B": dict(vocab_size=128256, hidden_size=8192, intermediate_size=28672, num_hidden_layers=80,
                num_attention_heads=64, num_key_value_heads=8, tie_word_embeddings=False),
}


def _meta_model(shape, dtype=torch.float32, lora_rank=0):
    """A Llama-shaped model on the meta device (as load_policy builds it: LoRA's base in the compute dtype)."""
    from transformers import AutoModelForCausalLM, LlamaConfig

    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(LlamaConfig(**_SHAPES[shape]), dtype=dtype)
    if lora_rank:
        from scalerl.models.lora import add_lora

        add_lora(model, rank=lora_rank, alpha=2 * lora_rank, dropout=0.0, target_modules=["q_proj", "v_proj"])
    return model


def _cfg(*overrides, nproc=1):
    import dataclasses

    from scalerl.config import apply_overrides
    from scalerl.train.config import TrainConfig

    cfg = apply_overrides(TrainConfig(), list(overrides))
    return dataclasses.replace(cfg, run=dataclasses.replace(cfg.run, nproc=nproc))


def _advice(message):
    return re.split(r" has [\d.]+ GB: ", message, maxsplit=1)[1]


def test_lora_memory_refusal_does_not_advise_nproc_that_lora_refuses(monkeypatch):
    # LoRA on a 70B-shaped model in bf16 (its frozen base alone: 141 GB) on an 80 GB GPU.
    from scalerl.train.config import group_problems

    cfg = _cfg("pipeline=sync", "precision.compute=bf16", "model.lora.rank=16")
    model = _meta_model("70B", torch.bfloat16, lora_rank=16)
    message = _refusal(monkeypatch, model, cfg, 1, 80 * GIB)
    assert message is not None
    blocked = []
    for alternative in _advice(message).split("; or "):
        m = re.search(r"--nproc (\d+)", alternative)
        if m:
            n = int(m.group(1))
            problems = group_problems(_cfg("pipeline=sync", "precision.compute=bf16", "model.lora.rank=16", nproc=n), n)
            if problems:
                blocked.append(f"{alternative[:50]!r} -> {problems[0]}")
    assert not blocked, "\n".join(blocked)


def test_fp16_memory_refusal_does_not_advise_nproc_that_fp16_refuses(monkeypatch):
    from scalerl.train.config import group_problems

    cfg = _cfg("pipeline=sync", "precision.compute=fp16")
    message = _refusal(monkeypatch, _meta_model("8B"), cfg, 1, 80 * GIB)
    assert message is not None and "--set precision.compute=bf16 and --nproc 3" in message, message
    followed = _cfg("pipeline=sync", "precision.compute=bf16", nproc=3)  # the advice, followed as written
    assert not group_problems(followed, 3) and _refusal(monkeypatch, _meta_model("8B"), followed, 3, 80 * GIB) is None


def test_nproc_advice_does_not_count_a_generator_copy_the_run_has_not(monkeypatch):
    # 8B on a 24 GB GPU over 2 ranks, generating on the shards (no whole copy on rank 0): the state
    # (128 GB) fits in 70% of each device at ceil(128 / 16.8) = 8 ranks; the refusal says 65.
    from scalerl.train.memory import STATE_SHARE, training_state_bytes

    cfg = _cfg("pipeline=sync", "precision.compute=bf16", "run.generate_on_shards=true", nproc=2)
    model = _meta_model("8B")
    capacity = 24 * GIB
    message = _refusal(monkeypatch, model, cfg, 2, capacity)
    assert message is not None and "generator copy" not in message  # no copy counted in what it needs
    advised = int(re.search(r"--nproc (\d+)", message).group(1))
    enough = math.ceil(training_state_bytes(model) / int(STATE_SHARE * capacity))
    assert enough == 8
    assert _refusal(monkeypatch, model, cfg, enough, capacity) is None  # 8 ranks, as configured, fit
    assert advised <= enough, message


def test_fewer_generators_advice_fits_when_followed(monkeypatch):
    # 8B on a 141 GB GPU under pipeline-rl-k (k=8) with 2 generator threads: the state (120 GB)
    # fits alone, not beside 5 bf16 copies; with 1 generator there are still 3 (45 GB).
    cfg = _cfg("recipe.off_policy.pipeline=pipeline-rl-k", "recipe.off_policy.k=8", "backend.generators=2",
               "precision.compute=bf16")
    model = _meta_model("8B")
    message = _refusal(monkeypatch, model, cfg, 1, 141 * GIB)
    assert message is not None
    if "fewer backend.generators" in message:
        fewest = _cfg("recipe.off_policy.pipeline=pipeline-rl-k", "recipe.off_policy.k=8", "backend.generators=1",
                      "precision.compute=bf16")
        again = _refusal(monkeypatch, model, fewest, 1, 141 * GIB)
        assert again is None, f"advice: {_advice(message)[:160]}...\nwith backend.generators=1: refused again"


# Review bx: the advice a trainer group of this run would refuse, and LoRA beside the pipeline's copies
def _nproc_advice_refused(message, overrides):
    """The group_problems refusals of each ``--nproc N`` the message advises, followed as written."""
    from scalerl.train.config import group_problems

    refused = []
    for alternative in re.split(r" has [\d.]+ GB: ", message, maxsplit=1)[1].split("; or "):
        m = re.search(r"--nproc (\d+)", alternative)
        if m:
            n = int(m.group(1))
            followed = [*overrides, *(["pipeline=sync"] if "pipeline=sync" in alternative else [])]
            refused += group_problems(_cfg(*followed, nproc=n), n)
    return refused


def test_memory_refusal_with_one_gpu_named_does_not_advise_a_refused_nproc(monkeypatch):
    overrides = ("pipeline=sync", "precision.compute=bf16", "run.device=cuda:0")
    message = _refusal(monkeypatch, _meta_model("8B"), _cfg(*overrides), 1, 80 * GIB)
    assert message is not None and "--nproc" in message
    refused = _nproc_advice_refused(message, overrides)
    assert not refused or "run.device=cuda" in message, f"{message}\n-> refused next: {refused}"


def test_memory_refusal_on_shards_with_pipeline_threads_does_not_advise_a_refused_nproc(monkeypatch):
    overrides = ("precision.compute=bf16", "run.generate_on_shards=true")  # the default recipe: pipeline-rl-k, threads
    message = _refusal(monkeypatch, _meta_model("8B"), _cfg(*overrides), 1, 80 * GIB)
    assert message is not None and "--nproc" in message
    refused = _nproc_advice_refused(message, overrides)
    assert not refused, f"{message}\n-> refused next: {refused}"


def test_lora_memory_refusal_device_size_fits_when_followed(monkeypatch):
    # LoRA on a 70B-shaped model in bf16 with the default recipe (pipeline-rl-k, local generator threads).
    cfg = _cfg("precision.compute=bf16", "model.lora.rank=16")
    model = _meta_model("70B", torch.bfloat16, lora_rank=16)
    message = _refusal(monkeypatch, model, cfg, 1, 80 * GIB)
    m = re.search(r"needs a device with more than ([\d.]+) GB", message or "")
    assert m, message
    bigger = (float(m.group(1)) + 10) * GIB  # a device with (well) more than the size the advice names
    again = _refusal(monkeypatch, model, cfg, 1, int(bigger))
    assert again is None or "pipeline=sync" in message, f"advice: {message}\non {bigger / GIB:.0f} GB: {again}"
