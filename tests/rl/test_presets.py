"""Recipe presets, leave-one-out variants, validation, YAML round trips, generated files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from scalerl.config import apply_overrides, from_dict, load_yaml, to_dict, undocumented_fields
from scalerl.errors import ConfigError
from scalerl.rl.components import validate_recipe
from scalerl.rl.presets import (
    LEAVE_ONE_OUT,
    PRESETS,
    changed_components,
    config_files,
    get_recipe,
    leave_one_out,
    recipe_names,
    recipe_yaml,
    reference_markdown,
)
from scalerl.rl.recipe import INTERRUPTION_PHRASE, RecipeConfig

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("name", recipe_names())
def test_every_recipe_builds_and_round_trips_through_yaml(name, tmp_path):
    cfg = get_recipe(name)
    text = recipe_yaml(name)
    assert yaml.safe_load(text) == to_dict(cfg)
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    assert load_yaml(RecipeConfig, path) == cfg
    assert from_dict(RecipeConfig, to_dict(cfg)) == cfg


def test_scalerl_has_the_papers_values():
    c = get_recipe("scalerl")
    assert (c.loss.name, c.loss.cispo.eps_max) == ("cispo", 5.0)
    assert (c.aggregation, c.advantages.normalization) == ("prompt", "batch")
    assert c.length.mode == "interrupt" and c.length.interruption_phrase == INTERRUPTION_PHRASE
    assert c.filtering.zero_variance and not c.filtering.dynamic_sampling
    assert c.sampler.no_positive_resampling and c.sampler.pass_rate_threshold == 0.9
    assert c.fp32_lm_head
    assert (c.off_policy.pipeline, c.off_policy.k) == ("pipeline-rl-k", 8)
    assert (c.batch.prompts_per_step, c.batch.generations_per_prompt) == (48, 16)
    o = c.optimizer
    assert (o.lr, o.eps, o.weight_decay, o.warmup_steps) == (5e-7, 1e-15, 0.01, 100)


def test_the_other_presets_follow_spec_section_2():
    g = get_recipe("deepseek-grpo")
    assert (g.loss.name, g.loss.ppo.eps_low, g.loss.ppo.eps_high) == ("ppo", 0.2, 0.2)
    assert (g.aggregation, g.advantages.normalization) == ("sample", "prompt")
    assert (g.off_policy.pipeline, g.off_policy.k) == ("ppo-off-policy-k", 8)
    d = get_recipe("qwen-dapo")
    assert (d.loss.name, d.loss.dapo.eps_low, d.loss.dapo.eps_high) == ("dapo", 0.2, 0.28)
    assert d.aggregation == "prompt" and d.filtering.dynamic_sampling and d.filtering.zero_variance
    assert d.length.mode == "overlong_penalty" and d.off_policy.pipeline == "ppo-off-policy-k"
    m = get_recipe("magistral")
    assert m.loss.name == "dapo" and m.off_policy.pipeline == "pipeline-rl-k"
    x = get_recipe("minimax-m1")
    assert x.loss.name == "cispo" and x.fp32_lm_head and x.aggregation == "prompt"
    assert x.off_policy.pipeline == "ppo-off-policy-k"


EXPECTED_LOO = {
    "scalerl-loo-loss-dapo": ("loss", lambda c: c.loss.name == "dapo"),
    "scalerl-loo-aggregation-sample": ("aggregation", lambda c: c.aggregation == "sample"),
    "scalerl-loo-normalization-prompt": ("advantages", lambda c: c.advantages.normalization == "prompt"),
    "scalerl-loo-length-penalty": ("length", lambda c: c.length.mode == "overlong_penalty"),
    "scalerl-loo-zero-variance-off": ("filtering", lambda c: not c.filtering.zero_variance),
    "scalerl-loo-fp32-head-off": ("fp32_lm_head", lambda c: not c.fp32_lm_head),
    "scalerl-loo-pipeline-ppo-off-policy-8": (
        "off_policy", lambda c: (c.off_policy.pipeline, c.off_policy.k) == ("ppo-off-policy-k", 8)
    ),
    "scalerl-loo-no-positive-resampling-off": ("sampler", lambda c: not c.sampler.no_positive_resampling),
}


def test_leave_one_out_names_are_stable():
    assert list(leave_one_out()) == list(EXPECTED_LOO)


@pytest.mark.parametrize("name", list(EXPECTED_LOO))
def test_each_leave_one_out_variant_differs_from_scalerl_in_exactly_one_component(name):
    component, check = EXPECTED_LOO[name]
    variant = get_recipe(name)
    assert changed_components(variant, get_recipe("scalerl")) == [component]
    assert LEAVE_ONE_OUT[name].component == component
    assert check(variant)
    assert LEAVE_ONE_OUT[name].summary.startswith("ScaleRL with ")


def test_presets_are_fresh_objects():
    a = get_recipe("scalerl")
    a.loss.name = "ppo"
    assert get_recipe("scalerl").loss.name == "cispo"


def test_unknown_recipe_lists_the_known_names():
    with pytest.raises(ConfigError, match="unknown recipe 'nope'; known recipes: scalerl, deepseek-grpo"):
        get_recipe("nope")


@pytest.mark.parametrize("name, meant", [("scalerll", "scalerl"), ("qwen_dapo", "qwen-dapo"),
                                         # a study's variant label (scalerl study --list) names no recipe
                                         ("loo-loss-dapo", "scalerl-loo-loss-dapo")])
def test_unknown_recipe_says_which_one_was_meant(name, meant):
    with pytest.raises(ConfigError, match=rf"unknown recipe '{name}' \(did you mean '{meant}'\?\); known recipes: "):
        get_recipe(name)


def test_every_config_field_has_a_docstring():
    assert undocumented_fields(RecipeConfig) == []


def test_overrides_on_the_recipe():
    cfg = apply_overrides(get_recipe("scalerl"), ["pipeline=ppo-off-policy-k", "k=4", "loss.name=gspo",
                                                  "think_budget=[100, 200]", "lr=1e-6", "grad_clip=null"])
    assert (cfg.off_policy.pipeline, cfg.off_policy.k, cfg.loss.name) == ("ppo-off-policy-k", 4, "gspo")
    assert cfg.length.think_budget == (100, 200) and cfg.optimizer.lr == 1e-6 and cfg.optimizer.grad_clip is None
    cfg.validate()
    with pytest.raises(ConfigError, match="ambiguous key 'eps_low': it matches loss.ppo.eps_low, loss.dapo.eps_low"):
        apply_overrides(cfg, ["eps_low=0.1"])
    assert apply_overrides(cfg, ["dapo.eps_low=0.1"]).loss.dapo.eps_low == 0.1


@pytest.mark.parametrize(
    "overrides, message",
    [
        (["loss.name=nope"], "loss.name: unknown policy loss 'nope'; known: cispo, dapo, gspo, ppo"),
        (["aggregation=tokens"], "aggregation: unknown loss aggregation 'tokens'; known: prompt, sample, token"),
        (["normalization=group"], "unknown advantage normalization 'group'; known: batch, none, prompt"),
        (["length.mode=interupt"], "length.mode: unknown length mode 'interupt'; known: interrupt, overlong_penalty, "
                                   "truncate"),
        (["filtering.basis=acc"], "filtering.basis: unknown filter basis 'acc'; known: correctness, shaped"),
        (["dynamic_sampling=true", "zero_variance=false"], "set filtering.zero_variance=true"),
        (["think_budget=[10, 5]"], "0 <= lo <= hi, got [10, 5]"),
        (["answer_budget=4096"], "which would cut answers short"),
        (["k=0"], "off_policy.k must be >= 1"),
        (["pipeline=sync"], "off_policy.pipeline=sync means k=1 (got k=8)"),
        (["generations_per_prompt=1"], "generations_per_prompt must be >= 2"),
        (["lr=0"], "optimizer.lr must be > 0"),
        (["pass_rate_threshold=1.5"], "pass_rate_threshold must be in (0, 1]"),
        (["length.mode=overlong_penalty", "overlong_cache=0"], "overlong_cache must be in (0, overlong_max_len]"),
        (["length.mode=overlong_penalty", "overlong_max_len=20000"], "exceeds max_new_tokens"),
        (["interruption_phrase=Stop now."], "must end with end_think"),
        (["eps_max=-1"], "loss.cispo.eps_max must be > 0"),
        (["gspo.eps_low=1.5"], "loss.gspo.eps_low must be in [0, 1)"),
        (["grad_clip=0"], "grad_clip must be > 0 or null"),
        (["max_generation_rounds=0"], "max_generation_rounds must be >= 1"),
        # inf was taken: weights inf after one step, or every update (eps) / advantage (std_eps) 0
        (["lr=inf"], "optimizer.lr must be finite, got inf"),
        (["optimizer.eps=inf"], "optimizer.eps must be finite, got inf"),
        (["weight_decay=inf"], "optimizer.weight_decay must be finite, got inf"),
        (["std_eps=inf"], "advantages.std_eps must be finite, got inf"),
    ],
)
def test_validation_refuses_inconsistent_values(overrides, message):
    cfg = apply_overrides(get_recipe("scalerl"), overrides)
    with pytest.raises(ConfigError) as exc:
        validate_recipe(cfg)  # values (RecipeConfig.validate), component names, length budgets
    assert message in str(exc.value)


def test_the_overlong_penalty_lengths_are_checked_only_where_they_are_used():
    """A smaller max_new_tokens alone, in interrupt mode: its overlong_max_len (14,336), which the
    mode never reads, made it three tries -- overlong_max_len, then overlong_cache, then the budget."""
    cfg = apply_overrides(get_recipe("scalerl"), ["max_new_tokens=512", "think_budget=[256, 384]", "answer_budget=64"])
    validate_recipe(cfg)
    with pytest.raises(ConfigError, match="exceeds max_new_tokens"):
        validate_recipe(apply_overrides(cfg, ["length.mode=overlong_penalty"]))


def test_validation_reports_every_problem_at_once():
    cfg = apply_overrides(get_recipe("scalerl"), ["k=0", "lr=0"])
    with pytest.raises(ConfigError, match="off_policy.k must be >= 1, got 0; optimizer.lr must be > 0, got 0.0"):
        cfg.validate()


def test_a_syncing_pipeline_is_valid_with_k_1():
    apply_overrides(get_recipe("scalerl"), ["pipeline=sync", "k=1"]).validate()


def test_generated_configs_are_in_sync():
    files = config_files(ROOT / "configs")
    assert len(files) == len(PRESETS) + len(LEAVE_ONE_OUT)
    for path, text in files.items():
        assert path.exists() and path.read_text() == text, (
            f"{path} is out of date; run: .venv/bin/python scripts/sync_recipes.py"
        )


def test_docs_reference_is_in_sync():
    doc = (ROOT / "docs" / "recipe.md").read_text()
    assert reference_markdown() in doc, "docs/recipe.md is out of date; run: .venv/bin/python scripts/sync_recipes.py"
    for name in recipe_names():
        assert f"`{name}`" in doc
