"""The task interface: problems to train on, evaluation sets, and a reward.

Rewards follow the paper: +1 for a correct answer, -1 otherwise (``pass`` means reward > 0).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol, Sequence, runtime_checkable


def is_bool(value: Any) -> bool:
    """Python's bool or numpy's (``numpy.bool_``, named ``bool`` since numpy 2: no bool subclass)."""
    return type(value).__name__ in ("bool", "bool_")


@dataclass(frozen=True)
class Problem:
    """One prompt with its reference answer."""

    id: str
    """Stable id (used by the no-positive-resampling sampler and in logs)."""
    prompt: str
    """Text given to the model (before any chat template); where the data gave a conversation
    (``messages``), the text of its last user turn (what logs show and a reward function gets)."""
    answer: str
    """Reference answer the reward compares against."""
    meta: dict[str, Any] = field(default_factory=dict, hash=False, compare=False)
    messages: tuple[tuple[str, str], ...] = ()
    """The conversation to prompt with, where the data gave one: ``(role, content)`` pairs ending
    with a user turn (a system prompt, then the question -- verl's and TRL's conversational
    datasets); empty where ``prompt`` is the one user turn."""

    @property
    def conversation(self) -> list[dict[str, str]]:
        """The prompt as chat messages: the data's conversation, or ``prompt`` as one user turn."""
        if self.messages:
            return [{"role": role, "content": content} for role, content in self.messages]
        return [{"role": "user", "content": self.prompt}]


def problems_digest(problems: Sequence[Problem]) -> str:
    """A fingerprint of ``problems`` -- each one's id, prompt, conversation and answer, in order -- that a run keeps
    in its checkpoints: a resume on data edited since (rows added, answers changed in place) is told by it."""
    import hashlib
    import json

    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.id, p.prompt, p.messages, p.answer], ensure_ascii=False).encode("utf-8"))
        h.update(b"\n")
    return h.hexdigest()


@runtime_checkable
class Task(Protocol):
    name: str

    def train_problems(self) -> Sequence[Problem]:
        """The training pool (disjoint from every evaluation set)."""
        ...

    def eval_sets(self) -> dict[str, Sequence[Problem]]:
        """Named held-out sets; ``"val"`` is the one the forecast fits. Each becomes run-log columns."""
        ...

    def reward(self, problem: Problem, completion: str) -> float:
        """Score one completion: +1.0 correct, -1.0 otherwise. Must not raise for bad completions."""
        ...


def reference_notes(task: Task) -> list[str]:
    """What a task found wrong with its reference answers at the start (answers its reward cannot
    read, against which every completion scores -1): a task that checks offers ``reference_notes()``;
    a user's reward function (which reads the answers its own way) and other tasks say nothing."""
    check = getattr(task, "reference_notes", None)
    return list(check()) if check is not None else []


def reward_state(task: Task) -> dict[str, Any]:
    """What a task's reward has learnt from its calls so far (a user function's failure floor and whether it
    answers: ``reward_state()``), for a checkpoint and for the copies of the task in generator processes and Ray
    actors (:mod:`scalerl.pipeline.scheduler`); empty for a task that keeps nothing."""
    save = getattr(task, "reward_state", None)
    return dict(save()) if save is not None else {}


def load_reward_state(task: Task, state: dict[str, Any]) -> None:
    """Take what :func:`reward_state` gave -- a checkpoint's, another copy's -- into ``task`` (nothing where either
    side has none); the task merges it with what it knows (``load_reward_state``: a floor only goes down)."""
    load = getattr(task, "load_reward_state", None)
    if load is not None and state:
        load(state)


def calls_at_once(task: Task) -> int:
    """How many reward calls a task can run at once: its worker processes where it scores on them
    (``reward_calls_at_once``), else 1 (scored in this process, one call at a time)."""
    return int(getattr(task, "reward_calls_at_once", 1))


def score_all(task: Task, pairs: Sequence[tuple[Problem, str]]) -> list[float]:
    """Rewards of ``(problem, completion)`` pairs, in order. A task that scores in worker processes
    offers ``rewards(pairs)`` to score a batch concurrently; any other is called once per pair."""
    batch = getattr(task, "rewards", None)
    if batch is not None:
        return list(batch(pairs))
    return [task.reward(problem, completion) for problem, completion in pairs]


def score_flagged(task: Task, pairs: Sequence[tuple[Problem, str]]) -> list[tuple[float, bool]]:
    """:func:`score_all`'s rewards, each with whether its call failed (a user reward function that raised, hung
    or returned a non-number: ``flagged_rewards``); a task whose rewards cannot fail flags none."""
    flagged = getattr(task, "flagged_rewards", None)
    if flagged is not None:
        return list(flagged(pairs))
    return [(reward, False) for reward in score_all(task, pairs)]
