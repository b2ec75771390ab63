"""Bad input to `scalerl train` / `eval` that used to end in a traceback: one line, exit status 2.

These stop before any training starts (at the config, the device or the output directory), so
they are fast.
"""

import argparse
import os
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
import torch
import yaml

from scalerl.cli import main
from scalerl.config import save_yaml
from scalerl.errors import ConfigError, InputError
from scalerl.train.config import TrainConfig, resolve

SRC = Path(__file__).resolve().parents[1] / "src"

#: A sitecustomize that hides torch, as after `pip install scalerl` (the forecaster alone).
HIDE_TORCH = textwrap.dedent("""
    import sys

    class _HideTorch:
        def find_spec(self, name, path=None, target=None):
            if name == "torch" or name.startswith("torch."):
                raise ModuleNotFoundError(f"No module named {name!r}", name=name)
            return None

    sys.meta_path.insert(0, _HideTorch())
""")


def _one_line_error(capsys, code, *needles):
    """The command's one error line (notes aside), holding every needle."""
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    lines = [line for line in err.splitlines() if not line.startswith("note:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in lines[0], err
    return lines[0]


@pytest.mark.parametrize("command", [["train", "--steps", "1"], ["eval"], ["train", "--print-config"]])
def test_a_forecast_only_install_is_told_which_extra_to_install(tmp_path, command):
    (tmp_path / "sitecustomize.py").write_text(HIDE_TORCH)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(SRC)])}
    proc = subprocess.run([sys.executable, "-m", "scalerl.cli", *command, "--output", str(tmp_path / "run")]
                          if command[0] == "train" else [sys.executable, "-m", "scalerl.cli", *command],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.strip().splitlines() == [
        f"scalerl {command[0]}: error: needs the package 'torch', which is not installed; "
        "install it with: pip install 'scalerl[train]'"
    ]
    # ... while the forecaster still works in the same install.
    fit = subprocess.run([sys.executable, "-m", "scalerl.cli", "fit", "--help"], capture_output=True, text=True,
                         env=env, cwd=tmp_path, timeout=120)
    assert fit.returncode == 0, fit.stderr


def test_negative_threads_is_refused(tmp_path, capsys):
    code = main(["train", "--threads", "-2", "--output", str(tmp_path / "r"), "--print-config"])
    _one_line_error(capsys, code, "run.threads must be >= 0", "-2")


def test_dtype_aliases_are_accepted(capsys):
    assert main(["train", "--set", "model.dtype=bf16", "--set", "precision.compute=fp32", "--print-config"]) == 0
    cfg = yaml.safe_load(capsys.readouterr().out)
    assert cfg["model"]["dtype"] in ("bf16", "bfloat16")


def test_a_junk_dtype_is_one_line(capsys):
    code = main(["train", "--set", "model.dtype=bf17", "--print-config"])
    _one_line_error(capsys, code, "bf17")


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_is_refused_before_anything_is_written(tmp_path, capsys):
    out = tmp_path / "r"
    code = main(["train", "--set", "run.device=cuda", "--output", str(out), "--no-progress"])
    _one_line_error(capsys, code, "run.device=cuda: CUDA is not available", "run.device=cpu")
    assert not out.exists() or not any(out.iterdir())


@pytest.mark.skipif(torch.cuda.is_available(), reason="this machine has CUDA")
def test_cuda_without_cuda_under_nproc_is_one_line_not_a_traceback_per_rank(tmp_path, capsys):
    # README: `scalerl train ... --nproc 4 --set run.device=cuda` on a machine without CUDA
    out = tmp_path / "r"
    code = main(["train", "--nproc", "2", "--set", "run.device=cuda", "--output", str(out), "--no-progress"])
    _one_line_error(capsys, code, "run.device=cuda: CUDA is not available", "run.device=cpu")
    assert not out.exists() or not any(out.iterdir())


def test_more_ranks_than_gpus_is_refused_in_one_line(monkeypatch):
    from scalerl.errors import ConfigError
    from scalerl.train.distributed import device_for
    from scalerl.train.launch import _check_devices

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    with pytest.raises(ConfigError, match="--nproc 4 needs a GPU per process, but 2 are visible"):
        _check_devices("cuda", 4)  # `scalerl train --nproc 4`, before any process starts
    with pytest.raises(ConfigError, match="rank 2 of this machine has no GPU of its own"):
        device_for("cuda", 2)  # a torchrun rank
    _check_devices("cuda", 2)
    _check_devices("cpu", 4)


def test_an_unknown_device_is_refused(tmp_path, capsys):
    code = main(["train", "--set", "run.device=tpu9", "--output", str(tmp_path / "r"), "--no-progress"])
    _one_line_error(capsys, code, "run.device", "tpu9")


def test_an_output_under_a_file_is_refused(tmp_path, capsys):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code = main(["train", "--output", str(blocker / "run"), "--no-progress"])
    _one_line_error(capsys, code, "is a file, not a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root can write into a read-only directory")
def test_an_unwritable_output_is_refused(tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        code = main(["train", "--output", str(locked / "run"), "--no-progress"])
    finally:
        locked.chmod(0o700)
    _one_line_error(capsys, code, "not writable")


@pytest.mark.skipif(not Path("/proc").is_dir(), reason="needs /proc")
def test_an_output_that_cannot_be_created_is_refused(capsys):
    code = main(["train", "--output", "/proc/scalerl-test/run", "--no-progress"])
    _one_line_error(capsys, code, "/proc/scalerl-test/run")


def test_sync_implies_k_1(capsys):
    assert main(["train", "--set", "pipeline=sync", "--print-config"]) == 0
    off = yaml.safe_load(capsys.readouterr().out)["recipe"]["off_policy"]
    assert off == {"pipeline": "sync", "k": 1}


def test_a_config_file_saying_sync_implies_k_1(tmp_path, capsys):
    cfg = tmp_path / "sync.yaml"
    cfg.write_text("recipe:\n  off_policy:\n    pipeline: sync\n")
    assert main(["train", "--config", str(cfg), "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["recipe"]["off_policy"] == {"pipeline": "sync", "k": 1}
    cfg.write_text("recipe:\n  off_policy:\n    pipeline: sync\n    k: 4\n")  # a k written beside it is kept
    _one_line_error(capsys, main(["train", "--config", str(cfg), "--print-config"]), "pipeline=sync means k=1 (got k=4)")


def test_sync_with_an_explicit_k_above_1_is_still_refused(capsys):
    code = main(["train", "--set", "pipeline=sync", "--set", "k=4", "--print-config"])
    _one_line_error(capsys, code, "pipeline=sync means k=1 (got k=4)")


@pytest.mark.parametrize("value, message", [(v, "task.reward_timeout must be seconds in (0, 86400]")
                                            for v in ("inf", "1e12", "0", "-1")]
                         + [("nan", "task.reward_timeout: expected a number, got 'nan'")])  # (no setting is NaN)
def test_a_reward_timeout_that_is_not_finite_seconds_is_refused(capsys, value, message):
    # inf / 1e12 overflowed select() in a traceback; 0 / -1 timed out every call and blamed the function.
    code = main(["train", "--set", f"task.reward_timeout={value}", "--print-config"])
    _one_line_error(capsys, code, message)


@pytest.mark.parametrize("setting, message", [
    ("sampling.temperature=nan", "sampling.temperature: expected a number, got 'nan'"),  # sampled at temperature 1
    ("sampling.temperature=inf", "sampling.temperature must be finite and at least 1e-05"),  # sampled uniformly
    ("sampling.temperature=1e-30", "sampling.temperature must be finite and at least 1e-05"),  # greedy in all but name
    ("eval.temperature=nan", "eval.temperature: expected a number, got 'nan'"),
    ("eval.temperature=inf", "eval.temperature must be finite, <= 0 (greedy) or at least 1e-05, got inf"),
    ("eval.temperature=1e-45", "eval.temperature must be finite, <= 0 (greedy) or at least 1e-05, got 1e-45"),
    ("precision.fp16_init_scale=inf", "precision.fp16_init_scale must be > 0 and finite"),
])
def test_a_temperature_or_scale_that_is_not_a_finite_number_is_refused(capsys, setting, message):
    code = main(["train", "--set", setting, "--print-config"])
    _one_line_error(capsys, code, message)


@pytest.mark.parametrize("value, message", [
    ("0", "task.reward_workers must be a whole number in [1, 256]"), ("-2", "must be a whole number in [1, 256]"),
    ("100000", "must be a whole number in [1, 256]"), ("1.5", "task.reward_workers: expected an integer"),
    ("true", "task.reward_workers: expected an integer")])
def test_reward_workers_that_are_not_a_whole_number_in_range_are_refused(capsys, value, message):
    code = main(["train", "--set", f"task.reward_workers={value}", "--print-config"])
    _one_line_error(capsys, code, message)


@pytest.mark.parametrize("setting, needle", [("run.checkpoint_every=-1", "run.checkpoint_every must be >= 1"),
                                             ("run.keep_checkpoints=0", "run.keep_checkpoints must be >= 1"),
                                             ("eval.batch_size=0", "eval.batch_size must be >= 1 (or null"),
                                             # (the live forecast's bootstrap refused it at every evaluation)
                                             ("run.seed=-3", "run.seed must be >= 0, got -3")])
def test_checkpoint_and_eval_batch_settings_below_1_are_refused(capsys, setting, needle):
    _one_line_error(capsys, main(["train", "--set", setting, "--print-config"]), needle)


@pytest.mark.parametrize("flags, needle", [(["--max-new-tokens", "0"], "--max-new-tokens"),
                                           (["--temperature", "-1"], "--temperature"),
                                           (["--k", "0"], "--k"),
                                           # (nan passed `< 0` and sampled; inf sampled uniformly: exit 0)
                                           (["--temperature", "nan"], "--temperature a finite number >= 0"),
                                           (["--temperature", "inf"], "--temperature a finite number >= 0")])
def test_eval_refuses_impossible_values(capsys, flags, needle):
    _one_line_error(capsys, main(["eval", *flags]), needle)


def test_eval_without_a_run_uses_the_budget_train_would_give_the_model(user_model):
    from scalerl.commands.evaluate import train_budget

    assert train_budget("tiny") == 48  # the cpu-tiny profile
    if not torch.cuda.is_available():
        assert train_budget(str(user_model("llama"))) == 256  # cpu-small: any other model on a CPU


def test_a_mistyped_hub_like_model_name_fails_fast_offline(monkeypatch, capsys):
    """Offline (HF_HUB_OFFLINE, or no route to the hub) a name that is neither a local directory nor
    cached is one line at once, not ~30-50 s of connection retries."""
    import time

    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    start = time.monotonic()
    code = main(["train", "--model", "my-modle", "--print-config"])
    _one_line_error(capsys, code, "'my-modle' is not a local directory and not in the Hugging Face cache",
                    "HF_HUB_OFFLINE is set")
    assert time.monotonic() - start < 10


def test_a_hub_dataset_that_cannot_be_fetched_fails_fast_offline(monkeypatch, capsys, tmp_path):
    """A hub dataset id with no route to the hub (or HF_HUB_OFFLINE) and nothing cached is one line at
    once: it was ~25 s of the hub client's retries, each printed, before the same failure."""
    import time

    from datasets import config as datasets_config
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets_config, "HF_DATASETS_CACHE", tmp_path / "datasets")
    start = time.monotonic()
    code = main(["train", "--task", "math", "--set", "task.data=someone/no-such-data", "--steps", "1",
                 "--output", str(tmp_path / "run")])
    _one_line_error(capsys, code, "someone/no-such-data: not a local file or directory and not in the Hugging Face "
                    "cache, and HF_HUB_OFFLINE is set", "save_to_disk(DIR)) and give DIR")
    assert time.monotonic() - start < 10


def test_a_cached_hub_dataset_is_not_refused_offline(monkeypatch, tmp_path):
    """What the caches hold loads offline, so the probe lets it through (to the datasets library)."""
    from datasets import config as datasets_config
    from huggingface_hub import constants

    from scalerl.hub import hub_unreachable

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    monkeypatch.setattr(datasets_config, "HF_DATASETS_CACHE", tmp_path / "datasets")
    assert hub_unreachable("someone/data", repo_type="dataset") == "HF_HUB_OFFLINE is set"
    (tmp_path / "hub" / "datasets--someone--data").mkdir(parents=True)
    assert hub_unreachable("someone/data", repo_type="dataset") is None
    (tmp_path / "datasets" / "other___set").mkdir(parents=True)
    assert hub_unreachable("other/set", repo_type="dataset") is None


@pytest.mark.parametrize("command", ["train", "demo"])
def test_resume_with_overwrite_is_refused_by_train_and_demo_alike(tmp_path, capsys, command):
    """demo --resume --overwrite ignored --overwrite (train refuses the pair)."""
    code = main([command, "--resume", "--overwrite", "--output", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and err == (f"scalerl {command}: error: --resume continues the "
                                 f"{'run' if command == 'train' else 'demo'} in --output, --overwrite deletes it: choose one")


def test_a_config_file_s_values_the_scale_profile_replaces_are_named(tmp_path, capsys):
    """The profile is applied over --config: a hand-written file's lr and batch size were replaced
    by cpu-tiny's (1e-4, 16) with not a word. A run's own config.yaml (profile: none) says nothing."""
    cfg = tmp_path / "mine.yaml"
    cfg.write_text("recipe:\n  optimizer:\n    lr: 3.0e-5\n  batch:\n    prompts_per_step: 16\n")  # 16: cpu-tiny's too
    assert main(["train", "--config", str(cfg), "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["recipe"]["optimizer"]["lr"] == 1e-4  # (the documented order: profile over file)
    assert err.strip() == (f"note: scale profile cpu-tiny replaces recipe.optimizer.lr of {cfg}; to keep the file's "
                           "values, write 'profile: none' in it (or pass --profile none), or give them with --set")
    for more in (["--set", "lr=3e-5"], ["--profile", "none"]):  # kept: nothing replaced, nothing said
        assert main(["train", "--config", str(cfg), *more, "--print-config"]) == 0
        out, err = capsys.readouterr()
        assert yaml.safe_load(out)["recipe"]["optimizer"]["lr"] == 3e-5 and err == ""
    saved = tmp_path / "config.yaml"
    saved.write_text(out)
    assert main(["train", "--config", str(saved), "--print-config"]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("flags, sets", [
    (["--profile", "cpu-small"], ["--set", "profile=cpu-small"]),
    (["--task", "arithmetic-mix"], ["--set", "task.name=arithmetic-mix"]),
])
def test_a_set_chooses_the_scale_profile_as_its_flag_does(tmp_path, capsys, flags, sets):
    """The profile was chosen before the --set overrides: `--set task.name=arithmetic-mix` got
    cpu-tiny's sizes (cpu-tiny-mix with --task), and `--set profile=cpu-small` applied cpu-tiny's
    sizes while config.yaml recorded `profile: cpu-small` (its --config would apply it again)."""
    configs = []
    for args in (flags, sets):
        assert main(["train", *args, "--print-config"]) == 0
        configs.append(yaml.safe_load(capsys.readouterr().out))
    assert configs[0] == configs[1] and configs[1]["profile"] == "none"
    saved = tmp_path / "config.yaml"
    saved.write_text(yaml.safe_dump(configs[1]))
    assert main(["train", "--config", str(saved), "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out) == configs[1]


def test_a_set_key_given_twice_says_which_is_used(capsys):
    """`--set steps=5 ... --set run.steps=7` trained 7 steps without a word; task.settings given twice is
    merged (documented), not said."""
    assert main(["train", "--set", "steps=5", "--set", "lr=1e-3", "--set", "run.steps=7",
                 "--set", "task.settings={}", "--set", "task.settings={}", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["run"]["steps"] == 7
    assert [line for line in err.splitlines() if "given" in line] == [
        "note: run.steps given 2 times (steps=5, run.steps=7): the last, run.steps=7, is used"]


def test_a_flag_and_a_set_of_the_same_field_say_which_wins(capsys):
    """`--steps 5 --set run.steps=7` trained 7 steps, in whichever order they came, unsaid."""
    assert main(["train", "--set", "run.steps=7", "--steps", "5", "--no-progress", "--set", "log.progress=true",
                 "--seed", "2", "--set", "seed=2", "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["run"]["steps"] == 7
    assert err.splitlines() == ["note: --set run.steps=7 replaces --steps 5",
                                "note: --set log.progress=true replaces --no-progress"]  # (seed: the same value)


def test_demo_keeps_the_model_task_and_steps_of_its_config_file(tmp_path):
    """The demo's own model, task, steps and evaluation interval were argparse defaults, so they
    replaced a --config file's (`run: {steps: 40}` ran 300 steps of tiny-m)."""
    import argparse

    from scalerl.commands import demo
    from scalerl.commands._train_args import config_from_args

    cfg = tmp_path / "demo.yaml"
    cfg.write_text("run:\n  steps: 40\nmodel:\n  name_or_path: tiny\ntask:\n  name: arithmetic\n")
    parser = argparse.ArgumentParser()
    demo.add_arguments(parser)

    def resolved(*argv):
        c = config_from_args(parser.parse_args(list(argv)), output="x", quiet=True, defaults=demo.DEMO_DEFAULTS)
        return c.run.steps, c.model.name_or_path, c.task.name, c.eval.every

    assert resolved("--config", str(cfg)) == (40, "tiny", "arithmetic", 20)
    assert resolved() == (300, "tiny-m", "arithmetic-mix", 20)
    assert resolved("--config", str(cfg), "--steps", "7", "--model", "tiny-s") == (7, "tiny-s", "arithmetic", 20)


def test_eval_of_a_run_with_no_final_model_takes_the_model_it_is_told_to(tmp_path, capsys):
    """`--run CRASHED` said 'no final/ model yet ...; pass --model PATH', and with --model said it again."""
    run = tmp_path / "crashed"
    run.mkdir()
    assert main(["train", "--print-config"]) == 0
    (run / "config.yaml").write_text(capsys.readouterr().out)
    _one_line_error(capsys, main(["eval", "--run", str(run)]), "no final/ model yet (the run did not finish); "
                                                                   "pass --model PATH")
    missing = tmp_path / "no-such-model"
    code = main(["eval", "--run", str(run), "--model", str(missing)])  # --model is taken: its own error now
    _one_line_error(capsys, code, f"{missing}")
    study = tmp_path / "study"
    (study / "runs" / "base" / "seed0").mkdir(parents=True)
    (study / "study.yaml").write_text("family: loo\n")
    (study / "runs" / "base" / "seed0" / "config.yaml").write_text((run / "config.yaml").read_text())
    _one_line_error(capsys, main(["eval", "--run", str(study)]), f"--run {study} is a study directory (study.yaml); "
                                                                     f"give one of its runs, e.g. --run {study}/runs/base/seed0")


def test_eval_of_a_run_without_final_says_whether_it_is_unfinished_or_its_final_is_gone(tmp_path, capsys):
    """Both said 'no final/ model yet (the run did not finish)': wrong for a finished run whose
    final/ was deleted, and silent about a stopped run's checkpoint (not a model eval reads)."""
    run = tmp_path / "run"
    (run / "checkpoints" / "step_000002").mkdir(parents=True)
    (run / "checkpoints" / "step_000002" / "state.pt").write_bytes(b"")
    (run / "checkpoints" / "latest").write_text("step_000002")
    assert main(["train", "--steps", "4", "--print-config"]) == 0
    (run / "config.yaml").write_text(capsys.readouterr().out)
    (run / "runlog.jsonl").write_text('{"type":"train","step":1}\n{"type":"train","step":2}\n{"type":"tr')
    _one_line_error(capsys, main(["eval", "--run", str(run)]),
                    "is still training or stopped (it logged step 2 of 4)", "step_000002 is training state",
                    f"scalerl train --output {run} --resume), or pass --model PATH")
    (run / "runlog.jsonl").write_text('{"type":"train","step":4}\n{"type":"eval","step":4}\n')
    _one_line_error(capsys, main(["eval", "--run", str(run)]),
                    "final/ is missing, though the run logged its last step (4): moved or deleted?")


def test_a_seed_too_large_for_torch_is_refused_in_one_line(capsys):
    """A seed of 2**64 or more was a traceback from torch.manual_seed (train: once training began)."""
    _one_line_error(capsys, main(["eval", "--seed", str(2**64)]), f"--seed must be in [0, 2**63), got {2**64}")
    _one_line_error(capsys, main(["train", "--seed", str(2**64), "--print-config"]),
                    f"run.seed must be below 2**32 (4294967296), got {2**64}")
    _one_line_error(capsys, main(["train", "--seed", str(2**32), "--print-config"]), "run.seed must be below 2**32")
    assert main(["train", "--seed", str(2**32 - 1), "--print-config"]) == 0


def test_demo_resume_refuses_flags_that_differ_from_the_saved_demo(tmp_path, capsys):
    """`demo --resume --set lr=1e-3` went on with the saved lr, unsaid (the flags were not read)."""
    from scalerl.commands import demo
    from scalerl.commands._train_args import config_from_args
    from scalerl.config import save_yaml

    p = argparse.ArgumentParser()
    demo.add_arguments(p)
    out = tmp_path / "demo"
    out.mkdir()
    cfg = config_from_args(p.parse_args(["--output", str(out)]), output=str(out), quiet=True,
                           defaults=demo.DEMO_DEFAULTS)
    save_yaml(cfg, out / "config.yaml")
    (out / "runlog.jsonl").write_text("")
    code = main(["demo", "--resume", "--output", str(out), "--set", "lr=1e-3", "--model", "tiny"])
    err = capsys.readouterr().err
    assert code == 2 and "--resume: the flags differ from the saved demo" in err
    assert "model.name_or_path: saved 'tiny-m', given 'tiny'" in err and "recipe.optimizer.lr: saved" in err


def test_demo_resume_with_more_processes_is_refused_as_a_new_demo_is(tmp_path, capsys):
    """`demo --resume --nproc 2` resumed in one process without a word (resume_changes took it, demo.run dropped it)."""
    from scalerl.commands import demo
    from scalerl.commands._train_args import config_from_args
    from scalerl.config import save_yaml

    p = argparse.ArgumentParser()
    demo.add_arguments(p)
    out = tmp_path / "demo"
    out.mkdir()
    save_yaml(config_from_args(p.parse_args(["--output", str(out)]), output=str(out), quiet=True,
                               defaults=demo.DEMO_DEFAULTS), out / "config.yaml")
    (out / "runlog.jsonl").write_text("")
    _one_line_error(capsys, main(["demo", "--resume", "--output", str(out), "--nproc", "2", "--no-progress"]),
                    "the demo trains in one process; --nproc 2 is for scalerl train")


@pytest.mark.parametrize("command", ["train", "demo"])
def test_a_resume_refuses_a_set_run_output_naming_another_directory(tmp_path, capsys, command):
    """`--resume --output A --set run.output=B` resumed A with B ignored, unsaid."""
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig, resolve

    run = tmp_path / "run"
    run.mkdir()
    save_yaml(resolve(TrainConfig(), ["run.steps=2", f"run.output={run}"]), run / "config.yaml")
    (run / "runlog.jsonl").write_text("")
    other = tmp_path / "other"
    _one_line_error(capsys, main([command, "--resume", "--output", str(run), "--set", f"run.output={other}",
                                  "--no-progress"]),
                    f"--set run.output={other} names another directory", "give --output DIR")
    assert not other.exists()
    assert main(["train", "--resume", "--output", str(run), "--set", f"run.output={run}", "--print-config"]) == 0
    # (a --set value is YAML: the run's own directory quoted is that directory -- review df)
    assert main(["train", "--resume", "--output", str(run), "--set", f'run.output="{run}"', "--print-config"]) == 0


def test_a_resumes_own_change_that_the_config_refuses_is_blamed_on_it_not_the_saved_run(tmp_path, capsys):
    """A run.device=cuda:1 run resumed with --nproc 2 (one GPU named for every rank) was said as "the saved run's
    config.yaml, which this scalerl no longer accepts ... start a new run": the saved config is fine (review df)."""
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig, resolve

    run = tmp_path / "run"
    run.mkdir()
    save_yaml(resolve(TrainConfig(), ["run.device=cuda:1", f"run.output={run}"]), run / "config.yaml")
    assert main(["train", "--resume", "--output", str(run), "--print-config"]) == 0
    capsys.readouterr()
    line = _one_line_error(capsys, main(["train", "--resume", "--output", str(run), "--nproc", "2", "--print-config"]),
                           "with this resume's run.nproc=2")
    assert "no longer accepts" not in line


def test_a_resumes_missing_gpu_is_advised_the_gpu_there_is(monkeypatch):
    """run.device=cuda:1 on a machine of one GPU: a new run is told cuda:0; a resume was told to start a new run on
    the CPU (review df)."""
    import torch

    from scalerl.models.devices import DeviceUnavailable, run_device

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    with pytest.raises(DeviceUnavailable) as info:
        run_device("cuda:1")
    assert "run.device=cuda:0" in str(info.value)
    advice = info.value.on_resume(Path("runs/a"))
    assert "--set run.device=cuda:0 --output NEW_DIR" in advice and "run.device=cpu" not in advice


@pytest.mark.skipif("__import__('torch').cuda.is_available()", reason="needs a machine without CUDA")
@pytest.mark.parametrize("key", ["backend.generator_device", "run.device"])
def test_a_resumes_missing_device_is_said_as_a_resume_can_act_on_it(tmp_path, capsys, key):
    """'use --set run.device=cpu' (a new run's advice) was then refused by --resume as a flag that differs from the
    saved run: the advice went round in a circle."""
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig, resolve

    run = tmp_path / "run"
    run.mkdir()
    extra = ["backend.workers=processes"] if key.startswith("backend") else []
    save_yaml(resolve(TrainConfig(), [*extra, f"{key}=cuda", "run.steps=2", f"run.output={run}"]), run / "config.yaml")
    line = _one_line_error(capsys, main(["train", "--resume", "--output", str(run), "--no-progress", "--no-report"]),
                           f"{key}=cuda: CUDA is not available", "which a resume keeps",
                           f"scalerl train --config {run / 'config.yaml'} --set {key}=cpu --output NEW_DIR")
    assert "; use --set" not in line
    assert not (run / "checkpoints").exists()


@pytest.mark.parametrize("text", ["", "# my settings, to fill in\n\n", "---\n"])
def test_a_config_file_that_sets_nothing_is_said_not_run_as_defaults_unsaid(tmp_path, capsys, text):
    """An empty or comments-only ``--config`` (the wrong file given, an editor's unsaved buffer)
    ran every default without a word: the user believed their settings were trained."""
    cfg = tmp_path / "mine.yaml"
    cfg.write_text(text)
    assert main(["train", "--config", str(cfg), "--print-config"]) == 0
    err = capsys.readouterr().err
    assert f"note: config file {cfg} sets nothing (it is empty or holds only comments): every field keeps its default" in err
    cfg.write_text("run: {steps: 7}\n")
    assert main(["train", "--config", str(cfg), "--print-config"]) == 0
    assert "sets nothing" not in capsys.readouterr().err


def test_a_dataset_with_capitals_cached_by_datasets_loads_offline(tmp_path, monkeypatch):
    """(review o) datasets names its cache folder owner___snake_cased_name ("MyOrg/MathData": MyOrg___math_data,
    datasets/load.py CachedDatasetModuleFactory): such a cached dataset was refused offline."""
    import shutil

    import datasets
    import huggingface_hub.constants as hub_constants

    from scalerl.tasks.data_files import records

    rows = [{"prompt": f"What is {i}+{i}?", "answer": str(2 * i)} for i in range(8)]
    datasets.Dataset.from_list(rows).to_parquet(str(tmp_path / "train.parquet"))
    built = datasets.load_dataset("parquet", data_files={"train": str(tmp_path / "train.parquet")},
                                  cache_dir=str(tmp_path / "build"))
    cache = tmp_path / "datasets-cache"
    dst = cache / "MyOrg___math_data" / "default" / "0.0.0" / "abc123"
    shutil.copytree(Path(built["train"].cache_files[0]["filename"]).parent, dst)
    (dst / "parquet-train.arrow").rename(dst / "math_data-train.arrow")
    monkeypatch.setattr(datasets.config, "HF_DATASETS_CACHE", cache)
    monkeypatch.setattr(datasets.config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hub_constants, "HF_HUB_CACHE", str(tmp_path / "hub"))
    assert len(datasets.load_dataset("MyOrg/MathData", split="train")) == 8  # datasets serves it offline
    assert len(list(records("MyOrg/MathData", "train"))) == 8


def test_behind_a_proxy_the_hub_is_not_probed_directly(monkeypatch):
    """(review o) A machine that reaches the hub only through HTTPS_PROXY: a direct TCP probe fails there,
    and a reachable model or dataset would be refused."""
    import socket

    from huggingface_hub import constants

    from scalerl.hub import hub_unreachable

    def no_route(*args, **kwargs):
        raise OSError(101, "Network is unreachable")

    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setattr(socket, "create_connection", no_route)
    for name in ("HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy", "NO_PROXY", "no_proxy"):
        monkeypatch.delenv(name, raising=False)
    assert "cannot be reached" in hub_unreachable("someone/not-cached-xyz", repo_type="dataset")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.example:3128")
    assert hub_unreachable("someone/not-cached-xyz", repo_type="dataset") is None
    # The hub's host in NO_PROXY: reached directly, so probed (and refused here) again.
    monkeypatch.setenv("NO_PROXY", "huggingface.co")
    monkeypatch.setattr(constants, "ENDPOINT", "https://huggingface.co")
    assert "cannot be reached" in hub_unreachable("someone/not-cached-xyz", repo_type="dataset")


def test_an_evaluation_set_named_twice_is_refused(capsys):
    # It was evaluated twice (at two seeds), the second overwriting the first's run-log columns.
    code = main(["train", "--set", "eval.sets=[val, hard, val]", "--print-config"])
    _one_line_error(capsys, code, "eval.sets names 'val' more than once; name each set once")


# Review bp
def test_recipe_name_given_twice_is_noted(capsys):
    from scalerl.cli import main

    assert main(["train", "--model", "tiny", "--print-config", "--set", "recipe_name=scalerl",
                 "--set", "recipe_name=deepseek-grpo"]) == 0
    out, err = capsys.readouterr()
    assert "recipe_name: deepseek-grpo" in out
    assert "recipe_name=scalerl" in err, err  # the item not used is named, as for steps=5 ... run.steps=7


# ------------------------------------------------------------------------------------- review cx


def _saved_run(directory: Path, *overrides: str) -> Path:
    """A run directory holding the config.yaml a run of ``overrides`` saves (no checkpoint needed to resume
    as far as the config: the trainer itself is replaced in the tests that get that far)."""
    directory.mkdir(parents=True, exist_ok=True)
    cfg = resolve(TrainConfig(), ["run.steps=2", "eval.every=1", "pipeline=sync", f"run.output={directory}",
                                  *overrides])
    save_yaml(cfg, directory / "config.yaml", header=f"scalerl run {directory.name} (resolved config)")
    return directory


# ----------------------------------------------------------------------------- --resume with --set


@pytest.mark.parametrize("item, path, value", [
    ("run.steps=9", "run.steps", 9),
    ("steps=9", "run.steps", 9),
    ("run.threads=1", "run.threads", 1),
])
def test_resume_set_of_a_field_resume_may_change_is_used_or_refused(tmp_path, monkeypatch, capsys, item, path,
                                                                    value):
    import scalerl.commands.train as train_command

    run = _saved_run(tmp_path / "run")
    started = {}
    monkeypatch.setattr(train_command, "_start", lambda cfg, **kw: started.setdefault("cfg", cfg) and 0)
    code = main(["train", "--output", str(run), "--resume", "--set", item, "--no-report"])
    if code == 0:  # used: the run goes on with the value given
        section, leaf = path.split(".")
        assert getattr(getattr(started["cfg"], section), leaf) == value
    else:  # or refused in one line, naming it (what --steps / --threads would do)
        _one_line_error(capsys, code, path)


def test_resume_print_config_prints_the_extended_steps(tmp_path, capsys):
    run = _saved_run(tmp_path / "run")
    assert main(["train", "--output", str(run), "--resume", "--steps", "9", "--print-config"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    assert printed["run"]["steps"] == 9


# ----------------------------------------------------------------------------- values not checked


@pytest.mark.parametrize("value", ["0", "-2"])
def test_log_train_every_below_one_is_refused(capsys, value):
    code = main(["train", "--set", f"log.train_every={value}", "--print-config"])
    _one_line_error(capsys, code, "log.train_every")


@pytest.mark.parametrize("device", ["gpu", "cuda"])
def test_generator_device_that_cannot_be_used_is_refused_before_the_run(tmp_path, capsys, warm_tiny_dir, device):
    import torch

    if device == "cuda" and torch.cuda.is_available():
        pytest.skip("cuda is a usable generator device here")
    out = tmp_path / "run"
    code = main(["train", "--model", str(warm_tiny_dir), "--profile", "cpu-tiny", "--steps", "1", "--eval-every", "1",
                 "--set", "k=1", "--set", "backend.workers=processes", "--set", f"backend.generator_device={device}",
                 "--set", "eval.problems=4", "--set", "eval.samples_per_problem=1", "--output", str(out),
                 "--no-progress", "--no-report"])
    _one_line_error(capsys, code, "generator_device")
    assert not (out / "checkpoints").exists()  # refused before the run wrote anything


# ----------------------------------------------------------------------------- YAML the loader takes, then trips on


@pytest.mark.parametrize("text", ["1: 2\n", "recipe:\n  null: 3\n", "run:\n  yes: 4\n"])
def test_a_key_that_is_not_text_is_one_line(tmp_path, capsys, text):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    _one_line_error(capsys, main(["train", "--config", str(path), "--print-config"]), "unknown key")


def test_a_config_files_unknown_key_names_the_file(tmp_path, capsys):
    path = tmp_path / "mine.yaml"
    path.write_text("run:\n  stepz: 4\n")
    _one_line_error(capsys, main(["train", "--config", str(path), "--print-config"]),
                    f"config file {str(path)!r}: unknown key 'stepz' in section 'run'")


@pytest.mark.parametrize("where", ["set", "file"])
@pytest.mark.parametrize("key, digits", [("recipe.optimizer.lr", 400), ("run.steps", 5000)])
def test_a_huge_integer_is_one_line(tmp_path, capsys, where, key, digits):
    number = "1" + "0" * (digits - 1)
    if where == "set":
        argv = ["train", "--set", f"{key}={number}", "--print-config"]
    else:
        section, *middle, leaf = key.split(".")
        path = tmp_path / "cfg.yaml"
        path.write_text(f"{section}:\n" + "".join(f"{'  ' * (i + 1)}{m}:\n" for i, m in enumerate(middle))
                        + f"{'  ' * (len(middle) + 1)}{leaf}: {number}\n")
        argv = ["train", "--config", str(path), "--print-config"]
    _one_line_error(capsys, main(argv), key.rsplit(".", 1)[-1])


@pytest.mark.parametrize("text, belongs", [
    ("steps: 100\n", "run.steps"),
    ("recipe:\n  lr: 1.0e-4\n", "recipe.optimizer.lr"),
    ("recipe_name: qwen-dapo\nloss:\n  name: ppo\n", "recipe.loss"),  # a recipe file given a recipe_name line
    ("run:\n  recipe:\n    loss:\n      name: cispo\n", "'recipe' belongs at the top level"),  # (was "a key of recipe")
])
def test_a_key_in_the_wrong_section_names_where_it_belongs(tmp_path, capsys, text, belongs):
    path = tmp_path / "cfg.yaml"
    path.write_text(text)
    _one_line_error(capsys, main(["train", "--config", str(path), "--print-config"]), belongs)


# ----------------------------------------------------------------------------- demo --set run.output


def test_demo_set_run_output_is_the_directory_overwritten_and_named(tmp_path, monkeypatch, capsys):
    import scalerl.train.report as report
    import scalerl.train.trainer as trainer

    earlier = tmp_path / "demo"  # an earlier demo, which this command does not train into
    earlier.mkdir()
    (earlier / "config.yaml").write_text("run: {steps: 1}\n")
    (earlier / "runlog.jsonl").write_text("")
    new = tmp_path / "mine"

    class Trained:
        def __init__(self, cfg):
            self.cfg = cfg

        def run(self, hold_directory=False):
            Path(self.cfg.run.output).mkdir(parents=True, exist_ok=True)
            return types.SimpleNamespace(output=Path(self.cfg.run.output), release_directory=lambda: None)

    monkeypatch.setattr(trainer, "Trainer", Trained)
    monkeypatch.setattr(report, "write_run_report", lambda out: types.SimpleNamespace(x="flops", y="val/pass_rate"))
    monkeypatch.setattr(report, "summary_lines", lambda written: [])
    code = main(["demo", "--output", str(earlier), "--overwrite", "--set", f"run.output={new}", "--no-progress"])
    assert (earlier / "runlog.jsonl").exists(), "the earlier demo, which the run does not go to, was deleted"
    if code == 0:
        out = capsys.readouterr().out
        report_line = next(line for line in out.splitlines() if line.startswith("report:"))
        assert str(new) in report_line, out


# ------------------------------------------------------------------------------------- review cz


def _error_line(capsys) -> str:
    return " ".join(line for line in capsys.readouterr().err.splitlines() if not line.startswith("note:"))


def test_resume_with_the_original_command_keeps_the_steps_its_set_gave(tmp_path, capsys):
    run = tmp_path / "run"
    flags = ["--steps", "5", "--set", "run.steps=7"]
    assert main(["train", *flags, "--output", str(run), "--print-config"]) == 0  # a new run: --set wins
    assert yaml.safe_load(capsys.readouterr().out)["run"]["steps"] == 7
    _saved_run(run, "run.steps=7")  # what that run saved
    assert main(["train", *flags, "--output", str(run), "--resume", "--print-config"]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["run"]["steps"] == 7  # got 5


def test_resume_with_a_config_file_that_extends_the_steps_uses_or_refuses_them(tmp_path, capsys):
    run = _saved_run(tmp_path / "run")
    edited = yaml.safe_load((run / "config.yaml").read_text())
    edited["run"]["steps"] = 9  # the run's own config, extended
    config = tmp_path / "extended.yaml"
    config.write_text(yaml.safe_dump(edited))
    code = main(["train", "--config", str(config), "--output", str(run), "--resume", "--print-config"])
    if code == 0:
        assert yaml.safe_load(capsys.readouterr().out)["run"]["steps"] == 9  # got the saved 2
    else:
        assert "run.steps" in _error_line(capsys)


def test_demo_resume_uses_or_refuses_a_set_of_run_steps(tmp_path, monkeypatch, capsys):
    from scalerl.train import trainer as trainer_module

    run = _saved_run(tmp_path / "demo", "model.name_or_path=tiny-m", "task.name=arithmetic-mix")
    asked = {}

    class Stop(InputError):
        pass

    def resumed(cls, output, **kw):
        asked.update(kw)
        raise Stop("stopped by the test")

    monkeypatch.setattr(trainer_module.Trainer, "resumed", classmethod(resumed))
    code = main(["demo", "--output", str(run), "--resume", "--set", "run.steps=9"])
    err = _error_line(capsys)
    if asked:
        assert asked.get("steps") == 9, asked  # got None: the saved 2 steps run
    else:
        assert code == 2 and "run.steps" in err, err


def _pipeline_processes(device):
    return resolve(TrainConfig(), ["pipeline=pipeline-rl-k", "backend.workers=processes",
                                   f"backend.generator_device={device}"])


@pytest.mark.parametrize("device", ["gpu", "mps"])
def test_generator_device_refusal_suggests_only_values_it_takes(device):
    from scalerl.train.preflight import check_generator_device

    if device == "mps" and torch.backends.mps.is_available():
        pytest.skip("mps is usable here")
    with pytest.raises(ConfigError) as refused:
        check_generator_device(_pipeline_processes(device))
    if "auto" in str(refused.value):  # what it suggests must be taken
        check_generator_device(_pipeline_processes("auto"))
