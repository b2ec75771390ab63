"""Tasks by name: ``get_task("arithmetic", digits=2)``, ``get_task("math", data="train.jsonl")``.

A new task is one decorated factory; ``reward="module:function"`` swaps any task's reward for
a user function (run in a worker process, see :mod:`scalerl.tasks.rewards`).
"""

from __future__ import annotations

import dataclasses
import importlib
import inspect
import logging
import os
from typing import Any, Callable

from scalerl.errors import ConfigError, InputError
from scalerl.tasks.base import Task

log = logging.getLogger(__name__)

TASKS: dict[str, Callable[..., Task]] = {}
#: Where a task's settings are declared (``"module:DataclassName"``), for tasks registered with one:
#: its settings are checked by name before it is built, so a typo gets a did-you-mean.
TASK_SETTINGS: dict[str, str] = {}


def register_task(name: str, settings: str | None = None) -> Callable[[Callable[..., Task]], Callable[..., Task]]:
    """Register a task factory; ``settings``: ``"module:Class"``, the dataclass whose fields are its settings."""
    def register(factory: Callable[..., Task]) -> Callable[..., Task]:
        TASKS[name] = factory
        if settings is not None:
            TASK_SETTINGS[name] = settings
        return factory

    return register


@register_task("arithmetic", settings="scalerl.tasks.arithmetic:ArithmeticTask")
def _arithmetic(**kwargs: Any) -> Task:
    from scalerl.tasks.arithmetic import ArithmeticTask

    return ArithmeticTask(**kwargs)


@register_task("arithmetic-mix", settings="scalerl.tasks.arithmetic_mix:ArithmeticMixTask")
def _arithmetic_mix(**kwargs: Any) -> Task:
    from scalerl.tasks.arithmetic_mix import ArithmeticMixTask

    return ArithmeticMixTask(**kwargs)


@register_task("math", settings="scalerl.tasks.math:MathTask")
def _math(**kwargs: Any) -> Task:
    from scalerl.tasks.math import MathTask

    return MathTask(**kwargs)


def _settings_class(name: str) -> type | None:
    """The dataclass declaring task ``name``'s settings; None for a task registered without one."""
    if name not in TASK_SETTINGS:
        return None
    module, _, cls_name = TASK_SETTINGS[name].partition(":")
    return getattr(importlib.import_module(module), cls_name)


def _settings_fields(name: str) -> list[dataclasses.Field]:
    cls = _settings_class(name)
    return [f for f in dataclasses.fields(cls) if f.init] if cls is not None else []


def declares_setting(name: str, setting: str) -> bool:
    """Whether task ``name`` has the setting ``setting`` (a field of its settings dataclass)."""
    return any(f.name == setting for f in _settings_fields(name))


def _check_settings(name: str, settings: dict[str, Any]) -> dict[str, Any]:
    """``settings`` converted to the types task ``name`` declares; :class:`InputError` saying what to
    do for an unknown or a missing setting (the constructor's own TypeError names neither the flag
    nor the known settings), and one naming a setting of the wrong type (``eval_data: [a.jsonl]``
    or ``prompt_field: null`` stopped in a traceback when the data was read)."""
    import difflib
    import typing

    from scalerl.config import coerce

    fields = _settings_fields(name)
    known = [f.name for f in fields]
    for key in settings:
        if key in known:
            continue
        if key == "data":
            raise InputError(f"--data (task.data) is for a task that reads a data file (--task math); task {name!r} "
                             "makes its own problems")
        close = difflib.get_close_matches(key, known, n=1)
        hint = f"did you mean {close[0]}? " if close else ""
        raise InputError(f"unknown setting {key!r} of task {name!r} (task.settings); {hint}known: {', '.join(known)}")
    missing = [f.name for f in fields if f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING and f.name not in settings]
    if missing == ["data"]:
        raise InputError(f"task {name!r} reads its problems from a data file: give --data FILE (task.data)")
    if missing:
        raise InputError(f"task {name!r} needs the setting {missing[0]!r}: --set 'task.settings={{{missing[0]}: ...}}'")
    hints = typing.get_type_hints(_settings_class(name))
    try:
        return {key: coerce(_paths_as_text(value), hints[key], f"task.settings.{key}") for key, value in settings.items()}
    except ConfigError as exc:
        raise InputError(f"task {name!r}: {exc}; docs/tasks.md (Task settings) lists each setting") from None


def _paths_as_text(value: Any) -> Any:
    """A ``pathlib.Path`` (the Python API's ``data=tmp / "train.jsonl"``) as the text a setting holds."""
    if isinstance(value, os.PathLike):
        return os.fspath(value)
    if isinstance(value, dict):
        return {k: _paths_as_text(v) for k, v in value.items()}
    return value


#: The reward function's fields of the run's task (``task.reward_timeout``, ...): :func:`get_task`'s own
#: keywords, never task settings.
REWARD_FIELDS = ("reward", "reward_timeout", "reward_workers", "reward_load_timeout")


def _warn_unused_reward_fields(**given: Any) -> None:
    """Say so when a reward function's limits are set but no reward function is: they apply to a
    ``task.reward`` alone (its worker processes), and were taken without a word -- a user who set
    ``task.reward_timeout`` for math-verify believed its calls had that limit."""
    defaults = {f: p.default for f, p in inspect.signature(get_task).parameters.items() if f in given}
    unused = [f"task.{f}={v}" for f, v in given.items() if v != defaults[f]]
    if unused:
        log.warning("%s: no effect without a reward function of your own (task.reward / --reward); the task's "
                    "own reward has none (the math task's math-verify: task.settings verify_timeout, "
                    "verify_workers)", ", ".join(unused))


def get_task(name: str, *, reward: str | None = None, reward_timeout: float = 10.0, reward_workers: int = 1,
             reward_load_timeout: float = 60.0, settings: dict[str, Any] | None = None, **kwargs: Any) -> Task:
    """Build task ``name`` with its settings (``settings``, a run's ``task.settings``, and/or keywords);
    ``reward``: a user reward function replacing the task's own, run in ``reward_workers`` worker
    processes (each given ``reward_load_timeout`` seconds to import it)."""
    factory = TASKS.get(name)
    if factory is None:
        raise InputError(f"unknown task {name!r}; known tasks: {', '.join(sorted(TASKS))}")
    # A run's settings come as a mapping: spread into this call, one named like a keyword above was a
    # TypeError traceback ("got multiple values for keyword argument 'reward_load_timeout'").
    clash = [key for key in REWARD_FIELDS if key in (settings or {})]
    if clash:
        raise InputError(f"task.settings {clash[0]!r} is not a task setting but task.{clash[0]} itself: give it as "
                         f"--set task.{clash[0]}=VALUE")
    kwargs = {**(settings or {}), **kwargs}
    if name in TASK_SETTINGS:
        kwargs = _check_settings(name, kwargs)
    try:
        task = factory(**kwargs)
    except TypeError as exc:  # an unknown or missing setting
        raise InputError(f"task {name!r}: {exc}") from None
    if reward is None:
        _warn_unused_reward_fields(reward_timeout=reward_timeout, reward_workers=reward_workers,
                                   reward_load_timeout=reward_load_timeout)
    else:
        from scalerl.tasks.rewards import RewardWorkers, UserRewardTask

        task = UserRewardTask(task, RewardWorkers(reward, timeout=reward_timeout, workers=reward_workers,
                                                      startup_timeout=reward_load_timeout,
                                                      timeout_setting="task.reward_timeout"))
    return task
