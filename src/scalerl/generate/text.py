"""The text of completions, as the tasks' rewards read it.

    texts = completion_texts(tokenizer, [c.token_ids for c in completions])

Special tokens are left out of the text (the EOS a completion stops on, padding, a chat
template's turn markers), as ``skip_special_tokens=True`` does -- except the thinking markers
``<think>`` / ``</think>``. A tokenizer may register those as *special* added tokens (``add_tokens(...,
special_tokens=True)`` or ``additional_special_tokens``; Qwen3 marks them not special, some
fine-tunes do), and skipping them then removed the very ``</think>`` the rewards split on: the math
task scored the whole completion, thinking included, as its answer (a ``\\boxed{}`` guess in the
unfinished thinking counted), and the forced interruption's ``</think>`` vanished from the text.
"""

from __future__ import annotations

from typing import Any, Sequence

#: Special tokens kept in the text: the tasks find the answer after the last ``</think>``
#: (:func:`scalerl.tasks.math_grading.answer_region`, :func:`scalerl.tasks.rewards` functions).
KEPT_MARKERS = ("<think>", "</think>")


def skipped_ids(tokenizer: Any) -> set[int]:
    """Ids of the special tokens the text leaves out: the special-tokens map's and every added
    token marked special, less the thinking markers (:data:`KEPT_MARKERS`)."""
    ids = set(getattr(tokenizer, "all_special_ids", None) or ())
    added = getattr(tokenizer, "added_tokens_decoder", None) or {}
    ids.update(i for i, token in added.items() if getattr(token, "special", False))
    return ids - {i for i, token in added.items() if str(token) in KEPT_MARKERS}


def completion_texts(tokenizer: Any, rows: Sequence[Sequence[int]]) -> list[str]:
    """Each row of token ids decoded without its special tokens, thinking markers kept."""
    skip = skipped_ids(tokenizer)
    if not skip:
        return list(tokenizer.batch_decode([list(r) for r in rows], skip_special_tokens=True))
    kept = [[t for t in r if t not in skip] for r in rows]
    # Special tokens are filtered out above; the rest (the markers, if special) are decoded as text.
    return list(tokenizer.batch_decode(kept, skip_special_tokens=False))
