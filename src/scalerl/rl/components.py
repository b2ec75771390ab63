"""The recipe's names resolved into functions, once per run.

A :class:`~scalerl.rl.recipe.RecipeConfig` names its components -- the policy loss, the loss
aggregation, the advantage normalisation, the zero-variance filter's basis, the length mode --
and each name is an entry of a registry next to its implementation. :func:`resolve_recipe`
looks every name up once, when a run starts, and returns the functions (the loss with its
parameters bound), so the update step calls them directly instead of looking a name up per
micro-batch, and a mistyped name fails before anything runs:

    parts = resolve_recipe(cfg)                     # ConfigError listing every unknown name
    out = parts.loss(LossInputs(...))               # cispo / ppo / dapo / gspo, clips bound
    w = aggregation_weights(parts.aggregation, mask, group)
    adv = compute_advantages(rewards, group, parts.normalization, keep=keep)

This module sits above the registries and the config (it imports both), which is what lets the
config stay plain data that imports no implementation.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from scalerl.errors import ConfigError
from scalerl.rl.advantages import NORMALIZATIONS, Normalization
from scalerl.rl.aggregate import AGGREGATIONS, Aggregation
from scalerl.rl.filters import FILTER_BASES, FilterBasis
from scalerl.rl.length import LENGTH_MODES, LengthMode, budget_problems, keep_in_loss
from scalerl.rl.losses import POLICY_LOSSES, LossInputs, LossOutput, bound_policy_loss, zero_advantage_means_zero_gradient
from scalerl.rl.recipe import RecipeConfig

__all__ = ["RecipeComponents", "name_problems", "resolve_recipe", "validate_recipe"]


@dataclass(frozen=True)
class RecipeComponents:
    """The functions a recipe's names stand for (see the module docstring)."""

    recipe: RecipeConfig
    loss: Callable[[LossInputs], LossOutput]
    """The policy loss ``recipe.loss.name`` with ``recipe.loss`` (its clips) bound, inside
    ``recipe.loss.ratio_mask``'s band when one is set."""
    skip_zero_advantage: bool
    """Whether a sequence with advantage exactly 0 gets no gradient from ``loss`` (the built-in
    losses), so the update may leave it out of the forward and backward passes."""
    aggregation: Aggregation
    normalization: Normalization
    filter_basis: FilterBasis
    length: LengthMode

    def shape_reward(self, reward: float, length: int) -> float:
        """The reward trained on, from the task's reward and the completion's length in tokens."""
        return self.length.reward(self.recipe.length, reward, length)

    def keep_in_loss(self, finish_reason: str) -> bool:
        """False for a completion the recipe leaves out of the loss: cut by a token budget under
        ``length.mask_truncated``, interrupted under ``length.mask_interrupted``."""
        return keep_in_loss(self.recipe.length, finish_reason)

    def filter_values(self, rewards: Sequence[float], shaped: Sequence[float]) -> Sequence[float]:
        """The rewards of one group whose variance decides whether the group is kept."""
        return self.filter_basis(rewards, shaped)

    def length_controller(self, tokenizer: Any) -> Any:
        """The generator's length control for ``length.mode``, built with ``tokenizer``."""
        return self.length.controller(self.recipe.length, tokenizer)


#: (config key, registry, value) of every component chosen by name.
def _named(cfg: RecipeConfig) -> list[tuple[str, Any, str]]:
    return [
        ("loss.name", POLICY_LOSSES, cfg.loss.name),
        ("aggregation", AGGREGATIONS, cfg.aggregation),
        ("advantages.normalization", NORMALIZATIONS, cfg.advantages.normalization),
        ("filtering.basis", FILTER_BASES, cfg.filtering.basis),
        ("length.mode", LENGTH_MODES, cfg.length.mode),
    ]


def name_problems(cfg: RecipeConfig) -> list[str]:
    """Component names that no registry knows, each with the known ones."""
    return [f"{key}: unknown {registry.kind} {name!r}; known: {', '.join(registry.names())}"
            for key, registry, name in _named(cfg) if name not in registry]


def validate_recipe(cfg: RecipeConfig, tokenizer: Any = None) -> RecipeConfig:
    """Every check of a recipe at once: values (:meth:`RecipeConfig.validate`), names, and the
    length budgets (the interruption phrase counted when ``tokenizer`` is given)."""
    problems = list(cfg.problems()) + name_problems(cfg)
    if not problems:
        problems = budget_problems(cfg.length, tokenizer)
    if problems:
        raise ConfigError("invalid recipe: " + "; ".join(problems))
    return cfg


def resolve_recipe(cfg: RecipeConfig) -> RecipeComponents:
    """Look every component name of ``cfg`` up once (ConfigError naming each unknown one)."""
    problems = name_problems(cfg)
    if problems:
        raise ConfigError("invalid recipe: " + "; ".join(problems))
    return RecipeComponents(
        recipe=cfg,
        loss=bound_policy_loss(cfg.loss),
        skip_zero_advantage=zero_advantage_means_zero_gradient(cfg.loss.name),
        aggregation=AGGREGATIONS.get(cfg.aggregation),
        normalization=NORMALIZATIONS.get(cfg.advantages.normalization),
        filter_basis=FILTER_BASES.get(cfg.filtering.basis),
        length=LENGTH_MODES.get(cfg.length.mode),
    )
