"""Generate and score: one round of prompts, and the whole batch of one optimizer step.

    groups, samples, tokens, prompt_tokens = generate_groups(ctx.round, generator, problems, params)
    batch = make_batch(ctx, generator, index)     # sample prompts, generate, score, refill (DAPO)

A *round* is one generate-and-score pass over a set of prompts; a batch is one round, or
several under DAPO's dynamic sampling (refill rounds top up the groups the zero-variance
filter drops, judged on ``filtering.basis``).
"""

from __future__ import annotations

import dataclasses
from typing import Sequence

from scalerl.generate.base import Completion, Generator, SamplingParams, ScheduledUpdates
from scalerl.rl.filters import DynamicSamplingBuffer
from scalerl.rollout.context import RolloutContext, RoundContext
from scalerl.rollout.groups import Group, RolloutBatch
from scalerl.tasks.base import Problem, score_all
from scalerl.tasks.encoding import encode_problems, graded_texts
from scalerl.tasks.failure_tally import counting_failures


def round_params(params: SamplingParams, round_: int) -> SamplingParams:
    """Sampling for refill round ``round_`` of a batch (DAPO dynamic sampling): a seed of its own,
    derived from the batch's, so that every backend draws the same refills."""
    if params.seed is None or round_ == 0:
        return params
    return dataclasses.replace(params, seed=params.seed + 7919 * round_)


def score_groups(ctx: RoundContext, problems: Sequence[Problem], completions: Sequence[Completion],
                 generations: int, prompts: Sequence[Sequence[int]]) -> list[Group]:
    """Reward problem-major completions (the G completions of problem i are rows i*G .. i*G+G-1; ``prompts[i]``
    is row i's prompt ids, which tell where the prompt opened the model's thinking)."""
    texts = graded_texts(ctx.tokenizer, prompts, [c.text for c in completions])
    # The whole round at once: a task with reward workers scores its completions concurrently.
    every = score_all(ctx.task, [(p, texts[i * generations + j])
                                 for i, p in enumerate(problems) for j in range(generations)])
    groups = []
    for i, problem in enumerate(problems):
        comps = list(completions[i * generations : (i + 1) * generations])
        rewards = [float(r) for r in every[i * generations : (i + 1) * generations]]
        shaped = [ctx.components.shape_reward(r, len(c.token_ids)) for r, c in zip(rewards, comps)]
        groups.append(Group(problem, comps, rewards, shaped))
    return groups


def generate_groups(ctx: RoundContext, generator: Generator, problems: Sequence[Problem], params: SamplingParams,
                    *, updates: ScheduledUpdates | None = None) -> tuple[list[Group], int, int, int]:
    """Generate and score G completions for each problem: ``(groups, samples, tokens, prompt_tokens)``.

    ``updates``: in-flight weight updates at fixed decode steps, passed to the generator
    (deterministic PipelineRL-k; :class:`~scalerl.generate.base.ScheduledUpdates`).
    """
    g = ctx.recipe.batch.generations_per_prompt
    prompts = encode_problems(ctx.tokenizer, problems)
    flat = [prompts[i] for i in range(len(problems)) for _ in range(g)]
    if updates is None:
        completions = generator.generate(flat, params, ctx.length_control)
    else:
        completions = generator.generate(flat, params, ctx.length_control, updates=updates)
    for c, p in zip(completions, (p for p in problems for _ in range(g))):
        c.meta["problem_id"] = p.id
    groups = score_groups(ctx, problems, completions, g, flat)
    prefilled = sum(len(p) if c.prefilled_tokens is None else c.prefilled_tokens for p, c in zip(flat, completions))
    return groups, len(completions), sum(len(c.token_ids) for c in completions), prefilled


def new_buffer(ctx: RolloutContext) -> DynamicSamplingBuffer | None:
    """The dynamic-sampling buffer of one batch, or None when the recipe does not refill."""
    f = ctx.recipe.filtering
    return DynamicSamplingBuffer(ctx.recipe.batch.prompts_per_step, f.max_generation_rounds) if f.dynamic_sampling else None


def add_round(ctx: RoundContext, buffer: DynamicSamplingBuffer, groups: Sequence[Group]) -> None:
    """Offer one round's groups to the buffer, judged on ``filtering.basis``."""
    buffer.add_round(groups, [ctx.components.filter_values(g.rewards, g.shaped) for g in groups])


def finish(batch: RolloutBatch, buffer: DynamicSamplingBuffer) -> None:
    """Take the kept groups into ``batch`` and say how it went."""
    batch.groups = buffer.take()
    batch.stats["dynamic_rounds"] = buffer.rounds
    batch.stats["dynamic_dropped_groups"] = buffer.dropped_groups


def make_batch(ctx: RolloutContext, generator: Generator, index: int) -> RolloutBatch:
    """The batch of training step ``index``: sample prompts, generate, score; DAPO dynamic sampling
    refills zero-variance groups up to ``filtering.max_generation_rounds`` rounds.

    Every group scored is reported to the sampler (no-positive-resampling retires prompts
    whose pass rate reaches the threshold), dropped ones included: they were answered.
    """
    with counting_failures() as tally:
        batch = _make_batch(ctx, generator, index)
    batch.reward_failures = tally.as_dict()
    return batch


def _make_batch(ctx: RolloutContext, generator: Generator, index: int) -> RolloutBatch:
    n = ctx.recipe.batch.prompts_per_step
    params = ctx.sampling_params(index)
    batch = RolloutBatch(groups=[])
    buffer = new_buffer(ctx)
    round_ = 0
    while True:
        want = n if buffer is None else max(buffer.missing, 1)
        problems = [ctx.problems[i] for i in ctx.sampler.sample(want)]
        groups, samples, tokens, prompt_tokens = generate_groups(ctx.round, generator, problems,
                                                                 round_params(params, round_))
        batch.samples += samples
        batch.tokens += tokens
        batch.prompt_tokens += prompt_tokens
        for grp in groups:
            ctx.sampler.record(grp.problem.id, grp.rewards)
        round_ += 1
        if buffer is None:
            batch.groups = groups
            return batch
        add_round(ctx.round, buffer, groups)
        if buffer.done:
            finish(batch, buffer)
            return batch
