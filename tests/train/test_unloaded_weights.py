"""A checkpoint whose weights do not all reach the model is refused, not trained at random.

transformers initialises every parameter a checkpoint does not name at random, prints its load
report and returns the model: `scalerl train` / `scalerl eval` went on with exit 0 on a random
model. What still loads: a head tied to the embedding (absent from the file), bf16 and sharded
checkpoints, extra tensors the model has no place for (TRL's value head).
"""

import shutil
import subprocess
import sys

import pytest
import torch
import transformers
from safetensors.torch import load_file, save_file

from scalerl.cli import main
from scalerl.errors import InputError
from scalerl.models.loading import load_model
from scalerl.models.unloaded_weights import common_prefix


def _resaved(src, dst, rename=lambda key: key, drop=()):
    """``src`` copied to ``dst`` with its weights' keys renamed and ``drop`` left out."""
    shutil.copytree(src, dst)
    weights = load_file(dst / "model.safetensors")
    save_file({rename(k): v for k, v in weights.items() if k not in drop}, dst / "model.safetensors",
              metadata={"format": "pt"})
    return dst


def test_a_checkpoint_whose_weights_do_not_name_the_models_parameters_is_refused(user_model, tmp_path):
    # Review g's reproducer: a state dict saved from a torch.compile'd model (or a DDP-wrapped one) has
    # every key under a prefix (`_orig_mod.`, `module.`): transformers finds none of the model's weights,
    # initialises them all at random and prints a load report, and the run trained (and `eval` scored) a
    # random model with exit 0. A config whose shapes differ is already refused; missing weights are too.
    model_dir = tmp_path / "compiled"
    shutil.copytree(user_model("llama"), model_dir)
    weights = load_file(model_dir / "model.safetensors")
    save_file({f"_orig_mod.{k}": v for k, v in weights.items()}, model_dir / "model.safetensors",
              metadata={"format": "pt"})
    with pytest.raises(InputError, match="_orig_mod|missing|not in the checkpoint"):
        load_model(str(model_dir))


@pytest.mark.parametrize("prefix", ["_orig_mod.", "module.", "module._orig_mod."])
def test_a_wrapped_models_state_dict_is_refused_naming_its_prefix_and_the_fix(user_model, tmp_path, prefix):
    model_dir = _resaved(user_model("llama"), tmp_path / "wrapped", rename=lambda k: prefix + k)
    with pytest.raises(InputError) as refused:
        load_model(str(model_dir))
    said = str(refused.value)
    assert "none of its 21 weights is in the checkpoint" in said and "initialised at random" in said
    assert "lm_head.weight" in said and f"{prefix}lm_head.weight" in said  # a missing key, and where it is
    assert f"every missing weight is in the checkpoint under the prefix {prefix!r}" in said
    assert "strip the prefix and re-save" in said and "\n" not in said


def test_weights_left_out_of_the_files_are_refused_naming_them(user_model, tmp_path):
    src = user_model("llama")
    dropped = sorted(load_file(src / "model.safetensors"))[:3]
    model_dir = _resaved(src, tmp_path / "cut", drop=dropped)
    with pytest.raises(InputError) as refused:
        load_model(str(model_dir))
    said = str(refused.value)
    assert "3 of its 21 weights are not in the checkpoint" in said
    assert all(key in said for key in dropped) and "save_pretrained" in said and "prefix" not in said


def test_eval_of_a_compiled_models_checkpoint_exits_2_instead_of_scoring_a_random_model(
        user_model, math_jsonl, tmp_path, capsys):
    model_dir = _resaved(user_model("llama"), tmp_path / "compiled", rename=lambda k: "_orig_mod." + k)
    code = main(["eval", "--model", str(model_dir), "--task", "math", "--data", str(math_jsonl), "--problems", "2",
                 "--k", "1", "--max-new-tokens", "4"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err
    assert "under the prefix '_orig_mod.'" in err


def test_train_of_a_checkpoint_missing_weights_is_refused_before_a_step(user_model, math_jsonl, tmp_path, capsys):
    src = user_model("llama")
    model_dir = _resaved(src, tmp_path / "cut", drop=sorted(load_file(src / "model.safetensors"))[:3])
    out = tmp_path / "run"
    code = main(["train", "--model", str(model_dir), "--task", "math", "--data", str(math_jsonl), "--output", str(out),
                 "--steps", "1", "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err and "3 of its 21 weights are not in the checkpoint" in err
    assert not (out / "runlog.jsonl").exists()


@pytest.mark.parametrize("arch", ["qwen2", "gpt2"])
def test_a_head_tied_to_the_embedding_loads_though_the_file_has_no_head(user_model, tmp_path, arch):
    # transformers reports no missing key for a tied head (checked with transformers 5.25: an empty
    # missing_keys); the tied models of examples/user_model.py save no lm_head tensor.
    src = user_model(arch)  # bf16, like hub checkpoints
    assert not any(k.startswith("lm_head") for k in load_file(src / "model.safetensors"))
    model, _ = load_model(str(src))
    assert model.dtype == torch.bfloat16
    assert model.lm_head.weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()


def test_a_sharded_bf16_tied_checkpoint_loads_every_weight(user_model, tmp_path):
    src = user_model("qwen2")
    reference = transformers.AutoModelForCausalLM.from_pretrained(src)
    sharded = tmp_path / "sharded"
    reference.save_pretrained(sharded, max_shard_size="100KB")
    transformers.AutoTokenizer.from_pretrained(src).save_pretrained(sharded)
    assert len(list(sharded.glob("model-*.safetensors"))) > 2
    model, _ = load_model(str(sharded))
    expected = reference.state_dict()
    assert all(torch.equal(v, expected[k]) for k, v in model.state_dict().items())


def test_extra_tensors_alone_still_load(user_model, tmp_path):
    # A TRL AutoModelForCausalLMWithValueHead checkpoint carries v_head.* beside the model's own
    # weights: every weight reaches the model, the extras are dropped (transformers' report says so).
    src = user_model("llama")
    model_dir = tmp_path / "value-head"
    shutil.copytree(src, model_dir)
    weights = load_file(model_dir / "model.safetensors")
    weights["v_head.summary.weight"] = torch.zeros(1, 64, dtype=torch.bfloat16)
    save_file(weights, model_dir / "model.safetensors", metadata={"format": "pt"})
    model, _ = load_model(str(model_dir))
    assert torch.equal(model.lm_head.weight, weights["lm_head.weight"])


def test_common_prefix_counts_the_missing_keys_found_under_it():
    missing = ["lm_head.weight", "model.norm.weight", "model.embed.weight"]
    assert common_prefix(missing, ["_orig_mod.lm_head.weight", "_orig_mod.model.norm.weight", "other.x"]) == (
        "_orig_mod.", 2)
    assert common_prefix(missing, ["v_head.summary.weight"]) == (None, 0)
    assert common_prefix(missing, []) == (None, 0)


def test_the_load_report_is_not_printed_above_the_refusal(user_model, math_jsonl, tmp_path):
    # transformers logs its load report (a table of every MISSING / UNEXPECTED key, "can be ignored", "consider
    # training") as a warning while it loads; the 30-line table stood above our one-line refusal, which says
    # what it means. Refused, the table is dropped; the line is the last the user sees. (A process of its own:
    # transformers' log handler writes to the stderr it found at import, which pytest's capture replaced.)
    model_dir = _resaved(user_model("llama"), tmp_path / "compiled", rename=lambda k: "_orig_mod." + k)
    done = subprocess.run([sys.executable, "-m", "scalerl.cli", "eval", "--model", str(model_dir), "--task", "math",
                           "--data", str(math_jsonl), "--problems", "2", "--k", "1", "--max-new-tokens", "4"],
                          capture_output=True, text=True, timeout=300)
    err = done.stderr
    assert done.returncode == 2, err
    assert "LOAD REPORT" not in err and "MISSING" not in err and "newly initialized" not in err, err
    assert err.strip().splitlines() == [line for line in err.strip().splitlines() if line.startswith("scalerl eval: error: ")]


def test_the_load_report_of_a_model_that_loads_is_still_shown(user_model, tmp_path):
    # Extra weights the model has no place for (TRL's value head) load: transformers' report of them stays.
    model_dir = _resaved(user_model("llama"), tmp_path / "value-head")
    weights = load_file(model_dir / "model.safetensors")
    weights["v_head.summary.weight"] = torch.zeros(1, 8)
    save_file(weights, model_dir / "model.safetensors", metadata={"format": "pt"})
    done = subprocess.run([sys.executable, "-c", "import sys; from scalerl.models.loading import load_model; "
                           "load_model(sys.argv[1])", str(model_dir)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and "v_head.summary.weight" in done.stderr, done.stderr
