"""A bf16 run (full fine-tuning or LoRA) stopped at a checkpoint and resumed equals an uninterrupted one."""

import pytest
import torch
from safetensors.torch import load_file

from scalerl.runlog import read_runlog
from scalerl.train.config import TrainConfig, resolve
from scalerl.train.trainer import Trainer

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore:`is_gradient_checkpointing` is deprecated")]


def _rows(out):
    _, rows, _ = read_runlog(out / "runlog.jsonl")
    # Wall-clock columns differ between any two runs; the forecast's budget is the run's own --steps.
    return [{k: v for k, v in r.items() if k != "gpu_hours" and not k.startswith(("pipeline/", "forecast/", "memory/"))}
            for r in rows if r["type"] != "resume"]  # (the row that says the run was resumed)


@pytest.fixture(autouse=True)
def _restore_threads():
    """run.threads=1 (one core: no oversubscription on a shared machine) is process-wide; put it back."""
    n = torch.get_num_threads()
    yield
    torch.set_num_threads(n)


def _config(out, steps, extra):
    """The tiny model, 1-3 steps of 4 x 4, a checkpoint at every step; no forecast (no report either)."""
    overrides = ["model.name_or_path=tiny", f"run.output={out}", f"run.steps={steps}", "eval.every=1",
                 "log.progress=false", "pipeline=sync", "k=1", "batch.prompts_per_step=4",
                 "batch.generations_per_prompt=4", "eval.problems=4", "eval.samples_per_problem=2",
                 "forecast.enabled=false", "run.threads=1", *extra]
    return resolve(TrainConfig(), overrides)


# LoRA's case is `extended` (make test-all): its checkpoint holds the adapters only, which
# tests/train/test_adapters.py saves and loads back.
@pytest.mark.parametrize("extra", [["precision.compute=bf16"],
                                   pytest.param(["precision.compute=bf16", "model.lora.rank=4"],
                                                marks=pytest.mark.extended)],
                         ids=["bf16", "bf16-lora"])
def test_resume_of_a_bf16_run_is_exact(tiny_dir, tmp_path, extra):
    ref, split = tmp_path / "ref", tmp_path / "split"
    Trainer(_config(ref, 3, extra)).run()
    Trainer(_config(split, 1, extra)).run()  # stops after step 1 (its checkpoint), like a kill there
    Trainer.resumed(split, steps=3).run()
    ref_rows, split_rows = _rows(ref), _rows(split)
    assert [r["step"] for r in ref_rows if r["type"] == "train"] == [1, 2, 3]
    assert not any(r.get("skipped") for r in ref_rows)
    assert split_rows == ref_rows
    a, b = load_file(ref / "final" / "model.safetensors"), load_file(split / "final" / "model.safetensors")
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    assert all(v.dtype == torch.float32 for v in a.values())  # the tiny model is stored in fp32: so is final/
