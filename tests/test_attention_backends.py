"""cuDNN's attention kernel on CUDA: off in scalerl's processes unless ``run.cudnn_attention`` says
otherwise (scalerl.generate.attention says why), and the switch reaches generator processes."""

from __future__ import annotations

import pytest
import torch

from scalerl.generate.attention import cudnn_attention


@pytest.fixture
def restore_cudnn_flag():
    before = torch.backends.cuda.cudnn_sdp_enabled()
    yield
    torch.backends.cuda.enable_cudnn_sdp(before)


def test_cudnn_attention_is_switched_on_cuda_only_and_returns_what_it_replaced(restore_cudnn_flag):
    torch.backends.cuda.enable_cudnn_sdp(True)  # torch's default
    # torch's switch is process-wide and can be set on a machine without a GPU: what is set is checked.
    assert cudnn_attention("cuda", False) is True
    assert torch.backends.cuda.cudnn_sdp_enabled() is False
    assert cudnn_attention(torch.device("cuda", 0), True) is False  # restoring: the trainer's close
    assert torch.backends.cuda.cudnn_sdp_enabled() is True
    # Off CUDA nothing is touched (a CPU run must not change a GPU notebook's setting).
    assert cudnn_attention("cpu", False) is None
    assert torch.backends.cuda.cudnn_sdp_enabled() is True


@pytest.mark.slow
def test_run_cudnn_attention_reaches_the_generator_process_spec_and_a_cpu_run_leaves_torch_alone(
        tiny_dir, tmp_path, restore_cudnn_flag):
    from scalerl.pipeline.work import WorkerSpec
    from scalerl.train.config import TrainConfig, resolve
    from scalerl.train.trainer import Trainer

    torch.backends.cuda.enable_cudnn_sdp(True)
    for value in (False, True):
        cfg = resolve(TrainConfig(), [
            f"run.output={tmp_path / str(value)}", "log.progress=false", "run.threads=1", "run.steps=1",
            "eval.every=1", "eval.problems=4", "eval.samples_per_problem=1", "batch.prompts_per_step=2", "batch.generations_per_prompt=2",
            "forecast.enabled=false", "pipeline=sync", "k=1", f"run.cudnn_attention={str(value).lower()}",
        ])
        trainer = Trainer(cfg)
        spec = WorkerSpec.from_context(trainer.pipeline)
        assert spec.cudnn_attention is value
        assert spec.generation_config is trainer.pipeline.model.generation_config  # (its EOS ids: review co)
        trainer.run()
        assert torch.backends.cuda.cudnn_sdp_enabled() is True  # CPU: untouched, during and after
