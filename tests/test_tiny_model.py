import json
import os
import re
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from scalerl.errors import InputError
from scalerl.generate.base import SamplingParams
from scalerl.generate.hf import HFGenerator
from scalerl.models import tiny
from scalerl.models.loading import load_model, resolve_model
from scalerl.models.tiny import TinyArchitecture, TinySpec, build_tiny_model, cache_root, tiny_model_dir
from scalerl.tasks.arithmetic import ArithmeticTask
from scalerl.train.evaluate import evaluate


def test_default_architecture_is_about_a_million_parameters(char_tokenizer):
    model = build_tiny_model(char_tokenizer)
    n = sum(p.numel() for p in model.parameters())
    assert 1_000_000 <= n <= 5_000_000
    assert model.config.model_type == "qwen2" and model.config.vocab_size == len(char_tokenizer)


def test_saves_and_loads_with_auto_classes(char_tokenizer, random_model, tmp_path):
    random_model.save_pretrained(tmp_path)
    char_tokenizer.save_pretrained(tmp_path)
    model = AutoModelForCausalLM.from_pretrained(tmp_path)
    tokenizer = AutoTokenizer.from_pretrained(tmp_path)
    ids = torch.tensor([tokenizer("12+34=").input_ids])
    with torch.no_grad():
        assert torch.allclose(model(ids).logits, random_model(ids).logits, atol=1e-6)
    assert model.generation_config.eos_token_id == tokenizer.eos_token_id


def test_cache_key_covers_the_settings():
    assert TinySpec().key() == TinySpec().key()
    assert TinySpec().key() != TinySpec(seed=1).key()
    assert TinySpec().key() != TinySpec(architecture=TinyArchitecture(hidden_size=64)).key()


def test_cache_root_follows_the_environment(monkeypatch, tmp_path):
    monkeypatch.setenv("SCALERL_CACHE", str(tmp_path))
    assert cache_root() == tmp_path
    monkeypatch.delenv("SCALERL_CACHE")
    assert cache_root() == Path.home() / ".cache" / "scalerl"


def test_warm_start_reaches_a_nonzero_sampled_pass_rate(warm_tiny_dir):
    info = json.loads((warm_tiny_dir / "scalerl_tiny.json").read_text())
    assert info["warm_start"]["steps"] == 60
    model, tokenizer = load_model(str(warm_tiny_dir))
    task = ArithmeticTask(digits=1)
    m = evaluate(HFGenerator(model, tokenizer), tokenizer, task, task.train_problems()[:32], k=4,
                 params=SamplingParams(max_new_tokens=32, temperature=1.0, seed=0))
    print("sampled pass rate after the test warm start:", m["pass_rate"])
    assert 0 < m["pass_rate"] < 1
    assert m["frac_truncated"] < 0.5  # it has learned to stop


def test_cached_directory_is_reused_not_rebuilt(warm_tiny_dir, monkeypatch):
    spec = TinySpec(task_settings={"digits": 1}, warm_start_steps=60, warm_start_batch_size=32)

    def fail(_spec):
        raise AssertionError("rebuilt although cached")

    monkeypatch.setattr(tiny, "make_tiny_model", fail)
    assert tiny_model_dir(spec, cache_dir=warm_tiny_dir.parent.parent) == warm_tiny_dir
    assert sorted(os.listdir(warm_tiny_dir.parent)) == [warm_tiny_dir.name]  # no temporary left behind


def test_tiny_resolves_through_the_cache(warm_tiny_dir):
    spec = TinySpec(task_settings={"digits": 1}, warm_start_steps=60, warm_start_batch_size=32)
    assert resolve_model("tiny", cache_dir=str(warm_tiny_dir.parent.parent), tiny_spec=spec) == str(warm_tiny_dir)
    model, tokenizer = load_model("tiny", cache_dir=str(warm_tiny_dir.parent.parent), tiny_spec=spec)
    assert model.config.vocab_size == len(tokenizer)


def test_load_model_dtype(warm_tiny_dir):
    model, _ = load_model(str(warm_tiny_dir), dtype=torch.bfloat16)
    assert next(model.parameters()).dtype == torch.bfloat16


@pytest.mark.parametrize("path", ["/no/such/model", "./missing-model", "runs/x/final"])
def test_missing_local_path_is_an_input_error_naming_it(path):
    with pytest.raises(InputError, match="does not exist"):
        load_model(path)
    with pytest.raises(InputError, match=path.replace(".", r"\.")):
        load_model(path)


def test_a_run_directory_or_its_checkpoint_given_as_a_model_names_the_runs_final_model(tmp_path):
    """`scalerl eval --model RUN/checkpoints/step_N` (a --nproc run's checkpoint is shards/ and
    state.pt), `--model RUN/checkpoints` or `--model RUN`: "has no config.json; is it a Hugging Face
    model directory?" said nothing of where the run's model is."""
    run = tmp_path / "run"
    step = run / "checkpoints" / "step_000004"
    (step / "shards").mkdir(parents=True)
    (step / "state.pt").write_text("")
    (run / "checkpoints" / "latest").write_text("step_000004")
    (run / "config.yaml").write_text("")
    (run / "runlog.jsonl").write_text("")
    final = re.escape(repr(str(run / "final")))
    for given, says in [(step, "is a training checkpoint of the run"), (run / "checkpoints", "holds the training "
                        "checkpoints of the run"), (run, "is a scalerl run directory")]:
        with pytest.raises(InputError, match=rf"{re.escape(repr(str(given)))} {says}.*model is {final} "
                                             rf"\(scalerl eval --run {re.escape(str(run))}"):
            load_model(str(given))


def test_directory_without_config_and_file_paths(tmp_path):
    with pytest.raises(InputError, match="no config.json"):
        load_model(str(tmp_path))
    (tmp_path / "weights.bin").write_text("")
    with pytest.raises(InputError, match="is a file"):
        load_model(str(tmp_path / "weights.bin"))


def test_unreachable_hub_id_is_an_input_error():
    # Offline (as here) the name is refused before the retries; online, from_pretrained says it is not there.
    with pytest.raises(InputError, match="model 'nobody-xyz/no-such-model' is not a local|cannot load model 'nobody"):
        load_model("nobody-xyz/no-such-model", local_files_only=True)


def test_a_model_of_another_kind_or_without_a_tokenizer_is_refused_in_one_line(tmp_path, capsys):
    """An encoder-decoder (T5), an unknown model_type and a causal LM saved without its tokenizer:
    one-line errors from load_model and from `scalerl train` (whose profile choice reads the config
    first), no traceback."""
    from transformers import LlamaConfig, LlamaForCausalLM, T5Config, T5ForConditionalGeneration

    from scalerl.cli import main

    t5 = tmp_path / "t5"
    T5ForConditionalGeneration(T5Config(d_model=16, d_ff=32, num_layers=1, num_heads=2, d_kv=8, vocab_size=64)).save_pretrained(t5)
    unknown = tmp_path / "unknown"
    unknown.mkdir()
    (unknown / "config.json").write_text('{"model_type": "no_such_architecture"}')
    no_tok = tmp_path / "no-tokenizer"
    LlamaForCausalLM(LlamaConfig(hidden_size=16, intermediate_size=32, num_hidden_layers=1, num_attention_heads=2,
                                 vocab_size=64)).save_pretrained(no_tok)
    cases = [(t5, "a t5 model .*T5ForConditionalGeneration.* is not a causal language model"),
             (unknown, "cannot load model .*no_such_architecture"),
             (no_tok, "cannot load the tokenizer of .*tokenizer.save_pretrained")]
    capsys.readouterr()  # save_pretrained's progress bars (shown when no earlier test turned them off)
    for path, message in cases:
        with pytest.raises(InputError, match=message):
            load_model(str(path))
        code = main(["train", "--model", str(path), "--steps", "1", "--output", str(tmp_path / "run"), "--no-progress"])
        err = capsys.readouterr().err
        assert code == 2 and "Traceback" not in err and len(err.strip().splitlines()) <= 2, err


def test_damaged_weights_are_refused_in_one_line(user_model, tmp_path):
    """A cut download or copy of the weights: one line naming the model and the loader's reason,
    not safetensors' traceback."""
    import shutil

    cut = tmp_path / "cut"
    shutil.copytree(user_model("llama"), cut)
    weights = cut / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:5000])
    with pytest.raises(InputError, match=r"cannot load the weights of .*cut' \(SafetensorError: .*are the weight files complete"):
        load_model(str(cut))


def test_weights_that_do_not_match_the_config_are_not_blamed_on_a_cut_download(user_model, tmp_path):
    import json
    import shutil

    edited = tmp_path / "edited"
    shutil.copytree(user_model("llama"), edited)
    config = json.loads((edited / "config.json").read_text())
    (edited / "config.json").write_text(json.dumps({**config, "vocab_size": 100}))
    with pytest.raises(InputError, match=r"cannot load the weights of .*edited' .*the weights' shapes do not match the "
                                         r"model's config.json .*restore the one saved with the weights$"):
        load_model(str(edited))


def test_a_concurrent_builder_that_finishes_first_wins(random_model, char_tokenizer, tmp_path, monkeypatch):
    spec = TinySpec(seed=99)
    target = tmp_path / "tiny" / spec.key()

    def other_process_finishes_meanwhile(_spec, _progress=None):
        target.mkdir(parents=True)
        (target / "scalerl_tiny.json").write_text("{}")  # the other builder's complete directory
        return random_model, char_tokenizer, {"key": spec.key()}

    monkeypatch.setattr(tiny, "make_tiny_model", other_process_finishes_meanwhile)
    assert tiny_model_dir(spec, cache_dir=tmp_path) == target
    assert os.listdir(target) == ["scalerl_tiny.json"]  # ours was discarded, theirs kept
    assert os.listdir(target.parent) == [spec.key()]  # and no temporary directory is left


def test_processes_that_ask_at_once_wait_for_one_build(random_model, char_tokenizer, tmp_path, monkeypatch):
    # Two builders at once (a study's parallel runs, test workers): one warm start, both get it.
    import threading
    import time

    spec = TinySpec(seed=97)
    builds = []

    def slow_build(_spec, _progress=None):
        builds.append(threading.get_ident())
        time.sleep(0.5)
        return random_model, char_tokenizer, {"key": spec.key()}

    monkeypatch.setattr(tiny, "make_tiny_model", slow_build)
    paths = []
    threads = [threading.Thread(target=lambda: paths.append(tiny_model_dir(spec, cache_dir=tmp_path))) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(builds) == 1
    assert paths == [tmp_path / "tiny" / spec.key()] * 2


def test_build_writes_a_complete_model_directory(random_model, char_tokenizer, tmp_path, monkeypatch):
    spec = TinySpec(seed=98)
    monkeypatch.setattr(tiny, "make_tiny_model", lambda _spec, _progress=None: (random_model, char_tokenizer, {"key": spec.key()}))
    path = tiny_model_dir(spec, cache_dir=tmp_path)
    assert {"config.json", "model.safetensors", "tokenizer.json", "scalerl_tiny.json"} <= set(os.listdir(path))
    assert AutoModelForCausalLM.from_pretrained(path).config.hidden_size == random_model.config.hidden_size


def test_a_build_shows_its_warm_start_progress_when_asked(tmp_path, capsys):
    # tiny-m's warm start is minutes on two cores: the first run on a machine must not sit silent.
    spec = TinySpec(warm_start_steps=3, seed=96)
    tiny_model_dir(spec, cache_dir=tmp_path / "quiet")
    assert capsys.readouterr().err == ""
    tiny_model_dir(spec, cache_dir=tmp_path / "shown", progress=True)
    err = capsys.readouterr().err
    # A counter out of 3 steps (which step is last drawn depends on tqdm's refresh interval: the
    # bar is cleared when the build ends, and a step that comes quickly is not redrawn).
    assert "building the tiny model (once; cached in" in err and re.search(r"\d/3 \[", err)
    tiny_model_dir(spec, cache_dir=tmp_path / "shown", progress=True)  # cached: nothing to show
    assert capsys.readouterr().err == ""
    # What the trainer (progress = log.progress) and `scalerl eval` call.
    load_model("tiny", tiny_spec=spec, cache_dir=str(tmp_path / "loaded"), progress=True)
    assert "building the tiny model" in capsys.readouterr().err


# ---------------------------------------------------------------- the arithmetic-mix model ladder


def test_the_warm_start_weights_do_not_depend_on_the_callers_threads():
    # The build is cached under a key that ignores the machine: its weights must not follow the
    # core count (torch's default thread count), and the caller's setting is left as it was.
    from scalerl.models.tiny import make_tiny_model
    from scalerl.models.warmstart import WARM_START_THREADS

    spec = TinySpec(warm_start_steps=4, seed=97)
    before = torch.get_num_threads()
    weights = {}
    try:
        for n in (1, 3):
            torch.set_num_threads(n)
            seen = []
            model, _, _ = make_tiny_model(spec, lambda _: seen.append(torch.get_num_threads()))
            assert seen == [WARM_START_THREADS] * 4 and torch.get_num_threads() == n
            weights[n] = model.state_dict()
    finally:
        torch.set_num_threads(before)
    assert all(torch.equal(weights[1][k], weights[3][k]) for k in weights[1])


def test_ladder_sizes_are_ordered_and_share_one_warm_start_recipe(char_tokenizer):
    from scalerl.models.tiny import TINY_MODELS

    ladder = [TINY_MODELS[n] for n in ("tiny-s", "tiny-m", "tiny-l")]
    params = [sum(p.numel() for p in build_tiny_model(char_tokenizer, s.architecture).parameters()) for s in ladder]
    assert params == sorted(params) and len(set(params)) == 3
    assert ladder[1].architecture == TinyArchitecture()  # tiny-m is tiny's shape, on the new workload
    assert len({s.key() for s in ladder} | {TINY_MODELS["tiny"].key()}) == 4
    for s in ladder:
        assert s.task == "arithmetic-mix" and s.task_settings == {"min_digits": 2, "max_digits": 4}
        assert (s.warm_start_steps, s.warm_start_noise) == (ladder[0].warm_start_steps, ladder[0].warm_start_noise)
        assert s.warm_start_lr * s.architecture.hidden_size == pytest.approx(3e-3 * 128)  # 1/width


def test_cache_key_changes_with_the_warm_start_task_and_noise():
    base = TinySpec()
    assert base.key() != TinySpec(warm_start_noise=0.03).key()
    assert base.key() != TinySpec(task_settings={"digits": 3}).key()
    assert base.key() != TinySpec(task="arithmetic-mix", task_settings={}).key()


def test_a_ladder_name_resolves_through_the_cache(monkeypatch, tmp_path):
    """``--model tiny-m`` builds its spec once and reuses the cached directory (here a 10-step
    stand-in for the 700-step warm start, to keep the test fast)."""
    from scalerl.models.tiny import TINY_MODELS

    small = TinyArchitecture(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                             num_key_value_heads=2)
    spec = TinySpec(architecture=small, task="arithmetic-mix", task_settings={"n_train": 300, "n_val": 30},
                    warm_start_steps=10, warm_start_noise=0.03)
    monkeypatch.setitem(TINY_MODELS, "tiny-m", spec)
    path = resolve_model("tiny-m", cache_dir=str(tmp_path))
    assert Path(path) == tmp_path / "tiny" / spec.key()
    info = json.loads((Path(path) / "scalerl_tiny.json").read_text())
    assert info["spec"]["task"] == "arithmetic-mix" and info["spec"]["warm_start_noise"] == 0.03

    def fail(_spec):
        raise AssertionError("rebuilt although cached")

    monkeypatch.setattr(tiny, "make_tiny_model", fail)
    assert resolve_model("tiny-m", cache_dir=str(tmp_path)) == path
    with pytest.raises(InputError, match="tiny-x"):
        resolve_model("./tiny-x")


def test_corrupt_digits_touches_digits_only_at_the_given_rate():
    import random

    from scalerl.models.warmstart import corrupt_digits

    text = "<think>7+8+0=15\n4+3+1=8\n</think>85" * 200
    assert corrupt_digits(text, 0.0, random.Random(0)) == text
    noisy = corrupt_digits(text, 0.3, random.Random(0))
    assert len(noisy) == len(text)
    assert all(a == b for a, b in zip(text, noisy) if not a.isdigit()) and all(b.isdigit() for a, b in zip(text, noisy) if a.isdigit())
    changed = sum(a != b for a, b in zip(text, noisy)) / sum(a.isdigit() for a in text)
    assert 0.3 * 0.9 - 0.03 < changed < 0.3 * 0.9 + 0.03  # a redrawn digit equals the old one 1 time in 10


@pytest.mark.parametrize("model, task, profile", [
    ("tiny", "arithmetic", "cpu-tiny"), ("tiny-m", "arithmetic-mix", "cpu-tiny-mix"),
    ("tiny-s", "arithmetic", "cpu-tiny"), ("tiny-l", "arithmetic-mix", "cpu-tiny-mix"),
])
def test_tiny_names_get_their_scale_profile(model, task, profile):
    from scalerl.train.config import TrainConfig, profile_for

    cfg = TrainConfig()
    cfg.model.name_or_path, cfg.task.name = model, task
    assert profile_for(cfg) == profile


def test_load_model_without_weights_reads_no_weight_file(user_model, tmp_path):
    """A trainer rank > 0 builds the architecture only (meta device): it must not even open the
    weights, so a rank needs no memory for the full model."""
    import shutil

    src = user_model("llama")
    bare = tmp_path / "config-and-tokenizer-only"
    shutil.copytree(src, bare, ignore=shutil.ignore_patterns("*.safetensors"))
    model, tokenizer = load_model(str(bare), dtype=torch.float32, weights=False)
    full, _ = load_model(str(src), dtype=torch.float32)
    assert all(p.is_meta for p in model.parameters())
    assert [(n, p.shape, p.dtype) for n, p in model.named_parameters()] == \
        [(n, p.shape, p.dtype) for n, p in full.named_parameters()]
    assert tokenizer.eos_token == AutoTokenizer.from_pretrained(src).eos_token
