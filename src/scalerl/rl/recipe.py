"""The recipe configuration: every design choice of the ScaleRL paper as one switch.

``RecipeConfig`` is the algorithm half of a training configuration (the trainer adds its
own sections: model, task, train, eval, logging, backend). Each section is one component
of the paper's recipe (docs/paper.md, "The recipe"); each field has a docstring, which ``scalerl recipes show NAME`` prints as a
YAML comment. Components are chosen by name from registries (``scalerl.rl.losses``,
``scalerl.rl.aggregate``, ``scalerl.rl.advantages``, ``scalerl.rl.filters``,
``scalerl.rl.length``), so a study flips them with overrides:

    scalerl recipes show scalerl loss.name=dapo aggregation=sample

This module is plain data and imports nothing else of scalerl.rl (and no torch):
:meth:`RecipeConfig.validate` checks values; the names are checked -- and resolved into
functions, once -- by :mod:`scalerl.rl.components`, which sits above both this module and the
registries (so that the registries may import this config and not the other way round).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import Literal, get_args

from scalerl.errors import ConfigError

#: The phrase ScaleRL forces when the thinking budget runs out (docs/paper.md, "The recipe").
INTERRUPTION_PHRASE = "Okay, time is up. Let me stop thinking and formulate a final answer now. </think>"

PipelineMode = Literal["sync", "ppo-off-policy-k", "pipeline-rl-k"]


@dataclass
class CispoParams:
    """Parameters of the CISPO loss."""

    eps_max: float = 5.0
    """Cap on the importance weight rho = pi_train / pi_gen (ScaleRL: 4..8, uses 5); no lower clip."""


@dataclass
class ClipParams:
    """Trust region of a clipped-surrogate loss: the ratio is clipped to [1 - eps_low, 1 + eps_high]."""

    eps_low: float = 0.2
    """Lower clip: the ratio may not fall below 1 - eps_low while it helps a negative advantage."""
    eps_high: float = 0.2
    """Upper clip: the ratio may not rise above 1 + eps_high while it helps a positive advantage."""


@dataclass
class LossConfig:
    """Which policy loss, and the parameters of each built-in one."""

    name: str = "cispo"
    """Policy loss by registered name: cispo (ScaleRL), ppo (GRPO/PPO-clip), dapo (clip-higher), gspo
    (sequence-level ratio), or one added with @register_policy_loss."""
    cispo: CispoParams = field(default_factory=CispoParams)
    """CISPO (MiniMax-M1, ScaleRL's choice): -sg(min(rho, eps_max)) * A * log pi_train(token)."""
    ppo: ClipParams = field(default_factory=lambda: ClipParams(eps_low=0.2, eps_high=0.2))
    """PPO-clip / GRPO surrogate (DeepSeek): -min(rho * A, clip(rho, 1 - eps_low, 1 + eps_high) * A)."""
    dapo: ClipParams = field(default_factory=lambda: ClipParams(eps_low=0.2, eps_high=0.28))
    """DAPO clip-higher: the PPO surrogate with a wider upper clip (0.2 / 0.28)."""
    gspo: ClipParams = field(default_factory=lambda: ClipParams(eps_low=3e-3, eps_high=4e-3))
    """GSPO: one ratio per sequence, exp(mean token log-ratio), clipped (3e-3 / 4e-3, the ScaleRL
    paper's comparison; GSPO's own paper uses 3e-4 / 4e-4)."""
    extra: dict[str, float] = field(default_factory=dict)
    """Free parameters for a loss you register yourself (it reads them from cfg.extra)."""
    ratio_mask: tuple[float, float] | None = None
    """[lo, hi]: a token whose importance ratio pi_train / pi_gen lies outside leaves the loss, whatever
    its advantage's sign (token-level masked importance sampling: verl's rollout_is mask mode, IcePop);
    it still counts in the aggregation's denominators, as a PPO-clipped token does. null: off (ScaleRL).
    Not with gspo, whose trust region is one ratio per sequence: a token mask would change that ratio.
    On the demo [0.8, 1.25] masks ~0.2% of the tokens and removes the largest gradient-norm spikes, not
    the evaluation dips (docs/workload.md)."""


@dataclass
class AdvantageConfig:
    """Group-centred advantages A_i = r_i - mean(rewards of the prompt's group), then scaled."""

    normalization: str = "batch"
    """Divide by: batch (std of the advantages in the batch that enter the loss, zero-variance groups
    filtered out; ScaleRL), prompt (the group's std; GRPO), or none."""
    std_eps: float = 1e-6
    """Zero-std guard: a std at or below this leaves the advantages unscaled instead of dividing by ~0."""


@dataclass
class FilterConfig:
    """Which prompt groups enter the loss."""

    zero_variance: bool = True
    """Drop from the loss the groups whose generations all got the same reward (zero advantage,
    zero gradient); their tokens still count as compute."""
    dynamic_sampling: bool = False
    """DAPO dynamic sampling: after dropping zero-variance groups, generate more prompts until the
    batch is full again (needs zero_variance)."""
    max_generation_rounds: int = 10
    """Dynamic sampling cap: at most this many generation rounds per step, the first included
    (verl's max_num_gen_batches); when hit, the step trains on the groups it has (none kept: the
    step is skipped and its train row says why)."""
    basis: str = "correctness"
    """Which rewards decide that a group has zero variance, for the filter and for dynamic sampling:
    correctness (the task's rewards, before any length shaping: a group all wrong or all right is
    dropped even when overlong penalties differ -- what DAPO (verl's filter_groups.metric=acc) and
    Magistral filter on) or shaped (the rewards trained on, after length shaping)."""


@dataclass
class SamplerConfig:
    """Which prompts are drawn: epochs over the training pool, optionally without easy prompts."""

    no_positive_resampling: bool = True
    """ScaleRL's curriculum: a prompt whose pass rate reaches pass_rate_threshold never comes back
    in later epochs. False: plain epochs."""
    pass_rate_threshold: float = 0.9
    """Pass rate (fraction of a group's generations with reward > 0) at which a prompt is retired."""
    pass_rate_window: int = 1
    """How many of the prompt's most recent groups are pooled into that pass rate: 1 = its latest
    group (the paper's reading), 0 = its whole history."""


@dataclass
class LengthConfig:
    """How long completions may get, and what happens at the limit."""

    mode: str = "interrupt"
    """interrupt (ScaleRL: force the interruption phrase when the thinking budget runs out),
    overlong_penalty (DAPO's soft length penalty on the reward), or truncate (plain cut-off); the
    modes are the registry scalerl.rl.length.LENGTH_MODES."""
    max_new_tokens: int = 14336
    """Hard cap on completion tokens, forced ones included (paper: 14k generation length)."""
    think_budget: tuple[int, int] = (12224, 12224)
    """[lo, hi]: each sequence's thinking budget is drawn uniformly from this range (interrupt mode).
    hi + the interruption phrase's tokens + answer_budget must fit in max_new_tokens, or an
    interrupted answer is cut short (checked with the run's tokenizer). 12,288 less 64 tokens kept
    for the phrase (our choice: the paper gives the 14k total, not its split)."""
    answer_budget: int = 2048
    """Tokens allowed after </think> (natural or forced) before the sequence is cut (interrupt mode)."""
    interruption_phrase: str = INTERRUPTION_PHRASE
    """Text forced when the thinking budget runs out; it must end with end_think."""
    end_think: str = "</think>"
    """Marker that ends the thinking part; detected in sampled tokens to switch to the answer budget."""
    overlong_max_len: int = 14336
    """L_max of DAPO's penalty clip((L_max - len) / L_cache - 1, -1, 0) (overlong_penalty mode)."""
    overlong_cache: int = 2048
    """L_cache: the penalty ramps from 0 to -1 over the last L_cache tokens before L_max."""
    mask_truncated: bool = False
    """Drop from the loss completions cut by a token budget (DAPO's overlong filtering)."""
    mask_interrupted: bool = False
    """Drop from the loss completions whose thinking budget ran out (interrupt mode: the phrase was forced).
    Where the budget is drawn per sequence, such an answer was written after a cut the policy did not choose,
    and its reward is as much the draw's as the policy's. Off in every preset: the paper trains on them (the
    interruption is its length control)."""


@dataclass
class OffPolicyConfig:
    """How generation and training overlap: the off-policy pipeline."""

    pipeline: PipelineMode = "pipeline-rl-k"
    """pipeline-rl-k (ScaleRL: generators keep running, weights pushed after every update, in-flight
    sequences continue on new weights), ppo-off-policy-k (generate k batches, then k optimizer steps
    on them), or sync (k = 1)."""
    k: int = 8
    """Maximum staleness: the trainer is at most k updates ahead of the data it consumes (paper: 8)."""


@dataclass
class BatchConfig:
    """Samples per optimizer step."""

    prompts_per_step: int = 48
    """Prompts (groups) per optimizer step (paper: 48)."""
    generations_per_prompt: int = 16
    """Completions sampled per prompt, the group size (paper: 16; 48 x 16 = 768 per update)."""


@dataclass
class OptimizerConfig:
    """AdamW with linear warm-up to a constant learning rate, as in the paper."""

    lr: float = 5e-7
    """Learning rate after warm-up (paper: constant 5e-7)."""
    betas: tuple[float, float] = (0.9, 0.999)
    """AdamW (beta1, beta2) (paper: not stated; torch defaults)."""
    eps: float = 1e-15
    """AdamW epsilon (paper: 1e-15, far below torch's 1e-8, so that very small gradients are still
    normalised instead of being damped by eps)."""
    weight_decay: float = 0.01
    """AdamW decoupled weight decay (paper: 0.01)."""
    warmup_steps: int = 100
    """Linear warm-up over this many steps to lr: step k (from 1) at lr * k / warmup_steps, so the first update
    is at lr / warmup_steps, not 0 (paper: 100; 0: lr from the first step)."""
    grad_clip: float | None = 1.0
    """Clip the global gradient norm to this value; null disables (paper: not stated)."""


@dataclass
class RecipeConfig:
    """An RL recipe: every component of the paper's recipe (docs/paper.md) as a switch."""

    loss: LossConfig = field(default_factory=LossConfig)
    """Policy loss (paper §3.2 'loss type'): which one, and its clips."""
    aggregation: str = "prompt"
    """Loss aggregation: prompt (each prompt's tokens over its generations' total, then mean over
    prompts; ScaleRL), sample (mean per sequence, then mean), or token (all tokens of the batch)."""
    advantages: AdvantageConfig = field(default_factory=AdvantageConfig)
    """Advantage normalisation."""
    filtering: FilterConfig = field(default_factory=FilterConfig)
    """Zero-variance filtering and DAPO dynamic sampling."""
    sampler: SamplerConfig = field(default_factory=SamplerConfig)
    """Prompt curriculum: no-positive-resampling or plain epochs."""
    length: LengthConfig = field(default_factory=LengthConfig)
    """Length control: forced interruptions, overlong penalty, or truncation."""
    fp32_lm_head: bool = True
    """Compute the LM head (logits) in fp32 on generator and trainer (MiniMax-M1, ScaleRL), so the
    importance ratio is free of the head's bf16 rounding."""
    off_policy: OffPolicyConfig = field(default_factory=OffPolicyConfig)
    """Off-policy pipeline: PipelineRL-k, PPO-off-policy-k, or synchronous."""
    batch: BatchConfig = field(default_factory=BatchConfig)
    """Prompts and generations per optimizer step."""
    optimizer: OptimizerConfig = field(default_factory=OptimizerConfig)
    """AdamW settings (no KL term, no entropy bonus)."""

    def problems(self) -> list[str]:
        """Every inconsistent value, each phrased as what to do (empty when the recipe is fine)."""
        return [p for check in _CHECKS for p in check(self)]

    def validate(self) -> "RecipeConfig":
        """Refuse inconsistent values, listing every problem at once (no torch needed). Component
        names are checked by :func:`scalerl.rl.components.validate_recipe`, which calls this too.

        Returns ``self`` so that ``cfg = load(...).validate()`` reads naturally.
        """
        problems = self.problems()
        if problems:
            raise ConfigError("invalid recipe: " + "; ".join(problems))
        return self


# One small function per concern; each yields the problems it finds, phrased as what to do.


def _check_loss(cfg: RecipeConfig):
    if not cfg.loss.cispo.eps_max > 0:
        yield f"loss.cispo.eps_max must be > 0 (ScaleRL uses 5), got {cfg.loss.cispo.eps_max}"
    band = cfg.loss.ratio_mask
    if band is not None and not (len(band) == 2 and 0 <= band[0] < 1 < band[1]):
        # (lo = hi = 1 passed and masked nearly every token: a ratio is 1 exactly only where nothing moved.)
        yield f"loss.ratio_mask must be [lo, hi] with 0 <= lo < 1 < hi (e.g. [0.8, 1.25]) or null, got {list(band)}"
    elif band is not None and cfg.loss.name == "gspo":
        # A token left out of GSPO's per-sequence ratio moves it: a sequence GSPO's clip had stopped got a
        # gradient again through its other tokens (review x).
        yield ("loss.ratio_mask does not apply to gspo, whose trust region is one ratio per sequence (a token "
               "mask changes that ratio); set loss.ratio_mask null, or use cispo, ppo or dapo")
    for name in ("ppo", "dapo", "gspo"):
        clip: ClipParams = getattr(cfg.loss, name)
        if not 0 <= clip.eps_low < 1:
            yield f"loss.{name}.eps_low must be in [0, 1), got {clip.eps_low}"
        if not clip.eps_high >= 0:
            yield f"loss.{name}.eps_high must be >= 0, got {clip.eps_high}"


def _check_advantages(cfg: RecipeConfig):
    if not cfg.advantages.std_eps > 0:
        yield f"advantages.std_eps must be > 0, got {cfg.advantages.std_eps}"
    elif cfg.advantages.std_eps == math.inf:
        yield "advantages.std_eps must be finite, got inf"


def _check_filtering(cfg: RecipeConfig):
    f = cfg.filtering
    if f.dynamic_sampling and not f.zero_variance:
        yield (
            "filtering.dynamic_sampling refills the groups that zero-variance filtering drops; "
            "set filtering.zero_variance=true or filtering.dynamic_sampling=false"
        )
    if f.max_generation_rounds < 1:
        yield f"filtering.max_generation_rounds must be >= 1, got {f.max_generation_rounds}"


def _check_sampler(cfg: RecipeConfig):
    s = cfg.sampler
    if not 0 < s.pass_rate_threshold <= 1:
        yield f"sampler.pass_rate_threshold must be in (0, 1] (paper: 0.9), got {s.pass_rate_threshold}"
    if s.pass_rate_window < 0:
        yield f"sampler.pass_rate_window must be >= 0 (0 = whole history), got {s.pass_rate_window}"


def _check_length(cfg: RecipeConfig):
    n = cfg.length
    lo, hi = n.think_budget
    if n.max_new_tokens < 1:
        yield f"length.max_new_tokens must be >= 1, got {n.max_new_tokens}"
    if not 0 <= lo <= hi:
        yield f"length.think_budget must be [lo, hi] with 0 <= lo <= hi, got [{lo}, {hi}]"
    if n.answer_budget < 1:
        yield f"length.answer_budget must be >= 1, got {n.answer_budget}"
    if n.mode == "interrupt" and (not n.end_think.strip() or not n.interruption_phrase.strip()):
        # (review at: '' passed every check, then the interrupt controller's set-up raised with a traceback)
        yield (f"length.end_think and length.interruption_phrase must be non-empty text in interrupt mode (the tag "
               f"that closes the thinking, e.g. '</think>', and the phrase forced when the budget runs out), got "
               f"end_think {n.end_think!r}, interruption_phrase {n.interruption_phrase!r}")
    elif n.mode == "interrupt" and not n.interruption_phrase.rstrip().endswith(n.end_think):
        # (interrupt mode only: no other forces the phrase -- qwen-dapo refused --set end_think=</reasoning> for a
        # phrase it never writes: review dw)
        yield f"length.interruption_phrase must end with end_think ({n.end_think!r}) so the answer phase starts"
    if n.mask_interrupted and n.mode != "interrupt":  # (it would drop nothing: a sweep of it trained alike twice)
        yield (f"length.mask_interrupted applies to length.mode=interrupt only (no other mode forces an "
               f"interruption, so it would leave nothing out of the loss); got mode {n.mode!r}")
    if n.mode != "overlong_penalty":
        # Unused in the other modes: checked there, a smaller max_new_tokens alone took three tries
        # (overlong_max_len, then overlong_cache, then the budget) for settings the run never reads.
        return
    if not 0 < n.overlong_cache <= n.overlong_max_len:
        yield (
            f"length.overlong_cache must be in (0, overlong_max_len], got {n.overlong_cache} "
            f"with overlong_max_len {n.overlong_max_len}"
        )
    if n.overlong_max_len > n.max_new_tokens:
        # Both fixes at once where lowering L_max alone leaves L_cache above it (review dw: the advice, followed,
        # was refused again for overlong_cache).
        cache = (f" and overlong_cache <= overlong_max_len (now {n.overlong_cache}: e.g. "
                 f"{max(1, n.max_new_tokens // 4)})" if n.overlong_cache > n.max_new_tokens else "")
        yield (
            f"length.overlong_max_len ({n.overlong_max_len}) exceeds max_new_tokens ({n.max_new_tokens}): "
            f"the penalty could never reach -1; set overlong_max_len <= max_new_tokens{cache}"
        )


def sync_means_k1(cfg: RecipeConfig, k_set: bool) -> RecipeConfig:
    """``pipeline: sync`` on a recipe whose k is not 1 (a preset's 8): synchronous training has no
    staleness, so k becomes 1 -- unless the user set k too (``k_set``), which validation checks.
    One rule for ``scalerl train --set`` and ``scalerl recipes show``."""
    o = cfg.off_policy
    if o.pipeline == "sync" and o.k != 1 and not k_set:
        return dataclasses.replace(cfg, off_policy=dataclasses.replace(o, k=1))
    return cfg


def _check_off_policy(cfg: RecipeConfig):
    o = cfg.off_policy
    if o.pipeline not in get_args(PipelineMode):
        yield f"off_policy.pipeline: unknown pipeline {o.pipeline!r}; known: {', '.join(get_args(PipelineMode))}"
    if o.k < 1:
        yield f"off_policy.k must be >= 1, got {o.k}"
    if o.pipeline == "sync" and o.k != 1:
        yield f"off_policy.pipeline=sync means k=1 (got k={o.k}); set off_policy.k=1 or choose ppo-off-policy-k"


def _check_batch(cfg: RecipeConfig):
    b = cfg.batch
    if b.prompts_per_step < 1:
        yield f"batch.prompts_per_step must be >= 1, got {b.prompts_per_step}"
    if b.generations_per_prompt < 2:
        yield (
            f"batch.generations_per_prompt must be >= 2 (a group of one has a zero group-centred "
            f"advantage), got {b.generations_per_prompt}"
        )


def _check_optimizer(cfg: RecipeConfig):
    o = cfg.optimizer
    if not o.lr > 0:
        yield f"optimizer.lr must be > 0, got {o.lr}"
    # inf: every weight inf after the first step, or (eps, std_eps) every update or advantage 0.
    for name, value in (("optimizer.lr", o.lr), ("optimizer.eps", o.eps), ("optimizer.weight_decay", o.weight_decay)):
        if value == math.inf:
            yield f"{name} must be finite, got inf"
    if not all(0 <= b < 1 for b in o.betas):
        yield f"optimizer.betas must be in [0, 1), got {list(o.betas)}"
    if not o.eps > 0:
        yield f"optimizer.eps must be > 0, got {o.eps}"
    if o.weight_decay < 0:
        yield f"optimizer.weight_decay must be >= 0, got {o.weight_decay}"
    if o.warmup_steps < 0:
        yield f"optimizer.warmup_steps must be >= 0, got {o.warmup_steps}"
    if o.grad_clip is not None and not o.grad_clip > 0:
        yield f"optimizer.grad_clip must be > 0 or null (no clipping), got {o.grad_clip}"


_CHECKS = (
    _check_loss,
    _check_advantages,
    _check_filtering,
    _check_sampler,
    _check_length,
    _check_off_policy,
    _check_batch,
    _check_optimizer,
)


#: The built-in losses, each reading its own section of ``loss`` (a loss registered by hand reads ``extra``).
_LOSS_SECTIONS = ("cispo", "ppo", "dapo", "gspo")

#: The recipe settings a choice of the recipe leaves unread: (dotted key or prefix, why unread -- None where the
#: recipe reads it). A ``--set`` of one changed nothing and said nothing (review dw: ``--set loss.dapo.eps_high``
#: under CISPO, a thinking budget under DAPO's overlong penalty); one that breaks the run is refused by the
#: checks above instead (``length.mask_interrupted``).
_UNREAD = (
    *((f"loss.{name}.", lambda c, name=name: f"loss.name is {c.loss.name}"
       if c.loss.name in _LOSS_SECTIONS and c.loss.name != name else None) for name in _LOSS_SECTIONS),
    *((key, lambda c: None if c.length.mode == "interrupt" else
       f"length.mode is {c.length.mode}: only interrupt draws a thinking budget and forces its phrase")
      for key in ("length.think_budget", "length.answer_budget", "length.interruption_phrase")),
    ("length.overlong_", lambda c: None if c.length.mode == "overlong_penalty" else
     f"length.mode is {c.length.mode}: only overlong_penalty shapes the reward by length"),
    ("filtering.max_generation_rounds", lambda c: None if c.filtering.dynamic_sampling else
     "filtering.dynamic_sampling is off"),
    ("filtering.basis", lambda c: None if c.filtering.zero_variance or c.filtering.dynamic_sampling else
     "filtering.zero_variance and dynamic_sampling are off"),
    ("sampler.pass_rate_", lambda c: None if c.sampler.no_positive_resampling else
     "sampler.no_positive_resampling is off"),
)


def why_unread(cfg: RecipeConfig, key: str) -> str | None:
    """Why recipe ``cfg`` does not read the dotted ``key`` (``loss.dapo.eps_high``), or None where it does."""
    return next((why for prefix, reason in _UNREAD if key.startswith(prefix) and (why := reason(cfg))), None)
