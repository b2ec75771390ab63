"""How an update's sequences are cut into forward/backward passes: by count and by padded tokens.

A pass's activations grow with rows x padded length, not with rows alone: 64 sequences of 48
tokens (the tiny CPU task) and 64 of 4,096 (a real model's reasoning) are 3k and 262k tokens --
the second, through a 0.5B model's 24 layers, is on the order of a hundred GB of activations.
So a micro-batch closes when it holds ``max_rows`` sequences *or* when one more would take its
padded size (rows x (longest prompt + longest completion)) past ``max_tokens`` -- the dynamic
batch size of verl (``ppo_max_token_len_per_gpu``, 16,384 by default) and of prime-rl. The
gradient is the same however the sequences are cut (the step's normalisers are global; the
micro-batches' gradients add up), so this changes memory and speed only. A sequence longer than
the budget goes in a pass of its own.
"""

from __future__ import annotations

from typing import Sequence


def micro_batches(order: Sequence[int], lengths: Sequence[tuple[int, int]], max_rows: int,
                  max_tokens: int = 0) -> list[list[int]]:
    """``order`` (indices into ``lengths``, in the order to pack them) cut into micro-batches of at
    most ``max_rows`` rows and, where ``max_tokens`` > 0, at most ``max_tokens`` padded tokens.
    ``lengths[i]``: (prompt tokens, completion tokens) of sequence i."""
    out: list[list[int]] = []
    current: list[int] = []
    prompt = completion = 0
    for i in order:
        p, c = lengths[i]
        wider_p, wider_c = max(prompt, p), max(completion, c)
        full = len(current) >= max_rows or (max_tokens > 0 and (len(current) + 1) * (wider_p + wider_c) > max_tokens)
        if current and full:
            out.append(current)
            current, wider_p, wider_c = [], p, c
        current.append(i)
        prompt, completion = wider_p, wider_c
    if current:
        out.append(current)
    return out
