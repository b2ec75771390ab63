"""``scalerl eval --run`` of a run it cannot sample as the run did says so (review bx: a GPU run's auto precision)."""

import dataclasses
import json
from pathlib import Path

import pytest
import torch


def _cfg(*overrides):
    from scalerl.config import apply_overrides
    from scalerl.train.config import TrainConfig

    return apply_overrides(TrainConfig(), list(overrides))


def _gpu_run_dir(tmp_path: Path, *overrides) -> Path:
    """A run directory as a GPU run with the default precision.compute=auto leaves it (config.yaml keeps 'auto';
    the run log's header says the device it ran on)."""
    from scalerl.config import save_yaml

    cfg = _cfg(*overrides)
    assert cfg.precision.compute == "auto"
    d = tmp_path / "run"
    (d / "final").mkdir(parents=True)
    save_yaml(cfg, d / "config.yaml")
    header = {"type": "header", "run": "run", "recipe": cfg.recipe_name, "model": "tiny", "task": "arithmetic",
              "params": 1, "device": "cuda:0", "config": dataclasses.asdict(cfg)}
    (d / "runlog.jsonl").write_text(json.dumps(header, default=str) + "\n")
    return d


@pytest.mark.parametrize("lora", [False, True])
def test_eval_run_of_an_auto_precision_gpu_run_samples_as_it_did_or_says_so(tmp_path, monkeypatch, lora):
    import scalerl.generate.hf as hf
    from scalerl.commands import evaluate

    d = _gpu_run_dir(tmp_path, *(["model.lora.rank=4"] if lora else []))
    base = evaluate._run_settings(str(d))
    made = {}

    class Recorder:
        def __init__(self, model, tokenizer, seed=0, autocast_dtype=None, **kw):
            made.update(model=model, autocast_dtype=autocast_dtype)

    monkeypatch.setattr(hf, "HFGenerator", Recorder)
    import scalerl.models.lora as lora_module
    import scalerl.rl.fp32_head as fp32_head

    monkeypatch.setattr(fp32_head, "enable_fp32_lm_head", lambda model: None)
    monkeypatch.setattr(lora_module, "generator_copy", lambda model, dtype: ("a cast copy", dtype))
    model = torch.nn.Linear(2, 2)
    evaluate._generator_as_the_run(model, None, base, 0)
    sampled_as_the_run = made["autocast_dtype"] is not None or made["model"] is not model
    note = evaluate.other_sampling_note(base, 1.0)
    assert sampled_as_the_run or note is not None, (
        f"the run computed in bf16/fp16 on cuda:0 (precision.compute=auto); eval samples in fp32 without a note "
        f"(base precision {base['precision']!r})")
