"""A config file read again: by the Python API, as a recipe file named after a preset, as a study run's
config.yaml saved before a recipe key existed (review h's reproducers of the recipe_name change; each
failed on it)."""

import shutil
from pathlib import Path

import yaml

from scalerl.cli import main
from scalerl.config import load_yaml, save_yaml
from scalerl.study.plan import plan_study
from scalerl.study.spec import load_spec
from scalerl.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]


def _printed(capsys, *argv) -> tuple[dict, str]:
    """``scalerl train ARGV --print-config``: (the printed config, stderr)."""
    assert main(["train", *argv, "--print-config"]) == 0
    out, err = capsys.readouterr()
    return yaml.safe_load(out), err


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
