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
from scalerl.tasks.base import Problem, score_flagged
from scalerl.tasks.encoding import encode_problems, graded_texts
from scalerl.tasks.failure_tally import counting_failures
from scalerl.tasks.rewards import FAILURE_REWARD


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
    every = score_flagged(ctx.task, [(p, texts[i * generations + j])
                                     for i, p in enumerate(problems) for j in range(generations)])
    groups = []
    for i, problem in enumerate(problems):
        comps = list(completions[i * generations : (i + 1) * generations])
        scored = every[i * generations : (i + 1) * generations]
        rewards = [float(r) for r, _ in scored]
        failed = [f for _, f in scored] if any(f for _, f in scored) else []
        groups.append(Group(problem, comps, rewards, shaped_rewards(ctx, rewards, comps), failed))
    return groups


def shaped_rewards(ctx: RoundContext, rewards: Sequence[float], completions: Sequence[Completion]) -> list[float]:
    """The rewards trained on: each after the recipe's length shaping (e.g. DAPO's overlong penalty)."""
    return [ctx.components.shape_reward(r, len(c.token_ids)) for r, c in zip(rewards, completions)]


def floor_failures(ctx: RoundContext, groups: Sequence[Group], scored: Sequence[Group]) -> None:
    """Score the failed calls of ``groups`` as the lowest answer of their batch, in place: -1 (a wrong answer), or
    the lowest score a call that answered got in any group ``scored`` for the batch (its DAPO refill rounds, dropped
    groups too) where that is lower -- a failure never pays better than a wrong answer of its batch (review ei).

    The batch's own scores decide, not the floor the reward function's copy had reached when it scored them (what
    evaluations and other batches had returned by then): that floor depends on when the batch was scored, so a
    batch regenerated after ``--resume`` -- scored after an evaluation the uninterrupted run ran later -- trained
    on other rewards (review FN). Only a batch's rewards relative to each other reach the loss (group advantages,
    batch normalisation), so the batch's own lowest is floor enough. Under DAPO a round is floored so before its
    groups are judged (review FT), and a later round's lower answer leaves a kept group its variance -- but on
    ``filtering.basis=shaped`` a failure's shaped score can then meet a wrong answer's (a stated limit, review FW)."""
    if not any(g.failed for g in groups):
        return
    floor = min([FAILURE_REWARD, *(r for g in scored for r, f in zip(g.rewards, g.failed or [False] * len(g.rewards))
                                      if not f)])
    for g in groups:
        if g.failed:
            g.rewards = [floor if f else r for r, f in zip(g.rewards, g.failed)]
            g.shaped = shaped_rewards(ctx, g.rewards, g.completions)


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


def finish(ctx: RoundContext, batch: RolloutBatch, buffer: DynamicSamplingBuffer, scored: Sequence[Group]) -> None:
    """Take the kept groups into ``batch`` (their failures floored at the lowest score of the groups ``scored`` in
    every round: :func:`floor_failures`) and say how it went."""
    batch.groups = buffer.take()
    floor_failures(ctx, batch.groups, scored)
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
    scored: list[Group] = []
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
            floor_failures(ctx.round, groups, groups)
            return batch
        scored += groups
        # The round's failures scored at the batch's lowest answer so far before its groups are judged: the copy's
        # floor could keep a group (a failure at -5 beside a wrong answer at -1) that trains with no variance
        # (review FT). A later round can only lower that floor, which leaves a kept group's variance.
        floor_failures(ctx.round, groups, scored)
        add_round(ctx.round, buffer, groups)
        if buffer.done:
            finish(ctx.round, batch, buffer, scored)
            return batch
