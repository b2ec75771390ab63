"""Recipe presets (as the ScaleRL paper re-implemented them) and ScaleRL's leave-one-out variants.

    get_recipe("scalerl")                 # a fresh, validated RecipeConfig
    get_recipe("scalerl-loo-loss-dapo")   # ScaleRL with only the loss reverted to DAPO
    recipe_names()                        # presets first, then leave-one-out variants

Every preset is a function returning a new config, so callers may mutate what they get.
Values the paper (docs/paper.md, "The recipe") does not give are marked "our choice" in
``docs/recipe.md`` (and in a field's own comment where it is one); everything else is the paper's.
"""

from __future__ import annotations

import dataclasses
import difflib
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from scalerl.config import dump_yaml, leaf_values, markdown_reference
from scalerl.errors import ConfigError
from scalerl.rl.recipe import RecipeConfig


@dataclass(frozen=True)
class Preset:
    """A named recipe: how to build it, and one line saying what it is."""

    name: str
    summary: str
    build: Callable[[], RecipeConfig]
    component: str | None = None
    """For a leave-one-out variant: the top-level config key it changes."""


# ----------------------------------------------------------------------------- presets


def scalerl() -> RecipeConfig:
    """The paper's recipe (docs/paper.md): CISPO, prompt aggregation, batch normalisation, interruptions, zero-variance
    filtering, no-positive-resampling, FP32 head, PipelineRL-8, 48 x 16, AdamW 5e-7."""
    return RecipeConfig()


def deepseek_grpo() -> RecipeConfig:
    cfg = RecipeConfig()
    cfg.loss.name = "ppo"  # GRPO's surrogate, eps 0.2 / 0.2
    cfg.aggregation = "sample"
    cfg.advantages.normalization = "prompt"
    cfg.filtering.zero_variance = False
    cfg.sampler.no_positive_resampling = False
    cfg.length.mode = "truncate"
    cfg.fp32_lm_head = False
    cfg.off_policy.pipeline = "ppo-off-policy-k"
    return cfg


def qwen_dapo() -> RecipeConfig:
    cfg = RecipeConfig()
    cfg.loss.name = "dapo"
    cfg.aggregation = "prompt"
    cfg.advantages.normalization = "prompt"  # DAPO keeps GRPO's group std
    cfg.filtering.zero_variance = True
    cfg.filtering.dynamic_sampling = True
    cfg.filtering.basis = "correctness"  # verl's DAPO recipe: filter_groups.metric=acc, not the penalised score
    cfg.sampler.no_positive_resampling = False
    cfg.length.mode = "overlong_penalty"
    cfg.fp32_lm_head = False
    cfg.off_policy.pipeline = "ppo-off-policy-k"
    return cfg


def magistral() -> RecipeConfig:
    # Magistral (Mistral, 2025): clip-higher, loss normalised by the group's total length
    # (prompt-level), minibatch-level advantage normalisation, non-diverse groups removed,
    # a soft length penalty, and asynchronous generation with in-flight weight updates.
    cfg = RecipeConfig()
    cfg.loss.name = "dapo"
    cfg.aggregation = "prompt"
    cfg.advantages.normalization = "batch"
    cfg.filtering.zero_variance = True
    cfg.filtering.basis = "correctness"  # groups all correct or all wrong are dropped, whatever their length penalties
    cfg.sampler.no_positive_resampling = False
    cfg.length.mode = "overlong_penalty"
    cfg.fp32_lm_head = False
    cfg.off_policy.pipeline = "pipeline-rl-k"
    return cfg


def minimax_m1() -> RecipeConfig:
    cfg = RecipeConfig()
    cfg.loss.name = "cispo"
    cfg.aggregation = "prompt"
    cfg.advantages.normalization = "prompt"
    cfg.filtering.zero_variance = False
    cfg.sampler.no_positive_resampling = False
    cfg.length.mode = "truncate"
    cfg.fp32_lm_head = True
    cfg.off_policy.pipeline = "ppo-off-policy-k"
    return cfg


PRESETS: dict[str, Preset] = {
    p.name: p
    for p in (
        Preset("scalerl", "ScaleRL: CISPO, prompt agg., batch norm., interruptions, zero-var. filter, "
               "no-positive-resampling, FP32 head, PipelineRL-8", scalerl),
        Preset("deepseek-grpo", "DeepSeek GRPO: PPO-clip 0.2/0.2, sample agg., group norm., truncation, "
               "PPO-off-policy-8", deepseek_grpo),
        Preset("qwen-dapo", "Qwen DAPO: clip-higher 0.2/0.28, prompt agg., group norm., dynamic sampling, "
               "overlong penalty, PPO-off-policy-8", qwen_dapo),
        Preset("magistral", "Magistral: clip-higher, prompt agg., batch norm., zero-var. filter, "
               "overlong penalty, PipelineRL-8", magistral),
        Preset("minimax-m1", "MiniMax-M1: CISPO, FP32 head, prompt agg., group norm., truncation, "
               "PPO-off-policy-8", minimax_m1),
    )
}


# ----------------------------------------------------------------------------- leave-one-out


def _revert(component: str, label: str, summary: str, change: Callable[[RecipeConfig], None]) -> Preset:
    def build() -> RecipeConfig:
        cfg = scalerl()
        change(cfg)
        return cfg

    return Preset(f"scalerl-loo-{label}", f"ScaleRL with {summary}", build, component)


def _set(path: str, value: object) -> Callable[[RecipeConfig], None]:
    *parents, leaf = path.split(".")

    def change(cfg: RecipeConfig) -> None:
        node: object = cfg
        for part in parents:
            node = getattr(node, part)
        setattr(node, leaf, value)

    return change


def _ppo_off_policy_8(cfg: RecipeConfig) -> None:
    cfg.off_policy.pipeline = "ppo-off-policy-k"
    cfg.off_policy.k = 8


#: One component of ScaleRL reverted to the alternative the paper ablates (docs/paper.md, "The recipe").
LEAVE_ONE_OUT: dict[str, Preset] = {
    p.name: p
    for p in (
        _revert("loss", "loss-dapo", "the DAPO loss (clip-higher 0.2/0.28) instead of CISPO",
                _set("loss.name", "dapo")),
        _revert("aggregation", "aggregation-sample", "sample-level instead of prompt-level loss aggregation",
                _set("aggregation", "sample")),
        _revert("advantages", "normalization-prompt", "prompt-level (group std) instead of batch-level "
                "advantage normalisation", _set("advantages.normalization", "prompt")),
        _revert("length", "length-penalty", "the DAPO overlong length penalty instead of forced interruptions",
                _set("length.mode", "overlong_penalty")),
        _revert("filtering", "zero-variance-off", "zero-variance groups kept in the loss",
                _set("filtering.zero_variance", False)),
        _revert("fp32_lm_head", "fp32-head-off", "the LM head in the model dtype instead of fp32",
                _set("fp32_lm_head", False)),
        _revert("off_policy", "pipeline-ppo-off-policy-8", "PPO-off-policy-8 instead of PipelineRL-8",
                _ppo_off_policy_8),
        _revert("sampler", "no-positive-resampling-off", "plain epochs (easy prompts keep coming back)",
                _set("sampler.no_positive_resampling", False)),
    )
}


def leave_one_out() -> dict[str, Preset]:
    """Every leave-one-out variant of ``scalerl``, by name (``scalerl-loo-<component>-<choice>``)."""
    return dict(LEAVE_ONE_OUT)


# ----------------------------------------------------------------------------- lookup


def all_presets() -> dict[str, Preset]:
    """Presets first, then leave-one-out variants."""
    return {**PRESETS, **LEAVE_ONE_OUT}


def recipe_names() -> list[str]:
    return list(all_presets())


def get_preset(name: str) -> Preset:
    presets = all_presets()
    if name not in presets:
        raise ConfigError(f"unknown recipe {name!r}{_did_you_mean(name, list(presets))}; "
                          f"known recipes: {', '.join(presets)}")
    return presets[name]


def _did_you_mean(name: str, known: list[str]) -> str:
    """`` (did you mean 'X'?)`` for a misspelt name, or for a study's variant label (``loo-loss-dapo``)
    whose recipe is named ``scalerl-loo-loss-dapo``; empty when nothing is close."""
    if f"scalerl-{name}" in known:
        return f" (did you mean 'scalerl-{name}'?)"
    close = difflib.get_close_matches(name, known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]!r}?)" if close else ""


def get_recipe(name: str) -> RecipeConfig:
    """A fresh, validated config of the named preset or leave-one-out variant."""
    return get_preset(name).build().validate()


def recipe_yaml(name: str, cfg: RecipeConfig | None = None) -> str:
    """The named recipe (or ``cfg`` built from it) as commented YAML a user can copy and edit."""
    preset = get_preset(name)
    cfg = cfg if cfg is not None else get_recipe(name)
    mine, base = leaf_values(cfg), leaf_values(get_recipe(name))
    changed = [f"{k}={mine[k]}" for k in mine if mine[k] != base.get(k)]
    # The preset's summary describes the preset: above a recipe the overrides changed ("PPO-clip 0.2/0.2,
    # sample agg." over CISPO with prompt aggregation) it says which keys no longer hold it.
    title = (f"recipe: {preset.name} with {', '.join(changed)}\n(the preset: {preset.summary})" if changed
             else f"recipe: {preset.name}\n{preset.summary}")
    header = (
        f"{title}\n"
        "Copy and edit, then train with it: scalerl train --config FILE (the file's name names the recipe);\n"
        "any key can also be overridden on the command line as key=value."
    )
    return dump_yaml(cfg, header=header)


def preset_switches() -> list[str]:
    """The recipe's dotted keys on which the presets (leave-one-out variants included) differ --
    ``loss.name``, ``aggregation``, ``off_policy.pipeline``, ...: what choosing a preset decides. Batch
    sizes, budgets and the learning rate, which the presets share (and scale profiles set), are not."""
    built = [leaf_values(p.build()) for p in all_presets().values()]
    return [k for k in built[0] if any(b.get(k) != built[0][k] for b in built[1:])]


def preset_departures(cfg: RecipeConfig, name: str) -> list[str]:
    """The :func:`preset_switches` on which ``cfg`` differs from preset ``name`` (empty for a
    name that is not a preset): a recipe that says it is ``name`` but is not."""
    if name not in all_presets():
        return []
    mine, preset = leaf_values(cfg), leaf_values(get_recipe(name))
    return [k for k in preset_switches() if mine.get(k) != preset.get(k)]


def changed_components(cfg: RecipeConfig, reference: RecipeConfig) -> list[str]:
    """Top-level config keys (components) where ``cfg`` differs from ``reference``."""
    return [
        f.name
        for f in dataclasses.fields(RecipeConfig)
        if getattr(cfg, f.name) != getattr(reference, f.name)
    ]


def config_files(directory: str | Path) -> dict[Path, str]:
    """The YAML file of every recipe, by path: presets in ``directory``, leave-one-out variants
    in ``directory/leave-one-out`` (what ``configs/`` in the repository holds)."""
    directory = Path(directory)
    files = {directory / f"{name}.yaml": recipe_yaml(name) for name in PRESETS}
    files.update({directory / "leave-one-out" / f"{name}.yaml": recipe_yaml(name) for name in LEAVE_ONE_OUT})
    return files


def presets_table() -> str:
    """A Markdown table: one row per recipe, one column per component."""
    rows = [
        "| recipe | loss | aggregation | adv. norm. | length | zero-var. filter | no-pos. resampling "
        "| FP32 head | pipeline |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, preset in all_presets().items():
        c = preset.build()
        loss = c.loss.name
        if loss in ("ppo", "dapo", "gspo"):
            clip = getattr(c.loss, loss)
            loss += f" {clip.eps_low:g}/{clip.eps_high:g}"
        elif loss == "cispo":
            loss += f" eps_max {c.loss.cispo.eps_max:g}"
        zero_var = "on" if c.filtering.zero_variance else "off"
        if c.filtering.zero_variance and c.filtering.basis != "correctness":
            zero_var += f" ({c.filtering.basis} rewards)"
        if c.filtering.dynamic_sampling:
            zero_var += " + dynamic sampling"
        pipeline = c.off_policy.pipeline.replace("-k", f"-{c.off_policy.k}") if c.off_policy.k > 1 else "sync"
        rows.append(
            f"| `{name}` | {loss} | {c.aggregation} | {c.advantages.normalization} | {c.length.mode} | {zero_var} "
            f"| {'on' if c.sampler.no_positive_resampling else 'off'} | {'on' if c.fp32_lm_head else 'off'} "
            f"| {pipeline} |"
        )
    return "\n".join(rows) + "\n"


def reference_markdown() -> str:
    """The generated part of docs/recipe.md: the presets table and every field of the config."""
    return (
        "### Presets and leave-one-out variants\n\n"
        + presets_table()
        + "\n### Every field (values of the `scalerl` preset)\n\n"
        + markdown_reference(RecipeConfig, get_recipe("scalerl"))
    )
