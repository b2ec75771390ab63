"""scalerl.tasks: problems, evaluation sets and rewards.

Kept import-light (no torch): the reward worker process imports this package.
"""

from scalerl.tasks.base import Problem, Task
from scalerl.tasks.registry import TASKS, get_task, register_task

__all__ = ["Problem", "Task", "TASKS", "get_task", "register_task"]
