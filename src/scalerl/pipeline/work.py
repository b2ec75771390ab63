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

Under deterministic PipelineRL-k a request also carries its :class:`~scalerl.pipeline.landing.UpdatePlan`:
the worker then loads the planned weights at the planned decode steps, from the pool's
:class:`~scalerl.pipeline.landing.WeightHistory`, instead of whatever arrived last.
"""

from __future__ import annotations

import copy
import time
from dataclasses import dataclass, field
from typing import Any, Mapping

from scalerl.generate.base import Generator, SamplingParams
from scalerl.pipeline.config import BackendConfig
from scalerl.pipeline.context import PipelineContext
from scalerl.pipeline.landing import Landing, UpdatePlan, WeightHistory
from scalerl.rl.recipe import RecipeConfig
from scalerl.rollout.context import RoundContext
from scalerl.rollout.groups import Group
from scalerl.rollout.produce import generate_groups
from scalerl.tasks.base import Problem, Task, load_reward_state, reward_state
from scalerl.tasks.failure_tally import counting_failures


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
    updates: UpdatePlan | None = None
    """Deterministic PipelineRL-k: the weights to start on and the decode steps where later ones
    land (then ``min_version`` is not used)."""
    reward_state: dict[str, Any] | None = None
    """What the trainer's copy of the reward has learnt (:func:`scalerl.tasks.base.reward_state`: a user function's
    failure floor, whether it answers) when the request was sent, for a worker that scores with a task of its own (a
    process, a Ray actor) to start from: after a resume or a restart its own copy is new (review ee: an actor scored
    failures -1 where the run had seen -5). Stamped by the scheduler as it sends the request (``_stamped``)."""

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
    reward_failures: dict[str, int] = field(default_factory=dict)
    """Failed reward calls (errors, timeouts) in scoring this round, whichever copy of the task
    scored it (the trainer's, shared by generator threads; a process's or an actor's own)."""
    reward_state: dict[str, Any] | None = None
    """The worker's own copy of the reward's state after scoring (None where it scores with the trainer's task; empty
    for a task that keeps none): the scheduler takes it into the trainer's copy as it arrives, so the requests sent
    after it and the checkpoint hold what every copy learnt."""

    @property
    def key(self) -> tuple[int, int]:
        return (self.index, self.round)


class RolloutWorker:
    """Turns requests into results with one generator (not thread-safe: one per thread).

    ``history``: where planned weights come from (deterministic PipelineRL-k on threads)."""

    def __init__(self, generator: Generator, ctx: RoundContext, *, worker_id: int = 0, owns_task: bool = False,
                 history: WeightHistory | None = None) -> None:
        self.generator = generator
        self.ctx = ctx
        self.worker_id = worker_id
        self.owns_task = owns_task
        self.history = history

    @property
    def task(self) -> Task:
        return self.ctx.task

    def run(self, request: RoundRequest) -> RoundResult:
        t = time.perf_counter()
        updates = None
        if request.updates is not None:
            if self.history is None:
                raise RuntimeError("a request with an update plan reached a worker without a weight history")
            updates = Landing(request.updates, self.history)
        if self.owns_task and request.reward_state:
            load_reward_state(self.task, request.reward_state)
        with counting_failures() as tally:
            groups, samples, tokens, prompt_tokens = generate_groups(self.ctx, self.generator, request.problems,
                                                                     request.params, updates=updates)
        return RoundResult(
            request.index, request.round, groups, samples, tokens, prompt_tokens,
            busy_s=time.perf_counter() - t, worker=self.worker_id, reward_failures=tally.as_dict(),
            reward_state=reward_state(self.task) if self.owns_task else None,
        )

    def close(self) -> None:
        if self.owns_task:
            # A user reward's worker process, or the math task's math-verify worker.
            close = getattr(self.task, "close", None)
            if close is not None:
                close()


@dataclass
class WorkerSpec:
    """How to rebuild the policy, tokenizer, task and length control in another process."""

    model_config: Any
    """The policy's Hugging Face config object (architecture; weights come separately)."""
    tokenizer: Any
    dtype: str
    """Dtype name the generator holds the policy in: the run's compute dtype (float32, bfloat16, ...)."""
    fp32_lm_head: bool
    recipe: RecipeConfig
    task_name: str
    task_settings: dict[str, Any]
    task_reward: str | None
    task_reward_timeout: float
    seed: int
    task_reward_workers: int = 1
    """Worker processes of the user reward function in each generator process / actor."""
    task_reward_load_timeout: float = 60.0
    """Seconds each of them may take to import the function's module."""
    threads: int = 1
    """torch intra-op threads in the generator process (1: one core each, no oversubscription)."""
    device: str = "cpu"
    generator: str = "hf"
    """Generation engine: hf, or vllm (GPU; see scalerl.generate.vllm)."""
    generator_options: dict[str, Any] = field(default_factory=dict)
    """Extra options for the engine (vllm: engine keyword arguments)."""
    model_path: str | None = None
    """Where the engine may load the architecture and tokenizer from (vllm needs a path)."""
    decode_rows: int | None = None
    """The hf engine decodes at most this many rows at once, a larger call in pieces (None: every
    row; vllm schedules its own KV cache)."""
    cudnn_attention: bool = False
    """The hf engine on CUDA lets SDPA use cuDNN's kernel (``run.cudnn_attention``)."""
    generation_config: Any = None
    """The policy's generation config: the EOS ids it alone lists (Gemma-2-it's ``<end_of_turn>``) end a process's
    or an actor's completions as they end the trainer's (review co: a model built from the config alone lost them)."""

    @classmethod
    def from_context(cls, ctx: PipelineContext) -> "WorkerSpec":
        b: BackendConfig = ctx.backend
        dtype = str(ctx.generator_dtype).removeprefix("torch.")  # the compute dtype
        from scalerl.models.loading import resolve_model

        return cls(
            model_config=ctx.model.config, tokenizer=ctx.rollout.round.tokenizer, dtype=dtype,
            fp32_lm_head=ctx.rollout.recipe.fp32_lm_head, recipe=ctx.rollout.recipe, task_name=ctx.task.name,
            task_settings=dict(ctx.task.settings), task_reward=ctx.task.reward,
            task_reward_timeout=ctx.task.reward_timeout, task_reward_workers=ctx.task.reward_workers,
            task_reward_load_timeout=ctx.task.reward_load_timeout,
            seed=ctx.rollout.seed, threads=b.generator_threads,
            device=b.generator_device, generator=b.generator, generator_options=dict(b.generator_options),
            model_path=resolve_model(ctx.model_path) if b.generator == "vllm" else None,
            decode_rows=ctx.engine_rows, cudnn_attention=ctx.cudnn_attention,
            generation_config=getattr(ctx.model, "generation_config", None),
        )


def build_worker(spec: WorkerSpec, state_dict: Mapping[str, Any], version: int, worker_id: int) -> RolloutWorker:
    """A :class:`RolloutWorker` from a spec and the current weights (in a generator process or actor)."""
    import torch

    from scalerl.generate.registry import make_generator
    from scalerl.models.devices import run_device
    from scalerl.rl.components import resolve_recipe
    from scalerl.tasks.registry import get_task

    # The device on the machine this worker landed on, in one line (a Ray actor's machine: torch's own
    # "Torch not compiled with CUDA enabled" killed the actor and the driver printed pages -- review dd).
    run_device(spec.device, "backend.generator_device", auto=False)
    if spec.device == "cpu":
        torch.set_num_threads(max(1, spec.threads))
    # The reward function's limits only with a reward function: the trainer's own get_task already warned that
    # they do nothing without one, and each generator process said it again.
    limits = (dict(reward_timeout=spec.task_reward_timeout, reward_workers=spec.task_reward_workers,
                   reward_load_timeout=spec.task_reward_load_timeout) if spec.task_reward else {})
    task = get_task(spec.task_name, reward=spec.task_reward, settings=spec.task_settings, **limits)
    generator = make_generator(spec, state_dict, version, seed=worker_seed(spec.seed, worker_id))
    parts = resolve_recipe(spec.recipe)
    ctx = RoundContext(spec.tokenizer, task, parts, parts.length_controller(spec.tokenizer))
    return RolloutWorker(generator, ctx, worker_id=worker_id, owns_task=True)


def worker_seed(seed: int, worker_id: int) -> int:
    """The generator RNG seed of worker ``worker_id`` (used when sampling is not seeded per batch)."""
    return seed + 1000 * (worker_id + 1)


def thread_worker(ctx: PipelineContext, worker_id: int, history: WeightHistory | None = None) -> RolloutWorker:
    """A worker in the trainer's process: a private copy of the model and the tokenizer (HF fast
    tokenizers are not safe to call from two threads at once), the trainer's task (its rewards
    are thread-safe: arithmetic is pure, math-verify skips its signal-based timeout off the main
    thread, a user reward function serialises calls to its worker process)."""
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.lora import generator_copy

    # A plain inference copy in the compute dtype (LoRA merged in; scalerl.models.lora).
    model = generator_copy(ctx.model, ctx.generator_dtype)
    rnd = ctx.rollout.round
    tokenizer = copy.deepcopy(rnd.tokenizer)
    gen = HFGenerator(model, tokenizer, seed=worker_seed(ctx.rollout.seed, worker_id), version=ctx.version,
                      max_rows=ctx.decode_rows)
    own = RoundContext(tokenizer, rnd.task, rnd.components, rnd.length_control)
    return RolloutWorker(gen, own, worker_id=worker_id, history=history)
