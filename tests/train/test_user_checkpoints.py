"""Checkpoints shaped like real ones (QA round on user models): what a user's own directory can
lack or carry, and what ``scalerl train`` / ``eval`` make of it."""

import json

import pytest
import transformers

from scalerl.cli import main


def _without_eos(src, dst):
    """``src`` saved again with no end-of-sequence token anywhere: not in the tokenizer, the
    config or the generation config (a base model's tokenizer saved without its special tokens)."""
    model = transformers.AutoModelForCausalLM.from_pretrained(src)
    model.config.eos_token_id = None
    model.generation_config.eos_token_id = None
    model.save_pretrained(dst)
    tok = transformers.AutoTokenizer.from_pretrained(src)
    bare = transformers.PreTrainedTokenizerFast(tokenizer_object=tok.backend_tokenizer, pad_token=tok.pad_token)
    bare.chat_template = tok.chat_template
    bare.save_pretrained(dst)
    return dst


def test_a_model_with_no_eos_token_is_refused_in_one_line(user_model, math_jsonl, tmp_path, capsys):
    """It raised a ValueError traceback from the generator's constructor (exit 1)."""
    model = _without_eos(user_model("llama", dtype="float32"), tmp_path / "no-eos")
    out = tmp_path / "run"
    code = main(["train", "--model", str(model), "--task", "math", "--data", str(math_jsonl), "--output", str(out),
                 "--steps", "1", "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert code == 2
    assert "Traceback" not in err and "eos_token" in err and "end-of-sequence" in err
    assert not (out / "runlog.jsonl").exists()
