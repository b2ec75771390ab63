"""Repeated ``--set`` of a mapping merge (review g's reproducer, tests/test_review_g_bad_input.py on
branch reviewg, without its xfail mark, and what the fix promises around it)."""

import yaml

from scalerl.cli import main
from scalerl.config import apply_overrides, load_yaml
from scalerl.train.config import TrainConfig


def _printed(capsys, *argv) -> tuple[dict, str]:
    """``scalerl train ARGV --print-config``: (the printed config, stderr)."""
    assert main(["train", *argv, "--print-config"]) == 0
    out, err = capsys.readouterr()
    return yaml.safe_load(out), err


def test_a_second_task_settings_set_does_not_silently_drop_the_first(tmp_path, capsys):
    # `scalerl eval --set 'task.settings={...}'` is repeatable and merges the mappings in order;
    # `scalerl train` kept only the last one, without a word: the run validated on problems held
    # out of the training data instead of val.jsonl.
    printed, _ = _printed(capsys, "--task", "math", "--data", str(tmp_path / "train.jsonl"),
                          "--set", "task.settings={eval_data: {val: val.jsonl}}",
                          "--set", "task.settings={verify_timeout: 30}")
    settings = printed["task"]["settings"]
    assert settings["eval_data"] == {"val": "val.jsonl"} and settings["verify_timeout"] == 30


def test_a_task_settings_set_still_replaces_the_config_files_mapping(tmp_path):
    """Against the file (or preset) a --set mapping replaces the whole mapping, as docs/tasks.md says;
    only a second --set of it in the same command merges, its keys winning."""
    config = tmp_path / "c.yaml"
    config.write_text("task:\n  settings: {verify_workers: 2, max_val: 50}\n")
    cfg = apply_overrides(load_yaml(TrainConfig, config),
                          ["task.settings={max_val: 10, split: train}", "task.settings={split: test}"])
    assert cfg.task.settings == {"max_val": 10, "split": "test"}
