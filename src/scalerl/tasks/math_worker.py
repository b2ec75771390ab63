"""What math-verify's worker processes load (:class:`scalerl.tasks.rewards.RewardWorkers`).

    RewardWorkers("scalerl.tasks.math_worker:math_verify_reward", timeout=verify_timeout)

:func:`~scalerl.tasks.math_grading.math_verify_reward`, with math-verify imported and sympy warmed up as the
worker loads -- within the worker's start-up limit -- and not on its first call, within that call's
``verify_timeout``: the import takes ~0.7 s, and a shorter ``verify_timeout`` killed every call, the
restarted worker importing again, every right answer scored -1 (review cw).
"""

from __future__ import annotations

from scalerl.tasks.math_grading import math_verify_reward

math_verify_reward("\\boxed{1}", "1")  # imports math_verify and sympy's parser and checker once, here

__all__ = ["math_verify_reward"]
