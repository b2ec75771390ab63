"""Checkpoints shaped like real ones (QA round on user models): what a user's own directory can
lack or carry, and what ``scalerl train`` / ``eval`` make of it."""

import json
import re
import shutil

import pytest
import torch
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


def _adapter_dir(base, dst):
    """A LoRA adapter over ``base`` saved the way ``model.lora.save=adapter`` writes ``final/``:
    adapter_config.json naming the base, the adapter's weights and the tokenizer, no config.json."""
    from peft import LoraConfig, get_peft_model

    torch.manual_seed(0)
    model = get_peft_model(transformers.AutoModelForCausalLM.from_pretrained(base, dtype=torch.float32),
                           LoraConfig(r=4, lora_alpha=8, target_modules=["q_proj", "v_proj"], init_lora_weights=False))
    model.save_pretrained(dst)
    transformers.AutoTokenizer.from_pretrained(base).save_pretrained(dst)
    return model.eval(), dst


def test_an_adapter_directory_loads_as_its_base_with_the_adapter_merged(user_model, tmp_path):
    """``final/`` of a run with model.lora.save=adapter was refused by eval --run ('has no
    config.json; is it a Hugging Face model directory?')."""
    from scalerl.models.loading import load_config, load_model, stored_dtype

    base = user_model("llama", dtype="float32")
    peft_model, adapter = _adapter_dir(base, tmp_path / "final")
    model, tokenizer = load_model(str(adapter), dtype="float32")
    assert not any("lora" in name for name, _ in model.named_parameters())  # merged: an ordinary model
    ids = torch.tensor([tokenizer("Compute 2 * 3.")["input_ids"]])
    with torch.no_grad():
        torch.testing.assert_close(model(input_ids=ids).logits, peft_model(input_ids=ids).logits, rtol=1e-4, atol=1e-5)
    assert load_config(str(adapter)).model_type == "llama" and stored_dtype(str(adapter)) == "float32"


def test_eval_runs_on_an_adapter_directory(user_model, math_jsonl, tmp_path, capsys):
    _, adapter = _adapter_dir(user_model("llama", dtype="float32"), tmp_path / "final")
    code = main(["eval", "--model", str(adapter), "--task", "math", "--data", str(math_jsonl), "--problems", "2",
                 "--k", "1", "--max-new-tokens", "8", "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert json.loads(out.splitlines()[-1])["sets"]["val"]["samples"] == 2


def _fake_run(model_dir, out):
    """A finished run's directory as eval --run reads it: config.yaml and final/ (here a copy of
    ``model_dir``, which is what final/ of a run of a checkpoint stored in that dtype holds)."""
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig

    save_yaml(TrainConfig(), out / "config.yaml")
    shutil.copytree(model_dir, out / "final")
    return out


@pytest.mark.parametrize("dtype, noted", [("bfloat16", True), ("float32", False)])
def test_eval_run_says_when_final_is_rounded_from_the_runs_fp32_weights(user_model, tmp_path, capsys, dtype, noted):
    """A bf16 checkpoint's run evaluates its fp32 master weights; final/ is stored rounded to bf16,
    so eval --run sampled other tokens (pass rate 0.0 against the run's last row 0.5) while its
    docstring promised the last row 'reproduced exactly', with nothing said."""
    run = _fake_run(user_model("llama", dtype=dtype), tmp_path)
    assert main(["eval", "--run", str(run), "--problems", "1", "--k", "1", "--max-new-tokens", "4", "--json"]) == 0
    err = capsys.readouterr().err
    assert ("stored in bfloat16" in err and "model.dtype=float32" in err) is noted


def test_tied_embeddings_are_saved_once_from_gathered_weights(user_model, tmp_path):
    """--nproc 2 on Qwen2 / GPT-2 (tied embeddings) wrote final/ with lm_head.weight beside the
    embedding, a second copy of the vocabulary matrix (one process saved it once). The gathered
    weights (``weights=``) hold the tied tensor under both names; the file must hold it once."""
    from safetensors import safe_open

    from scalerl.config import apply_overrides
    from scalerl.train.config import TrainConfig
    from scalerl.train.policy import load_policy, save_policy

    cfg = apply_overrides(TrainConfig(), [f"model.name_or_path={user_model('qwen2', dtype='float32')}",
                                          "precision.compute=fp32"]).validate()
    policy = load_policy(cfg, torch.device("cpu"))
    assert policy.model.config.tie_word_embeddings
    gathered = {name: p.detach().clone() for name, p in policy.model.named_parameters(remove_duplicate=False)}
    assert "lm_head.weight" in gathered
    out = save_policy(policy, tmp_path / "final", weights=gathered)
    with safe_open(str(out / "model.safetensors"), "pt") as f:
        assert "lm_head.weight" not in set(f.keys())
    loaded = transformers.AutoModelForCausalLM.from_pretrained(out)
    torch.testing.assert_close(loaded.lm_head.weight, gathered["model.embed_tokens.weight"])


def test_a_tokenizer_with_ids_past_the_embedding_is_refused_in_one_line(user_model, math_jsonl, tmp_path, capsys):
    """A tokenizer that is not the model's own (ids up to 511, an embedding of 300 rows) raised
    torch's 'IndexError: index out of range in self' from the first evaluation's forward pass."""
    src = user_model("llama", dtype="float32")
    model = transformers.AutoModelForCausalLM.from_pretrained(src)
    model.resize_token_embeddings(300)
    model.save_pretrained(tmp_path / "m")
    transformers.AutoTokenizer.from_pretrained(src).save_pretrained(tmp_path / "m")
    for command in (["train", "--output", str(tmp_path / "run"), "--steps", "1", "--no-progress", "--no-report"],
                    ["eval", "--problems", "2", "--k", "1", "--max-new-tokens", "4"]):
        code = main([*command, "--model", str(tmp_path / "m"), "--task", "math", "--data", str(math_jsonl)])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err, err
        assert "300" in err and "resize_token_embeddings" in err


def test_eval_run_of_an_adapter_final_over_a_bf16_base_says_nothing_of_rounding(user_model, tmp_path, capsys):
    """The adapter is saved in fp32 and the base is the run's own starting weights: nothing rounded."""
    (tmp_path / "run").mkdir()
    run = _fake_run(user_model("llama", dtype="bfloat16"), tmp_path / "run")
    shutil.rmtree(run / "final")
    _adapter_dir(user_model("llama", dtype="bfloat16"), run / "final")
    assert main(["eval", "--run", str(run), "--problems", "1", "--k", "1", "--max-new-tokens", "4", "--json"]) == 0
    assert "stored in" not in capsys.readouterr().err


def _small_run_args(model, data, out, *extra):
    """A run of a user model small enough for a test: one prompt x two samples, 8 tokens, a checkpoint every step."""
    return ["train", "--model", str(model), "--task", "math", "--data", str(data), "--output", str(out),
            "--no-progress", "--no-report", "--eval-every", "1", "--set", "pipeline=sync",
            "--set", "checkpoint_every=1", "--set", "prompts_per_step=1", "--set", "generations_per_prompt=2",
            "--set", "eval.problems=1", "--set", "eval.samples_per_problem=1", "--set", "length.mode=truncate",
            "--set", "length.max_new_tokens=8", "--set", "length.overlong_max_len=8", "--set", "length.overlong_cache=2",
            *extra]


def test_a_final_model_left_half_written_by_a_kill_is_removed(user_model, math_jsonl, tmp_path, capsys):
    """A kill while final/ was being written leaves final.tmp-<pid> (a whole model's size); the
    resumed run wrote final/ and left the half-written copy beside it for good."""
    out = tmp_path / "run"
    args = _small_run_args(user_model("llama", dtype="float32"), math_jsonl, out)
    assert main([*args, "--steps", "1"]) == 0, capsys.readouterr().err
    shutil.copytree(out / "final", out / "final.tmp-999999")
    assert main([*args, "--steps", "2", "--resume"]) == 0, capsys.readouterr().err
    assert (out / "final" / "config.json").exists() and not list(out.glob("final.tmp-*"))


def test_a_lora_run_refuses_to_resume_on_a_changed_base(user_model, math_jsonl, tmp_path, capsys):
    """A LoRA checkpoint holds the adapters only; the base is re-read from model.name_or_path on
    resume. A base re-saved (or a hub model re-downloaded at a new revision) between the kill and
    --resume trained the old adapters on other weights, silently, exit 0."""
    base = tmp_path / "base"
    shutil.copytree(user_model("llama", dtype="float32"), base)
    out = tmp_path / "run"
    args = _small_run_args(base, math_jsonl, out, "--set", "model.lora.rank=4")
    assert main([*args, "--steps", "1"]) == 0, capsys.readouterr().err
    assert main([*args, "--steps", "2", "--resume"]) == 0, capsys.readouterr().err  # the same base: resumes
    model = transformers.AutoModelForCausalLM.from_pretrained(base)
    with torch.no_grad():
        model.model.layers[0].self_attn.q_proj.weight.mul_(1.5)
    model.save_pretrained(base)
    capsys.readouterr()
    assert main([*args, "--steps", "3", "--resume"]) == 2
    err = capsys.readouterr().err
    assert "base" in err and "changed" in err and "Traceback" not in err


@pytest.mark.parametrize("kind", ["encoder", "encoder-decoder"])
def test_a_model_that_is_not_decoder_only_is_refused_though_it_has_a_causal_lm_class(tmp_path, capsys, kind):
    """BERT saved as a masked LM (is_decoder false) and BART (an encoder-decoder) both have a
    causal-LM class, so AutoModelForCausalLM loaded them: BERT trained with every token attending
    to the tokens after it (generator and trainer disagreed), BART's decoder trained alone and
    final/ was saved as BartForCausalLM without the encoder -- silently, exit 0."""
    from scalerl.errors import InputError
    from scalerl.models.loading import load_model

    small = dict(vocab_size=64, max_position_embeddings=64)
    if kind == "encoder":
        model = transformers.BertForMaskedLM(transformers.BertConfig(
            hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32, **small))
        said = "a bert model (BertForMaskedLM) saved as an encoder (is_decoder false"
    else:
        model = transformers.BartForConditionalGeneration(transformers.BartConfig(
            d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2, decoder_attention_heads=2,
            encoder_ffn_dim=32, decoder_ffn_dim=32, **small))
        said = "a bart model (BartForConditionalGeneration) is an encoder-decoder"
    model.save_pretrained(tmp_path / "m")
    with pytest.raises(InputError, match=re.escape(said)):
        load_model(str(tmp_path / "m"))
    out = tmp_path / "run"
    capsys.readouterr()
    code = main(["train", "--model", str(tmp_path / "m"), "--steps", "1", "--output", str(out), "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2 and said in err and "decoder-only" in err and "Traceback" not in err, err
    assert not out.exists()


def test_a_bert_saved_as_a_decoder_still_loads(tmp_path):
    from scalerl.models.loading import load_config

    transformers.BertLMHeadModel(transformers.BertConfig(
        vocab_size=64, hidden_size=16, num_hidden_layers=1, num_attention_heads=2, intermediate_size=32,
        is_decoder=True)).save_pretrained(tmp_path)
    assert load_config(str(tmp_path)).is_decoder


def _with_auto_map(src, dst, file, auto_map, **fields):
    shutil.copytree(src, dst)
    data = json.loads((dst / file).read_text())
    (dst / file).write_text(json.dumps({**data, "auto_map": auto_map, **fields}))
    for module in {v.split(".")[0] for v in auto_map.values() if isinstance(v, str)} | {
            v[0].split(".")[0] for v in auto_map.values() if isinstance(v, list)}:
        (dst / f"{module}.py").write_text("raise RuntimeError('the checkpoint's own code ran')\n")
    return dst


def test_a_checkpoint_that_needs_its_own_code_is_refused_without_asking(user_model, tmp_path, capsys, monkeypatch):
    """transformers asked 'Do you wish to run the custom code? [y/N]' on the terminal (waiting
    15 s, once per from_pretrained call) and the refusal, cut to its first line, never said that
    scalerl has no way to allow it. A known model_type with an auto_map still loads natively."""
    import builtins

    from scalerl.errors import InputError
    from scalerl.models.loading import load_model

    asked = []
    monkeypatch.setattr(builtins, "input", lambda *a: asked.append(a) or "n")
    src = user_model("llama", dtype="float32")
    model_code = {"AutoConfig": "configuration_my.MyConfig", "AutoModelForCausalLM": "modeling_my.MyForCausalLM"}
    custom = _with_auto_map(src, tmp_path / "custom", "config.json", model_code, model_type="my_own_model")
    tokenizer_code = _with_auto_map(src, tmp_path / "tok", "tokenizer_config.json",
                                    {"AutoTokenizer": ["tokenization_my.MyTokenizer", None]}, tokenizer_class="MyTokenizer")
    for path, what in ((custom, "config.json"), (tokenizer_code, "tokenizer")):
        with pytest.raises(InputError, match=f"its {what} needs Python code shipped with the checkpoint .*scalerl does "
                                             "not run a checkpoint's own code"):
            load_model(str(path))
        capsys.readouterr()
        code = main(["eval", "--model", str(path), "--problems", "1", "--k", "1", "--max-new-tokens", "4"])
        err = capsys.readouterr().err
        assert code == 2 and "trust_remote_code" in err and "Traceback" not in err, err
    native = _with_auto_map(src, tmp_path / "native", "config.json", model_code)  # model_type llama: its own class
    model, _ = load_model(str(native))
    assert type(model).__name__ == "LlamaForCausalLM"
    assert asked == []


def test_a_tokenizer_that_cannot_be_read_says_what_it_lacks(user_model, tmp_path, capsys):
    """A SentencePiece tokenizer.model with no tokenizer.json (older Llama / Mistral fine-tunes)
    without the sentencepiece library was refused as "`tiktoken` is required" (transformers' fallback);
    a directory with no tokenizer files at all, as "(Couldn't instantiate the backend tokenizer from one of)"."""
    import importlib.util

    from scalerl.errors import InputError
    from scalerl.models.loading import load_model

    bare = tmp_path / "bare"
    shutil.copytree(user_model("llama", dtype="float32"), bare)
    for f in bare.iterdir():
        if f.name.startswith("tokenizer") or f.name == "chat_template.jinja":
            f.unlink()
    with pytest.raises(InputError, match=r"\(the directory holds no tokenizer files: tokenizer.json, .*\): a model "
                                         r"directory needs its tokenizer files"):
        load_model(str(bare))
    if importlib.util.find_spec("sentencepiece") is not None:
        return  # it would read the model file (here not a real one)
    spm = tmp_path / "spm"
    shutil.copytree(bare, spm)
    (spm / "tokenizer.model").write_bytes(bytes(range(256)) * 4)
    (spm / "tokenizer_config.json").write_text(json.dumps({"tokenizer_class": "LlamaTokenizer", "eos_token": "</s>"}))
    capsys.readouterr()
    code = main(["eval", "--model", str(spm), "--problems", "1", "--k", "1", "--max-new-tokens", "4"])
    err = capsys.readouterr().err
    assert code == 2 and "Traceback" not in err, err
    assert "SentencePiece model (tokenizer.model) with no tokenizer.json" in err and "pip install sentencepiece" in err


@pytest.mark.parametrize("arch", ["qwen2", "gpt2"])
def test_a_directory_without_tokenizer_files_is_refused_where_transformers_builds_an_empty_tokenizer(
        arch, user_model, math_jsonl, tmp_path, capsys):
    """Review ag: from a Qwen2 or GPT-2 directory without tokenizer files transformers 5 builds an empty
    tokenizer (a vocabulary of 1, every text no token) instead of raising as for Llama: eval ended in a
    traceback ("every prompt needs at least one token"), train in another (the interruption phrase)."""
    bare = tmp_path / "bare"
    shutil.copytree(user_model(arch, dtype="float32"), bare)
    for f in bare.iterdir():
        if f.name.startswith(("tokenizer", "special_tokens", "vocab", "merges")) or f.name == "chat_template.jinja":
            f.unlink()
    out = tmp_path / "run"
    for argv in (["eval", "--model", str(bare), "--problems", "2", "--k", "1", "--max-new-tokens", "4"],
                 ["train", "--model", str(bare), "--output", str(out), "--steps", "1", "--no-report"]):
        code = main([*argv, "--task", "math", "--data", str(math_jsonl), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err, err
        assert "(the directory holds no tokenizer files: tokenizer.json, " in err, err
    assert not (out / "runlog.jsonl").exists()


# Review bs
_RECORDING_REWARD = """
import json, os


def record(prompt, completion):
    \"\"\"Scores -1 (nothing to learn) and appends every completion it sees to RECORD.\"\"\"
    with open(os.environ["SCALERL_REVIEW_RECORD"], "a") as f:
        f.write(json.dumps([prompt, completion]) + "\\n")
    return -1.0
"""


def test_eval_run_of_a_bf16_compute_run_with_fp32_final_repeats_its_last_evaluation(user_model, math_jsonl, tmp_path,
                                                                                     capsys, monkeypatch):
    # docs/models.md, after `--set precision.compute=bf16 --set model.dtype=float32`: a bf16 final/ "can sample
    # other tokens than the run's own last evaluation did (...; with model.dtype=float32, equal) ... keep final/
    # in fp32 where the two must agree"; README: `scalerl eval --run` evaluates the final model "as the run did".
    import json

    from scalerl.cli import main

    reward = tmp_path / "recording_reward.py"
    reward.write_text(_RECORDING_REWARD)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("SCALERL_REVIEW_RECORD", str(record))
    run = tmp_path / "run"
    code = main(["train", "--model", str(user_model("llama")), "--task", "math", "--data", str(math_jsonl),
                 "--reward", f"{reward}:record", "--output", str(run), "--steps", "1", "--eval-every", "1",
                 "--no-progress", "--no-report", "--set", "pipeline=sync",
                 "--set", "precision.compute=bf16", "--set", "model.dtype=float32",
                 "--set", "length.mode=truncate", "--set", "length.max_new_tokens=24",
                 "--set", "batch.prompts_per_step=2", "--set", "batch.generations_per_prompt=2",
                 "--set", "eval.samples_per_problem=2", "--set", "eval.problems=32"])
    assert code == 0, capsys.readouterr().err
    seen_in_run = [json.loads(line) for line in record.read_text().splitlines()]
    record.unlink()
    assert main(["eval", "--run", str(run), "--no-progress", "--json"]) == 0
    seen_in_eval = [json.loads(line) for line in record.read_text().splitlines()]
    # Synchronous pipeline: evaluation at step 0, the step's batch, evaluation at step 1 (the last one).
    last_evaluation = seen_in_run[-len(seen_in_eval):]
    assert sorted(seen_in_eval) == sorted(last_evaluation)


# Review bu: what eval --run cannot repeat in one process is said
_REWARD = """
import json, os


def record(prompt, completion):
    \"\"\"A learning signal from the completion's characters; appends every completion it sees to RECORD.\"\"\"
    with open(os.environ["SCALERL_REVIEW_RECORD"], "a") as f:
        f.write(json.dumps([prompt, completion]) + "\\n")
    return 1.0 if sum(map(ord, completion)) % 3 == 0 else -1.0
"""


def _train_then_eval(user_model, math_jsonl, tmp_path, monkeypatch, *sets, steps=1, nproc=None):
    """(completions of the run's last evaluation, those of `eval --run`, its last eval row, eval's JSON, stderr)."""
    from scalerl.cli import main

    reward = tmp_path / "recording_reward.py"
    reward.write_text(_REWARD)
    record = tmp_path / "record.jsonl"
    monkeypatch.setenv("SCALERL_REVIEW_RECORD", str(record))
    run = tmp_path / "run"
    args = ["train", "--model", str(user_model("llama")), "--task", "math", "--data", str(math_jsonl),
            "--reward", f"{reward}:record", "--output", str(run), "--steps", str(steps), "--eval-every", "1",
            "--no-progress", "--no-report", "--set", "length.mode=truncate", "--set", "length.max_new_tokens=24",
            "--set", "batch.prompts_per_step=2", "--set", "batch.generations_per_prompt=2",
            "--set", "eval.samples_per_problem=2", "--set", "eval.problems=32", "--set", "optimizer.lr=1e-2",
            "--set", "optimizer.warmup_steps=0", "--set", "model.dtype=float32", "--set", "forecast.enabled=false"]
    for s in sets:
        args += ["--set", s]
    if nproc:
        args += ["--nproc", str(nproc)]
    assert main(args) == 0
    seen_in_run = [json.loads(line) for line in record.read_text().splitlines()]
    record.unlink()
    return run, seen_in_run, record


def _eval(run, record, capsys):
    from scalerl.cli import main

    capsys.readouterr()
    assert main(["eval", "--run", str(run), "--no-progress", "--json"]) == 0
    out, err = capsys.readouterr()
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    rows = [json.loads(line) for line in (run / "runlog.jsonl").read_text().splitlines()]
    last_row = [r for r in rows if r.get("type") == "eval"][-1]
    return seen, last_row, json.loads(out.strip().splitlines()[-1]), err


def test_eval_run_of_a_bf16_lora_run_repeats_its_last_evaluation(user_model, math_jsonl, tmp_path, capsys,
                                                                 monkeypatch):
    # Greedy evaluation: no sampling noise at all. The same run in fp32 compute is reproduced exactly.
    run, seen_in_run, record = _train_then_eval(user_model, math_jsonl, tmp_path, monkeypatch, "pipeline=sync",
                                                "precision.compute=bf16", "model.lora.rank=4", "eval.temperature=0")
    seen_in_eval, last_row, result, err = _eval(run, record, capsys)
    first_evaluation = seen_in_run[:len(seen_in_eval)]
    last_evaluation = seen_in_run[-len(seen_in_eval):]
    assert sorted(first_evaluation) != sorted(last_evaluation)  # the step trained the adapter
    if "note:" in err and "can differ" in err:
        return  # a note saying the pass rates can differ would be an honest answer too
    assert sorted(seen_in_eval) == sorted(last_evaluation), (
        f"run's last val/pass_rate {last_row['val/pass_rate']}, eval --run {result['sets']['val']['pass_rate']}; "
        f"stderr: {err.strip()[-300:]!r}")


@pytest.mark.extended  # (make test-all: the eval-run tests of one-process runs are in the default run)
def test_eval_run_of_a_generate_on_shards_run_repeats_its_last_evaluation(user_model, math_jsonl, tmp_path, capsys,
                                                                          monkeypatch):
    # fp32 compute, fp32 final/: the module's promise is "reproduced exactly when final/ is stored in fp32".
    run, seen_in_run, record = _train_then_eval(user_model, math_jsonl, tmp_path, monkeypatch, "pipeline=sync",
                                                "precision.compute=fp32", "run.generate_on_shards=true",
                                                "eval.problems=6", "length.max_new_tokens=16", nproc=2)
    seen_in_eval, last_row, result, err = _eval(run, record, capsys)
    last_evaluation = seen_in_run[-len(seen_in_eval):]
    if "note:" in err and "can differ" in err:
        return  # a note saying the pass rates can differ would be an honest answer too
    assert sorted(seen_in_eval) == sorted(last_evaluation), (
        f"run's last val/pass_rate {last_row['val/pass_rate']}, eval --run {result['sets']['val']['pass_rate']}; "
        f"stderr: {err.strip()[-300:]!r}")
