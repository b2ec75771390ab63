"""Prompt sampling by epochs, with ScaleRL's no-positive-resampling curriculum.

Each epoch visits every active prompt once, in an order shuffled by (seed, epoch). After a
prompt's group is scored the trainer calls :meth:`PromptSampler.record`; with
no-positive-resampling on, a prompt whose pass rate reaches the threshold (0.9) is retired
and never drawn again -- not later in this epoch, not in any later epoch. Switched off, it
is plain epochs (the history is still kept, for logs).

The pass rate compared to the threshold pools the prompt's last ``window`` recorded groups
(1 = its latest group; 0 = its whole history). A group's pass rate is the fraction of its
rewards > 0 (rewards are +1 / -1, see ``scalerl.tasks.base``).

:meth:`sample`, :meth:`record` and the checkpoint methods are thread-safe (one lock per
sampler): a pipeline may draw dynamic-sampling refills from a generator's delivery thread
while the trainer's thread records groups or checkpoints.

:meth:`state_dict` / :meth:`load_state_dict` capture everything (position in the epoch,
the epoch's order, histories), so a resumed run draws exactly what the uninterrupted run
would have. The state is plain JSON.

    sampler = PromptSampler([p.id for p in task.train_problems()], seed=0)
    ids = sampler.sample(48)
    ...; sampler.record(pid, rewards_of_its_16_generations)
"""

from __future__ import annotations

import random
import threading
from typing import TYPE_CHECKING, Any, Hashable, Sequence

from scalerl.errors import ScaleRLError

if TYPE_CHECKING:
    from scalerl.rl.recipe import SamplerConfig

__all__ = ["PromptSampler", "SamplerExhausted"]


class SamplerExhausted(ScaleRLError):
    """Every prompt has been retired: nothing is left to train on."""


class PromptSampler:
    """Epochs over prompt ids; optionally retires prompts that became easy."""

    def __init__(
        self,
        prompt_ids: Sequence[Hashable],
        *,
        seed: int = 0,
        no_positive_resampling: bool = True,
        threshold: float = 0.9,
        window: int = 1,
    ) -> None:
        if not prompt_ids:
            raise ValueError("PromptSampler needs at least one prompt id")
        if len(set(prompt_ids)) != len(prompt_ids):
            raise ValueError("prompt ids must be unique")
        self.prompt_ids = list(prompt_ids)
        self.seed = seed
        self.no_positive_resampling = no_positive_resampling
        self.threshold = threshold
        self.window = window
        self.epoch = -1
        self._order: list[Hashable] = []
        self._position = 0
        self._history: dict[Hashable, list[tuple[int, int]]] = {}
        self._retired: set[Hashable] = set()
        self._known = set(self.prompt_ids)
        self._lock = threading.RLock()

    @classmethod
    def from_config(cls, prompt_ids: Sequence[Hashable], cfg: SamplerConfig, *, seed: int = 0) -> "PromptSampler":
        """Build from a :class:`~scalerl.rl.recipe.SamplerConfig`."""
        return cls(
            prompt_ids,
            seed=seed,
            no_positive_resampling=cfg.no_positive_resampling,
            threshold=cfg.pass_rate_threshold,
            window=cfg.pass_rate_window,
        )

    # -- drawing

    def sample(self, n: int) -> list[Hashable]:
        """The next ``n`` prompt ids, moving into new epochs as needed.

        When fewer than ``n`` prompts are active, one batch spans epochs and can repeat a
        prompt. Raises :class:`SamplerExhausted` when every prompt is retired.
        """
        out: list[Hashable] = []
        with self._lock:
            while len(out) < n:
                if self._position >= len(self._order):
                    self._start_epoch()
                pid = self._order[self._position]
                self._position += 1
                if pid not in self._retired:  # retired since this epoch's order was drawn
                    out.append(pid)
        return out

    def _start_epoch(self) -> None:
        active = [p for p in self.prompt_ids if p not in self._retired]
        if not active:
            raise SamplerExhausted(
                f"all {len(self.prompt_ids)} prompts reached a pass rate >= {self.threshold} and were retired; "
                "stop training, add harder prompts, or set sampler.no_positive_resampling=false"
            )
        self.epoch += 1
        # A string seed is hashed with SHA-512 by `random`, so the order is the same in every
        # process and Python version, whatever PYTHONHASHSEED is.
        random.Random(f"scalerl-sampler/{self.seed}/{self.epoch}").shuffle(active)
        self._order, self._position = active, 0

    # -- feedback

    def record(self, prompt_id: Hashable, rewards: Sequence[float]) -> bool:
        """Add one scored group of ``prompt_id``; returns True if this retires the prompt."""
        if prompt_id not in self._known:
            raise KeyError(f"unknown prompt id {prompt_id!r}")
        if not rewards:
            raise ValueError("a group needs at least one reward")
        with self._lock:
            self._history.setdefault(prompt_id, []).append((sum(r > 0 for r in rewards), len(rewards)))
            if (
                self.no_positive_resampling
                and prompt_id not in self._retired
                and self.pass_rate(prompt_id) >= self.threshold
            ):
                self._retired.add(prompt_id)
                return True
            return False

    def pass_rate(self, prompt_id: Hashable) -> float | None:
        """Pass rate over the prompt's last ``window`` groups (all if 0); None before any group."""
        with self._lock:
            groups = list(self._history.get(prompt_id, []))
        if not groups:
            return None
        recent = groups[-self.window :] if self.window > 0 else groups
        return sum(p for p, _ in recent) / sum(n for _, n in recent)

    def history(self, prompt_id: Hashable) -> list[tuple[int, int]]:
        """(passes, generations) of each recorded group of the prompt, oldest first."""
        with self._lock:
            return list(self._history.get(prompt_id, []))

    @property
    def retired(self) -> frozenset[Hashable]:
        with self._lock:
            return frozenset(self._retired)

    @property
    def active_count(self) -> int:
        with self._lock:
            return len(self.prompt_ids) - len(self._retired)

    # -- checkpointing

    def state_dict(self) -> dict[str, Any]:
        """Everything needed to continue exactly (JSON-serialisable when the ids are str or int)."""
        with self._lock:
            return self._state()

    def _state(self) -> dict[str, Any]:
        return {
            "seed": self.seed,
            "epoch": self.epoch,
            "position": self._position,
            "order": list(self._order),
            "history": [[pid, [list(g) for g in groups]] for pid, groups in self._history.items()],
            "retired": [p for p in self.prompt_ids if p in self._retired],
            "num_prompts": len(self.prompt_ids),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Restore :meth:`state_dict` output; the sampler must hold the same prompt ids."""
        unknown = [p for p in state["order"] + state["retired"] if p not in self._known]
        if unknown or state["num_prompts"] != len(self.prompt_ids):
            raise ValueError(
                f"this sampler state belongs to another prompt pool ({state['num_prompts']} prompts, "
                f"e.g. unknown id {unknown[:1]}); resume with the same training set"
            )
        with self._lock:
            self.seed = state["seed"]
            self.epoch = state["epoch"]
            self._position = state["position"]
            self._order = list(state["order"])
            self._history = {pid: [(int(p), int(n)) for p, n in groups] for pid, groups in state["history"]}
            self._retired = set(state["retired"])
