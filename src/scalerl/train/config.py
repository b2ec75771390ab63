"""The training configuration: the recipe plus everything a run needs around it.

    TrainConfig
      recipe_name  which preset the recipe came from (presets: ``scalerl recipes``)
      profile      scale profile applied on top of the preset (``cpu-tiny`` for the toy model)
      recipe       the algorithm: RecipeConfig (scalerl.rl.recipe)
      model        what to train (storage dtype, gradient checkpointing, LoRA)
      precision    compute dtype (fp32 master weights in every mode)
      task         what to train on and how it is rewarded
      sampling     how training completions are sampled
      eval         the validation pass rate the forecast fits
      run          steps, seed, threads, checkpoints, output
      backend      where generators and trainer run (local threads / Ray)
      forecast     the live forecast logged at every evaluation
      log          TensorBoard, W&B, progress bar

Resolution order: defaults -> ``--config FILE`` -> command-line flags (``--recipe``,
``--model``, ``--steps``, ...) -> the scale profile -> ``--set key=value`` overrides. The run
directory's ``config.yaml`` is the resolved result (profile ``none``), so passing it back
with ``--config`` reproduces the run.

No torch here: ``scalerl recipes``/``train --help`` stay fast.
"""

from __future__ import annotations

import copy
import dataclasses
import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from scalerl.config import (apply_overrides, deep_merge, dotted_keys, from_file_dict, leaf_fields, read_yaml_mapping,
                            resolve_key, to_dict)
from scalerl.errors import ConfigError, InputError
from scalerl.generate.base import BELOW_MIN_TEMPERATURE, MIN_TEMPERATURE
from scalerl.pipeline.config import BackendConfig, backend_problems, update_mode
from scalerl.rl.presets import all_presets, get_recipe
from scalerl.rl.recipe import RecipeConfig, sync_means_k1 as recipe_sync_means_k1
from scalerl.tasks.rewards import MAX_TIMEOUT, MAX_WORKERS
from scalerl.train.dtypes import dtype_problems
from scalerl.train.profiles import PROFILES, choose_profile


@dataclass
class LoraSettings:
    """LoRA: train low-rank adapters on a frozen base instead of every weight (the ``peft`` library)."""

    rank: int = 0
    """Adapter rank r; 0 = off (full fine-tuning). 8-64 are common."""
    alpha: float = 32.0
    """The adapter's update B @ A is scaled by alpha / rank."""
    dropout: float = 0.0
    """Dropout on the adapter's input in training forwards. Keep 0 for RL: generation runs without
    dropout, so any makes pi_train differ from pi_gen on unchanged weights (the importance ratio)."""
    target_modules: list[str] = field(default_factory=lambda: ["all-linear"])
    """Modules that get adapters: [all-linear] (every linear layer except the LM head) or module
    names / name suffixes, e.g. [q_proj, k_proj, v_proj, o_proj]."""
    save: Literal["merged", "adapter", "both"] = "merged"
    """What ``final/`` holds: merged (an ordinary model, base + adapter, in ``model.dtype``), adapter
    (``peft``'s adapter files, loaded on top of the base model), or both (merged in final/, the
    adapter in final/adapter)."""


@dataclass
class ModelConfig:
    """The policy to train."""

    name_or_path: str = "tiny"
    """``tiny`` (a ~1M-parameter Qwen2 with a character tokenizer, warm-started on 2-digit arithmetic
    and cached), ``tiny-s`` / ``tiny-m`` / ``tiny-l`` (the model-size ladder of the arithmetic-mix
    workload, 0.15M / 1.08M / 2.4M parameters), a local Hugging Face model directory, or a hub id."""
    dtype: str | None = None
    """Storage dtype of the policy's weights: what ``final/`` is saved in (float32, bfloat16, float16;
    aliases fp32, bf16, fp16). null: the dtype the starting checkpoint is stored in (its config.json),
    so a bf16 hub model comes back as bf16. Not the training dtype: the weights train as fp32 master
    copies and compute in ``precision.compute``."""
    gradient_checkpointing: bool = False
    """Recompute each layer's activations in the backward pass instead of keeping them (Hugging
    Face's ``gradient_checkpointing_enable``): less memory for long sequences, ~30% more compute.
    Training forwards then run without a KV cache, so the update scores every sequence whole
    (``run.share_prompt_forward`` has no effect); generation is unaffected."""
    lora: LoraSettings = field(default_factory=LoraSettings)
    """LoRA adapters (the ``peft`` library) instead of full fine-tuning; off by default (rank 0)."""
    keep_dropout: bool = False
    """Keep the checkpoint's dropout in training forwards. Off by default: every dropout probability
    is set to 0 while training (``final/config.json`` keeps the checkpoint's values), because
    generation samples without dropout, and with it the trainer's log-probs differ from the
    generator's on unchanged weights -- a noisy importance ratio from the first step."""
    tiny_warm_start_steps: int = 200
    """``tiny`` only: supervised warm-start steps, i.e. how good the policy is before RL (200, the
    default tiny model: a sampled pass rate of ~0.3 on 2-digit addition; see models/tiny.py). The
    ladder's sizes have fixed warm starts (models/tiny.py TINY_MODELS)."""


@dataclass
class PrecisionConfig:
    """Numerics of training and generation (see scalerl.train.precision)."""

    compute: str = "auto"
    """Dtype the forward and backward passes and the generators compute in: auto (bf16 on a GPU that
    supports it, fp16 on one that does not, fp32 on a CPU), fp32, bf16, or fp16 (with dynamic loss
    scaling); aliases float32, bfloat16, float16, half. The trained weights and the optimizer state
    are fp32 master copies in every mode, and logits stay fp32 with ``recipe.fp32_lm_head``."""
    fp16_init_scale: float = 65536.0
    """fp16 only: the initial loss scale (halved and the step skipped on an overflow, doubled after
    2,000 clean steps; torch.amp.GradScaler)."""


@dataclass
class TaskConfig:
    """What the model is trained on and how completions are rewarded (+1 correct, -1 wrong)."""

    name: str = "arithmetic"
    """Registered task: arithmetic (built in: 2-digit addition), arithmetic-mix (built in: 2-4-column
    addition with a ceiling below 1, the demo's workload) or math (a data file, math-verify)."""
    data: str | None = None
    """math task: a JSONL / JSON / CSV / TSV / parquet file, an HF dataset directory or a hub dataset id
    of {prompt, answer} rows (other field names: task.settings prompt_field / answer_field)."""
    reward: str | None = None
    """A reward function of your own, ``module:function`` or ``path/to/file.py:function``. It takes
    any of the parameters ``prompt``, ``completion``, ``answer`` (by name) and returns a number
    (> 0 is a pass) or a bool (True -> +1, False -> -1). A call that raises scores as a wrong answer
    (-1, or the lowest score of its training batch where that is lower) and is counted; if every call of the first evaluation fails, or its calls time out on 4 prompts
    before any answers in time, the run stops."""
    reward_timeout: float = 10.0
    """Seconds a user reward function may take per completion before it is killed and scored as a
    failed call (-1, or lower where the function's scale is: :attr:`reward`; at most :data:`MAX_REWARD_TIMEOUT`, a day)."""
    reward_load_timeout: float = 60.0
    """Seconds each worker process of a user reward function may take to import its module before the run
    is refused (a module that loads a judge or reward model from disk at import may need minutes; at most
    :data:`MAX_REWARD_TIMEOUT`, a day)."""
    reward_workers: int = 1
    """Worker processes a user reward function runs in: each round's completions are scored up to
    this many at a time (a slow reward -- an LLM judge, a code sandbox -- would otherwise hold up
    every step). The math task's math-verify has its own: task.settings verify_workers."""
    settings: dict[str, Any] = field(default_factory=dict)
    """Task-specific settings passed to the task (every one is listed in docs/tasks.md): arithmetic
    digits, n_train, n_val, n_hard, held_out_fraction, seed, split_salt; arithmetic-mix min_digits,
    max_digits, n_train, n_val, n_per_length, held_out_fraction, seed, split_salt, verify_scratchpad;
    math eval_data, val_fraction, max_val, prompt_field, answer_field, split, split_salt,
    verify_timeout, verify_workers. E.g.
    ``--set 'task.settings={prompt_field: question, answer_field: solution, eval_data: {val: val.csv}}'``."""


@dataclass
class SamplingConfig:
    """How training completions are sampled."""

    temperature: float = 1.0
    """Softmax temperature for training rollouts (log-probs are recorded after temperature)."""
    top_p: float = 1.0
    """Nucleus sampling mass for training rollouts (1.0: off; the ratio then matches exactly)."""


@dataclass
class EvalConfig:
    """Periodic evaluation: mean@k pass rate on held-out problems, one run-log column per set."""

    every: int = 10
    """Evaluate every this many optimizer steps (and before the first one: the R0 point)."""
    samples_per_problem: int = 4
    """k of mean@k: completions per problem (paper: 16)."""
    problems: int = 200
    """Problems per evaluation set (the first N of each set; paper: 1,000)."""
    sets: list[str] = field(default_factory=lambda: ["val"])
    """Evaluation sets of the task to run; the first is the one the forecast fits. The arithmetic
    task also offers ``hard`` (a harder, downstream-like split)."""
    temperature: float = 1.0
    """Sampling temperature for evaluation; <= 0 decodes greedily (one completion a problem, counted k times --
    except where the length control draws each sequence's thinking budget: then k decodes, one per budget)."""
    batch_size: int | None = 512
    """Completions per generate call during evaluation (bounds memory); null: all at once."""
    log_samples: int = 3
    """Completions written to ``samples.jsonl`` per evaluation set at every evaluation (prompt,
    completion, reward: the first sample of each of the first N problems); 0 = none."""
    engine: Literal["auto", "trainer", "generators"] = "auto"
    """What samples the evaluations: trainer (the trainer's own model or generator copy; on the
    FSDP shards under run.generate_on_shards), generators (backend ray: the generator actors, each a
    share of the prompts, queued ahead of the training batches, on the trainer's current weights),
    or auto (generators where they are vLLM actors -- an evaluation then runs at the rollouts'
    speed, not the Hugging Face decode loop's -- else trainer). The sampled completions differ
    between the two (other engines, other seeds); the metric does not."""


@dataclass
class RunConfig:
    """Length, seed, hardware and checkpoints of the run."""

    steps: int = 100
    """Optimizer steps to train for."""
    seed: int = 0
    """Seed for prompt order, sampling and initialisation (0 to 2**32 - 1)."""
    device: str = "auto"
    """cpu, cuda, cuda:1, ... or auto (cuda when available)."""
    threads: int = 0
    """The trainer's torch intra-op threads on CPU; 0: under pipeline-rl-k on the local backend, the cores the
    generators leave (cores - generators x backend.generator_threads, at least 1), else torch's default."""
    nproc: int = 1
    """Trainer processes on this machine: > 1 shards the policy update (parameters, gradients,
    AdamW state) over that many processes with torch.distributed and FSDP2 -- one per GPU (NCCL),
    or CPU processes (gloo). Rank 0 generates, evaluates and writes the run; the global batch and
    the gradient are those of one process (docs/distributed.md). Across machines use torchrun."""
    generate_on_shards: bool = False
    """With nproc > 1: generate and evaluate on the FSDP shards themselves -- every rank samples a
    share of the prompts, each forward all-gathering one decoder layer at a time, as the training
    passes do -- instead of on a full copy of the policy on rank 0. For a model whose weights do
    not fit on one device; slower (every decode step gathers the model). Generators beside the
    trainer (Ray actors, local generator processes) then get their weights streamed off the shards,
    one gathered tensor at a time; pipeline-rl-k's generator threads, which would each hold a copy
    on rank 0's device, are refused. One process: no effect."""
    deterministic: bool = True
    """Derive every sampling seed from (seed, step), so a resumed run repeats an uninterrupted one. false: each
    generator samples from a stream of its own, seeded once -- not kept in a checkpoint, so a resumed run does not
    repeat (said at the start)."""
    micro_batch_size: int = 64
    """Sequences per forward/backward pass; gradients accumulate to the full step (exactly)."""
    micro_batch_tokens: int = 16384
    """Padded tokens per forward/backward pass (rows x (longest prompt + longest completion)): a
    micro-batch also closes before it would exceed this, so that long completions come in fewer
    rows -- activations grow with tokens, not sequences (verl's ppo_max_token_len_per_gpu has the
    same default). The gradient does not depend on it. A longer sequence gets a pass of its own;
    0: by micro_batch_size alone. On a GPU it is lowered, with a note, to what the update's
    activations -- measured on the model at the start (scalerl.train.activation_probe; on every
    rank's shards under FSDP) -- fit in half of what the training state leaves free."""
    logits_budget_mb: int = 256
    """MiB the fp32 logits of one forward pass may take. A pass whose logits would exceed it runs
    the LM head in chunks of that size, each recomputed in the backward pass, instead of holding
    rows x positions x vocabulary floats (2.5 GB per 4,096-token completion of a 152k-token
    vocabulary): same log-probs and gradients, one more head matmul (scalerl.generate.head_chunks).
    0: always in one piece. Models that post-process their logits are scored in one piece
    whatever this says; FSDP-sharded ones are chunked too (the head is the root unit's)."""
    cudnn_attention: bool = False
    """On CUDA, let torch's SDPA pick cuDNN's attention kernel. Off: cuDNN builds an execution plan
    for every new (batch, length) shape -- 0.15-0.5 s each, and RL passes have a new shape almost
    every call (each decode step, each update's padded length) -- so the flash and memory-efficient
    kernels take those calls (scalerl.generate.attention). Applies to the trainer's process and to
    generator processes and Ray actors with the hf engine (vLLM picks its own kernels)."""
    decode_rows: int = 0
    """Most rows the Hugging Face decode loop holds at once: it keeps every row's KV cache until
    the batch ends, and a larger batch (a training batch, an evaluation chunk) is decoded this
    many rows at a time. 0: on a GPU, as many as fit in half of what the training state leaves
    free (from the model's layers x KV heads x head size and the longest prompt +
    length.max_new_tokens; all at once when that formula does not describe the cache, or on the
    CPU); ``scalerl train`` prints the choice when it cuts. Under run.generate_on_shards only a
    number set here cuts (every rank must cut alike); so do generator processes and Ray actors
    with the hf engine (the automatic fit measures the trainer's device, not theirs; vllm
    schedules its own cache). A cut batch samples other tokens than the whole one for the same
    seed (one random stream through the pieces)."""
    share_prompt_forward: bool = True
    """In the update, run each prompt through the model once for its whole group and the
    completions on its KV cache (same log-probs and gradients; less compute when G > 1).
    Turn off for models whose cache cannot be indexed (e.g. some recurrent hybrids)."""
    max_nan_steps: int = 5
    """Consecutive steps with a non-finite loss or gradient (each skipped and counted) before the
    run stops with an error."""
    checkpoint_every: int | None = None
    """Also save a checkpoint every this many steps (every evaluation, and the last step, always save one); null:
    at the evaluations and the last step only."""
    keep_checkpoints: int = 2
    """How many of the latest checkpoints to keep on disk (at least 1)."""
    output: str = "runs/run"
    """Run directory: runlog.jsonl, config.yaml, checkpoints/, final/ (the trained model), report."""


@dataclass
class ForecastConfig:
    """The live forecast: refit the sigmoid after every evaluation and log it."""

    enabled: bool = True
    """Fit and log forecast/A, forecast/B, forecast/C_mid (with intervals) and the predicted pass rate at the budget."""
    x: str = "flops"
    """Compute column the curve is fitted against: flops (deterministic, hardware-independent),
    gpu_hours (measured accelerator-hours), tokens, samples or step."""
    min_points: int = 5
    """Evaluations needed (the R0 point included) before the first fit."""
    bootstrap: int = 200
    """Bootstrap resamples for the logged intervals (at least 10; 0: no intervals, the bands still logged)."""
    refit_growth: float = 0.01
    """Refit once the evaluations have grown by this fraction since the last refit: every evaluation
    up to 2/refit_growth of them (200 at 0.01), then one refit per 1% more, so a run's fitting time
    grows as its evaluations do, not as their square (a refit at 10,000 evaluations took 3.7 CPU-s:
    ``benchmarks/live_forecast_cost.py``). The
    rows between say ``forecast/status`` "not refitted: ..."; the run's last evaluation always
    refits. 0: refit at every evaluation."""
    calibration: str | None = None
    """A calibration file written by ``scalerl calibrate`` from your own earlier runs: the bands of
    the live forecast and of the run's report use its factors (default: the shipped ones). The run
    keeps a copy (``<output>/calibration.json``), which resuming and reporting use."""


@dataclass
class LogConfig:
    """Where metrics go besides the run log (which is always written)."""

    tensorboard: bool = False
    """Also write TensorBoard event files to <output>/tensorboard (a resumed run's purge the stopped
    attempt's steps after the checkpoint: each step shows once)."""
    wandb_project: str | None = None
    """Also log to this Weights & Biases project (needs the wandb package and a login, or
    ``WANDB_MODE=offline``; one that cannot start fails the run before it writes anything). The
    W&B run's id is kept in <output>/wandb_run_id, so ``--resume`` continues the same W&B run; a
    run that stops or fails finishes its W&B run as failed. W&B cannot take back the steps a stopped
    attempt logged after its checkpoint (online it keeps those, offline it does not resume a run):
    a note at the resume says which. A resume logs again the rows before its checkpoint that W&B
    lacks (a ``kill -9`` loses W&B's last seconds); a run stopped before its first checkpoint
    removes its W&B run directory with its other files. A sink failing mid-run is a warning; the
    training goes on."""
    progress: bool = True
    """Show a progress bar (pass rate, throughput, ETA) on stderr."""
    train_every: int = 1
    """Write a training-metrics row (loss, clip fraction, rewards, lag) every this many steps."""


@dataclass
class TrainConfig:
    """A whole training run."""

    recipe_name: str = "scalerl"
    """Preset the recipe starts from (``scalerl recipes`` lists them). In a --config file it chooses
    that preset, the file's recipe: keys laid over it (a note names any of its switches -- loss.name,
    aggregation, ... -- the keys set otherwise); a name that is not a preset is refused unless the
    recipe: section gives most keys (a study's label, like scalerl+lr-2e-4). ``--set recipe_name=X``
    is ``--recipe X``."""
    profile: str = "auto"
    """Scale profile (batch, token budgets, learning rate, evaluation sizes; never an algorithmic
    switch) applied over the preset: auto (a tiny model: cpu-tiny-mix on the arithmetic-mix task, else
    cpu-tiny; cpu-small for any other model on a CPU, gpu-small for one under 1B parameters on a GPU,
    none above), cpu-tiny, cpu-tiny-mix, cpu-small, gpu-small, or none (the preset's paper-scale
    sizes). ``--set`` overrides win over it."""
    recipe: RecipeConfig = field(default_factory=RecipeConfig)
    """The algorithm (docs/paper.md, "The recipe"): every component a switch."""
    model: ModelConfig = field(default_factory=ModelConfig)
    """The policy to train."""
    precision: PrecisionConfig = field(default_factory=PrecisionConfig)
    """Compute dtype (fp32 master weights in every mode)."""
    task: TaskConfig = field(default_factory=TaskConfig)
    """Training problems, evaluation sets, reward."""
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    """Rollout sampling."""
    eval: EvalConfig = field(default_factory=EvalConfig)
    """Periodic evaluation."""
    run: RunConfig = field(default_factory=RunConfig)
    """Steps, seed, device, checkpoints, output."""
    backend: BackendConfig = field(default_factory=BackendConfig)
    """Local or Ray."""
    forecast: ForecastConfig = field(default_factory=ForecastConfig)
    """Live forecast."""
    log: LogConfig = field(default_factory=LogConfig)
    """Metrics sinks."""

    @classmethod
    def from_file_mapping(cls, data: dict, path: Path) -> dict:
        """A file's mapping as the config it means: its recipe laid over the preset its recipe_name
        names (:func:`on_named_preset`). Called by :func:`scalerl.config.load_yaml`."""
        return on_named_preset(data, path)

    def validate(self) -> "TrainConfig":
        # Values, component names, and the length budgets (the interruption phrase is counted
        # once the tokenizer is loaded: Trainer._setup). The registries import torch.
        from scalerl.rl.components import validate_recipe

        validate_recipe(self.recipe)
        problems = []
        if self.run.steps < 1:
            problems.append(f"run.steps must be >= 1, got {self.run.steps}")
        if self.run.seed < 0:  # numpy refuses one: the live forecast's bootstrap failed at every evaluation
            problems.append(f"run.seed must be >= 0, got {self.run.seed}")
        elif self.run.seed >= 2**32:  # torch.manual_seed refused 2**64 in a traceback; below it, the
            # sampling seeds derive from its low 32 bits (scalerl.seeds): seed 2**32 + 1 drew what 1 draws
            problems.append(f"run.seed must be below 2**32 (4294967296), got {self.run.seed}")
        if self.eval.every < 1:
            problems.append(f"eval.every must be >= 1, got {self.eval.every}")
        if self.log.train_every < 1:  # (0 trained to the first logged step, then a ZeroDivisionError: review cx)
            problems.append(f"log.train_every must be >= 1 (log every Nth step's training metrics), got "
                            f"{self.log.train_every}")
        if self.eval.log_samples < 0:
            problems.append(f"eval.log_samples must be >= 0, got {self.eval.log_samples}")
        if self.eval.samples_per_problem < 1 or self.eval.problems < 1:
            problems.append("eval.samples_per_problem and eval.problems must be >= 1")
        if not self.eval.sets:
            problems.append("eval.sets must name at least one evaluation set (e.g. [val])")
        repeated = sorted({s for s in self.eval.sets if self.eval.sets.count(s) > 1})
        if repeated:  # (each was evaluated again, at another seed, and its run-log column overwritten)
            problems.append(f"eval.sets names {', '.join(map(repr, repeated))} more than once; name each set once")
        if self.run.nproc < 1:
            problems.append(f"run.nproc must be >= 1, got {self.run.nproc}")
        problems.extend(group_problems(self, self.run.nproc))
        if self.run.threads < 0:
            problems.append(f"run.threads must be >= 0 (0 = torch's default), got {self.run.threads}")
        if self.run.micro_batch_size < 1:
            problems.append(f"run.micro_batch_size must be >= 1, got {self.run.micro_batch_size}")
        if self.run.micro_batch_tokens < 0:
            problems.append(f"run.micro_batch_tokens must be >= 0 (0: no token limit), got {self.run.micro_batch_tokens}")
        if self.run.decode_rows < 0:
            problems.append(f"run.decode_rows must be >= 0 (0: as many as fit), got {self.run.decode_rows}")
        if self.run.logits_budget_mb < 0:
            problems.append(f"run.logits_budget_mb must be >= 0 (0: no chunking), got {self.run.logits_budget_mb}")
        w = self.task.reward_workers
        if isinstance(w, bool) or not isinstance(w, int) or not 1 <= w <= MAX_REWARD_WORKERS:
            problems.append(f"task.reward_workers must be a whole number in [1, {MAX_REWARD_WORKERS}] (worker "
                            f"processes of the reward function; default 1), got {w!r}")
        if not 0 < self.task.reward_timeout <= MAX_REWARD_TIMEOUT:  # (false for NaN too)
            problems.append(f"task.reward_timeout must be seconds in (0, {MAX_REWARD_TIMEOUT}] (a day at most; the "
                            f"default is 10), got {self.task.reward_timeout}")
        if not 0 < self.task.reward_load_timeout <= MAX_REWARD_TIMEOUT:
            problems.append(f"task.reward_load_timeout must be seconds in (0, {MAX_REWARD_TIMEOUT}] (a day at most; "
                            f"the default is 60), got {self.task.reward_load_timeout}")
        # (Each was taken silently: -1 checkpointed every step, 0 kept one, a 0 batch meant "all at once".)
        if self.run.checkpoint_every is not None and self.run.checkpoint_every < 1:
            problems.append(f"run.checkpoint_every must be >= 1 (or null: at every evaluation), got "
                            f"{self.run.checkpoint_every}")
        if self.run.keep_checkpoints < 1:
            problems.append(f"run.keep_checkpoints must be >= 1 (the newest is always kept), got "
                            f"{self.run.keep_checkpoints}")
        if self.eval.batch_size is not None and self.eval.batch_size < 1:
            problems.append(f"eval.batch_size must be >= 1 (or null: all at once), got {self.eval.batch_size}")
        if self.run.max_nan_steps < 1:
            problems.append(f"run.max_nan_steps must be >= 1, got {self.run.max_nan_steps}")
        if self.backend.generators < 1:
            problems.append(f"backend.generators must be >= 1, got {self.backend.generators}")
        if self.backend.generator_threads < 1 or self.backend.max_restarts < 0:
            problems.append("backend.generator_threads must be >= 1 and backend.max_restarts >= 0")
        problems.extend(backend_problems(self.backend))
        if self.eval.engine == "generators" and self.backend.name != "ray":
            problems.append("eval.engine=generators evaluates on Ray's generator actors: add --backend ray, or use "
                            "eval.engine=trainer (local generators share the trainer's machine: no faster)")
        problems.extend(dtype_problems(self.precision.compute, self.model.dtype))
        problems.extend(lora_problems(self.model.lora))
        if not 0 < self.precision.fp16_init_scale < math.inf:
            problems.append(f"precision.fp16_init_scale must be > 0 and finite, got {self.precision.fp16_init_scale}")
        if not 0 < self.sampling.top_p <= 1 or not MIN_TEMPERATURE <= self.sampling.temperature < math.inf:
            problems.append(f"sampling.temperature must be finite and at least {MIN_TEMPERATURE:g} (below, "
                            f"{BELOW_MIN_TEMPERATURE}), and sampling.top_p in (0, 1]")
        if not math.isfinite(self.eval.temperature) or 0 < self.eval.temperature < MIN_TEMPERATURE:
            # (inf sampled uniformly: every token alike; a tiny one overflowed logits / T)
            problems.append(f"eval.temperature must be finite, <= 0 (greedy) or at least {MIN_TEMPERATURE:g}, got "
                            f"{self.eval.temperature}")
        # (1-9 logged "no fit yet: ... at least 10 resamples" at every evaluation; 0 is no intervals, the bands kept)
        if self.forecast.enabled and (self.forecast.bootstrap < 0 or 0 < self.forecast.bootstrap < 10):
            problems.append(f"forecast.bootstrap must be 0 (no intervals) or >= 10 resamples, got {self.forecast.bootstrap}")
        # (inf passed, and the first refit past min_points ended the run in an OverflowError: review cd)
        if not (isinstance(self.forecast.refit_growth, (int, float)) and 0 <= self.forecast.refit_growth <= 1e6):
            problems.append(f"forecast.refit_growth must be a fraction >= 0 (0: refit at every evaluation; 0.01: "
                            f"after 1% more evaluations), got {self.forecast.refit_growth}")
        if self.forecast.x not in COMPUTE_COLUMNS:
            problems.append(f"forecast.x: unknown compute column {self.forecast.x!r}; known: {', '.join(COMPUTE_COLUMNS)}")
        if self.profile not in PROFILES and self.profile != "auto":
            problems.append(f"profile: unknown profile {self.profile!r}; known: auto, {', '.join(PROFILES)}")
        if self.forecast.calibration and not (Path(self.run.output) / CALIBRATION_COPY).exists():
            # A run that started keeps a copy (resuming never depends on the original file).
            from scalerl.curves.bands import DEFAULT_LEVEL, read_calibration

            try:  # at the live forecast's level: a file without it gave no forecast the whole run
                read_calibration(self.forecast.calibration, level=DEFAULT_LEVEL)
            except InputError as exc:
                problems.append(f"forecast.calibration: {exc}")
        if problems:
            raise ConfigError("invalid training config: " + "; ".join(problems))
        return self


#: The run directory's copy of ``forecast.calibration``: resuming and reporting the run never depend
#: on the original file (moved, edited or deleted since the run started).
CALIBRATION_COPY = "calibration.json"

#: The longest task.reward_timeout (a day: scalerl.tasks.rewards.MAX_TIMEOUT).
MAX_REWARD_TIMEOUT = MAX_TIMEOUT

#: The most worker processes of task.reward_workers (scalerl.tasks.rewards.MAX_WORKERS).
MAX_REWARD_WORKERS = MAX_WORKERS

#: Compute measures logged at every evaluation (any can be the forecast's x).
COMPUTE_COLUMNS = ("flops", "gpu_hours", "tokens", "samples", "step")

def lora_problems(lora: LoraSettings) -> list[str]:
    if lora.rank < 0:
        return [f"model.lora.rank must be >= 0 (0 = off), got {lora.rank}"]
    if lora.rank == 0:
        return []
    problems = []
    if not 0 < lora.alpha < math.inf:
        problems.append(f"model.lora.alpha must be > 0 and finite, got {lora.alpha}")
    if not 0 <= lora.dropout < 1:
        problems.append(f"model.lora.dropout must be in [0, 1), got {lora.dropout}")
    if not lora.target_modules:
        problems.append("model.lora.target_modules must name at least one module (or [all-linear])")
    return problems


def group_problems(cfg: TrainConfig, world: int) -> list[str]:
    """Settings a multi-process trainer group (``world`` > 1 ranks) does not cover, each with what to do instead."""
    if world <= 1:
        return []
    problems = []
    if cfg.model.lora.rank:
        problems.append("LoRA (model.lora.rank > 0) trains in one process: drop --nproc or model.lora.rank")
    if cfg.precision.compute in ("fp16", "float16", "half"):
        problems.append("fp16 loss scaling is not sharded across processes: use precision.compute=bf16 with --nproc")
    if re.fullmatch(r"cuda:\d+", cfg.run.device.strip()):
        # Every rank would take that one GPU, and NCCL refuses two ranks on one GPU.
        problems.append(f"run.device={cfg.run.device} names one GPU for every trainer rank: use run.device=cuda (each "
                        "rank takes cuda:<its LOCAL_RANK>; CUDA_VISIBLE_DEVICES chooses which GPUs)")
    b = cfg.backend
    if (cfg.run.generate_on_shards and cfg.recipe.off_policy.pipeline == "pipeline-rl-k" and b.name == "local"
            and b.workers == "threads"):
        problems.append("run.generate_on_shards keeps no whole copy of the policy on rank 0's device, and "
                        "pipeline-rl-k's generator threads would each hold one there: generate with Ray actors "
                        "(--backend ray) or backend.workers=processes, or use recipe.off_policy.pipeline=sync or "
                        "ppo-off-policy-k (generation on the shards)")
    return problems


def not_reproducible(cfg: TrainConfig, *, resumed: bool = False) -> str | None:
    """Why runs of this config and seed need not repeat one another (``resumed``: nor a resume the uninterrupted
    run), or None where they do: in-flight weight updates landing at thread or process timing (``backend.updates``
    timing, what auto picks off local threads); sampling streams each generator seeds once (``run.deterministic=
    false``): not kept in a checkpoint, so a resume starts them again, and with several generator threads timing
    decides which stream a batch draws from (one stream, seeded from the run's seed, repeats -- review df). Said at
    the start and on resume (review dc: both ran on without a word)."""
    if cfg.recipe.off_policy.pipeline == "pipeline-rl-k" and update_mode(cfg.backend) == "timing":
        auto = " (what auto picks here)" if cfg.backend.updates == "auto" else ""
        return (f"backend.updates=timing{auto}: the trainer's weights land in the generators' decoding whenever "
                "they arrive, so timing decides which weights each token saw")
    # (several generators: pipeline-rl-k's, or any mode's off the local backend -- Ray's actors; review dg)
    several = cfg.backend.generators > 1 and (cfg.recipe.off_policy.pipeline == "pipeline-rl-k"
                                              or cfg.backend.name != "local")
    if not cfg.run.deterministic and (resumed or several):
        return ("run.deterministic=false: each generator samples from a stream of its own, seeded once and not "
                "kept in a checkpoint" + (", and timing decides which generator a batch draws from" if several else ""))
    return None


def held_out_capped(cfg: TrainConfig) -> TrainConfig:
    """``cfg`` with a held-out ``val`` share cut to ``eval.problems`` where its task holds one out (``max_val``):
    the held-out rows past the ones evaluated train, as the rows past ``max_val`` do (review dj: the held-out 5%
    of a 2,000-row file was 101 rows, 32 evaluated, 69 neither trained on nor evaluated, unsaid). Written into
    the config (``task.settings.max_val``), so that ``scalerl eval --run`` and a study's runs hold out the same
    rows, and a run started before holds out what it did when resumed."""
    from scalerl.tasks.registry import declares_setting

    if not declares_setting(cfg.task.name, "max_val"):
        return cfg
    given = cfg.task.settings.get("max_val", cfg.eval.problems)
    if isinstance(given, bool) or not isinstance(given, int):
        return cfg  # (the task's own check refuses it, by name)
    settings = {**cfg.task.settings, "max_val": min(given, cfg.eval.problems)}
    return dataclasses.replace(cfg, task=dataclasses.replace(cfg.task, settings=settings))


def eval_engine(cfg: TrainConfig) -> str:
    """``eval.engine`` with auto resolved: generators for vLLM actors on Ray, else trainer."""
    if cfg.eval.engine != "auto":
        return cfg.eval.engine
    return "generators" if cfg.backend.name == "ray" and cfg.backend.generator == "vllm" else "trainer"


def profile_for(cfg: TrainConfig) -> str:
    """The scale profile ``cfg`` gets (``auto`` chosen by model and device: scalerl.train.profiles)."""
    return choose_profile(cfg)[0]


def resolve(cfg: TrainConfig, overrides: list[str] | None = None) -> TrainConfig:
    """Apply the scale profile, then the user's ``key=value`` overrides; validate.

    The result records ``profile: none`` so that saving and reloading it changes nothing.
    """
    named = [item for item in overrides or [] if item.partition("=")[0].strip() == "recipe_name"]
    if named:  # (it relabelled the recipe, whatever the recipe was: the run log named another one)
        raise ConfigError(f"override {named[0]!r}: recipe_name is the preset the recipe starts from, chosen before any "
                          "override: choose it with --recipe NAME (scalerl train), base: NAME (a study) or "
                          "with_recipe(cfg, NAME)")
    # The profile is chosen on the config as the overrides leave it: `--set profile=cpu-small`,
    # `--set task.name=arithmetic-mix` or `--set run.device=cpu` choose as the flags would (the
    # profile was chosen before them, and `profile=X` recorded X over another profile's values).
    name = profile_for(apply_overrides(cfg, overrides) if overrides else cfg)
    if name not in PROFILES:
        raise ConfigError(f"unknown profile {name!r}; known: auto, {', '.join(PROFILES)}")
    cfg = apply_overrides(dataclasses.replace(cfg, profile="none"), PROFILES[name])
    if overrides:
        cfg = dataclasses.replace(apply_overrides(cfg, overrides), profile="none")  # applied above
        cfg = sync_means_k1(cfg, {resolve_key(TrainConfig, item.partition("=")[0].strip()) for item in overrides})
    return held_out_capped(cfg).validate()


def sync_means_k1(cfg: TrainConfig, keys: set[str]) -> TrainConfig:
    """``pipeline=sync`` set (``keys``: the dotted fields a user set, by ``--set`` or in a config
    file) on a preset with k = 8: synchronous training has no staleness, so k becomes 1. A k
    set alongside is kept (and refused by validation if not 1)."""
    recipe = recipe_sync_means_k1(cfg.recipe, "recipe.off_policy.k" in keys)
    return cfg if recipe is cfg.recipe else dataclasses.replace(cfg, recipe=recipe)


def absolute_paths(cfg: TrainConfig, cwd: Path | None = None) -> TrainConfig:
    """``cfg`` with its local paths made absolute (model directory, data files, a reward file), so
    that the run directory's config works from any working directory (``eval --run``,
    ``--resume``). Left as typed: hub ids, ``tiny``, and ``module:function`` of a module that is
    not a file in the working directory."""
    cwd = Path.cwd() if cwd is None else cwd

    def local(value: str | None) -> str | None:
        if not value or value == "tiny":
            return value
        path = Path(value).expanduser()
        path = path if path.is_absolute() else cwd / path
        return str(path.resolve()) if path.exists() else value

    cfg = copy.deepcopy(cfg)
    cfg.model.name_or_path = local(cfg.model.name_or_path)
    cfg.task.data = local(cfg.task.data)
    cfg.task.reward = _absolute_reward(cfg.task.reward, cwd)
    cfg.forecast.calibration = local(cfg.forecast.calibration)
    settings = cfg.task.settings
    if isinstance(settings.get("data"), str):
        settings["data"] = local(settings["data"])
    eval_data = settings.get("eval_data")
    if isinstance(eval_data, str):
        settings["eval_data"] = local(eval_data)
    elif isinstance(eval_data, dict):
        settings["eval_data"] = {k: local(v) if isinstance(v, str) else
                                 {**v, "data": local(v["data"])} if isinstance(v, dict) and isinstance(v.get("data"), str)
                                 else v for k, v in eval_data.items()}
    return cfg


def _absolute_reward(spec: str | None, cwd: Path) -> str | None:
    """``file.py:fn`` -> ``/abs/file.py:fn``; ``mod:fn`` where ``mod.py`` sits in the working
    directory (importable only from there) -> ``/abs/mod.py:fn``, and ``pkg.mod:fn`` of a package there
    -> ``/abs/pkg/mod.py:fn`` (imported as ``pkg.mod`` again); anything else as typed."""
    if not spec or ":" not in spec:
        return spec
    target, _, name = spec.rpartition(":")
    if target.endswith(".py"):
        path = Path(target).expanduser()
        path = path if path.is_absolute() else cwd / path
        return f"{path.resolve()}:{name}" if path.is_file() else spec
    if "/" in target or not all(part.isidentifier() for part in target.split(".")):
        return spec
    # A module of the working directory (importable only from there): a file, or a package's member --
    # stored as its file, which the reward worker imports as a member of its package again.
    *packages, last = target.split(".")
    folder = cwd.joinpath(*packages)
    if packages and not all((cwd.joinpath(*packages[: i + 1]) / "__init__.py").is_file() for i in range(len(packages))):
        return spec
    for candidate in (folder / f"{last}.py", folder / last / "__init__.py"):
        if candidate.is_file():
            return f"{candidate.resolve()}:{name}"
    return spec


def recipe_file_as_config(data: dict, path: Path) -> dict:
    """A YAML file whose top-level keys are recipe components (what ``scalerl recipes show`` prints: loss,
    aggregation, ...) as a training config's ``recipe:`` section, named after the file; any other mapping
    unchanged. The two never share a top-level key, so nothing is ambiguous: a file of most recipe keys and no
    training config key is a recipe file whose other keys are typos, named as a recipe's unknown keys are (review
    dw: one typo made it a training config, and the error blamed its first key, ``loss``)."""
    recipe_keys = {f.name for f in dataclasses.fields(RecipeConfig)}
    train_keys = {f.name for f in dataclasses.fields(TrainConfig)}
    # Most keys a recipe's: a recipe file, even where a typo is a training key (``sampling:`` for ``sampler:``
    # made it a training config, and the error blamed ``loss``) -- but not with ``recipe:`` or ``recipe_name:``,
    # which no recipe file has: a training config with recipe keys left at its top level (review ec).
    if not data or {"recipe", "recipe_name"} & set(data) or 2 * len(set(data) & recipe_keys) <= len(data):
        return data
    for key in (k for k in data if k not in recipe_keys):  # a typo: named with what it is close to (review dy)
        if not isinstance(key, str):  # YAML's ``on:`` (True), ``1:``: no text to be close to (difflib's TypeError)
            raise ConfigError(f"config file {str(path)!r}: unknown key {key!r} in a recipe file (YAML reads it as "
                              f"{type(key).__name__}). Recipe keys: {', '.join(sorted(recipe_keys))}")
        close = difflib.get_close_matches(key, sorted(recipe_keys), n=1, cutoff=0.6)
        if key not in train_keys:
            close = close or difflib.get_close_matches(key, sorted(train_keys), n=1, cutoff=0.6)
        elsewhere = key if key in train_keys else close[0] if close and close[0] in train_keys else None
        said = [f"did you mean {close[0]}?"] if close and close[0] in recipe_keys else []
        if elsewhere is not None:
            said.append(f"{elsewhere} is a training setting: a recipe file holds recipe keys only (put the recipe "
                        f"under recipe: in a training config, beside {elsewhere}:).")
        raise ConfigError(f"config file {str(path)!r}: unknown key {key!r} in a recipe file (its other keys are a "
                          f"recipe's){'; ' + ' '.join(said) if said else '.'} Recipe keys: "
                          f"{', '.join(sorted(recipe_keys))}")
    return {"recipe": data, "recipe_name": path.stem}


def load_config_file(path: str | Path) -> tuple[TrainConfig, set[str]]:
    """A ``--config`` file (a training config, or a recipe file: see :func:`recipe_file_as_config`)
    as a TrainConfig, and the dotted keys the file sets (told from the defaults).

    The file's ``recipe_name`` names the preset its recipe starts from: that preset's recipe, with
    the file's ``recipe:`` keys laid over it -- the order ``--recipe NAME --set ...`` gives. (It was
    a label only: ``recipe_name: deepseek-grpo`` with no ``recipe:`` section trained ScaleRL's recipe
    under deepseek-grpo's name.) See :func:`on_named_preset` for a name that is not a preset.
    """
    path = Path(path)
    data = read_yaml_mapping(path)
    wrapped = recipe_file_as_config(data, path)
    written = dotted_keys(wrapped)
    try:
        return from_file_dict(TrainConfig, on_named_preset(wrapped, path, label=wrapped is not data)), written
    except ConfigError as e:
        if not str(e).startswith("config file"):  # name the file the key is in (a command reads several)
            e.args = (f"config file {str(path)!r}: {e}", *e.args[1:])
        raise


def on_named_preset(data: dict, path: Path, *, label: bool = False) -> dict:
    """A config file's mapping with its recipe laid over the preset its ``recipe_name`` names (see
    :func:`load_config_file`); every way a TrainConfig file is read goes through here (``--config``,
    and :func:`scalerl.config.load_yaml` through :meth:`TrainConfig.from_file_mapping`: the Python
    API, ``--resume``, ``eval --run``, a study's runs), so one file means one recipe everywhere.

    A name that is not a preset (a study's label ``scalerl+lr-2e-4``; ``label``: a recipe file's name)
    starts from the defaults. A file that names no preset and leaves out most of the recipe is
    refused: it was meant to name one (a typo), or to spell its recipe out. Most, not every key: a
    run's config.yaml saved before a recipe key was added lacks that one, and must still load."""
    name, recipe = data.get("recipe_name"), data.get("recipe")
    if isinstance(name, str) and name in all_presets():
        if recipe is None or isinstance(recipe, dict):  # (anything else: from_dict names what is wrong)
            return {**data, "recipe": deep_merge(to_dict(get_recipe(name)), recipe or {})}
    elif "recipe_name" in data and not label:
        keys = leaf_fields(RecipeConfig)
        unset = [k for k in keys if not _sets(recipe, k)]
        if 2 * len(unset) > len(keys):
            raise ConfigError(
                f"config file {str(path)!r}: recipe_name {name!r} is not a preset; it names the preset the "
                f"recipe starts from (the file's recipe: keys are laid over it), one of: {', '.join(all_presets())}. "
                f"To train a recipe of your own under a name of your own, spell out its recipe: section "
                f"(scalerl train --recipe NAME --print-config writes it whole; this file leaves out {len(unset)} of "
                f"its {len(keys)} keys: {', '.join(f'recipe.{k}' for k in unset[:3])}{', ...' if len(unset) > 3 else ''})")
    return data


def _sets(data, dotted: str) -> bool:
    """Whether the nested mapping ``data`` gives the dotted key (its value may be a mapping: ``loss.extra``)."""
    for part in dotted.split("."):
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def with_recipe(cfg: TrainConfig, name: str) -> TrainConfig:
    """``cfg`` with its recipe replaced by the named preset or leave-one-out variant."""
    return dataclasses.replace(cfg, recipe=get_recipe(name), recipe_name=name)
