"""A character-level tokenizer for the tiny model, built with Hugging Face ``tokenizers``.

Every printable ASCII character and the newline is one token, so any prompt, any scratchpad
and the forced-interruption phrase (``Okay, time is up. ... </think>``) encode without
unknown tokens. ``<think>`` and ``</think>`` are single (non-special) added tokens: they
survive ``decode(..., skip_special_tokens=True)`` so rewards can find the answer after
``</think>``, and they keep the scratchpad short. So is the sentence of ScaleRL's forced
interruption (:data:`INTERRUPTION_SENTENCE`): spelled out in characters it would be 74 forced
tokens after a ~20-token scratchpad, multiplying the cost of every interrupted sample by ~3.5
(measured), where a real BPE tokenizer spends ~15 tokens after thousands of thinking tokens.
As one token, ``"<sentence> </think>"`` is 3 tokens; any other wording still encodes, by characters. ``<bos>`` is prepended to every encoded
text by the post-processor, like a base model's BOS; ``<eos>`` ends a completion.

The result is a standard :class:`~transformers.PreTrainedTokenizerFast`: ``save_pretrained``
writes ``tokenizer.json`` + ``tokenizer_config.json`` and ``AutoTokenizer.from_pretrained``
loads it back.
"""

from __future__ import annotations

import string

from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
THINK_OPEN, THINK_CLOSE = "<think>", "</think>"
#: The paper's interruption phrase is this sentence followed by " </think>" (docs/paper.md).
INTERRUPTION_SENTENCE = "Okay, time is up. Let me stop thinking and formulate a final answer now."

#: The characters of the vocabulary, in id order after the special tokens.
CHARACTERS: str = "\n" + "".join(chr(c) for c in range(32, 127))
assert set(string.printable) - set(CHARACTERS) <= set("\t\r\x0b\x0c")


def build_char_tokenizer() -> PreTrainedTokenizerFast:
    """Build the tiny model's tokenizer: special tokens, one id per character, the think tags, the interruption sentence."""
    specials = [PAD, BOS, EOS, UNK]
    vocab = {tok: i for i, tok in enumerate(specials)}
    for ch in CHARACTERS:
        vocab[ch] = len(vocab)

    backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
    # One pre-token per character ([\s\S] rather than "." so that the newline matches too).
    backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    # WordLevel's default decoding joins tokens with spaces; characters must be concatenated.
    backend.decoder = decoders.Fuse()
    backend.add_special_tokens([AddedToken(t, special=True, normalized=False) for t in specials])
    backend.add_tokens(
        [AddedToken(t, special=False, normalized=False) for t in (THINK_OPEN, THINK_CLOSE, INTERRUPTION_SENTENCE)]
    )
    backend.post_processor = processors.TemplateProcessing(
        single=f"{BOS} $A", pair=f"{BOS} $A $B", special_tokens=[(BOS, vocab[BOS])]
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token=BOS,
        eos_token=EOS,
        pad_token=PAD,
        unk_token=UNK,
        padding_side="left",  # decoder-only generation pads on the left
        clean_up_tokenization_spaces=False,
        model_max_length=512,
    )
