"""Tasks by name: ``get_task("arithmetic", digits=2)``, ``get_task("math", data="train.jsonl")``.

A new task is one decorated factory; ``reward="module:function"`` swaps any task's reward for
a user function (run in a worker process, see :mod:`scalerl.tasks.rewards`).
"""

from __future__ import annotations

from typing import Any, Callable

from scalerl.errors import InputError
from scalerl.tasks.base import Task

TASKS: dict[str, Callable[..., Task]] = {}


def register_task(name: str) -> Callable[[Callable[..., Task]], Callable[..., Task]]:
    def register(factory: Callable[..., Task]) -> Callable[..., Task]:
        TASKS[name] = factory
        return factory

    return register


@register_task("arithmetic")
def _arithmetic(**kwargs: Any) -> Task:
    from scalerl.tasks.arithmetic import ArithmeticTask

    return ArithmeticTask(**kwargs)


@register_task("arithmetic-mix")
def _arithmetic_mix(**kwargs: Any) -> Task:
    from scalerl.tasks.arithmetic_mix import ArithmeticMixTask

    return ArithmeticMixTask(**kwargs)


@register_task("math")
def _math(**kwargs: Any) -> Task:
    from scalerl.tasks.math import MathTask

    return MathTask(**kwargs)


def get_task(name: str, *, reward: str | None = None, reward_timeout: float = 10.0, **kwargs: Any) -> Task:
    """Build task ``name`` with its settings; ``reward``: a user reward function replacing the task's own."""
    factory = TASKS.get(name)
    if factory is None:
        raise InputError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    try:
        task = factory(**kwargs)
    except TypeError as exc:  # an unknown or missing setting
        raise InputError(f"task {name!r}: {exc}") from None
    if reward is not None:
        from scalerl.tasks.rewards import UserReward, UserRewardTask

        task = UserRewardTask(task, UserReward(reward, timeout=reward_timeout))
    return task
