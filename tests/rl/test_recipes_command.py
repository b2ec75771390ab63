"""`scalerl recipes` and `scalerl recipes show NAME`."""

from __future__ import annotations

import pytest
import yaml

from scalerl.cli import main
from scalerl.config import from_dict
from scalerl.rl.presets import all_presets, get_recipe
from scalerl.rl.recipe import RecipeConfig


def test_list_shows_every_recipe_with_its_summary(capsys):
    assert main(["recipes"]) == 0
    out = capsys.readouterr().out
    for name, preset in all_presets().items():
        assert f"{name}  " in out and preset.summary in out


def test_show_prints_commented_yaml_of_the_recipe(capsys):
    assert main(["recipes", "show", "qwen-dapo"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("# recipe: qwen-dapo\n")
    assert "# DAPO dynamic sampling" in out  # field docs as comments
    assert from_dict(RecipeConfig, yaml.safe_load(out)) == get_recipe("qwen-dapo")


def test_show_applies_and_validates_overrides(capsys):
    assert main(["recipes", "show", "scalerl", "loss.name=gspo", "k=2"]) == 0
    cfg = from_dict(RecipeConfig, yaml.safe_load(capsys.readouterr().out))
    assert (cfg.loss.name, cfg.off_policy.k) == ("gspo", 2)
    assert main(["recipes", "show", "scalerl", "k=0"]) == 2
    assert "off_policy.k must be >= 1" in capsys.readouterr().err


def test_show_with_pipeline_sync_implies_k_1_as_train_set_does(capsys):
    """`scalerl train --set pipeline=sync` means k = 1 (README, docs/distributed.md); the same
    override to `recipes show` was refused ('sync means k=1 (got k=8)'), so the YAML a user
    copies to train with could not be made that way. A k given beside it is still checked."""
    assert main(["recipes", "show", "scalerl", "pipeline=sync"]) == 0
    cfg = from_dict(RecipeConfig, yaml.safe_load(capsys.readouterr().out))
    assert (cfg.off_policy.pipeline, cfg.off_policy.k) == ("sync", 1)
    assert main(["recipes", "show", "scalerl", "pipeline=sync", "k=4"]) == 2
    assert "sync means k=1" in capsys.readouterr().err


def test_unknown_or_missing_name_exits_2_listing_the_known_names(capsys):
    assert main(["recipes", "show", "nope"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scalerl recipes: error: unknown recipe 'nope'; known recipes: scalerl, ")
    assert "scalerl-loo-loss-dapo" in err and len(err.strip().splitlines()) == 1
    assert main(["recipes", "show"]) == 2
    assert "show needs a recipe name" in capsys.readouterr().err


def test_shown_yaml_trains_as_it_says_with_train_config(tmp_path, capsys):
    """The YAML says "copy and edit"; given to `scalerl train --config` it was refused ("unknown key
    'loss' in top level"): no command took it back."""
    from scalerl.config import load_yaml
    from scalerl.train.config import TrainConfig

    assert main(["recipes", "show", "deepseek-grpo", "loss.name=dapo"]) == 0
    mine = tmp_path / "my-grpo.yaml"
    mine.write_text(capsys.readouterr().out)
    assert "scalerl train --config FILE" in mine.read_text()
    assert main(["train", "--config", str(mine), "--print-config"]) == 0
    printed = tmp_path / "printed.yaml"
    printed.write_text(capsys.readouterr().out)
    cfg = load_yaml(TrainConfig, printed)
    expected = get_recipe("deepseek-grpo")
    expected.loss.name = "dapo"
    # The recipe as written (the batch is the scale profile's, as for any --config).
    assert cfg.recipe_name == "my-grpo"
    assert (cfg.recipe.loss, cfg.recipe.off_policy, cfg.recipe.aggregation) == (
        expected.loss, expected.off_policy, expected.aggregation)
    # A full training config is read as before; a mix of both kinds is refused naming the key.
    mixed = tmp_path / "mixed.yaml"
    mixed.write_text("loss:\n  name: ppo\nrun:\n  steps: 3\n")
    assert main(["train", "--config", str(mixed), "--print-config"]) == 2
    assert "unknown key 'loss' in top level" in capsys.readouterr().err


def test_a_recipe_flag_over_a_config_file_with_a_recipe_says_what_it_replaces(tmp_path, capsys):
    """--config FILE --recipe NAME: the preset replaced the file's recipe settings without a word."""
    mine = tmp_path / "mine.yaml"
    mine.write_text("recipe:\n  loss:\n    name: dapo\nrun:\n  steps: 7\n")
    assert main(["train", "--config", str(mine), "--recipe", "scalerl", "--print-config"]) == 0
    captured = capsys.readouterr()
    assert "note: --recipe scalerl replaces the recipe of" in captured.err and "recipe.loss.name" in captured.err
    assert "name: cispo" in captured.out and "steps: 7" in captured.out  # the preset wins; the rest is kept
    mine.write_text("run:\n  steps: 7\n")  # nothing of the recipe in the file: nothing to say
    assert main(["train", "--config", str(mine), "--recipe", "scalerl", "--print-config"]) == 0
    assert "replaces the recipe" not in capsys.readouterr().err


def test_list_with_a_name_says_to_use_show(capsys):
    """`scalerl recipes list scalerl` printed the whole list, ignoring the name (exit 0)."""
    assert main(["recipes", "list", "scalerl", "k=4"]) == 2
    assert capsys.readouterr().err.strip() == ("scalerl recipes: error: list takes no recipe name; "
                                               "to see one: scalerl recipes show scalerl k=4")


def test_a_recipe_name_alone_shows_it_and_an_unknown_word_lists_the_names(capsys):
    """`scalerl recipes scalerl` was argparse's "invalid choice: 'scalerl' (choose from 'list', 'show')"."""
    assert main(["recipes", "show", "scalerl", "k=2"]) == 0
    shown = capsys.readouterr().out
    assert main(["recipes", "scalerl", "k=2"]) == 0
    assert capsys.readouterr().out == shown
    assert main(["recipes", "lst"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("scalerl recipes: error: unknown action or recipe 'lst' (did you mean list?): the actions "
                          "are list and show")
    assert "the recipes: scalerl, " in err


# Review CQ: what `recipes show` says above the YAML.

def test_recipes_show_with_overrides_names_them_above_the_preset_summary(capsys):
    """`scalerl recipes show deepseek-grpo loss.name=cispo aggregation=prompt` was headed "DeepSeek GRPO: PPO-clip
    0.2/0.2, sample agg., ..." above a CISPO / prompt-aggregation recipe, a file users copy to train with."""
    assert main(["recipes", "show", "deepseek-grpo", "loss.name=cispo", "aggregation=prompt"]) == 0
    out = capsys.readouterr().out
    assert "  name: cispo" in out and "\naggregation: prompt" in out  # the overrides were applied
    header = [line for line in out.splitlines() if line.startswith("# ")][:2]
    assert header[0] == "# recipe: deepseek-grpo with loss.name=cispo, aggregation=prompt", header
    assert header[1].startswith("# (the preset: DeepSeek GRPO"), header
    assert main(["recipes", "show", "deepseek-grpo"]) == 0  # unchanged: the preset's own summary
    summary = all_presets()["deepseek-grpo"].summary
    assert capsys.readouterr().out.splitlines()[:2] == ["# recipe: deepseek-grpo", "# " + summary]


def test_the_batch_normalisation_doc_says_which_std_the_code_divides_by(capsys):
    """The field's doc promised "std of all advantages in the batch"; the code divides by the std of the
    advantages that enter the loss (zero-variance groups left out): groups [1, -1, 1, -1] and [1, 1, 1, 1]
    give +-0.866, where the std of all eight centred advantages would give +-1.32."""
    import torch

    from scalerl.rl.advantages import compute_advantages
    from scalerl.rl.filters import zero_variance_mask

    rewards = torch.tensor([1.0, -1.0, 1.0, -1.0, 1.0, 1.0, 1.0, 1.0])
    group = torch.tensor([0, 0, 0, 0, 1, 1, 1, 1])
    adv = compute_advantages(rewards, group, "batch", keep=zero_variance_mask(rewards, group))
    assert float(adv[0]) == pytest.approx(0.866, abs=1e-3)
    assert main(["recipes", "show", "scalerl"]) == 0
    lines = capsys.readouterr().out.splitlines()
    at = next(i for i, line in enumerate(lines) if line.strip() == "normalization: batch")
    comment = " ".join(line.strip("# ").strip() for line in lines[at - 3:at] if line.lstrip().startswith("#"))
    assert "enter the loss" in comment and "zero-variance" in comment, comment
