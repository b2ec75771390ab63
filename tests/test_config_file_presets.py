"""A config file's ``recipe_name`` picks the preset its recipe starts from; repeated ``--set`` of a
mapping merge (review g's reproducers, tests/test_review_g_bad_input.py on branch reviewg, without
their xfail marks, and what the fixes promise around them); a run directory's own config.yaml
re-runs without the note an edited name gets."""

import shutil
from pathlib import Path

import yaml

from scalerl.cli import main
from scalerl.config import apply_overrides, load_yaml, save_yaml
from scalerl.rl.presets import get_recipe
from scalerl.study.plan import plan_study
from scalerl.study.spec import load_spec
from scalerl.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]


def _printed(capsys, *argv) -> tuple[dict, str]:
    """``scalerl train ARGV --print-config``: (the printed config, stderr)."""
    assert main(["train", *argv, "--print-config"]) == 0
    out, err = capsys.readouterr()
    return yaml.safe_load(out), err


def test_a_config_file_naming_a_preset_trains_it_or_is_refused(tmp_path, capsys):
    # `--print-config` and every run's config.yaml open with `recipe_name: scalerl` ("Preset the
    # recipe was built from"). A user who wrote `recipe_name: deepseek-grpo` in a config file got
    # ScaleRL's recipe (CISPO, prompt aggregation, ...) under the label deepseek-grpo.
    config = tmp_path / "grpo.yaml"
    config.write_text("recipe_name: deepseek-grpo\nmodel:\n  name_or_path: tiny\n")
    printed, err = _printed(capsys, "--config", str(config))
    grpo = get_recipe("deepseek-grpo")
    assert printed["recipe_name"] == "deepseek-grpo"
    assert printed["recipe"]["loss"]["name"] == "ppo"
    assert (printed["recipe"]["aggregation"], printed["recipe"]["off_policy"]["pipeline"]) == (
        grpo.aggregation, grpo.off_policy.pipeline)
    assert "note" not in err


def test_the_files_recipe_keys_go_over_the_named_preset(tmp_path, capsys):
    """The order --recipe NAME --set ... gives: the preset, the file's recipe: keys, then --set."""
    config = tmp_path / "dapo.yaml"
    config.write_text("recipe_name: qwen-dapo\nprofile: none\nrecipe:\n  aggregation: token\n"
                      "  optimizer:\n    lr: 1.0e-6\n")
    printed, _ = _printed(capsys, "--config", str(config), "--set", "recipe.optimizer.lr=2e-6")
    assert printed["recipe"]["loss"]["name"] == "dapo"  # the preset's
    assert printed["recipe"]["filtering"]["dynamic_sampling"] is True  # the preset's
    assert printed["recipe"]["aggregation"] == "token"  # the file's
    assert printed["recipe"]["optimizer"]["lr"] == 2e-6  # --set's


def test_an_unknown_recipe_name_is_refused_with_the_presets(tmp_path, capsys):
    config = tmp_path / "mine.yaml"
    config.write_text("recipe_name: whatever-i-like\nmodel:\n  name_or_path: tiny\n")
    assert main(["train", "--config", str(config), "--print-config"]) == 2
    err = capsys.readouterr().err
    assert "recipe_name 'whatever-i-like' is not a preset" in err and "deepseek-grpo" in err
    # --set recipe_name=X chooses the preset as --recipe X does; it relabelled any recipe before.
    assert main(["train", "--set", "recipe_name=whatever-i-like", "--print-config"]) == 2
    err = capsys.readouterr().err
    assert "unknown recipe 'whatever-i-like'" in err and "qwen-dapo" in err
    printed, _ = _printed(capsys, "--set", "recipe_name=deepseek-grpo")
    assert (printed["recipe_name"], printed["recipe"]["loss"]["name"]) == ("deepseek-grpo", "ppo")


def test_a_dumped_config_round_trips_and_an_edited_name_is_said(tmp_path, capsys):
    """A run's config.yaml spells out its whole recipe: read back, it is the same config, without a
    note -- also under a name that is not a preset (a study's label). With only its name edited to
    another preset, the file's keys still win: a note names them."""
    first, err = _printed(capsys, "--recipe", "deepseek-grpo", "--set", "lr=3e-4")
    dumped = tmp_path / "config.yaml"
    dumped.write_text(yaml.safe_dump(first))
    again, err = _printed(capsys, "--config", str(dumped))
    assert again == first and "note" not in err
    labelled = tmp_path / "labelled.yaml"
    labelled.write_text(yaml.safe_dump({**first, "recipe_name": "deepseek-grpo+lr-3e-4"}))
    again, err = _printed(capsys, "--config", str(labelled))
    assert again["recipe"] == first["recipe"] and "note" not in err

    edited = tmp_path / "edited.yaml"
    edited.write_text(yaml.safe_dump({**first, "recipe_name": "scalerl"}))
    again, err = _printed(capsys, "--config", str(edited))
    assert again["recipe"] == first["recipe"]  # the file's keys win ...
    assert err.count("note:") == 1  # ... and that is said, once, naming the keys
    assert "recipe_name: scalerl" in err and "recipe.loss.name" in err and "the file's keys win" in err


def test_a_recipe_name_override_is_refused_where_no_flag_chooses_the_preset():
    """A study's overrides go through resolve(): recipe_name=X there relabelled every variant."""
    from scalerl.errors import ConfigError
    from scalerl.train.config import resolve

    try:
        resolve(TrainConfig(), ["recipe_name=deepseek-grpo"])
    except ConfigError as exc:
        assert "--recipe NAME" in str(exc)
    else:
        raise AssertionError("recipe_name=deepseek-grpo was taken as an override")


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


def test_an_empty_task_settings_mapping_clears_it_first_or_later(tmp_path):
    """`--set task.settings={}` emptied the mapping before repeated mappings merged; after that change a
    `{}` given after another mapping merged nothing, so the earlier keys stayed: it clears, first or later."""
    config = tmp_path / "c.yaml"
    config.write_text("task:\n  settings: {verify_workers: 2}\n")
    cfg = load_yaml(TrainConfig, config)
    assert apply_overrides(cfg, ["task.settings={}"]).task.settings == {}
    assert apply_overrides(cfg, ["task.settings={split: test}", "task.settings={}"]).task.settings == {}
    assert apply_overrides(cfg, ["task.settings={}", "task.settings={split: test}"]).task.settings == {"split": "test"}


def test_a_run_directorys_own_config_re_runs_without_the_departure_note(tmp_path, capsys):
    """``--recipe deepseek-grpo --set loss.name=dapo`` saved as a run's config.yaml: re-running it with
    ``--config RUN/config.yaml`` is what was run, not a name edited by hand -- no note there (review h:
    every such re-run printed one, with advice to delete the keys); the same file elsewhere keeps it."""
    first, _ = _printed(capsys, "--recipe", "deepseek-grpo", "--set", "loss.name=dapo")
    run = tmp_path / "run"
    run.mkdir()
    (run / "config.yaml").write_text(yaml.safe_dump(first))
    (run / "runlog.jsonl").write_text('{"kind": "header"}\n')
    again, err = _printed(capsys, "--config", str(run / "config.yaml"))
    assert again == first and "note" not in err
    loose = tmp_path / "copy.yaml"
    loose.write_text(yaml.safe_dump(first))
    _, err = _printed(capsys, "--config", str(loose))
    assert "recipe.loss.name" in err and "says recipe_name: deepseek-grpo" in err


def test_a_quoted_recipe_name_set_names_the_preset_as_any_quoted_set_value_does(capsys):
    """Every --set value is read as YAML (``loss.name='dapo'`` is dapo); ``recipe_name='deepseek-grpo'``
    kept its quotes and was refused as an unknown preset (review h)."""
    printed, _ = _printed(capsys, "--set", "recipe_name='deepseek-grpo'")
    assert printed["recipe_name"] == "deepseek-grpo" and printed["recipe"]["loss"]["name"] == "ppo"


# A config file read again (review h's reproducers of the recipe_name change; each failed on it).


def test_the_python_api_reads_a_config_file_as_the_cli_does(tmp_path, capsys):
    # docs/api.md: "A YAML file (what --config reads, a run's own config.yaml) loads with
    # scalerl.config.load_yaml(TrainConfig, path)". The CLI now trains deepseek-grpo from this file;
    # load_yaml gives ScaleRL's recipe (cispo, prompt aggregation) labelled deepseek-grpo -- the bug cfg9 fixed.
    config = tmp_path / "grpo.yaml"
    config.write_text("recipe_name: deepseek-grpo\nmodel:\n  name_or_path: tiny\n")
    printed, _ = _printed(capsys, "--config", str(config))
    assert printed["recipe"]["loss"]["name"] == "ppo"
    assert load_yaml(TrainConfig, config).recipe.loss.name == printed["recipe"]["loss"]["name"]


def test_the_departure_note_does_not_quote_a_recipe_name_a_recipe_file_never_wrote(tmp_path, capsys):
    # A recipe file (configs/deepseek-grpo.yaml copied and edited) takes its name from the file name;
    # the note said "FILE says recipe_name: deepseek-grpo, but its recipe: keys differ ..." of a file
    # that has neither a recipe_name nor a recipe: section.
    text = (ROOT / "configs" / "deepseek-grpo.yaml").read_text()
    assert "\n  name: ppo\n" in text and "recipe_name" not in text
    edited = tmp_path / "deepseek-grpo.yaml"
    edited.write_text(text.replace("\n  name: ppo\n", "\n  name: dapo\n"))
    printed, err = _printed(capsys, "--config", str(edited), "--model", "tiny")
    assert printed["recipe"]["loss"]["name"] == "dapo"
    assert "says recipe_name" not in err


def test_a_study_runs_config_saved_before_a_recipe_key_existed_still_loads(tmp_path, capsys):
    # A study run's config.yaml is named after its variant (scalerl+batch-8), not a preset, so
    # --config accepts it only while it spells out every recipe key. One saved before a key was
    # added (filtering.basis came in c6ff046) is refused, while --resume / eval --run (load_yaml)
    # fill the default, and the same file under a preset's name loads.
    plans = plan_study(load_spec(ROOT / "configs" / "studies" / "batch-size.yaml"), tmp_path / "study")
    label = next(p for p in plans if not p.variant.is_base)
    saved = tmp_path / "config.yaml"
    save_yaml(label.config, saved)
    data = yaml.safe_load(saved.read_text())
    assert data["recipe_name"] == "scalerl+batch-8"
    del data["recipe"]["filtering"]["basis"]
    saved.write_text(yaml.safe_dump(data))
    assert load_yaml(TrainConfig, saved).recipe.filtering.basis == "correctness"
    printed, _ = _printed(capsys, "--config", str(saved))
    assert printed["recipe"]["filtering"]["basis"] == "correctness"
    shutil.rmtree(tmp_path / "study", ignore_errors=True)
