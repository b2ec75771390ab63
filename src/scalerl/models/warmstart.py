"""Supervised warm start: teacher-forced next-token training on reference completions.

RL needs a policy that already succeeds sometimes (no reward, no gradient). A real base model
has that from pre-training; the tiny model gets it from a few hundred steps of imitation of
the task's reference completions (prompt + scratchpad + answer + EOS), loss on the completion
tokens only. Stopped early on purpose: the point is a low, non-zero pass rate, not a solved task.
"""

from __future__ import annotations

import math
import random
import time
from dataclasses import dataclass
from typing import Any, Callable, Sequence

import torch

from scalerl.tasks.encoding import encode_prompt


#: torch threads of the warm start: a constant, not the machine's core count, so that the weights
#: (cached under a key that ignores the machine) never depend on how many cores built them --
#: parallel kernels split their sums by thread count, and float rounding follows the split.
#: Two, not one: measured on tiny-m's 700-step build (AMD EPYC, 2 cores) 94 s of warm start
#: against 145 s with one thread, and the weights bit-identical to the one-thread build (three
#: or four threads are not); on a one-core machine two threads cost ~11% over one.
WARM_START_THREADS = 2


@dataclass(frozen=True)
class WarmStartConfig:
    """How long and how hard to imitate."""

    steps: int = 175
    """Optimizer steps."""
    batch_size: int = 32
    """Sequences per step."""
    lr: float = 3e-3
    """Peak learning rate (linear warm-up over 10% of the steps, then cosine to 10%)."""
    weight_decay: float = 0.01
    seed: int = 0
    digit_noise: float = 0.0
    """Share of the completions' digits replaced by a random digit (each drawn independently,
    once per example): imitation of noisy demonstrations (see :func:`corrupt_digits`)."""


def corrupt_digits(text: str, rate: float, rng: random.Random) -> str:
    """``text`` with each digit replaced, with probability ``rate``, by a uniformly drawn digit.

    A base model that imitated noisy demonstrations knows the procedure (its most likely token
    is right wherever its capacity allows) but samples mistakes at every digit, so its sampled
    pass rate falls with the length of the computation -- the room RL's sharpening has to fill,
    as with a pre-trained LLM. Without noise a warm start has to be stopped early to leave that
    room, and where it lands then depends steeply on the step count, the learning rate and the
    model size (measured: benchmarks/workload_movers.py).
    """
    if rate <= 0:
        return text
    return "".join(str(rng.randrange(10)) if ch.isdigit() and rng.random() < rate else ch for ch in text)


def _batch(examples: Sequence[tuple[list[int], list[int]]], pad_id: int) -> tuple[torch.Tensor, ...]:
    """Right-padded input ids, attention mask and labels (-100 on prompt and padding)."""
    length = max(len(p) + len(c) for p, c in examples)
    ids = torch.full((len(examples), length), pad_id, dtype=torch.long)
    labels = torch.full((len(examples), length), -100, dtype=torch.long)
    mask = torch.zeros((len(examples), length), dtype=torch.long)
    for i, (p, c) in enumerate(examples):
        seq = p + c
        ids[i, : len(seq)] = torch.tensor(seq)
        labels[i, len(p) : len(seq)] = torch.tensor(c)
        mask[i, : len(seq)] = 1
    return ids, mask, labels


def _lr_factor(step: int, total: int) -> float:
    warm = max(1, total // 10)
    if step < warm:
        return (step + 1) / warm
    progress = (step - warm) / max(1, total - warm)
    return 0.1 + 0.9 * 0.5 * (1 + math.cos(math.pi * progress))


def supervised_warm_start(
    model: Any,
    tokenizer: Any,
    pairs: Sequence[tuple[str, str]],
    config: WarmStartConfig = WarmStartConfig(),
    progress: Callable[[int], Any] | None = None,
) -> dict[str, float]:
    """Train ``model`` in place on ``(prompt, completion)`` text pairs; returns loss and timing figures.
    ``progress``: called with 1 after every optimizer step (a progress bar's ``update``)."""
    if not pairs:
        raise ValueError("supervised_warm_start needs at least one (prompt, completion) pair")
    eos = tokenizer.eos_token_id
    rng = random.Random(config.seed)
    noise = random.Random(f"{config.seed}:noise")
    examples = [
        (encode_prompt(tokenizer, p),
         list(tokenizer(corrupt_digits(c, config.digit_noise, noise), add_special_tokens=False).input_ids) + [eos])
        for p, c in pairs
    ]
    torch.manual_seed(config.seed)
    threads = torch.get_num_threads()
    torch.set_num_threads(WARM_START_THREADS)
    try:
        return _train(model, tokenizer, examples, config, rng, progress)
    finally:
        torch.set_num_threads(threads)


def _train(model: Any, tokenizer: Any, examples: list, config: WarmStartConfig, rng: random.Random,
           progress: Callable[[int], Any] | None) -> dict[str, float]:
    opt = torch.optim.AdamW(model.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    model.train()
    start, losses, order = time.perf_counter(), [], []
    for step in range(config.steps):
        if len(order) < config.batch_size:  # epochs over a reshuffled pool
            more = list(range(len(examples)))
            rng.shuffle(more)
            order += more
        picked, order = order[: config.batch_size], order[config.batch_size :]
        ids, mask, labels = _batch([examples[i] for i in picked], tokenizer.pad_token_id)
        for group in opt.param_groups:
            group["lr"] = config.lr * _lr_factor(step, config.steps)
        loss = model(input_ids=ids, attention_mask=mask, labels=labels).loss
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        losses.append(loss.item())
        if progress is not None:
            progress(1)
    model.eval()
    tail = losses[-max(1, len(losses) // 10) :]
    return {
        "steps": config.steps,
        "final_loss": sum(tail) / len(tail),
        "seconds": time.perf_counter() - start,
    }
