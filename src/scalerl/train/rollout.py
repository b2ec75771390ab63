"""Rollouts: prompts -> groups of scored completions, ready for a policy update.

One *group* is one prompt with its G completions (the unit of group-centred advantages,
zero-variance filtering and the no-positive-resampling curriculum). A *batch* is the groups
of one optimizer step plus what it cost to make them (dynamic sampling may generate and
drop groups: their compute still counts).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any, Sequence

from scalerl.generate.base import Completion, Generator, LengthController, SamplingParams
from scalerl.rl.filters import DynamicSamplingBuffer, has_reward_variance
from scalerl.rl.length import shape_reward
from scalerl.rl.recipe import RecipeConfig
from scalerl.rl.sampler import PromptSampler
from scalerl.tasks.base import Problem, Task
from scalerl.tasks.encoding import encode_prompts


@dataclass
class Group:
    """One prompt and its scored completions."""

    problem: Problem
    completions: list[Completion]
    rewards: list[float]
    """The task's rewards (+1 / -1); a completion passes when its reward is > 0."""
    shaped: list[float]
    """The rewards trained on (after length shaping, e.g. DAPO's overlong penalty)."""

    @property
    def has_variance(self) -> bool:
        return has_reward_variance(self.shaped)


@dataclass
class RolloutBatch:
    """The groups of one optimizer step and the cost of producing them."""

    groups: list[Group]
    samples: int = 0
    """Completions generated for this batch, dropped groups included."""
    tokens: int = 0
    """Completion tokens generated, dropped groups included."""
    prompt_tokens: int = 0
    stats: dict[str, float] = field(default_factory=dict)

    @property
    def completions(self) -> list[Completion]:
        return [c for g in self.groups for c in g.completions]


def completion_lags(completions: Sequence[Completion], version: int) -> list[int]:
    """How many updates a trainer at ``version`` is ahead of each sampled token that enters the
    loss (``loss_mask``): the staleness PipelineRL-k bounds by k."""
    return [version - v for c in completions for v, m in zip(c.versions, c.loss_mask) if m]


def round_params(params: SamplingParams, round_: int) -> SamplingParams:
    """Sampling for refill round ``round_`` of a batch (DAPO dynamic sampling): a seed of its own,
    derived from the batch's, so that every backend draws the same refills."""
    if params.seed is None or round_ == 0:
        return params
    return dataclasses.replace(params, seed=params.seed + 7919 * round_)


def score_groups(
    task: Task,
    problems: Sequence[Problem],
    completions: Sequence[Completion],
    generations: int,
    recipe: RecipeConfig,
) -> list[Group]:
    """Reward problem-major completions (the G completions of problem i are rows i*G .. i*G+G-1)."""
    groups = []
    for i, problem in enumerate(problems):
        comps = list(completions[i * generations : (i + 1) * generations])
        rewards = [float(task.reward(problem, c.text)) for c in comps]
        shaped = [shape_reward(recipe.length, r, len(c.token_ids)) for r, c in zip(rewards, comps)]
        groups.append(Group(problem, comps, rewards, shaped))
    return groups


def generate_groups(
    generator: Generator,
    tokenizer: Any,
    task: Task,
    problems: Sequence[Problem],
    recipe: RecipeConfig,
    params: SamplingParams,
    length_control: LengthController | None,
) -> tuple[list[Group], int, int, int]:
    """Generate and score G completions for each problem: ``(groups, samples, tokens, prompt_tokens)``."""
    g = recipe.batch.generations_per_prompt
    prompts = encode_prompts(tokenizer, [p.prompt for p in problems])
    flat = [prompts[i] for i in range(len(problems)) for _ in range(g)]
    completions = generator.generate(flat, params, length_control)
    for c, p in zip(completions, (p for p in problems for _ in range(g))):
        c.meta["problem_id"] = p.id
    groups = score_groups(task, problems, completions, g, recipe)
    return groups, len(completions), sum(len(c.token_ids) for c in completions), sum(len(p) for p in flat)


def make_batch(
    generator: Generator,
    tokenizer: Any,
    task: Task,
    sampler: PromptSampler,
    problems_by_id: dict[str, Problem],
    recipe: RecipeConfig,
    params: SamplingParams,
    length_control: LengthController | None,
) -> RolloutBatch:
    """One step's batch: sample prompts, generate, score; DAPO dynamic sampling refills
    zero-variance groups up to ``filtering.max_generation_rounds`` rounds.

    Every group scored is reported to the sampler (no-positive-resampling retires prompts
    whose pass rate reaches the threshold), dropped ones included: they were answered.
    """
    n = recipe.batch.prompts_per_step
    batch = RolloutBatch(groups=[])
    buffer = DynamicSamplingBuffer(n, recipe.filtering.max_generation_rounds) if recipe.filtering.dynamic_sampling else None
    round_ = 0
    while True:
        want = n if buffer is None else max(buffer.missing, 1)
        ids = sampler.sample(want)
        problems = [problems_by_id[i] for i in ids]
        groups, samples, tokens, prompt_tokens = generate_groups(
            generator, tokenizer, task, problems, recipe, round_params(params, round_), length_control
        )
        batch.samples += samples
        batch.tokens += tokens
        batch.prompt_tokens += prompt_tokens
        for grp in groups:
            sampler.record(grp.problem.id, grp.rewards)
        round_ += 1
        if buffer is None:
            batch.groups = groups
            break
        buffer.add_round(groups, [grp.shaped for grp in groups])
        if buffer.done:
            batch.groups = buffer.take()
            batch.stats["dynamic_rounds"] = buffer.rounds
            batch.stats["dynamic_dropped_groups"] = buffer.dropped_groups
            break
    return batch
