"""One policy update: rewards -> advantages -> masked, aggregated policy loss -> one optimizer step.

The order of the recipe's parts, top to bottom (each a switch in ``RecipeConfig``):

0. an empty batch (dynamic sampling kept no group) is skipped, and says so;
1. zero-variance filtering: groups whose rewards (on ``filtering.basis``: the task's, or the
   shaped ones) are all equal leave the loss;
2. advantages: group-centred rewards, normalised by the batch / prompt std (after step 1);
3. the loss mask: completion tokens the policy sampled (forced interruption tokens are out),
   times step 1's filter, times the truncation filter (``length.mask_truncated``);
4. aggregation weights (token / sample / prompt) from that mask, computed once for the step;
5. per micro-batch: the trainer's log-probs (same layout and temperature convention as the
   generator's), the policy loss (cispo / ppo / dapo / gspo) against the generator's own
   log-probs, ``sum(weights * per_token_loss)``, backward -- the gradients add up to exactly
   the full-batch gradient. Sequences that cannot contribute to it skip the forward and
   backward passes: no token in the loss (a filtered group, a masked truncation), or, under a
   built-in loss, an advantage of exactly 0 (a group whose rewards are all equal, when the
   filter is off). The rest are ordered by length before being cut into micro-batches, so a
   micro-batch pads to its own longest sequence, not the step's;
6. gradient clipping, a finite check (a NaN/inf step is skipped and reported), AdamW step.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Sequence

import torch

from scalerl.errors import NonFiniteError
from scalerl.generate.base import Completion
from scalerl.generate.logprobs import completion_logprobs, pack_completions, shared_prompt_logprobs
from scalerl.rl.advantages import compute_advantages
from scalerl.rl.aggregate import aggregation_weights
from scalerl.rl.components import RecipeComponents, resolve_recipe
from scalerl.rl.filters import zero_variance_mask
from scalerl.rl.losses import LossInputs
from scalerl.rl.recipe import RecipeConfig
from scalerl.rollout.groups import Group, completion_lags
from scalerl.train.memory import peak_memory_gb
from scalerl.train.micro_batches import micro_batches
from scalerl.train.share import SINGLE, Share, full_value
from scalerl.train.precision import FULL, Precision


@dataclass
class UpdateResult:
    metrics: dict[str, float]
    trained_tokens: int
    """Completion tokens that went through the trainer's forward and backward passes."""
    skipped: bool
    """True when the step was skipped (non-finite loss or gradient, or nothing to train on)."""
    reason: str = ""
    lag_counts: dict[int, int] = field(default_factory=dict)
    """Tokens in the loss mask per lag (updates between the sampling weights and ``version``)."""


def build_optimizer(model: torch.nn.Module, recipe: RecipeConfig) -> tuple[torch.optim.Optimizer, Any]:
    """AdamW with a linear warm-up to a constant learning rate (the paper's schedule)."""
    o = recipe.optimizer
    params = [p for p in model.parameters() if p.requires_grad]
    # Plain CPU tensors: the fused kernel updates every tensor in one call instead of a Python loop
    # over them (tiny model, 51 tensors: 5.7 -> 1.6 ms a step; benchmarks/cpu_decode.py).
    # Sharded (DTensor) and accelerator parameters keep torch's default choice.
    fused = bool(params) and all(p.device.type == "cpu" and type(p.data) is torch.Tensor for p in params)
    optimizer = torch.optim.AdamW(
        params, lr=o.lr, betas=tuple(o.betas), eps=o.eps, weight_decay=o.weight_decay, fused=fused or None,
    )
    warmup = max(o.warmup_steps, 0)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / warmup) if warmup else 1.0)
    return optimizer, scheduler


def _padded(rows: Sequence[Sequence[float]], width: int, dtype=torch.float32) -> torch.Tensor:
    out = torch.zeros((len(rows), width), dtype=dtype)
    for i, r in enumerate(rows):
        if r:
            out[i, : len(r)] = torch.as_tensor(r, dtype=dtype)
    return out


def policy_update(
    model: torch.nn.Module,
    optimizer: torch.optim.Optimizer,
    scheduler: Any,
    groups: Sequence[Group],
    recipe: RecipeComponents | RecipeConfig,
    *,
    temperature: float,
    pad_token_id: int,
    micro_batch_size: int,
    micro_batch_tokens: int = 0,
    device: torch.device | str = "cpu",
    version: int = 0,
    skip_idle: bool = True,
    share_prompt: bool = True,
    precision: Precision = FULL,
    share: Share = SINGLE,
    logits_budget: int = 0,
) -> UpdateResult:
    """One optimizer step on ``groups`` (see the module docstring for the order of the parts).

    ``recipe``: the run's resolved components (:func:`scalerl.rl.components.resolve_recipe`,
    done once by the trainer); a plain :class:`RecipeConfig` is resolved here.

    ``skip_idle``: leave sequences with no gradient (no token in the loss, or a zero advantage
    under a built-in loss) out of the forward and backward passes, and cut the rest into
    micro-batches by length. The gradient is the same either way (up to float summation
    order); False runs every sequence, in batch order (for tests and comparisons).
    ``share_prompt``: run each distinct prompt through the model once per micro-batch and its
    completions on top of its KV cache (:func:`shared_prompt_logprobs`: same log-probs, ~20%
    less compute on the tiny task); False: every sequence whole. The
    ``loss/*`` metrics are means over the tokens that went through the passes,
    ``no_grad_frac`` is the share of sequences left out, and ``memory/peak_gb`` the process's
    peak memory after the passes (:mod:`scalerl.train.memory`; the largest over the ranks).
    ``precision``: the compute dtype of the forward passes (autocast) and the fp16 loss scaling
    (:mod:`scalerl.train.precision`); the parameters and the optimizer stay as they are (fp32).
    ``share``: under multi-process training (:mod:`scalerl.train.distributed`), this rank's share
    of the micro-batches; everything before them is computed on the whole batch, so the summed
    gradient, the clipping norm and the metrics are those of one process.
    ``micro_batch_tokens``: also close a micro-batch before its padded tokens exceed this
    (:mod:`scalerl.train.micro_batches`; 0: by ``micro_batch_size`` alone).
    ``logits_budget``: bytes a pass's fp32 logits may take; above it the LM head runs in chunks
    (:mod:`scalerl.generate.head_chunks`: same log-probs and gradients). 0: in one piece.
    """
    parts = recipe if isinstance(recipe, RecipeComponents) else resolve_recipe(recipe)
    cfg = parts.recipe
    completions = [c for g in groups for c in g.completions]
    if not completions:  # 0: dynamic sampling ran out of rounds with no group kept
        return UpdateResult({}, 0, skipped=True, reason="empty batch: no group to train on (dynamic sampling kept "
                            f"none in {cfg.filtering.max_generation_rounds} rounds)")
    batch = prepare_batch(groups, completions, parts)  # 1-4
    lags = completion_lags(completions, version)
    lag_counts = dict(Counter(lags))
    metrics = _batch_metrics(batch, lags, parts)
    if int(batch.loss_mask.sum().item()) == 0:
        return UpdateResult(metrics, 0, skipped=True, reason=_no_tokens_reason(cfg), lag_counts=lag_counts)

    # 5: the passes -- forward, loss, backward per micro-batch -- over the sequences with a gradient.
    order = pass_order(batch, parts, skip_idle=skip_idle, share_prompt=share_prompt)
    model.train()
    optimizer.zero_grad(set_to_none=True)
    sums = _run_passes(model, batch, order, parts, temperature=temperature, pad_token_id=pad_token_id,
                       micro_batch_size=micro_batch_size, micro_batch_tokens=micro_batch_tokens, device=device,
                       share_prompt=share_prompt, precision=precision, share=share, logits_budget=logits_budget)
    if share.world > 1:  # every rank's part of the metrics
        sums = sums.merged(share)

    # 6: clip, check, step.
    if not order:  # every advantage was 0: the gradient is exactly 0, and AdamW still takes its step
        for p in model.parameters():
            if p.requires_grad:
                p.grad = torch.zeros_like(p)
    params = [p for p in model.parameters() if p.grad is not None]
    precision.unscale_(optimizer)  # fp16: true gradients before clipping and the finite check
    clip = cfg.optimizer.grad_clip
    # Under FSDP the gradients are DTensor shards: the norm is the full one (clipping included).
    grad_norm = full_value(torch.nn.utils.clip_grad_norm_(params, clip if clip is not None else float("inf")))
    metrics.update(sums.metrics())
    metrics["no_grad_frac"] = 1.0 - len(order) / max(len(completions), 1)  # sequences left out (skip_idle)
    metrics["loss"] = sums.loss
    metrics["grad_norm"] = float(grad_norm)
    metrics["lr"] = scheduler.get_last_lr()[0]
    metrics["memory/peak_gb"] = sums.peak_gb
    metrics.update(precision.metrics())
    if not (math.isfinite(sums.loss) and math.isfinite(float(grad_norm))):
        optimizer.zero_grad(set_to_none=True)
        reason = precision.skip(sums.loss, float(grad_norm))  # fp16: an overflow lowers the loss scale
        return UpdateResult(metrics, sums.trained, skipped=True, reason=reason, lag_counts=lag_counts)
    precision.step(optimizer)
    scheduler.step()
    optimizer.zero_grad(set_to_none=True)
    # A finite gradient times a huge learning rate can still overflow a weight; the next forward
    # would then turn every logit into NaN. Stop here, where the cause is known.
    if params and not bool(torch.stack([torch.isfinite(p).all() for p in params]).all()):  # one sync
        raise NonFiniteError(f"the optimizer step left non-finite weights (lr {metrics['lr']:g}, "
                             f"gradient norm {metrics['grad_norm']:.3g})")
    return UpdateResult(metrics, sums.trained, skipped=False, lag_counts=lag_counts)


@dataclass
class Batch:
    """A step's sequences and what the recipe's parts 1-4 made of them, before any pass: rows are
    completions (in group order), columns their completion tokens, padded to the longest."""

    completions: list[Completion]
    group_ids: torch.Tensor
    """The group (prompt) of each row."""
    keep: torch.Tensor
    """Rows left in the loss by the zero-variance and truncation filters (bool)."""
    advantages: torch.Tensor
    loss_mask: torch.Tensor
    """Tokens in the loss: sampled by the policy (forced interruption tokens out), in a kept row."""
    gen_logprobs: torch.Tensor
    """The generator's own log-probs of the tokens (the importance ratio's denominator)."""
    weights: torch.Tensor
    """Each token's aggregation weight over the whole step (token / sample / prompt)."""


def prepare_batch(groups: Sequence[Group], completions: list[Completion], parts: RecipeComponents) -> Batch:
    """Parts 1-4 of the update, on the whole batch (under multi-process training every rank
    computes them alike): which sequences and tokens enter the loss, their advantages, and the
    aggregation weights."""
    cfg = parts.recipe
    group_ids = torch.tensor([i for i, g in enumerate(groups) for _ in g.completions])
    # float64 like the advantages computed from them (a reward of 1e8 + 1 is 1e8 in float32).
    shaped = torch.tensor([r for g in groups for r in g.shaped], dtype=torch.float64)
    # 1-3: which sequences and tokens enter the loss, and their advantages.
    keep = torch.ones(len(completions), dtype=torch.bool)
    if cfg.filtering.zero_variance:
        basis = [r for g in groups for r in parts.filter_values(g.rewards, g.shaped)]
        keep &= zero_variance_mask(torch.tensor(basis, dtype=torch.float64), group_ids)
    keep &= torch.tensor([parts.keep_in_loss(c.finish_reason) for c in completions], dtype=torch.bool)
    advantages = compute_advantages(shaped, group_ids, parts.normalization, keep=keep,
                                    std_eps=cfg.advantages.std_eps).float()
    width = max((len(c.token_ids) for c in completions), default=0)
    loss_mask = _padded([c.loss_mask for c in completions], width) * keep[:, None]
    gen_logprobs = _padded([c.logprobs for c in completions], width)
    # 4: aggregation weights over the whole step.
    weights = aggregation_weights(parts.aggregation, loss_mask, group_ids)
    return Batch(completions, group_ids, keep, advantages, loss_mask, gen_logprobs, weights)


def _batch_metrics(batch: Batch, lags: list[int], parts: RecipeComponents) -> dict[str, float]:
    keep = batch.keep
    metrics = {
        "filtered_frac": 1.0 - keep.float().mean().item(),
        "adv_abs_mean": batch.advantages[keep].abs().mean().item() if keep.any() else 0.0,
        "lag_mean": float(sum(lags) / len(lags)) if lags else 0.0,
        "lag_max": float(max(lags)) if lags else 0.0,
    }
    length = parts.recipe.length
    if length.mask_truncated or length.mask_interrupted:
        # The length masks' own share, apart from zero-variance filtering's: filtered_frac mixes the two, and a
        # batch mostly masked normalises its advantages over the few completions left (worth seeing).
        masked = [not parts.keep_in_loss(c.finish_reason) for c in batch.completions]
        metrics["length_masked_frac"] = sum(masked) / len(masked)
    return metrics


def pass_order(batch: Batch, parts: RecipeComponents, *, skip_idle: bool, share_prompt: bool) -> list[int]:
    """The rows that go through the passes, in the order they are cut into micro-batches."""
    completions, group_ids = batch.completions, batch.group_ids
    order = list(range(len(completions)))
    if skip_idle:
        active = batch.loss_mask.sum(dim=1) > 0
        if parts.skip_zero_advantage:
            active &= batch.advantages != 0
        order = active.nonzero().flatten().tolist()
    if share_prompt and order:
        # Whole groups per micro-batch, so each prompt goes through the model once; groups in
        # order of their longest completion, so a micro-batch pads little.
        longest: dict[int, int] = {}
        for i in order:
            g = int(group_ids[i])
            longest[g] = max(longest.get(g, 0), len(completions[i].token_ids))
        order.sort(key=lambda i: (longest[int(group_ids[i])], int(group_ids[i])))
    elif skip_idle:
        # Shortest first: micro-batches of similar lengths pad less.
        order = sorted(order, key=lambda i: (len(completions[i].token_ids), len(completions[i].prompt_ids)))
    return order


@dataclass
class PassSums:
    """What the passes add up: the loss, the tokens the metrics are weighted by, the trained tokens,
    the loss's metrics (token-weighted sums, and maxima) and the peak memory."""

    loss: float = 0.0
    counted: float = 0.0
    """Loss-mask tokens of the passes (the weights of the ``loss/*`` means)."""
    trained: int = 0
    """Completion tokens that went through the passes."""
    totals: dict[str, float] = field(default_factory=dict)
    maxima: dict[str, float] = field(default_factory=dict)
    peak_gb: float = 0.0

    def add(self, metrics: dict[str, Any], n_tok: float) -> None:
        for k, v in metrics.items():
            if k.endswith("_max"):  # a maximum over the step, not a token-weighted mean
                self.maxima[k] = max(self.maxima.get(k, -math.inf), float(v))
            else:
                self.totals[k] = self.totals.get(k, 0.0) + float(v) * n_tok

    def merged(self, share: Share) -> "PassSums":
        """Every rank's sums, as one process would have them."""
        ranks = share.merge({"loss": self.loss, "counted": self.counted, "trained": self.trained,
                             "totals": self.totals, "maxima": self.maxima, "peak_gb": self.peak_gb})
        out = PassSums(loss=sum(p["loss"] for p in ranks), counted=sum(p["counted"] for p in ranks),
                       trained=sum(p["trained"] for p in ranks), peak_gb=max(p["peak_gb"] for p in ranks))
        for p in ranks:
            for k, v in p["totals"].items():
                out.totals[k] = out.totals.get(k, 0.0) + v
            for k, v in p["maxima"].items():
                out.maxima[k] = max(out.maxima.get(k, -math.inf), v)
        return out

    def metrics(self) -> dict[str, float]:
        """The ``loss/*`` metrics: token-weighted means, and maxima."""
        return {**{f"loss/{k}": v / max(self.counted, 1.0) for k, v in self.totals.items()},
                **{f"loss/{k}": v for k, v in self.maxima.items()}}


def _run_passes(model: torch.nn.Module, batch: Batch, order: list[int], parts: RecipeComponents, *,
                temperature: float, pad_token_id: int, micro_batch_size: int, micro_batch_tokens: int,
                device: torch.device | str, share_prompt: bool, precision: Precision, share: Share,
                logits_budget: int) -> PassSums:
    """Part 5: this rank's micro-batches of ``order`` through forward, loss and backward; the
    gradients add up in the parameters' ``.grad``."""
    completions, loss_mask = batch.completions, batch.loss_mask
    # The micro-batches one process would run (a micro-batch with nothing to learn is left out),
    # then this rank's share of them; a rank with one fewer runs a zero-weighted pass.
    lengths = [(len(c.prompt_ids), len(c.token_ids)) for c in completions]
    micro = micro_batches(order, lengths, micro_batch_size, micro_batch_tokens)
    micro = [m for m in micro if loss_mask[torch.tensor(m, dtype=torch.long)].sum() > 0]
    mine, passes = share.split(micro)
    plan = [(m, 1.0) for m in mine] + [(micro[0], 0.0) for _ in range(passes - len(mine))]
    sums = PassSums()
    for index, weight in plan:
        rows = torch.tensor(index, dtype=torch.long)
        mb_mask = loss_mask[rows]
        chunk = [completions[i] for i in index]
        with precision.autocast():  # bf16 / fp16 compute on the fp32 weights; fp32 logits (FP32 head)
            if share_prompt:
                logprobs, _, c_mask = shared_prompt_logprobs(model, chunk, temperature, pad_token_id, device,
                                                             logits_budget)
            else:
                sub = pack_completions(chunk, pad_token_id, device)
                logprobs, c_mask = completion_logprobs(model, sub, temperature, logits_budget), sub["completion_mask"]
        t = logprobs.shape[1]
        out = parts.loss(
            LossInputs(
                logprobs=logprobs,
                gen_logprobs=batch.gen_logprobs[rows, :t].to(device),
                advantages=batch.advantages[rows].to(device),
                mask=mb_mask[:, :t].to(device),
                group=batch.group_ids[rows].to(device),
            )
        )
        loss = (batch.weights[rows, :t].to(device) * out.per_token).sum()
        # x world: FSDP averages gradients over ranks, the step needs their sum.
        precision.backward(loss * (weight * share.world) if share.world > 1 else loss)  # fp16: scaled
        if weight == 0.0:  # a padding pass: its gradient is 0 and it counts in no metric
            continue
        sums.loss += float(loss.detach())
        n_tok = float(mb_mask.sum())
        sums.counted += n_tok
        sums.add(out.metrics, n_tok)
        sums.trained += int(c_mask.sum())
    sums.peak_gb = peak_memory_gb(device)  # after the passes: activations and gradients included
    return sums


def _no_tokens_reason(cfg) -> str:
    """Why a step had no trainable token: every group filtered -- or, under ``length.mask_truncated`` /
    ``mask_interrupted``, every completion left out of the loss (the reason said "every group filtered" of a
    batch no group of which was)."""
    masks = [f"length.{name}" for name in ("mask_truncated", "mask_interrupted") if getattr(cfg.length, name)]
    if not masks:
        return "no trainable tokens (every group filtered)"
    return f"no trainable tokens (every group filtered, or every completion left out of the loss by {' / '.join(masks)})"
