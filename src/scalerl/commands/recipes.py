"""``scalerl recipes``: list the recipe presets and leave-one-out variants, or show one as YAML.

    scalerl recipes                                   # one line per recipe
    scalerl recipes show scalerl                      # full commented YAML, ready to copy
    scalerl recipes show scalerl loss.name=gspo k=4   # ... with overrides applied
"""

from __future__ import annotations

import argparse
import dataclasses
import difflib
import shlex

from scalerl.config import apply_overrides, mapping_item, resolve_key
from scalerl.errors import ConfigError
from scalerl.rl.presets import LEAVE_ONE_OUT, PRESETS, get_recipe, recipe_yaml
from scalerl.rl.recipe import RecipeConfig, sync_means_k1


#: What ``scalerl recipes`` does with a recipe: one line each, or one as YAML.
ACTIONS = ("list", "show")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("action", nargs="?", default="list", metavar="{list,show}",
                        help="list (default) or show NAME (a recipe's name alone shows it too)")
    parser.add_argument("name", nargs="?", help="recipe to show (see 'scalerl recipes')")
    parser.add_argument("overrides", nargs="*", metavar="KEY=VALUE",
                        help="overrides for show, e.g. loss.name=dapo or k=4")


def run(args: argparse.Namespace) -> int:
    if args.action not in ACTIONS:
        if args.action not in {**PRESETS, **LEAVE_ONE_OUT}:
            _unknown_action_or_recipe(args.action)
        # `scalerl recipes scalerl k=4`: the name alone is what was meant (argparse said "invalid choice").
        overrides = [args.name, *args.overrides] if args.name else args.overrides
        args.action, args.name, args.overrides = "show", args.action, overrides
    if args.action == "show":
        return _show(args)
    if args.name or args.overrides:  # `recipes list scalerl` listed everything, ignoring the name
        raise ConfigError(f"list takes no recipe name; to see one: scalerl recipes show {args.name} "
                          f"{' '.join(args.overrides)}".rstrip())
    width = max(len(n) for n in {**PRESETS, **LEAVE_ONE_OUT})
    print("presets:")
    for p in PRESETS.values():
        print(f"  {p.name:<{width}}  {p.summary}")
    print("\nleave-one-out variants of scalerl (one component reverted):")
    for p in LEAVE_ONE_OUT.values():
        print(f"  {p.name:<{width}}  {p.summary}")
    print("\nShow one as YAML: scalerl recipes show NAME [KEY=VALUE ...]")
    return 0


def _unknown_action_or_recipe(word: str) -> None:
    """Refuse a first word that is neither an action nor a recipe, naming both (review dw: ``recipes shwo scalerl``
    was "unknown recipe 'shwo'" and the recipes, not a word of ``show``)."""
    close = difflib.get_close_matches(word, [*ACTIONS, *PRESETS, *LEAVE_ONE_OUT], n=1, cutoff=0.6)
    raise ConfigError(f"unknown action or recipe {word!r}{f' (did you mean {close[0]}?)' if close else ''}: the "
                      f"actions are {' and '.join(ACTIONS)} (scalerl recipes show NAME); the recipes: "
                      f"{', '.join([*PRESETS, *LEAVE_ONE_OUT])}")


def _recipe_key(item: str) -> None:
    """Refuse an override of a training setting, not the recipe's (``run.steps=5``, ``steps=5``), with the ``train
    --set`` item that sets it (it was "unknown key; did you mean advantages.std_eps or optimizer.eps?": reviews dw,
    dy); ``recipe_name=NAME`` is another recipe to show."""
    from scalerl.train.config import TrainConfig

    key, eq, value = (part.strip() for part in item.partition("="))
    if not eq:
        return  # (not key=value: apply_overrides says so)
    try:
        resolve_key(RecipeConfig, key)
        return  # a recipe's key (or none: apply_overrides says what is wrong with it)
    except ConfigError:
        pass
    if key == "recipe_name":
        raise ConfigError(f"to show another recipe, name it: scalerl recipes show {value}")
    top = key.split(".", 1)[0]
    training_section = top in {f.name for f in dataclasses.fields(TrainConfig)} - {"recipe"}
    try:
        path = resolve_key(TrainConfig, key)
        train_item = f"{path}={value}"
    except ConfigError:
        path, train_item = None, mapping_item(TrainConfig, key, value)
    if (train_item is None and not training_section) or (path or train_item or "").startswith("recipe."):
        return  # (no training key either, or a recipe key by its full path: apply_overrides says what is wrong)
    # (a section, `task=math`, or a mistyped key of one, `run.stpes=3`: a training setting still -- review dz)
    how = (f"scalerl train --set {shlex.quote(train_item)}" if train_item else
           f"scalerl train --set {top}.KEY=VALUE (scalerl train --print-config lists the keys)")
    raise ConfigError(f"{key!r} is a training setting, not the recipe's: give it to a run, {how}")


def _show(args: argparse.Namespace) -> int:
    if not args.name:
        known = ", ".join([*PRESETS, *LEAVE_ONE_OUT])
        raise ConfigError(f"show needs a recipe name, e.g. 'scalerl recipes show scalerl'; known recipes: {known}")
    cfg = get_recipe(args.name)
    if args.overrides:
        from scalerl.rl.components import validate_recipe  # the names' registries import torch

        for item in args.overrides:
            _recipe_key(item)
        cfg = apply_overrides(cfg, args.overrides)
        keys = {resolve_key(RecipeConfig, item.partition("=")[0].strip()) for item in args.overrides}
        cfg = validate_recipe(sync_means_k1(cfg, "off_policy.k" in keys))  # pipeline=sync: k = 1, as in train
    print(recipe_yaml(args.name, cfg), end="")
    return 0
