"""Tokenizers as users' saved models have them (QA round on tokenizers): special thinking markers,
a pad token added without resizing the embedding, tokens added for the forced phrase only."""

import pytest
import torch
import transformers
from tokenizers import AddedToken

from scalerl.cli import main
from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.generate.logprobs import completion_logprobs, pack_completions
from scalerl.rl.length import InterruptionController
from scalerl.tasks.encoding import encode_prompt
from scalerl.tasks.math_grading import math_verify_reward


@pytest.fixture(scope="module")
def user_tokenizer():
    """``build()`` -> a fresh byte-level BPE tokenizer of examples/user_model.py (chat template, ChatML)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "examples" / "user_model.py"
    spec = importlib.util.spec_from_file_location("scalerl_examples_user_model_tok", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.build_tokenizer


def _llama(vocab, tokenizer, seed=0):
    torch.manual_seed(seed)
    config = transformers.LlamaConfig(vocab_size=vocab, hidden_size=32, intermediate_size=64, num_hidden_layers=1,
                                      num_attention_heads=4, num_key_value_heads=2, eos_token_id=tokenizer.eos_token_id,
                                      pad_token_id=None, bos_token_id=None)
    return transformers.AutoModelForCausalLM.from_config(config).eval()


def _prompts(tokenizer):
    """Two groups of two, prompts of different lengths (so the batch has left padding)."""
    texts = ["Compute 2 + 3.", "Compute 41 * 17. Put the final answer in \\boxed{}."]
    return [encode_prompt(tokenizer, t) for t in texts for _ in range(2)]


def test_special_thinking_markers_stay_in_the_completion_text(user_tokenizer):
    """A tokenizer with <think> / </think> as *special* added tokens: the text was decoded with
    skip_special_tokens, so the forced phrase's '</think>' vanished and the math reward read the
    whole completion, thinking included, as the answer."""
    tokenizer = user_tokenizer()
    tokenizer.add_tokens([AddedToken("<think>", special=True), AddedToken("</think>", special=True)],
                         special_tokens=True)
    close = tokenizer.convert_tokens_to_ids("</think>")
    model = _llama(len(tokenizer), tokenizer)
    control = InterruptionController.from_tokenizer(tokenizer, think_budget=(2, 2), answer_budget=3, max_new_tokens=64)
    assert control.phrase_ids[-1] == close  # one token, as Qwen3's
    completions = HFGenerator(model, tokenizer, seed=0).generate(_prompts(tokenizer), SamplingParams(64, seed=0), control)
    for c in completions:
        assert close in c.token_ids and "</think>" in c.text, c.text
        assert tokenizer.eos_token not in c.text and tokenizer.pad_token not in c.text
    # The reward's view: a boxed answer inside unfinished thinking is no answer.
    from scalerl.generate.text import completion_texts

    thinking = tokenizer.encode("<think>so \\boxed{5}", add_special_tokens=False)
    text = completion_texts(tokenizer, [thinking + [tokenizer.eos_token_id]])[0]
    assert text == "<think>so \\boxed{5}" and math_verify_reward(text, "5") == -1.0


def test_a_pad_token_beyond_the_embedding_pads_with_an_id_it_has(user_tokenizer):
    """A pad token added to the tokenizer without resize_token_embeddings (a common fix for a
    tokenizer with none): the left padding of prompts of different lengths raised torch's
    'IndexError: index out of range in self' in the generator's first forward pass."""
    tokenizer = user_tokenizer()
    rows = len(tokenizer)
    tokenizer.add_special_tokens({"pad_token": "<pad_added>"})
    assert tokenizer.pad_token_id >= rows
    model = _llama(rows, tokenizer)
    generator = HFGenerator(model, tokenizer, seed=0)
    completions = generator.generate(_prompts(tokenizer), SamplingParams(12, seed=0))
    assert generator.pad_id < rows
    trainer = completion_logprobs(model, pack_completions(completions, generator.pad_id), 1.0)
    for i, c in enumerate(completions):  # on-policy: the trainer's log-probs are the generator's
        torch.testing.assert_close(trainer[i, : len(c.logprobs)], torch.tensor(c.logprobs), atol=1e-5, rtol=0)


def test_a_forced_phrase_token_beyond_the_embedding_is_refused_in_one_line(user_tokenizer, math_jsonl, tmp_path,
                                                                          capsys):
    """<think> / </think> added to the tokenizer, the embedding not resized: no prompt holds them,
    so the prompts' check passed, and the forced interruption phrase ('... </think>') raised
    torch's IndexError from the first evaluation (exit 1, a traceback)."""
    tokenizer = user_tokenizer()
    rows = len(tokenizer)
    tokenizer.add_tokens(["<think>", "</think>"])
    _llama(rows, tokenizer).save_pretrained(tmp_path / "m")
    tokenizer.save_pretrained(tmp_path / "m")
    out = tmp_path / "run"
    code = main(["train", "--model", str(tmp_path / "m"), "--task", "math", "--data", str(math_jsonl), "--output",
                 str(out), "--steps", "1", "--no-progress", "--no-report", "--set", "eval.problems=2"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "interruption phrase" in err and f"{rows} rows" in err and "resize_token_embeddings" in err
    assert not (out / "runlog.jsonl").exists()


def _sentencepiece_style(corpus):
    """A Llama-2-style tokenizer: BPE with byte fallback, spaces as '▁' and one prepended."""
    from tokenizers import Tokenizer, decoders, models, normalizers, trainers

    tok = Tokenizer(models.BPE(byte_fallback=True, unk_token="<unk>"))
    tok.normalizer = normalizers.Sequence([normalizers.Prepend("▁"), normalizers.Replace(" ", "▁")])
    tok.decoder = decoders.Sequence([decoders.Replace("▁", " "), decoders.ByteFallback(), decoders.Fuse(),
                                     decoders.Strip(" ", 1, 0)])
    trainer = trainers.BpeTrainer(vocab_size=400, special_tokens=["<unk>", "<s>", "</s>"], show_progress=False)
    tok.train_from_iterator(corpus, trainer=trainer)
    return transformers.PreTrainedTokenizerFast(tokenizer_object=tok, bos_token="<s>", eos_token="</s>",
                                                unk_token="<unk>")


@pytest.mark.parametrize("kind", ["byte-level", "sentencepiece"])
def test_a_natural_end_of_thinking_is_seen_whatever_precedes_it(user_tokenizer, kind):
    """The end of thinking was matched on the token ids of '</think>' encoded alone (and after a
    space or a newline). How a tokenizer splits it depends on what precedes it: the byte-level
    BPE merges '.</' after a full stop; a SentencePiece-style one gives the marker alone a leading
    '▁', which '</think>' straight after a word or a newline lacks. Undetected, the thinking
    budget forced the interruption phrase into the answer."""
    import random

    from scalerl.rl.length import Phase

    tokenizer = user_tokenizer()
    if kind == "sentencepiece":
        tokenizer = _sentencepiece_style([f"<think>so step {i}.</think> The answer is {i}." for i in range(200)])
    control = InterruptionController.from_tokenizer(tokenizer, think_budget=(60, 60), answer_budget=5,
                                                    max_new_tokens=99)
    for text in ["<think>so 5.</think>5", "<think>so 5</think> 5", "<think>so 5\n</think>5", "<think>so 5 </think> 5"]:
        ids = tokenizer.encode(text, add_special_tokens=False)
        state = control.start(random.Random(0))
        for i, token in enumerate(ids):
            state.observe(token)
            if state.phase is not Phase.THINKING:
                break
        assert state.phase is Phase.ANSWERING and not state.interrupted, (text, tokenizer.convert_ids_to_tokens(ids))
        assert tokenizer.decode(ids[: i + 1]).endswith("</think>")  # at the marker, not later
    state = control.start(random.Random(0))
    for token in tokenizer.encode("<think>a > b, so <3 and </thin k>", add_special_tokens=False):
        state.observe(token)
    assert state.phase is Phase.THINKING  # no marker, no end


def test_a_model_directory_missing_its_weights_says_what_to_do(user_model, math_jsonl, tmp_path, capsys):
    """A sharded checkpoint with a shard left out said 'No such file or directory: ...', and a
    directory with a config and a tokenizer alone 'Error no file named model.safetensors, or
    pytorch_model.bin, found': what was wrong, not what to do."""
    import shutil

    src = user_model("llama", dtype="float32")
    model = transformers.AutoModelForCausalLM.from_pretrained(src)
    sharded, bare = tmp_path / "sharded", tmp_path / "bare"
    model.save_pretrained(sharded, max_shard_size="100KB")
    shards = sorted(sharded.glob("model-*.safetensors"))
    assert len(shards) > 2
    shards[1].unlink()
    shutil.copytree(src, bare, ignore=shutil.ignore_patterns("*.safetensors"))
    for directory, said in ((sharded, f"1 of them are not in the directory ({shards[1].name})"),
                            (bare, "holds no weights")):
        transformers.AutoTokenizer.from_pretrained(src).save_pretrained(directory)
        code = main(["eval", "--model", str(directory), "--task", "math", "--data", str(math_jsonl), "--problems", "2",
                     "--k", "1", "--max-new-tokens", "4"])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert said in err and ("download the missing shards" in err or "save_pretrained" in err), err
