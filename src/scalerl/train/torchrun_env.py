"""Which rank of a trainer group this process is, from the variables torchrun (or a scheduler's
launcher: srun, mpirun wrappers) sets. Without torch: a stop's message reads it, and a stop can
come while torch is still being imported."""

from __future__ import annotations

import os


def env_rank() -> tuple[int, int, int] | None:
    """(rank, world size, local rank) when launched by torchrun (its environment variables), else None."""
    if "WORLD_SIZE" not in os.environ or "RANK" not in os.environ:
        return None
    return int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"]), int(os.environ.get("LOCAL_RANK", 0))
