"""What the paper found each choice moves (docs/paper.md, "What moves what"), so a study can say where it agrees.

    Ceiling movers (A): model size, generation length, global batch size, loss type
    (CISPO/GSPO over DAPO), FP32 logits. Efficiency shapers (B, C_mid): loss aggregation,
    advantage normalisation, curriculum (no-positive-resampling), off-policy pipeline.

Keys are what a variant changes: a top-level recipe component (as in
:data:`scalerl.rl.presets.LEAVE_ONE_OUT`'s ``component``) or a sweep's knob. Components the paper
§1 does not classify (length control, zero-variance filtering, generations per prompt) say so
instead of guessing.
"""

from __future__ import annotations

from dataclasses import dataclass

CEILING, EFFICIENCY, UNNAMED = "ceiling", "efficiency", "not classified"


@dataclass(frozen=True)
class Finding:
    kind: str
    """ceiling, efficiency, or not classified (the paper names neither)."""
    note: str
    """The paper's words, short."""


PAPER: dict[str, Finding] = {
    "loss": Finding(CEILING, "loss type: CISPO/GSPO raise the ceiling over DAPO"),
    "fp32_lm_head": Finding(CEILING, "FP32 logits raise the ceiling"),
    "aggregation": Finding(EFFICIENCY, "loss aggregation shapes efficiency"),
    "advantages": Finding(EFFICIENCY, "advantage normalisation shapes efficiency"),
    "sampler": Finding(EFFICIENCY, "curriculum (no-positive-resampling) shapes efficiency"),
    "off_policy": Finding(EFFICIENCY, "the off-policy pipeline shapes efficiency"),
    "length": Finding(UNNAMED, "length control (interruptions vs overlong penalty): not classified by the paper"),
    "filtering": Finding(UNNAMED, "zero-variance filtering: not classified by the paper"),
    "batch size": Finding(CEILING, "global batch size raises the ceiling (batch 2048: A 0.645 vs 0.605 at 512)"),
    "generation length": Finding(CEILING, "generation length raises the ceiling (32k: A 0.645 vs 0.610 at 14k)"),
    "model size": Finding(CEILING, "model size raises the ceiling (17Bx16 MoE: A 0.710 vs 0.610 for 8B)"),
    "generations per prompt": Finding(
        UNNAMED, "generations per prompt: not classified by the paper (its table: A 0.585-0.595 for 8-32, B 2.44-2.07)"
    ),
}


def expectation(components: list[str]) -> Finding:
    """What the paper leads one to expect of a variant that changes ``components``.

    A recipe that changes any ceiling mover is expected to move the ceiling; one that changes
    only efficiency shapers, the efficiency.
    """
    found = [PAPER[c] for c in components if c in PAPER]
    ceiling = [f for f in found if f.kind == CEILING]
    if ceiling:
        return Finding(CEILING, "; ".join(f.note for f in ceiling))
    shapers = [f for f in found if f.kind == EFFICIENCY]
    if shapers:
        return Finding(EFFICIENCY, "; ".join(f.note for f in shapers))
    if found:
        return Finding(UNNAMED, "; ".join(f.note for f in found))
    return Finding(UNNAMED, "no component the paper classifies")
