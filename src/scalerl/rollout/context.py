"""What turns a batch index into a batch: built once by the trainer, read by every rollout source.

The synchronous loop, the pipeline's scheduler and its generator workers all need the same
handful of things. They get them from two typed objects, not from the trainer:

* :class:`RoundContext` -- what one generate-and-score round needs: the tokenizer, the task (its
  reward), the recipe resolved into functions, the length controller. A generator worker in
  another process builds its own from the same config.
* :class:`RolloutContext` -- a round context plus what decides the *content* of each batch: the
  training problems, the prompt sampler, the sampling settings and the run seed.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from scalerl.generate.base import LengthController, SamplingParams
from scalerl.rl.components import RecipeComponents
from scalerl.rl.recipe import RecipeConfig
from scalerl.rl.sampler import PromptSampler
from scalerl.seeds import TRAIN_SAMPLING, derive_seed
from scalerl.tasks.base import Problem, Task


@dataclass
class RoundContext:
    """What generating and scoring one round of prompts needs."""

    tokenizer: Any
    """The policy's Hugging Face tokenizer (a thread that encodes needs its own copy: fast
    tokenizers are not safe to call from two threads at once)."""
    task: Task
    """Scores completions (``task.reward``)."""
    components: RecipeComponents
    """The recipe, resolved into functions (reward shaping, filter basis, ...)."""
    length_control: LengthController
    """The generator's length control (forced interruptions or truncation)."""

    @property
    def recipe(self) -> RecipeConfig:
        return self.components.recipe


@dataclass
class RolloutContext:
    """A round context plus what decides the content of each batch (see the module docstring)."""

    round: RoundContext
    problems: dict[str, Problem]
    """The training problems by id (the ids the sampler draws)."""
    sampler: PromptSampler
    """The prompt curriculum (thread-safe); every rollout source draws and records in an order
    fixed by the batch indices, so a resumed run reproduces it."""
    temperature: float
    top_p: float
    seed: int
    """The run seed every sampling seed derives from."""
    deterministic: bool = True
    """Seed the sampling of batch ``i`` from (seed, i); False: each generator's own random stream."""

    @property
    def recipe(self) -> RecipeConfig:
        return self.round.recipe

    def sampling_params(self, index: int) -> SamplingParams:
        """Sampling for training batch ``index`` (seeded from it when deterministic)."""
        seed = derive_seed(self.seed, TRAIN_SAMPLING, index) if self.deterministic else None
        return SamplingParams(max_new_tokens=self.recipe.length.max_new_tokens, temperature=self.temperature,
                              top_p=self.top_p, seed=seed)
