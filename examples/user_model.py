"""Build a "user model" locally: what a new user brings, without a model hub.

A randomly initialised Hugging Face causal LM (Llama, Qwen2 or GPT-2 architecture) saved in
**bfloat16**, the way hub checkpoints are stored, with a byte-level BPE tokenizer trained here
with the ``tokenizers`` library and a chat template, plus a small math JSONL of
``{prompt, answer}`` rows. Used by the README's "bring your own model" commands, the tests
(``tests/user_models.py``) and ``benchmarks/mixed_precision.py``.

    python examples/user_model.py --arch llama --out runs/models/llama           # model + tokenizer
    python examples/user_model.py --arch gpt2 --positions 64 --out runs/models/gpt2-64
    python examples/user_model.py --data runs/models/math.jsonl                  # 200 math rows

The model is random: it will not solve the problems. It exercises every code path a real
checkpoint takes (bf16 storage, BPE tokenizer, chat template, the math task's reward).
"""

from __future__ import annotations

import argparse
import json
import random
from pathlib import Path

#: Special tokens of the tokenizer; the chat template uses the ChatML markers.
EOS, PAD, IM_START, IM_END = "<|endoftext|>", "<|pad|>", "<|im_start|>", "<|im_end|>"
CHAT_TEMPLATE = (
    "{% for m in messages %}<|im_start|>{{ m['role'] }}\n{{ m['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% endif %}"
)

#: Small shapes per architecture (a few hundred thousand parameters with the 512-token vocabulary).
ARCHS = ("llama", "qwen2", "gpt2")


def math_rows(n: int = 200, seed: int = 0) -> list[dict[str, str]]:
    """``n`` arithmetic word problems with their answers (the math task's {prompt, answer} rows)."""
    rng = random.Random(seed)
    rows = []
    for _ in range(n):
        a, b = rng.randint(2, 99), rng.randint(2, 99)
        op = rng.choice(["+", "-", "*"])
        answer = {"+": a + b, "-": a - b, "*": a * b}[op]
        rows.append({"prompt": f"Compute {a} {op} {b}. Put the final answer in \\boxed{{}}.", "answer": str(answer)})
    return rows


def _corpus(rows: list[dict[str, str]]) -> list[str]:
    """Text the tokenizer is trained on: the prompts, worked answers and the thinking markers."""
    texts = []
    for r in rows:
        texts.append(r["prompt"])
        texts.append(f"<think>Let me compute it step by step.</think> The answer is \\boxed{{{r['answer']}}}.")
    texts.append("Okay, time is up. Let me stop thinking and formulate a final answer now. </think>")
    return texts


def build_tokenizer(vocab_size: int = 512, seed: int = 0):
    """A byte-level BPE ``PreTrainedTokenizerFast`` trained on math text, with a chat template."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[EOS, PAD, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(_corpus(math_rows(1000, seed)), trainer=trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, eos_token=IM_END, pad_token=PAD, bos_token=None,
                                   additional_special_tokens=[EOS, IM_START])
    fast.chat_template = CHAT_TEMPLATE
    return fast


def build_model(arch: str, tokenizer, *, positions: int = 2048, hidden: int = 64, layers: int = 2, seed: int = 0):
    """A randomly initialised causal LM of ``arch`` (llama, qwen2, gpt2) sized to ``tokenizer``."""
    import torch
    from transformers import AutoModelForCausalLM, GPT2Config, LlamaConfig, Qwen2Config

    vocab = len(tokenizer)
    special = dict(eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None)
    if arch == "llama":
        config = LlamaConfig(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=positions,
                             tie_word_embeddings=False, **special)
    elif arch == "qwen2":
        config = Qwen2Config(vocab_size=vocab, hidden_size=hidden, intermediate_size=2 * hidden, num_hidden_layers=layers,
                             num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=positions,
                             tie_word_embeddings=True, **special)
    elif arch == "gpt2":
        config = GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=layers, n_head=4, n_positions=positions, **special)
    else:
        raise ValueError(f"unknown arch {arch!r}; known: {', '.join(ARCHS)}")
    torch.manual_seed(seed)
    return AutoModelForCausalLM.from_config(config)


def save_user_model(out: str | Path, arch: str = "llama", *, positions: int = 2048, dtype: str = "bfloat16",
                    hidden: int = 64, layers: int = 2, seed: int = 0) -> Path:
    """Build and save model + tokenizer to ``out`` in ``dtype`` (bf16 by default, like hub checkpoints)."""
    import torch
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    out = Path(out)
    tokenizer = build_tokenizer(seed=seed)
    model = build_model(arch, tokenizer, positions=positions, hidden=hidden, layers=layers, seed=seed)
    model.to(getattr(torch, dtype)).save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


def write_math_data(path: str | Path, n: int = 200, seed: int = 0) -> Path:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("".join(json.dumps(r) + "\n" for r in math_rows(n, seed)))
    return path


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--arch", choices=ARCHS, default="llama")
    p.add_argument("--out", help="directory to save the model and tokenizer in")
    p.add_argument("--positions", type=int, default=2048, help="maximum positions of the model (default 2048)")
    p.add_argument("--dtype", default="bfloat16", help="storage dtype (default bfloat16, like hub checkpoints)")
    p.add_argument("--hidden", type=int, default=64)
    p.add_argument("--layers", type=int, default=2)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--data", help="also write a 200-row math JSONL here")
    args = p.parse_args(argv)
    if not args.out and not args.data:
        p.error("give --out (a model) and/or --data (a math JSONL)")
    if args.out:
        out = save_user_model(args.out, args.arch, positions=args.positions, dtype=args.dtype, hidden=args.hidden,
                              layers=args.layers, seed=args.seed)
        print(f"model: {out} ({args.arch}, {args.positions} positions, {args.dtype})")
    if args.data:
        print(f"data: {write_math_data(args.data, seed=args.seed)} (200 rows)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
