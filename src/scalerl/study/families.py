"""Families of runs a study compares, by name: ``FAMILIES[name].variants(spec, base_cfg)``.

A family turns the study spec and the base run's resolved :class:`TrainConfig` into the list
of :class:`Variant` s to run, the baseline first. Each variant says which preset it starts
from and which ``key=value`` overrides it adds, so its run is an ordinary ``scalerl train``
run that could be reproduced by hand.

``loo``          the base and each leave-one-out variant (one component reverted; docs/paper.md, "The recipe")
``recipes``      the five presets (scalerl, deepseek-grpo, qwen-dapo, magistral, minimax-m1)
``batch-size``   prompts per step              (default: half, same, double the base's)
``generations``  generations per prompt        (default: half, same, double)
``gen-length``   generation length in tokens   (default: 2/3, same, 4/3; the thinking budgets
                 and the overlong-penalty lengths scale with it, the answer budget does not)
``model-size``   tiny model sizes              (model ``tiny``: the architectures tiny-s, tiny,
                 tiny-l, each its own warm start on 2-digit addition, cached like the standard
                 one; model ``tiny-s/m/l``: the arithmetic-mix ladder of models/tiny.py)

Add a family by adding a :class:`Family` to :data:`FAMILIES`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Callable

from scalerl.config import apply_overrides, leaf_values
from scalerl.errors import ConfigError


@dataclass(frozen=True)
class Variant:
    """One configuration of a study (all its seeds share it)."""

    label: str
    """Short, file-system-safe name: the run directory and the label in every table."""
    summary: str
    """What it is, in words."""
    recipe: str
    """Preset it starts from (``scalerl recipes``)."""
    recipe_name: str
    """What the run log records as the recipe (the preset, or base+change for derived recipes)."""
    overrides: tuple[str, ...] = ()
    """TrainConfig overrides (full dotted paths) applied after the study's own overrides."""
    components: tuple[str, ...] = ()
    """What it changes relative to the base: recipe components or a sweep's knob (empty: the base)."""
    arch: str | None = None
    """model-size: the tiny architecture (a key of :data:`TINY_SIZES`)."""
    value: Any = None
    """Sweep families: the knob's value."""
    is_base: bool = False


@dataclass(frozen=True)
class Family:
    name: str
    summary: str
    build: Callable[[Any, Any], list[Variant]]
    """(spec, resolved base TrainConfig) -> variants, the base first."""
    sweep: bool = False


# ----------------------------------------------------------------------------- helpers


def _override(path: str, value: Any) -> str:
    # Strings stay raw: apply_overrides keeps a string field's text as written.
    if isinstance(value, tuple):
        value = list(value)
    text = value if isinstance(value, str) else json.dumps(value)
    return f"{path}={text}"


def recipe_overrides(new, old, prefix: str = "recipe.") -> list[str]:
    """``key=value`` overrides that turn recipe ``old`` into ``new``, leaf by leaf."""
    a, b = leaf_values(new), leaf_values(old)
    return [_override(prefix + k, v) for k, v in a.items() if b[k] != v]


def _base_variant(spec, label: str | None = None, summary: str | None = None, **kw) -> Variant:
    from scalerl.rl.presets import get_preset

    return Variant(label or spec.base, summary or get_preset(spec.base).summary, spec.base, spec.base, is_base=True, **kw)


# ----------------------------------------------------------------------------- loo / recipes


def _loo(spec, base_cfg) -> list[Variant]:
    from scalerl.rl.presets import LEAVE_ONE_OUT, get_recipe

    out = [_base_variant(spec)]
    scalerl = get_recipe("scalerl")
    for name, preset in LEAVE_ONE_OUT.items():
        label = name.removeprefix("scalerl-")
        if spec.base == "scalerl":
            out.append(Variant(label, preset.summary, name, name, components=(preset.component,)))
            continue
        # Another base: make the same one-component change to it (skipped when it already has it).
        base_recipe = get_recipe(spec.base)
        changed = apply_overrides(base_recipe, recipe_overrides(get_recipe(name), scalerl, prefix=""))
        change = recipe_overrides(changed, base_recipe)
        if change:
            summary = preset.summary.replace("ScaleRL", spec.base, 1)
            out.append(Variant(label, summary, spec.base, f"{spec.base}+{label}", tuple(change),
                               components=(preset.component,)))
    return out


def _recipes(spec, base_cfg) -> list[Variant]:
    from scalerl.rl.presets import PRESETS, changed_components, get_recipe

    if spec.base not in PRESETS:
        raise ConfigError(f"base: the recipes family compares the presets {', '.join(PRESETS)}; "
                          f"{spec.base!r} is not one of them")
    base = get_recipe(spec.base)
    out = [_base_variant(spec)]
    for name, preset in PRESETS.items():
        if name != spec.base:
            comps = tuple(changed_components(get_recipe(name), base))
            out.append(Variant(name, preset.summary, name, name, components=comps))
    return out


# ----------------------------------------------------------------------------- sweeps


def _int_values(spec, base: int, default: list[int], what: str, minimum: int) -> tuple[list[int], int]:
    values = list(spec.values) or default
    base_value = spec.base_value if spec.base_value is not None else base
    try:
        values = [int(v) for v in values]
        base_value = int(base_value)
    except (TypeError, ValueError):
        raise ConfigError(f"values: {what} must be integers, got {list(spec.values)} (base_value {spec.base_value})") from None
    if base_value not in values:
        values.append(base_value)
    bad = [v for v in values if v < minimum]
    if bad:
        raise ConfigError(f"values: {what} must be >= {minimum}, got {bad[0]}")
    return sorted(set(values)), base_value


def _knob_sweep(path: str, label: str, what: str, component: str, minimum: int):
    def build(spec, base_cfg) -> list[Variant]:
        from scalerl.config import resolve_key
        from scalerl.train.config import TrainConfig

        node: Any = base_cfg
        for part in resolve_key(TrainConfig, path).split("."):
            node = getattr(node, part)
        values, base_value = _int_values(spec, node, [max(minimum, node // 2), node, node * 2], what, minimum)
        out = []
        for v in values:
            # Named the preset only where it is the preset (the recipe's own value), not where it is the study's
            # baseline: with --base-value 12, the 12-prompt run was named "scalerl" and the preset's 16 not (review cc).
            out.append(Variant(f"{label}-{v}", f"{spec.base} with {v} {what}", spec.base,
                               spec.base if v == node else f"{spec.base}+{label}-{v}",
                               overrides=(f"{path}={v}",), components=(component,) if v != base_value else (),
                               value=v, is_base=v == base_value))
        return _base_first(out)

    return build


def length_overrides(length, new_max: int, phrase: int = 0) -> list[str]:
    """Scale every length budget of ``length`` (a LengthConfig) to a generation length of ``new_max``.

    The thinking budget and the overlong-penalty lengths scale in proportion; the answer budget
    stays (an answer does not get longer because the model may think longer), and so does the
    forced interruption phrase, ``phrase`` tokens with the run's tokenizer (interrupt mode: the
    longest interrupted sequence, thinking + phrase + answer, must fit in ``new_max``; capped at
    the answer alone, the 36-token run of the arithmetic-mix workload's 48 was one token over and
    every run of it was refused at its start).
    """
    room = length.answer_budget + phrase
    if new_max <= room:
        what = f"the answer budget {length.answer_budget}" + (f" + the interruption phrase's {phrase} tokens" if phrase else "")
        raise ConfigError(f"values: a generation length of {new_max} tokens leaves no room for thinking "
                          f"({what} = {room}); use at least {room + 1}")
    s = new_max / length.max_new_tokens
    lo, hi = (max(1, round(t * s)) for t in length.think_budget)
    hi = min(hi, new_max - room)
    lo = min(lo, hi)
    overlong = min(new_max, max(2, round(length.overlong_max_len * s)))
    cache = min(overlong, max(1, round(length.overlong_cache * s)))
    return [f"recipe.length.max_new_tokens={new_max}", f"recipe.length.think_budget=[{lo}, {hi}]",
            f"recipe.length.overlong_max_len={overlong}", f"recipe.length.overlong_cache={cache}"]


def _gen_length(spec, base_cfg) -> list[Variant]:
    length = base_cfg.recipe.length
    m = length.max_new_tokens
    values, base_value = _int_values(spec, m, [round(m * 2 / 3), m, round(m * 4 / 3)], "generation lengths (tokens)", 2)
    phrase = interruption_tokens(base_cfg) or 0  # (None, not readable here: each run checks its budget as it starts)
    out = []
    for v in values:
        out.append(Variant(f"length-{v}", f"{spec.base} with a {v}-token generation length", spec.base,
                           spec.base if v == m else f"{spec.base}+length-{v}",
                           overrides=tuple(length_overrides(length, v, phrase)) if v != m else (),
                           components=("generation length",) if v != base_value else (), value=v,
                           is_base=v == base_value))
    return _base_first(out)


def interruption_tokens(cfg) -> int | None:
    """The tokens a run of ``cfg`` (a resolved TrainConfig) forces when it interrupts thinking: its interruption
    phrase with its model's tokenizer; 0 outside interrupt mode; None where the model's tokenizer cannot be read here
    or cannot encode the phrase (a path of another machine, a vocabulary without its unk token: the trainer checks
    the budget, or refuses the tokenizer, as the run starts)."""
    from scalerl.models.loading import model_tokenizer
    from scalerl.rl.length import phrase_tokens

    if cfg.recipe.length.mode != "interrupt":
        return 0
    tokenizer = model_tokenizer(cfg.model.name_or_path)
    try:
        return phrase_tokens(cfg.recipe.length, tokenizer) if tokenizer is not None else None
    except Exception:  # noqa: BLE001 -- the tokenizers library's bare Exception ("WordLevel error: Missing [UNK]")
        return None


def _tiny_sizes() -> dict[str, Any]:
    from scalerl.models.tiny import TinyArchitecture

    return {
        "tiny-s": TinyArchitecture(hidden_size=64, intermediate_size=256, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=4),
        "tiny": TinyArchitecture(),
        "tiny-l": TinyArchitecture(hidden_size=192, intermediate_size=768, num_hidden_layers=4,
                                   num_attention_heads=6, num_key_value_heads=6),
    }


#: Tiny model sizes of the model-size family: name -> TinyArchitecture (built on first use).
TINY_SIZES = _tiny_sizes()


def model_sizes(model: str) -> dict[str, Any]:
    """The sizes a model-size study of ``model`` sweeps: name -> TinyArchitecture. ``tiny``: the
    architectures of :data:`TINY_SIZES` (each warm-started on 2-digit addition like ``tiny``); a
    name of the arithmetic-mix ladder (``tiny-s``, ``tiny-m``, ``tiny-l``): the ladder's models
    (models/tiny.py LADDER, each warm-started on arithmetic-mix); anything else: none."""
    from scalerl.models.tiny import LADDER, TINY_MODELS

    if model == "tiny":
        return dict(TINY_SIZES)
    if model in LADDER:
        return {name: TINY_MODELS[name].architecture for name in LADDER}
    return {}


def model_size_order(model: str, name: str) -> int:
    """A number that orders the sizes of :func:`model_sizes` (hidden width squared x layers)."""
    arch = model_sizes(model)[name]
    return arch.hidden_size ** 2 * arch.num_hidden_layers


def _model_size(spec, base_cfg) -> list[Variant]:
    sizes = model_sizes(spec.model)
    if not sizes:
        raise ConfigError(f"model-size sweeps the tiny models: model tiny (architectures {', '.join(TINY_SIZES)}) or "
                          f"a size of the arithmetic-mix ladder (tiny-s, tiny-m, tiny-l); model is {spec.model!r} -- "
                          "compare your own models as separate studies")
    ladder = spec.model != "tiny"
    # A size given twice runs once, as a knob value given twice does (it was an AssertionError's traceback).
    values = list(dict.fromkeys(str(v) for v in spec.values)) or list(sizes)
    base_value = str(spec.base_value) if spec.base_value is not None else spec.model
    if base_value not in values:
        values.insert(0, base_value)
    unknown = [v for v in values if v not in sizes]
    if unknown:
        raise ConfigError(f"values: unknown tiny model size {unknown[0]!r}; known: {', '.join(sizes)}")
    out = [Variant(f"model-{v}", f"{spec.base} on the {v} model ({_describe(sizes[v])})", spec.base,
                   spec.base if v == base_value else f"{spec.base}+model-{v}",
                   # The ladder's models are named models (each resolves to its own cached warm
                   # start); tiny's other architectures are built by the runner (arch).
                   overrides=(f"model.name_or_path={v}",) if ladder else (), arch=None if ladder else v,
                   components=("model size",) if v != base_value else (), value=v, is_base=v == base_value)
           for v in values]
    return _base_first(out)


def _describe(arch) -> str:
    return f"hidden {arch.hidden_size}, {arch.num_hidden_layers} layers"


def _base_first(variants: list[Variant]) -> list[Variant]:
    return sorted(variants, key=lambda v: not v.is_base)


FAMILIES: dict[str, Family] = {
    f.name: f
    for f in (
        Family("loo", "the base recipe and each leave-one-out variant (one component reverted)", _loo),
        Family("recipes", "the five recipe presets, compared with the base", _recipes),
        Family("batch-size", "a sweep of prompts per step", _knob_sweep(
            "recipe.batch.prompts_per_step", "batch", "prompts per step", "batch size", 1), sweep=True),
        Family("generations", "a sweep of generations per prompt", _knob_sweep(
            "recipe.batch.generations_per_prompt", "gens", "generations per prompt", "generations per prompt", 2),
            sweep=True),
        Family("gen-length", "a sweep of the generation length (thinking budget scaled with it)", _gen_length,
               sweep=True),
        Family("model-size", "a sweep of tiny model architectures (each its own cached warm start)", _model_size,
               sweep=True),
    )
}


def family_variants(spec, base_cfg) -> list[Variant]:
    """The variants of ``spec``'s family, restricted to ``spec.only`` (the base always kept)."""
    if spec.family not in FAMILIES:
        raise ConfigError(f"family: unknown family {spec.family!r}; known: {', '.join(FAMILIES)}")
    family = FAMILIES[spec.family]
    if (spec.values or spec.base_value is not None) and not family.sweep:
        raise ConfigError(f"values/base_value apply to sweep families "
                          f"({', '.join(n for n, f in FAMILIES.items() if f.sweep)}), not to {spec.family!r}")
    variants = family.build(spec, base_cfg)
    if spec.only:
        labels = {v.label: v for v in variants}
        wanted = set()
        for name in spec.only:
            key = name.removeprefix("scalerl-") if spec.family == "loo" else name
            if key not in labels:
                from scalerl.rl.presets import LEAVE_ONE_OUT

                if spec.family == "loo" and f"scalerl-{key}" in LEAVE_ONE_OUT:  # it was "unknown variant"
                    raise ConfigError(f"only: {name!r} would be the base {spec.base} itself (it already has what that "
                                      f"variant changes), so a loo study of {spec.base} has no such run; "
                                      f"its variants: {', '.join(labels)}")
                raise ConfigError(f"only: unknown variant {name!r} of family {spec.family!r}; "
                                  f"known: {', '.join(labels)}")
            wanted.add(key)
        variants = [v for v in variants if v.is_base or v.label in wanted]
    if len(variants) < 2:  # a study compares variants with its base: one run alone has nothing to compare
        only = variants[0].label if variants else spec.base
        remedy = ("give values beside the base's (e.g. --values 8 16 32)" if family.sweep
                  else "name a variant besides the base in only (scalerl study --list shows them)")
        raise ConfigError(f"the study has only its base ({only}): nothing to compare it with -- {remedy}; "
                          "to train one recipe alone (any seeds), use scalerl train --seed N")
    labels = [v.label for v in variants]
    assert len(set(labels)) == len(labels), labels  # run directories are named by label
    return variants
