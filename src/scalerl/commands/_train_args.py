"""Turning ``scalerl train`` / ``demo`` flags into a resolved :class:`TrainConfig`."""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import shutil
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from scalerl.config import (apply_overrides, leaf_fields, leaf_values, override_value, read_yaml_mapping,
                            resolve_key, to_dict)
from scalerl.errors import ConfigError, InputError
from scalerl.rl.presets import all_presets, get_preset, preset_departures, preset_switches
from scalerl.rl.recipe import RecipeConfig, why_unread
from scalerl.runlog import RUNLOG
from scalerl.train.config import (TrainConfig, absolute_paths, held_out_capped, load_config_file, resolve, sync_means_k1,
                                  with_recipe)
from scalerl.train.profiles import PROFILES, SUMMARY, choose_profile


def add_config_args(p: argparse.ArgumentParser, *, defaults: dict | None = None) -> None:
    """The flags that make a training config; ``defaults``: a command's own (dotted field -> value), named in
    the help of the flags that set them (the demo trains tiny-m on arithmetic-mix: its help said tiny)."""
    own = defaults or {}
    base = TrainConfig()  # the defaults a flag left out keeps (or what --config sets): named in its help

    def default(path: str) -> str:  # (a --config file's value is kept: the demo's own defaults too, review br)
        return f"default: {own[path] if path in own else _get(base, path)}, or --config's"

    p.add_argument("--config", metavar="FILE", help="a training config YAML (e.g. a run's config.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config field: a dotted path (recipe.loss.name=dapo) or a unique leaf "
                        "(pipeline=pipeline-rl-k, k=4, lr=1e-4); repeatable")
    p.add_argument("--recipe", metavar="NAME", help="recipe preset or leave-one-out variant (scalerl recipes lists them)")
    p.add_argument("--model", metavar="PATH|HUB_ID|tiny",
                   help=f"model to train (default: {own.get('model.name_or_path', 'tiny')}): tiny, tiny-s/tiny-m/tiny-l "
                        "(the arithmetic-mix ladder), a model directory or a hub id")
    p.add_argument("--task", metavar="NAME", help=f"task (default: {own.get('task.name', 'arithmetic')}): arithmetic, "
                   "arithmetic-mix (built in) or math (needs --data)")
    p.add_argument("--data", metavar="FILE", help="math task: JSONL / CSV / parquet file or HF dataset dir of {prompt, answer} rows")
    p.add_argument("--reward", metavar="MODULE:FUNCTION", help="your own reward function: fn(prompt, completion, answer) -> float or bool, "
                        "taking any of those parameters by name (README: Your own reward function)")
    p.add_argument("--steps", type=int, help=f"optimizer steps ({default('run.steps')})")
    p.add_argument("--eval-every", type=int, metavar="N", help=f"evaluate every N steps ({default('eval.every')})")
    p.add_argument("--seed", type=int, help=f"random seed ({default('run.seed')})")
    p.add_argument("--backend", choices=["local", "ray"], help="where generators and trainer run (default: local)")
    p.add_argument("--profile", metavar="NAME",
                   help="scale profile: auto (default: by model size and device), " + ", ".join(SUMMARY))
    p.add_argument("--threads", type=int, metavar="N",
                   help="the trainer's torch CPU threads (default: under local pipeline-rl-k, the cores the generators "
                        "leave, at least 1; else torch's choice; on the CPU, --nproc N ranks share them)")
    p.add_argument("--nproc", type=int, metavar="N",
                   help="trainer processes: shard the policy update over N GPUs (or CPU processes) with FSDP (default: 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


#: The flag that sets each config field (for notes naming what the user typed).
FLAG_NAMES = {
    "model.name_or_path": "--model", "task.name": "--task", "task.data": "--data", "task.reward": "--reward",
    "run.steps": "--steps", "eval.every": "--eval-every", "run.seed": "--seed", "backend.name": "--backend",
    "profile": "--profile", "run.threads": "--threads", "run.nproc": "--nproc", "run.output": "--output",
    "log.progress": "--no-progress",
}


def config_from_args(args, *, output: str | None = None, quiet: bool = False,
                     defaults: dict | None = None) -> TrainConfig:
    """The config ``args`` ask for. ``defaults``: dotted field -> value, a command's own defaults
    (``scalerl demo``'s model, task, steps), applied where the ``--config`` file sets nothing."""
    for flag, value in (("--recipe", args.recipe), ("--config", args.config)):
        if value is not None and not str(value).strip():  # (an unset shell variable: trained the defaults unsaid)
            raise ConfigError(f"{flag} is empty (an unset shell variable?): give a {flag.removeprefix('--')} "
                              "or leave the flag out")
    recipe, overrides = _recipe_asked(args, quiet)
    written: set[str] = set()
    if args.config:  # a file that says pipeline: sync and no k means k = 1, as --set does
        cfg, written = load_config_file(args.config)
        cfg = sync_means_k1(cfg, written)
        if not written and not quiet:  # (the wrong file given, or one not yet saved: said, not run as defaults unsaid)
            print(f"note: config file {args.config} sets nothing (it is empty or holds only comments): "
                  "every field keeps its default", file=sys.stderr)
    else:
        cfg = TrainConfig()
    for path, value in (defaults or {}).items():  # (flags, set below, still win over these)
        if path not in written:
            _set(cfg, path, value)
    if recipe:
        cfg = with_recipe(cfg, recipe)
        replaced = sorted(k for k in written if k.startswith("recipe.")) if args.config else []
        if replaced and not quiet:  # the preset replaces the whole recipe: say so, not silently
            print(f"note: --recipe {recipe} replaces the recipe of {args.config}, which set "
                  f"{_some(replaced)}; to keep a value, give it with --set", file=sys.stderr)
    flags = {
        "model.name_or_path": args.model,
        "task.name": args.task,
        "task.data": args.data,
        "task.reward": args.reward,
        "run.steps": args.steps,
        "eval.every": args.eval_every,
        "run.seed": args.seed,
        "backend.name": args.backend,
        "profile": args.profile,
        "run.threads": args.threads,
        "run.nproc": args.nproc,
        "run.output": output,
    }
    if args.no_progress:
        flags["log.progress"] = False
    for path, value in flags.items():
        if value is not None:
            _set(cfg, path, value)
    # profile auto: chosen here by model size and device, and said so for a user model.
    cfg.profile, note = choose_profile(apply_overrides(cfg, overrides) if overrides else cfg)
    if note and not quiet:
        print(f"note: {note}{_overridden(cfg.profile, overrides)}", file=sys.stderr)
    out = resolve(cfg, overrides)
    out = _settings_data_given(out, args, overrides, written, quiet)
    if not quiet:
        resolved = [(resolve_key(TrainConfig, item.partition("=")[0].strip()), item) for item in overrides]
        sets = dict(resolved)  # (the last item of each path: the one used)
        _note_given_twice(out, resolved)
        # (Not for a run directory's own config.yaml: re-running what was run, with the switches it was run
        # with, is no name edited by hand.)
        if "recipe_name" in written and not recipe and not (Path(args.config).parent / RUNLOG).is_file():
            _note_departures(args.config, out, written, sets)
        _note_replaced(cfg, out, args, recipe, written, sets)
        _note_set_replaces_flags(flags, sets, out)
        _note_unread(sets, out)
        if args.config and not recipe:  # (--recipe replaces the file's recipe whole: no gap left -- review dy)
            _note_recipe_gaps(args.config, out, written | set(sets))
    # Local paths stored absolute: the run directory works from any working directory.
    return absolute_paths(out)


def _settings_data_given(cfg: TrainConfig, args, overrides, written: set[str], quiet: bool) -> TrainConfig:
    """``cfg`` where a ``--set task.settings={data: B}`` (a math advice pasted) meets a config file's ``task.data``
    (A): the command line's B is read -- said -- as ``--data`` would have been; ``--data`` and ``--set task.data``
    still win over both (review FZ: A was trained on, B dropped in silence; GB: the same file named absolute is no
    other data)."""
    given = cfg.task.settings.get("data")
    keys = {resolve_key(TrainConfig, item.partition("=")[0].strip()) for item in overrides}
    if (args.data is not None or "task.data" in keys or "task.data" not in written or "task.settings" not in keys
            or given is None or cfg.task.data is None
            or os.path.realpath(os.path.expanduser(str(given))) == os.path.realpath(os.path.expanduser(str(cfg.task.data)))):
        return cfg
    if not quiet:
        print(f"note: task.settings' data ({given}, from --set) is read, not the config file's task.data "
              f"({cfg.task.data})", file=sys.stderr)
    return dataclasses.replace(cfg, task=dataclasses.replace(cfg.task, data=None))


def _note_recipe_gaps(config: str, cfg: TrainConfig, written: set[str]) -> None:
    """A config file whose recipe starts from no preset (a name of its own) and leaves recipe keys out: those take
    the defaults, ScaleRL's -- said, naming them (review dw: a DAPO copy under a name of its own, 17 keys short,
    trained with ScaleRL's fp32 head, PipelineRL-8 and batch without a word). ``written``: the keys the file and
    ``--set`` give."""
    if cfg.recipe_name in all_presets():
        return
    defaults, values = leaf_values(RecipeConfig()), leaf_values(cfg.recipe)
    # (one a rule set -- k = 1 under sync -- is not ScaleRL's default either: review dz)
    unset = [k for k in leaf_fields(RecipeConfig) if values[k] == defaults[k]
             and not any(w == f"recipe.{k}" or w.startswith(f"recipe.{k}.") for w in written)]
    switches = preset_switches()  # (what a preset decides first: the fp32 head, the pipeline, ...)
    unset.sort(key=lambda k: k not in switches)
    if unset:
        print(f"note: {config}'s recipe {cfg.recipe_name!r} is no preset and leaves out {len(unset)} recipe key(s): "
              f"they take their defaults (ScaleRL's): {_some(['recipe.' + k for k in unset])}", file=sys.stderr)


def _note_unread(sets: dict[str, str], out: TrainConfig) -> None:
    """A ``--set`` of a recipe setting the recipe does not read (:func:`~scalerl.rl.recipe.why_unread`): said, for
    the run trains as without it (review dw)."""
    for path, item in sets.items():
        if path.startswith("recipe.") and (why := why_unread(out.recipe, path.removeprefix("recipe."))):
            print(f"note: --set {item.strip()} changes nothing: {why}, so the recipe does not read {path}",
                  file=sys.stderr)


def _note_set_replaces_flags(flags: dict[str, Any], sets: dict[str, str], out: TrainConfig) -> None:
    """`--steps 5 --set run.steps=7`: --set wins, and says so (``flags``: each flag's field and value, None where
    not given; ``sets``: each field's last ``--set`` item)."""
    for path, value in flags.items():
        if value is not None and path in sets and _get(out, path) != value:
            print(f"note: --set {sets[path]} replaces {FLAG_NAMES[path]}"
                  f"{'' if isinstance(value, bool) else f' {value}'}", file=sys.stderr)


def _note_given_twice(cfg: TrainConfig, resolved: list[tuple[str, str]]) -> None:
    """Say which ``--set`` key was given more than once (``resolved``: each item with the field it sets): the last
    is used, as argparse uses a flag's last (``--set steps=5 ... --set run.steps=7`` ran 7 steps without a word). A
    mapping (``task.settings``) given twice is merged, as documented, and is not said."""
    items: dict[str, list[str]] = {}
    for path, item in resolved:
        items.setdefault(path, []).append(item.strip())
    for path, given in items.items():
        if len(given) > 1 and not isinstance(_get(cfg, path), Mapping):
            print(f"note: {path} given {len(given)} times ({', '.join(given)}): the last, {given[-1]}, is used",
                  file=sys.stderr)


def _recipe_asked(args, quiet: bool) -> tuple[str | None, list[str]]:
    """The preset the command asks for -- ``--recipe NAME``, or ``--set recipe_name=NAME``, which
    means the same (it relabelled whatever recipe the run had) -- and the other ``--set`` items."""
    named = [item for item in args.overrides if item.partition("=")[0].strip() == "recipe_name"]
    if not named:
        return args.recipe, list(args.overrides)
    # Its value read as every --set value is (`recipe_name='scalerl'` names scalerl).
    recipe = apply_overrides(TrainConfig(), named[-1:]).recipe_name
    get_preset(recipe)  # an unknown name: refused with the list of presets
    if len(named) > 1 and not quiet:  # (review bp: the note every other key given twice gets)
        print(f"note: recipe_name given {len(named)} times ({', '.join(i.strip() for i in named)}): the last, "
              f"{named[-1].strip()}, is used", file=sys.stderr)
    if args.recipe and args.recipe != recipe and not quiet:  # `--steps 5 --set run.steps=7`'s rule
        print(f"note: --set {named[-1]} replaces --recipe {args.recipe}", file=sys.stderr)
    return recipe, [item for item in args.overrides if item not in named]


def _get(cfg, path: str):
    """The value of dotted field ``path`` of a config object."""
    for part in path.split("."):
        cfg = getattr(cfg, part)
    return cfg


def _set(cfg, path: str, value) -> None:
    """Set dotted field ``path`` of a config object (``profile``, ``run.steps``)."""
    section, _, leaf = path.rpartition(".")
    setattr(_get(cfg, section) if section else cfg, leaf, value)


def _note_departures(config: str, out: TrainConfig, written: set[str], sets: dict[str, str]) -> None:
    """A note naming the recipe switches (loss.name, aggregation, ...) the ``--config`` file sets
    otherwise than the preset its ``recipe_name`` names: a dumped scalerl config with only its name
    edited to deepseek-grpo trains ScaleRL's switches under deepseek-grpo's name."""
    keys = [f"recipe.{k}" for k in preset_departures(out.recipe, out.recipe_name)]
    keys = [k for k in keys if k in written and k not in sets]
    if keys:
        # A recipe file (its top-level keys the recipe's own) is named by its file name, not a recipe_name line.
        named = ("is named after" if "recipe_name" not in read_yaml_mapping(config) else "says recipe_name:")
        print(f"note: {config} {named} {out.recipe_name}, but its recipe: keys differ from that preset in "
              f"{_some(keys)}: the file's keys win (the run is still recorded as {out.recipe_name}); to train "
              f"{out.recipe_name} itself, delete those keys from the file or pass --recipe {out.recipe_name}",
              file=sys.stderr)


def _note_replaced(cfg: TrainConfig, out: TrainConfig, args, recipe: str | None, written: set[str],
                   sets: dict[str, str]) -> None:
    """A note naming the values the ``--config`` file sets that the scale profile replaced (it is
    applied over the file: a hand-written file's lr and batch were trained with the profile's,
    silently). A run's own config.yaml says ``profile: none``: nothing to say."""
    keys = [item.partition("=")[0] for item in PROFILES.get(cfg.profile, [])]
    replaced = [k for k in keys if k in written and k not in sets and _get(out, k) != _get(cfg, k)
                and not (recipe and k.startswith("recipe."))]  # (--recipe's own note covers those)
    if replaced:
        print(f"note: scale profile {cfg.profile} replaces {_some(replaced)} of {args.config}; to keep the file's "
              "values, write 'profile: none' in it (or pass --profile none), or give them with --set",
              file=sys.stderr)


def _some(keys: list[str], n: int = 3) -> str:
    """The first ``n`` of ``keys`` and how many more."""
    more = f" and {len(keys) - n} more" if len(keys) > n else ""
    return ", ".join(keys[:n]) + more


def _overridden(profile: str, overrides: list[str] | None) -> str:
    """The profile note's tail naming the profile's settings that ``--set`` replaces: the note's
    summary gives the profile's values (8 prompts x 4 ...), which those are not."""
    try:
        keys = {resolve_key(TrainConfig, item.partition("=")[0].strip()) for item in overrides or []}
    except Exception:  # noqa: BLE001 -- a bad key is reported by resolve(), with its did-you-mean
        return ""
    replaced = [item.partition("=")[0] for item in PROFILES.get(profile, []) if item.partition("=")[0] in keys]
    return f"; your --set replaces {', '.join(replaced)}" if replaced else ""


#: What a scalerl run directory holds (any one of them marks it as one).
RUN_MARKERS = ("config.yaml", "runlog.jsonl", "checkpoints")


def overwrite_run_dir(out: Path) -> None:
    """Delete ``out`` for ``--overwrite`` -- only when it is a scalerl run directory (or empty):
    a mistyped --output must not cost the user an unrelated directory."""
    if not out.exists():
        return
    if out.is_symlink():  # (shutil.rmtree refuses one with a traceback; what to delete is the user's call)
        raise InputError(f"--overwrite: {out} is a symbolic link (to {out.resolve()}); give the directory itself as "
                         "--output, or empty it yourself")
    if not out.is_dir():
        raise InputError(f"--overwrite: {out} is a file, not a run directory; refusing to delete it")
    here = Path.cwd().resolve()
    if out.resolve() in (here, *here.parents):
        raise InputError(f"--overwrite: {out} holds the working directory; refusing to delete it")
    if any(out.iterdir()) and not any((out / m).exists() for m in RUN_MARKERS):
        raise InputError(f"--overwrite: {out} is not a scalerl run directory (no {', '.join(RUN_MARKERS)}); "
                         "refusing to delete it")
    from scalerl.train.run_directory import RunDirectoryLock, foreign_files

    RunDirectoryLock(out).release()  # a run still training in it: refused, not deleted under it
    shown = foreign_files(out)
    if shown:  # put there since the run (a notebook, the user's plot): deleted with it, unseen
        raise InputError(f"--overwrite: {out} holds files that a run does not write ({shown}); --overwrite deletes "
                         "the directory whole: move them out first, or choose another --output")
    shutil.rmtree(out)


#: Flags and the config field each sets (``None``: a group of fields: the whole config is compared).
FLAG_FIELDS = {
    "model": "model.name_or_path", "task": "task.name", "data": "task.data", "reward": "task.reward",
    "eval_every": "eval.every", "seed": "run.seed", "backend": "backend.name",
    "config": None, "recipe": None, "profile": None,
}
#: Those a resume takes from its command, as :func:`scalerl.train.run_directory.resumed_config`'s arguments.
RESUMED_AS = {"run.steps": "steps", "run.threads": "threads", "run.nproc": "nproc", "log.progress": "progress"}


def resume_changes(args, saved: TrainConfig) -> dict[str, Any]:
    """The fields a resume may change (:data:`RESUMED_AS`) that the command sets -- by a flag, a ``--set`` or its
    ``--config`` file --, with the values the same command gives a new run (a ``--set`` wins over its flag): as
    ``resumed_config``'s keyword arguments; the saved values stay for the rest. (A ``--set run.steps=9`` or a
    config file's longer ``run.steps`` was dropped unsaid and the saved steps ran -- reviews cx, cz.)"""
    sets = {resolve_key(TrainConfig, item.partition("=")[0].strip()): item for item in args.overrides}
    flags = {path: getattr(args, flag, None) for path, flag in RESUMED_AS.items()}  # (--steps ...)
    given = set(sets) | {path for path, value in flags.items() if value is not None}
    if getattr(args, "no_progress", False):
        given.add("log.progress")
    if args.config:
        given |= load_config_file(args.config)[1]
    if not given & set(RESUMED_AS):
        return {}
    asked = config_from_args(args, output=str(saved.run.output), quiet=True)
    _note_set_replaces_flags(flags, sets, asked)  # (as a new run says it: review dg saw 7 steps run unsaid)
    return {name: _get(asked, path) for path, name in RESUMED_AS.items() if path in given}


@contextlib.contextmanager
def devices_kept_on_resume(output: Path) -> Iterator[None]:
    """A saved device this machine lacks, said as a resume can act on it (a resume keeps the saved run's
    devices: the new run's advice, ``--set run.device=cpu``, was refused as a flag that differs -- review db)."""
    from scalerl.models.devices import DeviceUnavailable

    try:
        yield
    except DeviceUnavailable as exc:
        raise ConfigError(exc.on_resume(output)) from None


def saved_config_to_resume(output: Path, args, what: str = "run") -> TrainConfig:
    """The saved config of the run in ``output``, refusing (by name) any flag of ``args`` whose value
    differs from it: a resume continues the saved run; only --steps (to extend it), --threads and
    --no-progress may change."""
    from scalerl.config import load_yaml
    from scalerl.train.run_directory import CONFIG, check_output

    check_output(output, True)
    for item in args.overrides:  # (review db: `--resume --output A --set run.output=B` resumed A, B ignored unsaid)
        key, _, value = item.partition("=")
        if resolve_key(TrainConfig, key.strip()) != "run.output":
            continue
        named = override_value(value, text=True)  # (YAML, as a new run reads it: a quoted path is the path -- review df)
        if not isinstance(named, str) or not named or Path(named).resolve() != output.resolve():
            raise InputError(f"--resume continues the {what} in --output {output}; --set {item.strip()} names another "
                             f"directory: drop it, or give --output DIR to resume the {what} in DIR")
    saved = load_yaml(TrainConfig, output / CONFIG)
    saved.run.output = str(output)
    conflicts = resume_conflicts(saved, args)
    if getattr(args, "profile", None) is not None and not conflicts:
        print(f"note: --profile {args.profile} on --resume changes nothing: the saved run's settings are kept (its "
              f"profile was resolved into {output / CONFIG} as it started)", file=sys.stderr)
    if conflicts:
        raise InputError(f"--resume: the flags differ from the saved {what} ({output / CONFIG}): {'; '.join(conflicts)}. "
                         f"Drop them to continue it (--steps may extend it), or start a new {what} in another --output")
    return saved


def resume_conflicts(saved: TrainConfig, args) -> list[str]:
    """The config fields the command's flags set to a value other than the saved run's, as
    ``key: saved X, given Y`` -- empty when the flags repeat (part of) the original command."""
    from scalerl.train.run_directory import RESUME_FREE, config_leaves

    given = [flag for flag in FLAG_FIELDS if getattr(args, flag, None) is not None]
    if not given and not args.overrides:
        return []
    # What the command says: each flag's field, each --set's, --recipe's name, --profile's, and the fields its
    # --config file writes. The rest is not given, whatever a new run from these flags would have there (review eb:
    # `--resume --recipe scalerl` on a scalerl run with --set batch.prompts_per_step=4 was refused as "saved 4, given
    # 16" -- the preset's, which the command never gave).
    keys = {FLAG_FIELDS[f] for f in given if FLAG_FIELDS[f] is not None}
    keys |= {resolve_key(TrainConfig, item.partition("=")[0].strip()) for item in args.overrides}
    # --recipe / --profile of the saved run's own: its name; of another: every field the preset or profile sets
    recipe = getattr(args, "recipe", None)
    if recipe is not None:
        keys |= {"recipe_name"} if recipe == saved.recipe_name else {"recipe_name", "recipe"}
    # --profile: not compared -- a run's profile is resolved into its config.yaml as it starts (saved as "none"),
    # so which one it used cannot be told; the resume keeps the saved settings (said by saved_config_to_resume).
    # Comparing every field refused the run's own profile for the --set values it had (review ee).
    if getattr(args, "config", None):
        keys |= load_config_file(args.config)[1]
    if any(FLAG_FIELDS[f] is None for f in given):  # the single-field flags not repeated keep the saved values
        args = argparse.Namespace(**vars(args))
        for flag, path in FLAG_FIELDS.items():
            if path is not None and getattr(args, flag, None) is None:
                setattr(args, flag, _get(saved, path))
    asked = config_from_args(args, output=str(saved.run.output), quiet=True)
    # The saved side's paths made absolute as the flags' are: a run saved before a form was stored absolute
    # (``--reward pkg.mod:fn`` as typed, before such modules were stored as their file) took its own flag
    # again as a conflict ("saved 'pkg.mod:fn', given '/abs/pkg/mod.py:fn'").
    # And capped as a new run's held-out val is (``held_out_capped``): a run saved before the cap has none, and
    # its own command or config.yaml given again was a conflict of a setting never given (review dk) -- unless the
    # command gives max_val itself, which the saved run's held-out rows cannot follow (review dn: dropped unsaid).
    compared = absolute_paths(saved) if _gives_max_val(args) else held_out_capped(absolute_paths(saved))
    old, new = config_leaves(to_dict(compared)), config_leaves(to_dict(asked))

    def said(k: str) -> bool:  # (a file's key may be a section, or inside task.settings)
        return any(k == w or k.startswith(w + ".") or w.startswith(k + ".") for w in keys)

    return [f"{k}: saved {old.get(k)!r}, given {new.get(k)!r}" for k in sorted(set(old) | set(new))
            if said(k) and k not in RESUME_FREE and old.get(k) != new.get(k)]


def _gives_max_val(args) -> bool:
    """Whether the command sets ``task.settings`` ``max_val`` itself: by a ``--set`` or in its ``--config`` file."""
    for item in args.overrides:
        key, _, value = item.partition("=")
        if resolve_key(TrainConfig, key.strip()) == "task.settings":
            given = override_value(value)
            if isinstance(given, Mapping) and "max_val" in given:
                return True
    return bool(args.config) and "max_val" in load_config_file(args.config)[0].task.settings
