"""Run directories a user moves between: absolute paths in the saved config, --overwrite that
deletes only run directories, --resume that takes the original command again. Unit level:
the end-to-end runs are in test_friction_e2e.py."""

import argparse

import pytest

from scalerl.commands._train_args import add_config_args, overwrite_run_dir, resume_conflicts
from scalerl.errors import InputError
from scalerl.train.config import TrainConfig, absolute_paths


def test_local_paths_become_absolute_and_names_stay_as_typed(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "model").mkdir()
    (tmp_path / "train.csv").write_text("prompt,answer\n1+1,2\n")
    (tmp_path / "val.jsonl").write_text("")
    (tmp_path / "scorer.py").write_text("def f(completion):\n    return 1\n")
    (tmp_path / "rewards").mkdir()
    (tmp_path / "rewards" / "exact.py").write_text("def f(completion):\n    return 1\n")
    cfg = TrainConfig()
    cfg.model.name_or_path = "model"
    cfg.task.data = "./train.csv"
    cfg.task.reward = "rewards/exact.py:f"
    cfg.task.settings = {"eval_data": {"val": "val.jsonl", "remote": "owner/dataset"}}
    out = absolute_paths(cfg)
    assert out.model.name_or_path == str(tmp_path / "model")
    assert out.task.data == str(tmp_path / "train.csv")
    assert out.task.reward == f"{tmp_path / 'rewards' / 'exact.py'}:f"
    assert out.task.settings["eval_data"] == {"val": str(tmp_path / "val.jsonl"), "remote": "owner/dataset"}
    assert cfg.model.name_or_path == "model"  # the input is not modified
    # A module that is a file in the working directory is importable only from there: made a path.
    cfg.task.reward = "scorer:f"
    assert absolute_paths(cfg).task.reward == f"{tmp_path / 'scorer.py'}:f"
    # Hub ids, tiny, and modules importable from anywhere stay as typed.
    cfg.model.name_or_path, cfg.task.data, cfg.task.reward = "Qwen/Qwen3-0.6B", "owner/dataset", "json:loads"
    assert absolute_paths(cfg).model.name_or_path == "Qwen/Qwen3-0.6B"
    assert absolute_paths(cfg).task.data == "owner/dataset"
    assert absolute_paths(cfg).task.reward == "json:loads"
    cfg.model.name_or_path = "tiny"
    assert absolute_paths(cfg).model.name_or_path == "tiny"


def test_a_package_module_of_the_working_directory_is_stored_as_its_file_and_imported_as_a_member(
        tmp_path, monkeypatch):
    """``--reward mypkg.rewards:score`` (a package in the working directory, the usual project layout) was
    stored as typed: `eval --run` or `--resume` from another directory could not import it. Stored as its
    file now, which the reward worker imports as ``mypkg.rewards`` again (its relative imports work)."""
    from scalerl.tasks.reward_worker import load_function

    project = tmp_path / "project"
    (project / "mypkg" / "sub").mkdir(parents=True)
    for folder in ("mypkg", "mypkg/sub"):
        (project / folder / "__init__.py").write_text("")
    (project / "mypkg" / "helpers.py").write_text("def tail(s):\n    return s.strip()[-1:]\n")
    (project / "mypkg" / "sub" / "rewards.py").write_text(
        "from ..helpers import tail\n\ndef score(completion, answer):\n    return tail(completion) == answer\n")
    (project / "loose").mkdir()  # a folder that is no package: its module stays as typed (not importable)
    (project / "loose" / "r.py").write_text("def f(completion):\n    return 1\n")
    monkeypatch.chdir(project)
    cfg = TrainConfig()
    cfg.task.reward = "mypkg.sub.rewards:score"
    stored = absolute_paths(cfg).task.reward
    assert stored == f"{project / 'mypkg' / 'sub' / 'rewards.py'}:score"
    cfg.task.reward = "mypkg:score"  # a package itself: its __init__.py
    assert absolute_paths(cfg).task.reward == f"{project / 'mypkg' / '__init__.py'}:score"
    cfg.task.reward = "loose.r:f"
    assert absolute_paths(cfg).task.reward == "loose.r:f"
    monkeypatch.chdir(tmp_path)  # elsewhere, as `eval --run` may be
    monkeypatch.setattr("sys.path", list(__import__("sys").path))  # (the loader puts the package root on it)
    fn = load_function(stored)
    assert fn.__module__ == "mypkg.sub.rewards" and fn("<think></think>7", "7") and not fn("8", "7")
    for name in ("mypkg", "mypkg.helpers", "mypkg.sub", "mypkg.sub.rewards"):
        __import__("sys").modules.pop(name, None)


def test_overwrite_deletes_a_run_directory_and_refuses_anything_else(tmp_path, monkeypatch):
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text("x: 1\n")  # a run that crashed after writing its config
    overwrite_run_dir(run)
    assert not run.exists()
    overwrite_run_dir(run)  # nothing there: nothing to do
    empty = tmp_path / "empty"
    empty.mkdir()
    overwrite_run_dir(empty)
    assert not empty.exists()
    other = tmp_path / "photos"
    other.mkdir()
    (other / "cat.jpg").write_text("meow")
    with pytest.raises(InputError, match="not a scalerl run directory"):
        overwrite_run_dir(other)
    assert (other / "cat.jpg").exists()
    afile = tmp_path / "notes.txt"
    afile.write_text("x")
    with pytest.raises(InputError, match="is a file"):
        overwrite_run_dir(afile)
    # A run directory the user has since put files of their own in: deleting it deleted those.
    used = tmp_path / "used"
    (used / "checkpoints" / "step_000010").mkdir(parents=True)
    for name in ("config.yaml", "runlog.jsonl", "samples.jsonl", "report.html", "curve.png", "wandb_run_id"):
        (used / name).write_text("x")
    (used / "final.tmp-123").mkdir()  # what a run killed while saving its final model leaves
    (used / "analysis.ipynb").write_text("mine")
    with pytest.raises(InputError, match=r"--overwrite: .*used holds files that a run does not write "
                                         r"\(analysis.ipynb\); .*move them out first"):
        overwrite_run_dir(used)
    assert (used / "analysis.ipynb").read_text() == "mine"
    (used / "analysis.ipynb").unlink()
    overwrite_run_dir(used)
    assert not used.exists()
    inside = tmp_path / "run2"
    inside.mkdir()
    (inside / "runlog.jsonl").write_text("")
    monkeypatch.chdir(inside)
    with pytest.raises(InputError, match="working directory"):
        overwrite_run_dir(inside)


def test_a_run_is_not_started_among_files_that_are_no_run(tmp_path):
    # The run went in beside the user's files; the directory then held a run, and --overwrite
    # deleted it whole, the user's files with it.
    from scalerl.train.run_directory import check_output

    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "notes.txt").write_text("precious")
    with pytest.raises(InputError, match=r"--output .*mine holds files that are not a scalerl run \(notes.txt\); "
                                         r".*choose a new or empty --output"):
        check_output(mine, False)
    assert (mine / "notes.txt").read_text() == "precious"
    hidden = tmp_path / "hidden"
    hidden.mkdir()
    (hidden / ".gitkeep").write_text("")
    check_output(hidden, False)  # hidden files do not count
    crashed = tmp_path / "crashed"
    crashed.mkdir()
    (crashed / "config.yaml").write_text("x: 1\n")  # a run that stopped after writing its config
    check_output(crashed, False)
    check_output(tmp_path / "new", False)
    tracked = tmp_path / "tracked"  # a start that failed after its trackers began (W&B not logged in)
    (tracked / "tensorboard").mkdir(parents=True)
    (tracked / "wandb_run_id").write_text("abc123\n")
    check_output(tracked, False)


def _args(*argv):
    p = argparse.ArgumentParser()
    add_config_args(p)
    return p.parse_args(list(argv))


def _saved(*argv):
    """What `scalerl train ARGV` saved as config.yaml."""
    from scalerl.commands._train_args import config_from_args

    return config_from_args(_args(*argv), output="runs/x", quiet=True)


def test_resume_accepts_the_original_flags_and_names_only_conflicting_values():
    original = ["--model", "tiny", "--steps", "40", "--seed", "3", "--set", "lr=2e-4", "--set", "pipeline=sync"]
    saved = _saved(*original)
    assert resume_conflicts(saved, _args(*original)) == []
    assert resume_conflicts(saved, _args("--steps", "80", "--threads", "1", "--no-progress")) == []  # free to change
    assert resume_conflicts(saved, _args("--seed", "3")) == []  # a part of the original command
    assert resume_conflicts(saved, _args("--recipe", "scalerl", *original)) == []
    conflicts = resume_conflicts(saved, _args(*original[:-4], "--set", "lr=1e-3", "--seed", "4"))
    assert conflicts == ["recipe.optimizer.lr: saved 0.0002, given 0.001", "run.seed: saved 3, given 4"]
    # A different preset changes many fields: each is named.
    conflicts = resume_conflicts(saved, _args("--recipe", "deepseek-grpo"))
    assert "recipe_name: saved 'scalerl', given 'deepseek-grpo'" in conflicts
    assert "recipe.loss.name: saved 'cispo', given 'ppo'" in conflicts


def test_resume_of_a_run_saved_with_a_package_module_as_typed_takes_the_same_reward_flag(tmp_path, monkeypatch):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "rewards.py").write_text("def score(completion):\n    return 1\n")
    monkeypatch.chdir(tmp_path)
    saved = _saved("--model", "tiny", "--steps", "3")
    saved.task.reward = "pkg.rewards:score"  # what config.yaml holds for `--reward pkg.rewards:score` before 2b90c66
    assert resume_conflicts(saved, _args("--model", "tiny", "--reward", "pkg.rewards:score")) == []


def _loads(spec):
    """Whether the reward worker's loader loads ``spec`` (its imports undone after)."""
    import sys

    from scalerl.tasks.reward_worker import load_function

    path, modules = list(sys.path), set(sys.modules)
    try:
        return callable(load_function(spec))
    finally:
        sys.path[:] = path
        for name in set(sys.modules) - modules:
            sys.modules.pop(name, None)


def test_a_reward_file_by_path_in_a_package_folder_named_like_an_imported_module_still_loads(tmp_path):
    (tmp_path / "math").mkdir()
    (tmp_path / "math" / "__init__.py").write_text("")
    (tmp_path / "math" / "reward.py").write_text("def score(completion):\n    return 1\n")
    assert _loads(f"{tmp_path / 'math' / 'reward.py'}:score")


def test_a_reward_file_by_path_beside_an_init_that_fails_to_import_still_loads(tmp_path):
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "__init__.py").write_text("raise ImportError('needs the GPU stack')\n")
    (tmp_path / "project" / "reward.py").write_text("def score(completion):\n    return 1\n")
    assert _loads(f"{tmp_path / 'project' / 'reward.py'}:score")


def test_a_package_member_whose_own_import_fails_names_that_error_not_the_relative_import(tmp_path):
    """Both routes failing (a bug in the file itself, which uses relative imports): the error is the file's
    own, as its package's member -- not "attempted relative import with no known parent package"."""
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "util.py").write_text("X = 1\n")
    (tmp_path / "pkg" / "rewards.py").write_text("from .util import X\nundefined_name\n")
    with pytest.raises(ValueError, match=r"as pkg.rewards \(NameError: name 'undefined_name' is not defined\) nor on "
                                         r"its own \(ImportError"):
        _loads(f"{tmp_path / 'pkg' / 'rewards.py'}:score")
