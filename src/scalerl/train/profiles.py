"""Scale profiles: sizes that make a paper-scale preset sensible on other hardware, and the automatic choice.

A profile is a list of ``key=value`` overrides of batch sizes, token budgets, the learning rate
and evaluation sizes -- never an algorithmic switch (loss, aggregation, ...), so a
leave-one-out variant stays a leave-one-out variant. It is applied after ``--config`` and the
command-line flags and before ``--set``, so ``--set`` always wins; ``--profile none`` keeps the
preset's values (the paper's: 48 prompts x 16 samples, 14,336 tokens, lr 5e-7).

``profile: auto`` (the default) chooses by model and device (:data:`AUTO`):

==================================  ============  ============================================================
model                               device        profile
==================================  ============  ============================================================
``tiny``, ``tiny-s/m/l``            any           ``cpu-tiny-mix`` on ``arithmetic-mix``, else ``cpu-tiny``
any other                           CPU           ``cpu-small`` (a note says so)
under 1B parameters                 GPU           ``gpu-small`` (a note says so)
1B parameters or more               GPU           ``none``: the paper's sizes
==================================  ============  ============================================================

The parameter count is read from the model's config without loading weights (a meta-device
instantiation). No torch at import time: ``scalerl train --help`` stays fast.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # train.config imports this module
    from scalerl.train.config import TrainConfig


#: name -> overrides (full dotted paths of TrainConfig).
PROFILES: dict[str, list[str]] = {
    "none": [],
    # The tiny CPU model: 1M parameters, ~25-token completions. lr 5e-7 would not move it in a
    # few minutes; 3e-4 wrecks it (measured). Budgets: the scratchpad of a 2-digit sum is ~17
    # tokens, so a thinking budget drawn from [18, 26] interrupts only rambling sequences.
    "cpu-tiny": [
        "recipe.batch.prompts_per_step=16",
        "recipe.batch.generations_per_prompt=8",
        "recipe.optimizer.lr=1e-4",
        "recipe.optimizer.eps=1e-8",
        "recipe.optimizer.warmup_steps=5",
        "recipe.length.max_new_tokens=48",
        "recipe.length.think_budget=[18, 26]",
        "recipe.length.answer_budget=8",
        "recipe.length.overlong_max_len=48",
        "recipe.length.overlong_cache=16",
    ],
    # The same model scale on the arithmetic-mix workload (2-4 columns, 18-38 thinking tokens).
    # A thinking budget drawn from [26, 34] finishes every 2-column scratchpad, some 3- and
    # 4-column ones: the by-construction ceiling is 0.614 on val (ArithmeticMixTask.ceiling).
    # 48 tokens: the longest interrupted sequence is 34 + the 3-token phrase (the character tokenizer: the sentence, a space, </think>) + an 8-token answer.
    # Evaluation: 500 problems x mean@2 of the stratified val set, sampling sd ~0.007 per point
    # at ~3.5 CPU-s (benchmarks/eval_noise.py, docs/workload.md).
    "cpu-tiny-mix": [
        "recipe.batch.prompts_per_step=16",
        "recipe.batch.generations_per_prompt=8",
        "recipe.optimizer.lr=1e-4",
        "recipe.optimizer.eps=1e-8",
        "recipe.optimizer.warmup_steps=5",
        "recipe.length.max_new_tokens=48",
        "recipe.length.think_budget=[26, 34]",
        "recipe.length.answer_budget=8",
        "recipe.length.overlong_max_len=48",
        "recipe.length.overlong_cache=16",
        "eval.problems=500",
        "eval.samples_per_problem=2",
    ],
    # A user's model on a CPU: steps of seconds to minutes, not hours, and an evaluation that
    # finishes. The learning rate is the usual one for RL on sub-billion-parameter models
    # (TRL's GRPO default); the budgets leave room for a short chain of thought. Each interrupting
    # profile keeps 64 tokens of max_new_tokens for the forced phrase (as the preset does: think hi
    # + phrase + answer must fit; it is checked with the run's tokenizer. The phrase is 47 tokens
    # with the 512-token BPE of examples/user_model.py).
    "cpu-small": [
        "recipe.batch.prompts_per_step=8",
        "recipe.batch.generations_per_prompt=4",
        "recipe.optimizer.lr=1e-6",
        "recipe.optimizer.warmup_steps=10",
        "recipe.length.max_new_tokens=256",
        "recipe.length.think_budget=[128, 128]",
        "recipe.length.answer_budget=64",
        "recipe.length.overlong_max_len=256",
        "recipe.length.overlong_cache=64",
        "eval.problems=32",
        "eval.samples_per_problem=2",
        "eval.batch_size=16",
    ],
    # A small model on one GPU: a tenth of the paper's sequences per step, 4k-token completions.
    "gpu-small": [
        "recipe.batch.prompts_per_step=16",
        "recipe.batch.generations_per_prompt=8",
        "recipe.optimizer.lr=1e-6",
        "recipe.optimizer.warmup_steps=10",
        "recipe.length.max_new_tokens=4096",
        "recipe.length.think_budget=[3520, 3520]",
        "recipe.length.answer_budget=512",
        "recipe.length.overlong_max_len=4096",
        "recipe.length.overlong_cache=512",
        # The Hugging Face decode loop holds every row's KV cache at once: 128 rows (one training
        # batch's worth) of 4k tokens, not the default 512 (a 0.5B Qwen2: ~6.5 against ~26 GB).
        "eval.batch_size=128",
    ],
}

#: What each profile amounts to, for the note printed when ``auto`` picks it.
SUMMARY = {
    "none": "the recipe's own sizes",
    "cpu-tiny": "16 prompts x 8 samples per step, 48 new tokens, lr 1e-4",
    "cpu-tiny-mix": "16 prompts x 8 samples per step, 48 new tokens, thinking budget [26, 34], lr 1e-4, "
                    "evaluation on 500 problems x 2 samples",
    "cpu-small": "8 prompts x 4 samples per step, 256 new tokens, lr 1e-6, evaluation on 32 problems x 2 samples",
    "gpu-small": "16 prompts x 8 samples per step, 4,096 new tokens, lr 1e-6, evaluation in batches of 128",
}

#: ``auto``'s rules, first match wins: (device type, parameters below, profile). The tiny model
#: is matched by name before these.
AUTO: list[tuple[str, float, str]] = [
    ("cpu", math.inf, "cpu-small"),
    ("cuda", 1e9, "gpu-small"),
    ("cuda", math.inf, "none"),
]


def device_type(device: str) -> str:
    """``run.device`` -> cuda or cpu (auto: cuda when available; other accelerators count as cpu here)."""
    if device == "auto":
        import torch

        return "cuda" if torch.cuda.is_available() else "cpu"
    return "cuda" if device.startswith("cuda") else "cpu"


def count_parameters(name_or_path: str) -> int:
    """Parameters of a model from its config alone (instantiated on the meta device: no weights read)."""
    import torch
    from transformers import AutoModelForCausalLM

    from scalerl.models.loading import load_config

    config = load_config(name_or_path)
    with torch.device("meta"):
        model = AutoModelForCausalLM.from_config(config)
    return sum(p.numel() for p in model.parameters())


def choose_profile(cfg: TrainConfig) -> tuple[str, str | None]:
    """``(profile, note)`` for ``cfg``: its own profile when not ``auto``; otherwise the :data:`AUTO`
    choice and, for a user model, a one-line note saying which and why (None for the tiny model)."""
    if cfg.profile != "auto":
        return cfg.profile, None
    from scalerl.models.tiny import TINY_MODELS  # no torch at import

    if cfg.model.name_or_path in TINY_MODELS:  # tiny, tiny-s, tiny-m, tiny-l
        return ("cpu-tiny-mix" if cfg.task.name == "arithmetic-mix" else "cpu-tiny"), None
    device = device_type(cfg.run.device)
    params = count_parameters(cfg.model.name_or_path)
    name = next(profile for dev, below, profile in AUTO if dev == device and params < below)
    note = (f"{cfg.model.name_or_path} has {params / 1e6:.3g}M parameters and trains on the {device}: scale profile "
            f"{name} ({SUMMARY[name]}); --profile none keeps the recipe's paper-scale sizes, --set KEY=VALUE changes any")
    return name, note
