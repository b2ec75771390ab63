"""Mistakes in the training configuration a user makes -- a typo in a recipe file, a --set the recipe does not
read, an empty --recipe or --config, a key inside a mapping, a training key given to `recipes show` -- each said
in one line naming the key (review dw). None trains: they stop at the config."""

from __future__ import annotations

import shlex

import pytest
import yaml

from scalerl.cli import main
from scalerl.config import apply_overrides, leaf_fields, resolve_key, to_dict
from scalerl.errors import ConfigError
from scalerl.rl.presets import get_recipe, recipe_yaml
from scalerl.rl.recipe import RecipeConfig
from scalerl.train.config import TrainConfig, load_config_file


def _run(capsys, *argv) -> tuple[int, str]:
    try:
        rc = main([str(a) for a in argv])
    except SystemExit as exc:  # argparse
        rc = exc.code
    return rc, capsys.readouterr().err


def test_recipe_file_typo_names_the_mistyped_key(tmp_path):
    text = recipe_yaml("qwen-dapo").replace("\naggregation:", "\naggregaton:")
    assert "\naggregaton:" in text
    path = tmp_path / "my-dapo.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config_file(path)
    assert "aggregaton" in str(err.value), str(err.value)


@pytest.mark.parametrize("typo, said", [
    ("sampling", "did you mean sampler? sampling is a training setting"),  # a training key exactly: blamed `loss`
    ("smapler", "did you mean sampler? Recipe keys"),
    ("modle", "model is a training setting"),
])
def test_recipe_file_typo_that_is_or_is_near_a_training_key_names_the_typo(tmp_path, typo, said):
    path = tmp_path / "my-recipe.yaml"
    path.write_text(recipe_yaml("scalerl").replace("\nsampler:", f"\n{typo}:"))
    with pytest.raises(ConfigError) as err:
        load_config_file(path)
    assert f"unknown key {typo!r} in a recipe file" in str(err.value) and said in str(err.value), str(err.value)


@pytest.mark.parametrize("key", ["on", "1", "null"])
def test_recipe_file_with_a_non_string_key_is_a_one_line_config_error(tmp_path, key):
    """``on:`` is True to YAML 1.1 (PyYAML), ``1:`` an int, ``null:`` None. In a training config the same key is
    one line ("unknown key 'True' in top level"); in a file of recipe keys it ended in difflib's TypeError."""
    path = tmp_path / "my-recipe.yaml"
    path.write_text(f"loss:\n  name: cispo\naggregation: prompt\n{key}: 3\n")
    with pytest.raises(ConfigError, match="unknown key"):
        load_config_file(path)


@pytest.mark.parametrize("marker", ["recipe:\n  loss:\n    name: cispo\n", "recipe_name: scalerl\n"],
                         ids=["recipe", "recipe_name"])
def test_training_config_with_misplaced_recipe_keys_names_the_misplaced_key(tmp_path, marker):
    """A training config (it has ``recipe:``, which no recipe file has) whose user left ``aggregation:`` and
    ``batch:`` at the top level. Before b7aebd2: "unknown key 'aggregation' in top level ... belongs at
    recipe.aggregation". Now: "unknown key 'recipe' in a recipe file ... (put the recipe under recipe: in a training
    config, beside recipe:)" -- the key it calls unknown is the file's valid one, and the advice points at itself."""
    path = tmp_path / "train.yaml"
    path.write_text(marker + "aggregation: sample\nbatch:\n  prompts: 4\n")
    with pytest.raises(ConfigError) as exc:
        load_config_file(path)
    message = str(exc.value)
    assert "unknown key 'recipe" not in message and "recipe.aggregation" in message, message


@pytest.mark.parametrize("recipe, item, key", [
    ("scalerl", "loss.dapo.eps_high=0.3", "loss.dapo.eps_high"),
    ("qwen-dapo", "length.think_budget=[5, 9]", "think_budget"),
])
def test_set_of_a_parameter_the_recipe_never_reads_is_said(capsys, recipe, item, key):
    rc, err = _run(capsys, "train", "--recipe", recipe, "--set", item, "--print-config")
    assert key in err, f"rc {rc}, stderr: {err!r}"


def test_overlong_budget_advice_is_enough():
    cfg = apply_overrides(get_recipe("qwen-dapo"), ["length.max_new_tokens=1000"])
    with pytest.raises(ConfigError) as first:
        cfg.validate()
    assert "overlong_max_len" in str(first.value)
    # Following the advice (overlong_max_len = max_new_tokens) must give a valid recipe, or the first
    # message must already name what else has to change.
    try:
        apply_overrides(cfg, ["length.overlong_max_len=1000"]).validate()
    except ConfigError as second:
        assert "overlong_cache" in str(first.value), f"first: {first.value}; then: {second}"


def test_empty_recipe_flag_is_refused(capsys):
    rc, err = _run(capsys, "train", "--recipe", "", "--print-config")
    assert rc != 0 and "recipe" in err, f"rc {rc}, stderr: {err!r}"


def test_empty_config_flag_is_refused(capsys):
    rc, err = _run(capsys, "train", "--config", "", "--print-config")
    assert rc != 0 and "config" in err, f"rc {rc}, stderr: {err!r}"


def test_partial_recipe_under_an_unknown_name_is_refused_or_said(tmp_path, capsys):
    data = to_dict(get_recipe("qwen-dapo"))
    keys = list(leaf_fields(RecipeConfig))
    for key in keys[int(len(keys) * 0.6):]:  # length.interruption_phrase ... optimizer.grad_clip
        *parents, leaf = key.split(".")
        node = data
        for part in parents:
            node = node[part]
        del node[leaf]
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump({"recipe_name": "my-dapo", "recipe": data}))
    rc, err = _run(capsys, "train", "--config", str(path), "--print-config")
    assert rc != 0 or "fp32_lm_head" in err or "off_policy" in err, f"rc {rc}, stderr: {err!r}"


def test_recipes_show_training_key_gets_no_unrelated_suggestion():
    with pytest.raises(ConfigError) as err:
        apply_overrides(get_recipe("scalerl"), ["run.steps=5"])
    message = str(err.value)
    assert "std_eps" not in message and "optimizer.eps" not in message, message


def test_set_inside_a_mapping_field_says_how():
    try:
        cfg = apply_overrides(TrainConfig(), ["recipe.loss.extra.beta=0.1"])
    except ConfigError as exc:
        assert "recipe.loss.extra={" in str(exc), str(exc)
    else:
        assert cfg.recipe.loss.extra == {"beta": 0.1}


def test_recipes_mistyped_action_names_the_actions(capsys):
    rc, err = _run(capsys, "recipes", "shwo", "scalerl")
    assert rc != 0 and "show" in err, f"rc {rc}, stderr: {err!r}"


def test_end_think_outside_interrupt_mode_needs_no_phrase_to_match(capsys):
    # The interruption phrase is forced in interrupt mode only: qwen-dapo (overlong penalty) refused an end_think
    # its phrase did not end with, a phrase it never writes.
    rc, err = _run(capsys, "train", "--recipe", "qwen-dapo", "--set", "end_think=</reasoning>", "--print-config")
    assert rc == 0, err
    rc, err = _run(capsys, "train", "--recipe", "scalerl", "--set", "end_think=</reasoning>", "--print-config")
    assert rc == 2 and "must end with end_think" in err, err


# --- review dy: regressions of the fixes above ---------------------------------------------------------------



def _gapped_config(tmp_path):
    """A training config of a recipe of its own (no preset's name) with every recipe key but aggregation."""
    data = to_dict(TrainConfig())
    data["recipe_name"] = "my-recipe"
    data["profile"] = "none"
    del data["recipe"]["aggregation"]
    path = tmp_path / "gap.yaml"
    path.write_text(yaml.safe_dump(data))
    return path


def test_recipe_gap_note_is_not_given_when_recipe_flag_replaces_the_recipe(capsys, tmp_path):
    path = _gapped_config(tmp_path)
    rc, err = _run(capsys, "train", "--config", path, "--recipe", "qwen-dapo", "--print-config")
    assert rc == 0, err
    # The run trains qwen-dapo whole: its aggregation, not "their defaults (ScaleRL's)".
    assert "ScaleRL's" not in err, err


def test_recipe_gap_note_leaves_out_a_key_the_set_gives(capsys, tmp_path):
    path = _gapped_config(tmp_path)
    rc = main(["train", "--config", str(path), "--set", "aggregation=sample", "--print-config"])
    out, err = capsys.readouterr()
    assert rc == 0, err
    assert yaml.safe_load(out)["recipe"]["aggregation"] == "sample"
    assert "recipe.aggregation" not in err, err  # it is set (sample), not left to ScaleRL's default


def test_mapping_advice_for_a_key_two_levels_inside_the_mapping_nests_it():
    msg = _error(lambda: resolve_key(TrainConfig, "task.settings.eval_data.val"))
    assert "{eval_data: {val: VALUE}}" in msg, msg


def test_train_set_of_a_key_inside_loss_extra_by_its_suffix_gives_the_mapping_syntax():
    # docs/recipe.md: "A key inside a mapping (`loss.extra`, `task.settings`) is set with the mapping,
    # `loss.extra={beta: 0.1}`" -- `scalerl recipes show scalerl loss.extra.beta=0.1` says so; `scalerl train --set
    # loss.extra.beta=0.1` says "unknown key 'loss.extra.beta'; did you mean recipe.loss.extra?".
    assert "={beta: VALUE}" in _error(lambda: resolve_key(RecipeConfig, "loss.extra.beta"))
    msg = _error(lambda: resolve_key(TrainConfig, "loss.extra.beta"))
    assert "={beta: VALUE}" in msg, msg


@pytest.mark.parametrize("key", ["train.lr", "opt.lr", "optim.lr"])
def test_an_exact_leaf_under_a_mistyped_section_is_still_suggested(key):
    msg = _error(lambda: resolve_key(TrainConfig, key))
    assert "recipe.optimizer.lr" in msg, msg


@pytest.mark.parametrize("item, path", [("steps=5", "run.steps"), ("seed=3", "run.seed")])
def test_recipes_show_names_a_training_key_given_by_its_suffix(capsys, item, path):
    rc, err = _run(capsys, "recipes", "show", "scalerl", item)
    assert rc == 2
    assert "training setting" in err and path in err, err
    assert "std_eps" not in err, err


def test_recipes_show_advice_for_a_training_key_is_one_train_accepts(capsys):
    rc, err = _run(capsys, "recipes", "show", "scalerl", "task.settings.digits=3")
    assert rc == 2 and "scalerl train --set" in err, err
    advice = err.split("scalerl train --set", 1)[1].strip().splitlines()[0]
    (advice,) = shlex.split(advice)  # (quoted for a shell: pasted, the shell unquotes it)
    rc, err2 = _run(capsys, "train", "--set", advice, "--print-config")
    assert rc == 0, f"advice {advice!r} refused by train: {err2}"


def test_a_mistyped_training_key_in_a_file_read_as_a_recipe_is_suggested(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("loss:\n  name: dapo\naggregation: sample\nmodle:\n  name_or_path: tiny\n")
    with pytest.raises(ConfigError) as err:
        load_config_file(path)
    msg = str(err.value)
    assert "modle" in msg and "model" in msg.replace("modle", ""), msg


def _error(fn) -> str:
    try:
        fn()
    except ConfigError as exc:
        return str(exc)
    return ""


# --- review dz -----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("item", ["task=math", "model=gpt2"])
def test_recipes_show_names_a_training_section_as_a_training_setting(capsys, item):
    code = main(["recipes", "show", "scalerl", item])
    err = capsys.readouterr().err
    assert code == 2
    assert "training setting" in err and "did you mean" not in err, err


def test_recipes_show_item_without_a_value_is_not_given_an_empty_train_item(capsys):
    code = main(["recipes", "show", "scalerl", "steps"])
    err = capsys.readouterr().err
    assert code == 2
    assert "--set run.steps=\n" not in err and not err.rstrip().endswith("="), err


# ----------------------------------------------------------------------------- 6. the recipe-gap note


def test_recipe_gap_note_does_not_call_k_under_sync_scalerls_default(tmp_path, capsys):
    import yaml

    assert main(["train", "--recipe", "qwen-dapo", "--print-config"]) == 0
    data = yaml.safe_load(capsys.readouterr().out)
    data["recipe_name"] = "my-sync-dapo"  # a recipe of its own, spelled out but for k
    data["recipe"]["off_policy"] = {"pipeline": "sync"}
    path = tmp_path / "my-sync-dapo.yaml"
    path.write_text(yaml.safe_dump(data))
    assert main(["train", "--config", str(path), "--print-config"]) == 0
    out, err = capsys.readouterr()
    assert yaml.safe_load(out)["recipe"]["off_policy"]["k"] == 1  # what the run trains with
    gap = [line for line in err.splitlines() if "is no preset and leaves out" in line]
    assert not any("recipe.off_policy.k" in line for line in gap), gap
