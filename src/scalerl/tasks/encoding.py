"""Turn a problem's prompt text into the token ids the generator is given.

An instruct model gets its chat template (one user turn plus the generation prompt), as it
was trained to see; a base model -- the tiny one included -- gets the raw text with the
tokenizer's usual special tokens (e.g. BOS).
"""

from __future__ import annotations

from typing import Any, Sequence


def has_chat_template(tokenizer: Any) -> bool:
    return bool(getattr(tokenizer, "chat_template", None))


def encode_prompt(tokenizer: Any, text: str) -> list[int]:
    """Token ids of one prompt: chat template when the tokenizer has one, else the raw text."""
    if has_chat_template(tokenizer):
        ids = tokenizer.apply_chat_template(
            [{"role": "user", "content": text}], add_generation_prompt=True, tokenize=True
        )
        # transformers 5 returns a BatchEncoding here; 4.x returns the list of ids.
        if hasattr(ids, "keys") and "input_ids" in ids:
            ids = ids["input_ids"]
        return list(ids)
    return list(tokenizer(text).input_ids)


def encode_prompts(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    return [encode_prompt(tokenizer, t) for t in texts]
