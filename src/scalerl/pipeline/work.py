"""The unit of work a generator does, and the worker that does it, wherever it runs.

The driver (the trainer's process) decides *what* is generated: for batch ``index`` it draws
the prompts from the sampler and derives the sampling seed from the index, and sends a
:class:`RoundRequest`. A generator -- a thread, a process or a Ray actor, each holding its own
copy of the policy -- only turns a request into a :class:`RoundResult` (generate, score). The
request is plain data, so it can be re-sent verbatim: that is what makes a restarted actor
produce the *same* batch (same index, same prompts, same seed) rather than a new one.

A *round* is one generate-and-score pass over a set of prompts. A batch is one round, or
several under DAPO's dynamic sampling (refill rounds top up the zero-variance groups).

:class:`WorkerSpec` is everything a generator in another process needs to rebuild the policy
and the reward without touching the driver's disk: the model config and tokenizer objects
(pickled), the task's settings, the recipe. The weights come separately (shared memory or
Ray's object store) and are versioned.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from scalerl.generate.base import SamplingParams
from scalerl.tasks.base import Problem
from scalerl.train.rollout import Group, generate_groups


@dataclass
class RoundRequest:
    """Generate and score ``problems`` for round ``round`` of training batch ``index``."""

    index: int
    """Training batch index (= the optimizer step that will consume it, on an uninterrupted run)."""
    round: int
    """0, or the dynamic-sampling refill round."""
    problems: list[Problem]
    params: SamplingParams
    """Sampling for this round; its seed derives from (run seed, index, round) in deterministic runs."""
    min_version: int
    """The generator must hold at least this policy version before it starts (the staleness bound
    relies on it: weights are pushed before the request is sent)."""

    @property
    def key(self) -> tuple[int, int]:
        return (self.index, self.round)


@dataclass
class RoundResult:
    """A request's scored groups and what producing them cost."""

    index: int
    round: int
    groups: list[Group]
    samples: int
    tokens: int
    prompt_tokens: int
    busy_s: float
    """Seconds the worker spent on it (generation and scoring)."""
    worker: int
    reward_stats: dict[str, int] = field(default_factory=dict)
    """Errors / timeouts of a user reward function in this round, when the worker scored with
    its own copy of the task (processes, Ray); empty when it shares the trainer's."""

    @property
    def key(self) -> tuple[int, int]:
        return (self.index, self.round)


class RolloutWorker:
    """Turns requests into results with one generator (not thread-safe: one per thread)."""

    def __init__(self, generator: Any, tokenizer: Any, task: Any, recipe: Any, length_control: Any, *,
                 worker_id: int = 0, owns_task: bool = False) -> None:
        self.generator = generator
        self.tokenizer = tokenizer
        self.task = task
        self.recipe = recipe
        self.length_control = length_control
        self.worker_id = worker_id
        self.owns_task = owns_task

    def run(self, request: RoundRequest) -> RoundResult:
        t = time.perf_counter()
        before = self._reward_counts()
        groups, samples, tokens, prompt_tokens = generate_groups(
            self.generator, self.tokenizer, self.task, request.problems, self.recipe, request.params,
            self.length_control,
        )
        after = self._reward_counts()
        return RoundResult(
            request.index, request.round, groups, samples, tokens, prompt_tokens,
            busy_s=time.perf_counter() - t, worker=self.worker_id,
            reward_stats={k: after[k] - before[k] for k in after},
        )

    def _reward_counts(self) -> dict[str, int]:
        stats = getattr(self.task, "reward_stats", None)
        if not self.owns_task or stats is None:
            return {}
        s = stats()
        return {"errors": s["errors"], "timeouts": s["timeouts"]}

    def close(self) -> None:
        if self.owns_task:
            close = getattr(getattr(self.task, "user_reward", None), "close", None)
            if close is not None:
                close()


@dataclass
class WorkerSpec:
    """How to rebuild the policy, tokenizer, task and length control in another process."""

    model_config: Any
    """The policy's Hugging Face config object (architecture; weights come separately)."""
    tokenizer: Any
    dtype: str
    """Parameter dtype name of the trainer's model (float32, bfloat16, ...)."""
    fp32_lm_head: bool
    recipe: Any
    task_name: str
    task_settings: dict[str, Any]
    task_reward: str | None
    task_reward_timeout: float
    seed: int
    threads: int = 1
    """torch intra-op threads in the generator process (1: one core each, no oversubscription)."""
    device: str = "cpu"
    generator: str = "hf"
    """Generation engine: hf, or vllm (GPU; see scalerl.generate.vllm)."""
    generator_options: dict[str, Any] = field(default_factory=dict)
    """Extra options for the engine (vllm: engine keyword arguments)."""
    model_path: str | None = None
    """Where the engine may load the architecture and tokenizer from (vllm needs a path)."""

    @classmethod
    def from_trainer(cls, trainer: Any) -> "WorkerSpec":
        cfg = trainer.cfg
        settings = dict(cfg.task.settings)
        if cfg.task.data is not None:
            settings["data"] = cfg.task.data
        dtype = str(trainer.precision.generator_dtype).removeprefix("torch.")  # the compute dtype
        from scalerl.models.loading import resolve_model

        return cls(
            model_config=trainer.model.config, tokenizer=trainer.tokenizer, dtype=dtype,
            fp32_lm_head=cfg.recipe.fp32_lm_head, recipe=cfg.recipe, task_name=cfg.task.name,
            task_settings=settings, task_reward=cfg.task.reward, task_reward_timeout=cfg.task.reward_timeout,
            seed=cfg.run.seed, threads=cfg.backend.generator_threads, device=cfg.backend.generator_device,
            generator=cfg.backend.generator, generator_options=dict(cfg.backend.generator_options),
            model_path=resolve_model(cfg.model.name_or_path) if cfg.backend.generator == "vllm" else None,
        )


def build_worker(spec: WorkerSpec, state_dict: Mapping[str, Any], version: int, worker_id: int) -> RolloutWorker:
    """A :class:`RolloutWorker` from a spec and the current weights (in a generator process or actor)."""
    import torch

    from scalerl.generate.registry import make_generator
    from scalerl.rl.length import length_controller
    from scalerl.tasks.registry import get_task

    if spec.device == "cpu":
        torch.set_num_threads(max(1, spec.threads))
    task = get_task(spec.task_name, reward=spec.task_reward, reward_timeout=spec.task_reward_timeout,
                    **spec.task_settings)
    generator = make_generator(spec, state_dict, version, seed=worker_seed(spec.seed, worker_id))
    return RolloutWorker(generator, spec.tokenizer, task, spec.recipe, length_controller(spec.recipe.length, spec.tokenizer),
                         worker_id=worker_id, owns_task=True)


def worker_seed(seed: int, worker_id: int) -> int:
    """The generator RNG seed of worker ``worker_id`` (used when sampling is not seeded per batch)."""
    return seed + 1000 * (worker_id + 1)


def thread_worker(trainer: Any, worker_id: int) -> RolloutWorker:
    """A worker in the trainer's process: a private copy of the model and the tokenizer (HF fast
    tokenizers are not safe to call from two threads at once), the trainer's task (its rewards
    are thread-safe: arithmetic is pure, math-verify skips its signal-based timeout off the main
    thread, a user reward function serialises calls to its worker process)."""
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.lora import generator_copy

    # A plain inference copy in the compute dtype (LoRA merged in; scalerl.models.lora).
    model = generator_copy(trainer.model, trainer.precision.generator_dtype)
    tokenizer = copy.deepcopy(trainer.tokenizer)
    gen = HFGenerator(model, tokenizer, seed=worker_seed(trainer.cfg.run.seed, worker_id), version=trainer.version)
    return RolloutWorker(gen, tokenizer, trainer.task, trainer.cfg.recipe, trainer.length_control, worker_id=worker_id)
