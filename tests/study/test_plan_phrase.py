"""Planning a study with the interruption phrase counted by each variant's model's tokenizer (study/plan.py,
study/families.py interruption_tokens, models/loading.py model_tokenizer) -- never with a checkpoint's own tokenizer
code, which the run refuses (review eh: transformers asked on the terminal, and ran it on a "y") -- review eg: a LoRA adapter saved without
a tokenizer runs with its base's; a tokenizer that cannot encode the phrase is left to the run's own refusal, not a
traceback; a study directory planned otherwise (made before the budgets counted the phrase, or copied to a machine
without the model) is told to remove the variant's runs, not to --resume."""

from __future__ import annotations

import builtins
import contextlib
import json
import shutil
import sys
from pathlib import Path

import numpy as np
import pytest

from scalerl.config import save_yaml
from scalerl.errors import InputError, ScaleRLError

ROOT = Path(__file__).resolve().parents[2]


def _user_model(directory: Path) -> Path:
    """examples/user_model.py's model: a random Llama with a 512-token byte-level BPE (the phrase: 47 tokens)."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("scalerl_examples_user_model_eg", ROOT / "examples" / "user_model.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.save_user_model(directory, "llama", dtype="float32")


def _write_runs(plans, directory: Path, spec, *, edit=None) -> None:
    """Every planned run on disk as a finished one: its config (``edit(plan, cfg)`` first), a run log of a sigmoid."""
    from scalerl.study.runner import save_spec

    directory.mkdir(parents=True, exist_ok=True)
    save_spec(spec, directory)
    steps = np.linspace(0, spec.steps, 11).round().astype(int)
    for p in plans:
        cfg = p.config
        if edit is not None:
            edit(p, cfg)
        p.directory.mkdir(parents=True)
        save_yaml(cfg, p.directory / "config.yaml")
        flops = steps * 1e10
        A = {0: 0.7, 1: 0.6, 2: 0.8}[len(p.variant.label) % 3]
        y = 0.3 + (A - 0.3) / (1 + (5e11 / np.maximum(flops, 1.0)) ** 1.5)
        y[0] = 0.3
        with open(p.directory / "runlog.jsonl", "w") as f:
            f.write(json.dumps({"type": "header", "run": p.directory.name, "recipe": cfg.recipe_name}) + "\n")
            for s, c, v in zip(steps, flops, y):
                f.write(json.dumps({"type": "eval", "step": int(s), "flops": float(c), "val/pass_rate": float(v)}) + "\n")
        (p.directory / "final").mkdir()
        (p.directory / "final" / "config.json").write_text("{}")


def test_gen_length_on_a_lora_adapter_counts_the_base_tokenizer_phrase(tmp_path):
    from scalerl.models.loading import read_tokenizer
    from scalerl.rl.length import budget_problems
    from scalerl.study.plan import plan_study
    from scalerl.study.spec import StudySpec

    base = _user_model(tmp_path / "base")
    adapter = tmp_path / "adapter"  # what PeftModel.save_pretrained writes: no tokenizer, no config.json
    adapter.mkdir()
    (adapter / "adapter_config.json").write_text(json.dumps({
        "base_model_name_or_path": str(base), "peft_type": "LORA", "r": 4, "lora_alpha": 8,
        "target_modules": ["q_proj", "v_proj"], "task_type": "CAUSAL_LM"}))
    plans = plan_study(StudySpec(family="gen-length", model=str(adapter), task="math",
                                 overrides=["profile=cpu-small"]), tmp_path / "study")
    tokenizer = read_tokenizer(str(base))  # what load_model gives a run of the adapter (models/loading.py)
    over = {p.variant.label: budget_problems(p.config.recipe.length, tokenizer) for p in plans}
    # length-171: think [86, 86] + the 47-token phrase + answer 64 = 197 > 171 -- every run of it refused at its start
    assert all(not problems for problems in over.values()), over


def test_planning_with_a_tokenizer_that_cannot_encode_the_phrase_is_not_a_traceback(tmp_path):
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from scalerl.study.plan import plan_study
    from scalerl.study.spec import StudySpec

    model = _user_model(tmp_path / "model")
    for name in ("tokenizer.json", "tokenizer_config.json", "chat_template.jinja"):
        (model / name).unlink(missing_ok=True)
    vocab = {c: i for i, c in enumerate(["<pad>", "<eos>", *"0123456789+-*= ?"])}
    tok = Tokenizer(models.WordLevel(vocab))  # no unk token: text outside the vocabulary cannot be encoded
    tok.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="<eos>", pad_token="<pad>").save_pretrained(model)
    spec = StudySpec(family="batch-size", model=str(model), task="math", overrides=["profile=cpu-small"])
    with contextlib.suppress(ScaleRLError):  # planned, or refused in one line (exit 2) -- not a bare Exception
        plan_study(spec, tmp_path / "study")


def test_resuming_a_pre_commit_gen_length_study_says_to_remove_the_changed_variant(tmp_path):
    from scalerl.study.plan import Budget, plan_study
    from scalerl.study.run_state import check_existing
    from scalerl.study.spec import load_spec

    spec = load_spec(ROOT / "configs" / "studies" / "workload-gen-length.yaml")
    study = tmp_path / "study-workload-gen-length"

    def before_the_commit(p, cfg):  # the only difference HEAD~1's plan had (every shipped spec compared)
        if p.variant.label == "length-36":
            cfg.recipe.length.think_budget = (20, 26)

    _write_runs(plan_study(spec, study), study, spec, edit=before_the_commit)
    with pytest.raises(InputError) as refused:
        check_existing(plan_study(spec, study), Budget.of(spec))  # what `scalerl study --output DIR --resume` does
    message = str(refused.value)
    assert "length-36" in message
    assert "remove" in message or "delete" in message, message


def test_dry_run_of_a_copied_gen_length_study_does_not_blame_the_spec(tmp_path):
    from scalerl.study.plan import Budget, plan_study
    from scalerl.study.run_state import check_existing
    from scalerl.study.spec import StudySpec

    model = _user_model(tmp_path / "model")
    spec = StudySpec(family="gen-length", model=str(model), task="math", overrides=["profile=cpu-small"], steps=100,
                     eval_every=10)
    study = tmp_path / "study"
    _write_runs(plan_study(spec, study), study, spec)
    shutil.rmtree(model)  # the study copied to a machine without the model
    try:
        check_existing(plan_study(spec, study), Budget.of(spec))  # what scalerl study --dry-run / --resume run
    except InputError as exc:
        assert "tokenizer" in str(exc), str(exc)


def test_report_of_a_study_copied_from_another_machine(tmp_path):
    from scalerl.study.analysis import analyse_study
    from scalerl.study.plan import plan_study
    from scalerl.study.spec import StudySpec

    model = _user_model(tmp_path / "model")
    spec = StudySpec(family="batch-size", model=str(model), task="math", steps=100, eval_every=10, bootstrap=20)
    study = tmp_path / "study"
    _write_runs(plan_study(spec, study), study, spec)
    shutil.rmtree(model)  # copied to a machine without the model
    analysis = analyse_study(study)
    assert {r.label for r in analysis.variants} == {"batch-8", "batch-4", "batch-16"}


# --- review eh: never a checkpoint's own tokenizer code ---


@pytest.fixture
def modules_cache(tmp_path, monkeypatch):
    """Where transformers copies a checkpoint's own code before importing it (HF_MODULES_CACHE): this test's, not
    the user's ~/.cache/huggingface/modules (only written while the defect stands)."""
    from transformers import dynamic_module_utils

    monkeypatch.setattr(dynamic_module_utils, "HF_MODULES_CACHE", str(tmp_path / "hf_modules"))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield
    for name in [m for m in sys.modules if m == "transformers_modules" or m.startswith("transformers_modules.")]:
        del sys.modules[name]


def _tokenizer_with_its_own_code(model: Path, marker: Path) -> None:
    """Make ``model``'s tokenizer one that needs Python code shipped with the checkpoint (``auto_map`` in
    tokenizer_config.json, a class transformers does not have); importing that code writes ``marker``."""
    config_path = model / "tokenizer_config.json"
    config = json.loads(config_path.read_text())
    config["tokenizer_class"] = "ShippedTokenizer"
    config["auto_map"] = {"AutoTokenizer": [None, "tokenization_shipped.ShippedTokenizer"]}
    config_path.write_text(json.dumps(config))
    (model / "tokenization_shipped.py").write_text(
        "import pathlib\n"
        f"pathlib.Path({str(marker)!r}).write_text('the checkpoint\\'s own code ran')\n"
        "from transformers import PreTrainedTokenizerFast\n"
        "class ShippedTokenizer(PreTrainedTokenizerFast):\n"
        "    pass\n")


def test_planning_a_study_never_runs_or_offers_to_run_a_tokenizers_shipped_code(tmp_path, monkeypatch, modules_cache):
    """A user model whose tokenizer needs its own Python code (auto_map). scalerl never runs a checkpoint's code:
    load_model refuses it in one line ("scalerl does not run a checkpoint's own code"). Planning a study of it counts
    the interruption phrase with model_tokenizer, which calls AutoTokenizer.from_pretrained(dir) with
    trust_remote_code unset -- transformers then prompts "Do you wish to run the custom code? [y/N]" (input(), a
    15-second SIGALRM wait at a terminal) and, on 'y', imports tokenization_shipped.py. Here the terminal answers
    'y' as a user might to get on: the plan must neither ask nor run it (the run's own refusal says why)."""
    from scalerl.study.plan import plan_study
    from scalerl.study.spec import StudySpec

    model = _user_model(tmp_path / "model-eh-plan")
    marker = tmp_path / "RAN"
    _tokenizer_with_its_own_code(model, marker)
    asked: list[str] = []
    monkeypatch.setattr(builtins, "input", lambda prompt="": (asked.append(prompt), "y")[1])
    try:
        plan_study(StudySpec(family="batch-size", model=str(model), task="math", overrides=["profile=cpu-small"]),
                   tmp_path / "study")
    except Exception:  # noqa: BLE001 -- a one-line refusal is fine; what it must not do is asserted below
        pass
    assert not asked, f"the plan asked on the terminal: {asked[0][:160]!r}"
    assert not marker.exists(), "planning the study ran the checkpoint's own tokenizer code"


def test_model_tokenizer_refuses_shipped_tokenizer_code_as_load_model_does(tmp_path, monkeypatch, modules_cache):
    """The same at the function: model_tokenizer ("the tokenizer a run of the model will use ... None where ... its
    tokenizer cannot be read (the run itself says why)") returns the checkpoint's own class, built by running its
    code, where load_model -- what the run uses -- refuses the tokenizer."""
    from scalerl.errors import InputError
    from scalerl.models.loading import load_model, model_tokenizer

    model = _user_model(tmp_path / "model-eh-load")
    marker = tmp_path / "RAN"
    _tokenizer_with_its_own_code(model, marker)
    monkeypatch.setattr(builtins, "input", lambda prompt="": "y")
    with pytest.raises(InputError, match="does not run a checkpoint's own code"):
        load_model(str(model))  # the run: refused, nothing run
    assert not marker.exists()
    assert model_tokenizer(str(model)) is None  # what the run cannot read, the check does not read either
    assert not marker.exists()


def test_the_report_of_a_study_whose_budgets_do_not_fit_the_phrase_reads_its_runs(tmp_path):
    """A study made before its plan counted the phrase can hold variants that trained and one whose runs could not
    start: the plan of a new study refuses it, its report reads the runs there are (review eh: no report at all)."""
    from scalerl.study.analysis import analyse_study
    from scalerl.study.plan import plan_study
    from scalerl.study.spec import StudySpec

    spec = StudySpec(family="batch-size", steps=100, eval_every=10, bootstrap=20,
                     overrides=["length.max_new_tokens=48", "length.think_budget=[26, 38]", "length.answer_budget=8"])
    study = tmp_path / "study"
    with pytest.raises(ScaleRLError, match="think_budget hi"):
        plan_study(spec, study)
    _write_runs(plan_study(spec, study, check_budgets=False), study, spec)
    assert {v.label for v in analyse_study(study).variants} == {"batch-16", "batch-8", "batch-32"}
