"""Reproducible seeds derived from the run seed: one per (purpose, index).

Every random choice of a run -- the sampling of training batch ``i``, an evaluation set's
draw, the decode steps at which PipelineRL's in-flight updates land -- takes its seed from
``derive_seed(run_seed, purpose, i, ...)``, never from a running random stream, so a resumed
run (or a batch regenerated after a crash) draws exactly what the uninterrupted run drew.
"""

from __future__ import annotations

#: Purposes: the second argument of :func:`derive_seed` (distinct per use, never reused).
TRAIN_SAMPLING, EVAL_SAMPLING, UPDATE_POINTS = 1, 2, 3


def derive_seed(base: int, *parts: int) -> int:
    """A distinct, reproducible 63-bit seed per (run seed, purpose, index, ...)."""
    h = base & 0xFFFFFFFF
    for p in parts:
        h = (h * 1_000_003 + p + 0x9E3779B9) & 0x7FFFFFFFFFFFFFFF
    return h
