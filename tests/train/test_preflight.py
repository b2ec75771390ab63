"""Up-front checks for user models: the generation budget against the model's positions, a run
directory left reusable, the scale profile chosen by model size and device, evaluation progress."""

import json

import pytest

from scalerl.cli import main
from scalerl.config import apply_overrides
from scalerl.rl.recipe import LengthConfig
from scalerl.train import profiles
from scalerl.train.config import TrainConfig, resolve
from scalerl.train.evaluate import evaluate
from scalerl.train.preflight import completion_budget, fitting_overrides, max_positions


def _train(model, data, out, *extra):
    return ["train", "--model", str(model), "--task", "math", "--data", str(data), "--output", str(out),
            "--no-progress", *extra]


# ----------------------------------------------------------------------------- generation budget


def test_budget_arithmetic(user_model):
    from transformers import AutoConfig, AutoTokenizer

    assert max_positions(AutoConfig.from_pretrained(user_model("gpt2", positions=64))) == (64, "max_position_embeddings")
    assert max_positions(AutoConfig.from_pretrained(user_model("llama")))[0] == 2048
    tok = AutoTokenizer.from_pretrained(user_model("llama"))
    phrase = len(tok.encode(LengthConfig().interruption_phrase, add_special_tokens=False))
    budget, parts = completion_budget(LengthConfig(max_new_tokens=300, think_budget=(100, 200), answer_budget=50), tok)
    assert budget == 200 + phrase + 50 and "forced phrase" in parts
    # The default split leaves room for the phrase: think hi + phrase + answer fits in max_new_tokens.
    default = LengthConfig()
    budget, parts = completion_budget(default, tok)
    assert budget == default.think_budget[1] + phrase + default.answer_budget <= default.max_new_tokens
    assert "capped" not in parts
    budget, parts = completion_budget(LengthConfig(max_new_tokens=250, think_budget=(100, 200), answer_budget=50), tok)
    assert budget == 250 and "capped by length.max_new_tokens 250" in parts
    assert completion_budget(LengthConfig(mode="truncate", max_new_tokens=99), tok)[0] == 99
    # The suggested flags fit the room and pass the config's own validation.
    for room in (phrase + 10, phrase + 500, 5):
        fix = fitting_overrides(LengthConfig(), tok, room)
        cfg = apply_overrides(TrainConfig(), fix).validate()
        assert completion_budget(cfg.recipe.length, tok)[0] <= room
        assert not any("overlong" in f for f in fix)  # interrupt mode never reads them
        penalty = apply_overrides(TrainConfig(), ["length.mode=overlong_penalty"])
        fix = fitting_overrides(penalty.recipe.length, tok, room)
        assert completion_budget(apply_overrides(penalty, fix).validate().recipe.length, tok)[0] <= room


@pytest.mark.parametrize("profile", ["none", "auto"])
def test_a_64_position_gpt2_is_refused_up_front(user_model, math_jsonl, tmp_path, capsys, profile):
    out = tmp_path / "run"
    assert main(_train(user_model("gpt2", positions=64), math_jsonl, out, "--profile", profile)) == 2
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("scalerl train: error:")]
    assert len(line) == 1 and "Traceback" not in err
    assert "64 positions" in line[0] and "--set length.max_new_tokens=" in line[0]
    assert not out.exists() or not any(out.iterdir())  # nothing written: the directory stays usable


def test_prompts_that_alone_do_not_fit_are_named(user_model, tmp_path, capsys):
    data = tmp_path / "long.jsonl"
    rows = [{"prompt": f"{i}+{i}=", "answer": str(2 * i)} for i in range(40)]
    rows[5]["prompt"] = "1+" * 100 + "1="
    data.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "run"
    code = main(_train(user_model("gpt2", positions=64), data, out, "--set", "task.settings={val_fraction: 0.3}"))
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "the prompts alone do not fit (1 of 40 have 64 tokens or more, the first long.jsonl:6): shorten or drop" in err


def test_eval_checks_prompts_and_budget_against_the_positions_as_train_does(user_model, math_jsonl, capsys):
    """GPT-2's learned positions raised an IndexError deep in generation; a RoPE model ran on."""
    gpt2 = str(user_model("gpt2", positions=64))
    args = ["eval", "--model", gpt2, "--task", "math", "--data", str(math_jsonl), "--problems", "2", "--k", "1"]
    assert main([*args, "--max-new-tokens", "200"]) == 2
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("scalerl eval: error:")]
    assert len(line) == 1 and "Traceback" not in err, err
    assert "64 positions" in line[0] and "lower --max-new-tokens to at most" in line[0]
    room = int(line[0].split("at most ")[1].split()[0])
    assert main([*args, "--max-new-tokens", str(room), "--json"]) == 0, capsys.readouterr().err


@pytest.mark.slow
def test_the_corrected_rerun_uses_the_same_directory(user_model, math_jsonl, tmp_path, capsys):
    gpt2, out = user_model("gpt2", positions=64), tmp_path / "run"
    assert main(_train(gpt2, math_jsonl, out, "--steps", "1")) == 2
    fix = capsys.readouterr().err.split("fit it with ")[1].split(" or use")[0].split()
    small = ["--set", "eval.problems=4", "--set", "batch.prompts_per_step=2"]
    assert main(_train(gpt2, math_jsonl, out, "--steps", "1", *fix, *small)) == 0, capsys.readouterr().err
    assert (out / "final" / "config.json").exists()


@pytest.mark.slow
def test_a_run_that_fails_before_its_first_checkpoint_leaves_the_directory_reusable(user_model, math_jsonl, tmp_path,
                                                                                   monkeypatch, capsys):
    from scalerl.train.trainer import Trainer

    out, llama = tmp_path / "run", user_model("llama")
    small = ["--steps", "1", "--set", "eval.problems=4", "--set", "batch.prompts_per_step=2"]

    def out_of_memory(self):
        raise MemoryError("simulated: the first evaluation ran out of memory")

    with monkeypatch.context() as m:
        m.setattr(Trainer, "evaluate", out_of_memory)
        with pytest.raises(MemoryError):
            main(_train(llama, math_jsonl, out, *small))
    assert not (out / "runlog.jsonl").exists() and not (out / "config.yaml").exists()
    assert main(_train(llama, math_jsonl, out, *small)) == 0, capsys.readouterr().err


# ----------------------------------------------------------------------------- scale profiles


def _print_config(capsys, *args):
    assert main(["train", "--print-config", *args]) == 0
    captured = capsys.readouterr()
    import yaml

    return yaml.safe_load(captured.out), captured.err


def test_a_user_model_on_a_cpu_gets_a_small_profile_and_a_note(user_model, capsys):
    cfg, err = _print_config(capsys, "--model", str(user_model("llama")), "--set", "run.device=cpu")
    assert "note:" in err and "scale profile cpu-small" in err and "0.14M parameters" in err
    assert cfg["recipe"]["batch"]["prompts_per_step"] == 8 and cfg["recipe"]["length"]["max_new_tokens"] == 256
    assert cfg["eval"]["problems"] == 32 and cfg["profile"] == "none"
    assert "your --set" not in err


def test_the_profile_note_names_the_settings_a_set_replaces(user_model, capsys):
    # The note's summary gives the profile's values; "8 prompts x 4" was printed under prompts_per_step=2.
    cfg, err = _print_config(capsys, "--model", str(user_model("llama")), "--set", "run.device=cpu",
                             "--set", "prompts_per_step=2", "--set", "eval.problems=4")
    assert cfg["recipe"]["batch"]["prompts_per_step"] == 2
    assert "; your --set replaces recipe.batch.prompts_per_step, eval.problems" in err


def test_explicit_flags_and_set_win_over_the_profile(user_model, capsys):
    llama = str(user_model("llama"))
    cfg, _ = _print_config(capsys, "--model", llama, "--steps", "7", "--eval-every", "3", "--set", "lr=3e-6",
                           "--set", "eval.problems=5", "--set", "run.device=cpu")
    assert (cfg["run"]["steps"], cfg["eval"]["every"], cfg["recipe"]["optimizer"]["lr"], cfg["eval"]["problems"]) == \
        (7, 3, 3e-6, 5)
    assert cfg["recipe"]["batch"]["prompts_per_step"] == 8  # the rest of the profile still applies
    cfg, err = _print_config(capsys, "--model", llama, "--profile", "none")
    assert "note:" not in err
    assert cfg["recipe"]["batch"]["prompts_per_step"] == 48 and cfg["recipe"]["length"]["max_new_tokens"] == 14336


def test_the_tiny_model_keeps_cpu_tiny_and_gpus_get_sizes_by_parameters(monkeypatch):
    assert profiles.choose_profile(TrainConfig()) == ("cpu-tiny", None)
    cfg = apply_overrides(TrainConfig(), ["model.name_or_path=some/model", "run.device=cuda"])
    for params, expected in ((5e8, "gpu-small"), (7e9, "none")):
        monkeypatch.setattr(profiles, "count_parameters", lambda name, n=params: int(n))
        name, note = profiles.choose_profile(cfg)
        assert name == expected and f"scale profile {expected}" in note
    resolved = resolve(apply_overrides(cfg, ["profile=gpu-small"]))
    assert resolved.recipe.length.max_new_tokens == 4096 and resolved.profile == "none"
    assert resolved.eval.batch_size == 128  # the decode loop holds every row's KV cache at once


# ----------------------------------------------------------------------------- evaluation progress


def test_evaluation_reports_progress_per_generate_call(random_model, char_tokenizer):
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.tasks.arithmetic import ArithmeticTask

    task = ArithmeticTask(digits=1)
    problems = list(task.eval_sets()["val"])[:5]
    done = []
    evaluate(HFGenerator(random_model, char_tokenizer, seed=0), char_tokenizer, task, problems, 3,
             SamplingParams(max_new_tokens=4, seed=0), batch_size=4, progress=done.append)
    assert done == [4, 4, 4, 3]


@pytest.mark.slow
def test_a_user_model_trains_in_bf16_with_eval_progress_and_is_saved_in_bf16(user_model, math_jsonl, tmp_path, capsys):
    """The README's "bring your own model" path: a bf16 checkpoint, the math task, the auto profile."""
    out = tmp_path / "run"
    args = _train(user_model("llama"), math_jsonl, out, "--steps", "2", "--eval-every", "1",
                  "--set", "precision.compute=bf16", "--set", "eval.problems=4", "--set", "batch.prompts_per_step=2")
    args.remove("--no-progress")
    assert main(args) == 0
    err = capsys.readouterr().err
    assert "scale profile cpu-small" in err and "eval val" in err  # the note, and a bar during evaluation
    assert json.loads((out / "final" / "config.json").read_text())["dtype"] == "bfloat16"
