"""Users' tokenizers as scalerl loads them (models.loading.read_tokenizer): the class transformers 5 picks
against the tokenizer files' own pipeline, a hub id's as a directory's, tokenizer files missing (reviews cb, ce).

The tokenizers are built here with the ``tokenizers`` library and saved beside small random models,
as a user's model directory holds them; nothing is downloaded."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch
import transformers
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers
from transformers import PreTrainedTokenizerFast

from scalerl.models.loading import load_model

ROOT = Path(__file__).resolve().parents[1]
PROMPT = "Compute 41 * 17. Put the final answer in \\boxed{}."


def _example():
    import importlib.util

    spec = importlib.util.spec_from_file_location("scalerl_examples_user_model_ce", ROOT / "examples" / "user_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _save(directory, tokenizer, config):
    """A random causal LM of ``config`` sized to ``tokenizer``, saved beside it (a user's model directory)."""
    config.vocab_size = len(tokenizer)
    config.eos_token_id = tokenizer.eos_token_id
    config.pad_token_id = tokenizer.pad_token_id
    config.bos_token_id = tokenizer.bos_token_id
    torch.manual_seed(0)
    transformers.AutoModelForCausalLM.from_config(config).save_pretrained(directory)
    tokenizer.save_pretrained(directory)
    return Path(directory)


def _qwen2_config():
    return transformers.Qwen2Config(hidden_size=32, num_hidden_layers=2, num_attention_heads=4, intermediate_size=64,
                                    num_key_value_heads=2)


def _file_ids(directory, text):
    """The ids the directory's own tokenizer.json gives ``text`` (special tokens as its post-processor adds them)."""
    return Tokenizer.from_file(str(Path(directory) / "tokenizer.json")).encode(text).ids


def test_qwen2_user_model_is_tokenized_as_its_tokenizer_json_says(tmp_path):
    directory = _example().save_user_model(tmp_path / "qwen2", "qwen2", dtype="float32")
    _, tokenizer = load_model(str(directory))
    assert tokenizer(PROMPT).input_ids == _file_ids(directory, PROMPT)
    decomposed = "cafe\u0301 = 3"  # an e and a combining accent, as the data holds them
    assert tokenizer(decomposed).input_ids == _file_ids(directory, decomposed)


def _sentencepiece_style_without_newline():
    """A Metaspace BPE (Llama / Mistral style, no byte fallback) trained on one-line prompts: no newline in its
    vocabulary, as in many SentencePiece models."""
    rows = _example().math_rows(300)
    backend = Tokenizer(models.BPE(unk_token="<unk>"))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
    backend.decoder = decoders.Metaspace(replacement="\u2581", prepend_scheme="first", split=True)
    backend.train_from_iterator([r["prompt"] for r in rows] + ["What is the answer? Answer: 42."],
                                trainer=trainers.BpeTrainer(vocab_size=300, special_tokens=["<unk>", "<s>", "</s>"],
                                                            show_progress=False))
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=backend, bos_token="<s>", eos_token="</s>", unk_token="<unk>")


def test_the_files_own_pipeline_is_kept_where_it_misses_only_the_probes_newline(tmp_path):
    directory = _save(tmp_path / "qwen2-spm", _sentencepiece_style_without_newline(), _qwen2_config())
    _, tokenizer = load_model(str(directory))
    ids = tokenizer(PROMPT).input_ids
    assert tokenizer.decode(ids, skip_special_tokens=True) == PROMPT
    assert ids == _file_ids(directory, PROMPT)


_HUB_SCRIPT = """
import sys
from scalerl.models.loading import load_model
_, tokenizer = load_model("me/char-qwen2")
text = "What is 12 + 30?"
print(type(tokenizer).__name__, repr(tokenizer.decode(tokenizer(text).input_ids, skip_special_tokens=True)))
sys.exit(0 if tokenizer.decode(tokenizer(text).input_ids, skip_special_tokens=True) == text else 1)
"""


def test_a_hub_model_gets_the_same_tokenizer_fallback_as_its_directory(tmp_path):
    from scalerl.models.char_tokenizer import build_char_tokenizer

    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "hub" / "models--me--char-qwen2"
    (repo / "refs").mkdir(parents=True)
    (repo / "refs" / "main").write_text(commit)
    snapshot = _save(repo / "snapshots" / commit, build_char_tokenizer(), _qwen2_config())
    _, local = load_model(str(snapshot))  # the directory itself: the fallback of commit 3a03338 applies
    assert local.decode(local("What is 12 + 30?").input_ids, skip_special_tokens=True) == "What is 12 + 30?"
    env = dict(os.environ, HF_HUB_CACHE=str(tmp_path / "hub"), HF_HUB_OFFLINE="1",
               PYTHONPATH=os.pathsep.join([str(ROOT / "src"), os.environ.get("PYTHONPATH", "")]))
    done = subprocess.run([sys.executable, "-c", _HUB_SCRIPT], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-2000:]


def test_a_picked_class_that_cannot_encode_falls_back_to_the_files_pipeline(tmp_path):
    from architectures import ARCHITECTURES

    directory = _save(tmp_path / "gemma3-bpe", _example().build_tokenizer(), ARCHITECTURES["gemma3"]())
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config.pop("tokenizer_class")
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    _, tokenizer = load_model(str(directory))
    assert tokenizer(PROMPT).input_ids == _file_ids(directory, PROMPT)


def test_a_qwen2_directory_without_its_tokenizer_json_is_refused(tmp_path):
    import shutil

    from scalerl.errors import InputError

    source = _example().save_user_model(tmp_path / "qwen2", "qwen2", dtype="float32")
    cut = tmp_path / "cut"
    shutil.copytree(source, cut, ignore=shutil.ignore_patterns("tokenizer.json"))
    assert (cut / "tokenizer_config.json").is_file() and not (cut / "tokenizer.json").exists()
    with pytest.raises(InputError, match="tokenizer"):
        _, tokenizer = load_model(str(cut))
        print(type(tokenizer).__name__, len(tokenizer), tokenizer(PROMPT).input_ids)  # shown when it loads


def test_an_adapter_directory_with_an_unreadable_tokenizer_is_refused_in_one_line(tmp_path, capsys):
    import shutil

    from peft import LoraConfig, get_peft_model

    example = _example()
    base = example.save_user_model(tmp_path / "base", "llama", dtype="float32")
    data = example.write_math_data(tmp_path / "math.jsonl", n=20)
    model = transformers.AutoModelForCausalLM.from_pretrained(base)
    adapter = tmp_path / "adapter"
    get_peft_model(model, LoraConfig(r=2, target_modules=["q_proj"])).save_pretrained(adapter)
    config = json.loads((adapter / "adapter_config.json").read_text())
    config["base_model_name_or_path"] = str(base)
    (adapter / "adapter_config.json").write_text(json.dumps(config))
    shutil.copy(base / "tokenizer_config.json", adapter / "tokenizer_config.json")
    code, err = _eval(adapter, data, capsys)
    assert code == 0 or (code == 2 and "Traceback" not in err and len(err.strip().splitlines()) == 1), err


def _eval(model, data, capsys) -> tuple[int, str]:
    """``scalerl eval`` of ``model`` on two problems of ``data``: its exit code and stderr (a traceback fails the test)."""
    from scalerl.cli import main

    try:
        code = main(["eval", "--model", str(model), "--task", "math", "--data", str(data), "--problems", "2",
                     "--k", "1", "--max-new-tokens", "4"])
    except Exception as exc:  # noqa: BLE001
        pytest.fail(f"scalerl eval raised {type(exc).__name__}: {str(exc).splitlines()[0]}")
    return code, capsys.readouterr().err


def test_a_tokenizer_json_the_tokenizers_library_refuses_is_one_line(tmp_path, capsys):
    example = _example()
    directory = example.save_user_model(tmp_path / "qwen2", "qwen2", dtype="float32")
    data = example.write_math_data(tmp_path / "math.jsonl", n=20)
    path = directory / "tokenizer.json"
    tokenizer = json.loads(path.read_text())
    tokenizer["pre_tokenizer"] = {"type": "SplitDigitsV2", "individual": True}  # written by a newer tokenizers
    path.write_text(json.dumps(tokenizer))
    code, err = _eval(directory, data, capsys)
    assert code == 2 and "tokenizer" in err and "Traceback" not in err, err


def _bpe_beside_qwen2(directory):
    """A user's byte-level BPE saved beside a Qwen2 config, its tokenizer_config naming Qwen2Tokenizer (as a Qwen2
    fine-tune's does), its tokenizer.json the Qwen2 pipeline transformers builds -- but NFKC-normalising, as a
    tokenizer trained for full-width and super/subscript text is."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import AutoTokenizer, PreTrainedTokenizerFast, Qwen2Config

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    corpus = [f"Compute {a} * {b}. Put the final answer in \\boxed{{}}.\nWhat is {a} + {b}? Answer: {a + b}."
              for a in range(2, 60) for b in (3, 17, 41)]
    backend.train_from_iterator(corpus, trainer=trainers.BpeTrainer(
        vocab_size=400, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>").save_pretrained(directory)
    Qwen2Config().save_pretrained(directory)
    config = json.loads((directory / "tokenizer_config.json").read_text())
    config["tokenizer_class"] = "Qwen2Tokenizer"
    (directory / "tokenizer_config.json").write_text(json.dumps(config))
    pipeline = json.loads(AutoTokenizer.from_pretrained(directory).backend_tokenizer.to_str())
    pipeline["normalizer"] = {"type": "NFKC"}  # Qwen2's is NFC: the one difference
    (directory / "tokenizer.json").write_text(json.dumps(pipeline))
    return directory


def test_a_tokenizer_is_read_as_its_tokenizer_json_beyond_the_probes(tmp_path):
    from tokenizers import Tokenizer

    from scalerl.models.loading import read_tokenizer

    directory = _bpe_beside_qwen2(tmp_path / "qwen2-nfkc")
    own = Tokenizer.from_file(str(directory / "tokenizer.json"))
    tokenizer = read_tokenizer(str(directory))
    for text in ("What is 12 + 30?\nAnswer: 42.", "x\u00b2 + \u00bd = \uff08\uff11\uff12\uff09"):  # x² + ½ = （１２）
        assert tokenizer(text, add_special_tokens=False).input_ids == own.encode(text, add_special_tokens=False).ids, text


def test_a_tokenizer_is_read_as_its_file_says_even_where_that_lowercases(tmp_path):
    from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast, Qwen2Config

    from scalerl.models.loading import read_tokenizer

    backend = Tokenizer(models.BPE())
    backend.normalizer = normalizers.Lowercase()
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator([f"What is {a} + 30? Answer: {a + 30}." for a in range(100)], trainer=trainers.BpeTrainer(
        vocab_size=300, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    directory = tmp_path / "lower"
    PreTrainedTokenizerFast(tokenizer_object=backend, eos_token="<|endoftext|>").save_pretrained(directory)
    Qwen2Config().save_pretrained(directory)
    tokenizer = read_tokenizer(str(directory))
    text = "What is 12 + 30?\nAnswer: 42."
    # the code: the file's own (lowercasing) pipeline, which does not give the probe text back
    assert tokenizer.decode(tokenizer(text, add_special_tokens=False).input_ids) == text.lower()


_CORPUS = [f"Compute {a} * {b}. Put the final answer in \\boxed{{}}.\nWhat is {a} + {b}? Answer: {a + b}."
           for a in range(2, 80) for b in (3, 17, 41)]


def _save_config(directory: Path, arch: str, vocab_size: int) -> None:
    from architectures import ARCHITECTURES

    config = ARCHITECTURES[arch]()
    config.vocab_size = vocab_size
    config.save_pretrained(directory)


def _gpt2_with_add_prefix_space(directory: Path) -> Path:
    """A GPT-2 byte-level BPE whose tokenizer_config.json sets add_prefix_space: true (its tokenizer.json's
    pre-tokenizer has false, as written by the tokenizers library)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    backend.train_from_iterator(_CORPUS, trainer=trainers.BpeTrainer(
        vocab_size=500, special_tokens=["<|endoftext|>"], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    directory.mkdir(parents=True)
    backend.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "GPT2Tokenizer", "add_prefix_space": True, "bos_token": "<|endoftext|>",
        "eos_token": "<|endoftext|>", "unk_token": "<|endoftext|>", "model_max_length": 1024}))
    _save_config(directory, "gpt2", backend.get_vocab_size())
    return directory


def _mistral_without_prefix_space(directory: Path) -> Path:
    """A Mistral-style Metaspace BPE with byte fallback whose tokenizer_config.json sets add_prefix_space: false (its
    tokenizer.json's Metaspace prepends '▁' to the first word)."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    backend = Tokenizer(models.BPE(unk_token="<unk>", byte_fallback=True, fuse_unk=True))
    backend.pre_tokenizer = pre_tokenizers.Metaspace(replacement="\u2581", prepend_scheme="first", split=False)
    backend.decoder = decoders.Sequence([decoders.Replace("\u2581", " "), decoders.ByteFallback(), decoders.Fuse(),
                                         decoders.Strip(" ", 1, 0)])
    backend.train_from_iterator(_CORPUS, trainer=trainers.BpeTrainer(
        vocab_size=700, special_tokens=["<unk>", "<s>", "</s>"] + [f"<0x{i:02X}>" for i in range(256)],
        show_progress=False))
    backend.post_processor = processors.TemplateProcessing(single="<s> $A", pair="<s> $A <s> $B",
                                                           special_tokens=[("<s>", 1)])
    directory.mkdir(parents=True)
    backend.save(str(directory / "tokenizer.json"))
    (directory / "tokenizer_config.json").write_text(json.dumps({
        "tokenizer_class": "LlamaTokenizer", "add_prefix_space": False, "bos_token": "<s>", "eos_token": "</s>",
        "unk_token": "<unk>", "legacy": False, "model_max_length": 32768}))
    _save_config(directory, "llama", backend.get_vocab_size())
    return directory


@pytest.mark.parametrize("build", [_gpt2_with_add_prefix_space, _mistral_without_prefix_space],
                         ids=["gpt2-add_prefix_space-true", "mistral-add_prefix_space-false"])
def test_tokenizer_config_add_prefix_space_is_kept(tmp_path, build):
    from transformers import AutoTokenizer

    from scalerl.models.loading import read_tokenizer

    directory = build(tmp_path / "model")
    auto = AutoTokenizer.from_pretrained(directory)
    ours = read_tokenizer(str(directory))  # what load_model returns
    text = "What is 12 + 30?"
    # AutoTokenizer gives GPT-2 ['Ġ', 'What', ...] (the prefix space asked for) and Mistral ['<s>', 'W', ...]
    # (none asked for); read_tokenizer gave ['What', ...] and ['<s>', '▁', 'W', ...].
    assert ours(text).input_ids == auto(text).input_ids, (ours.convert_ids_to_tokens(ours(text).input_ids)[:4],
                                                          auto.convert_ids_to_tokens(auto(text).input_ids)[:4])
