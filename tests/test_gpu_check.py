"""benchmarks/gpu_check.py's dry mode (CPU, tiny model) with only torch and transformers importable."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[1]
#: Packages a GPU box may lack: the check must not import them.
ABSENT = ("scipy", "peft", "matplotlib", "ray", "math_verify", "vllm", "tensorboard", "wandb")

RUN = f"""
import runpy, sys
for name in {ABSENT!r}:
    sys.modules[name] = None  # import fails, as on a box without it
sys.argv = ["gpu_check.py", "--device", "cpu", "--tiny"]
runpy.run_path("benchmarks/gpu_check.py", run_name="__main__")
"""


# `extended` (make test-all, ~45 s): CI time. Run it (or `bash benchmarks/gpu_check.sh --dry`)
# before a GPU session: a broken stage found on the device costs its scarce minutes.
@pytest.mark.extended
def test_gpu_check_dry_mode_runs_without_optional_packages(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"), OUT=str(tmp_path))
    proc = subprocess.run([sys.executable, "-c", RUN], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    text = (tmp_path / "gpu_check.txt").read_text()
    assert "gpu_check: done" in text
    # The FP32 head: generator and trainer agree to well under a percent on bf16 compute.
    agree = re.search(r"head=fp32 generator=autocast: tokens (\d+) .* max\|ratio-1\| ([0-9.e+-]+)", text)
    assert agree and int(agree.group(1)) > 0 and float(agree.group(2)) < 1e-2
    moved = [float(x) for x in re.findall(r"weights moved ([0-9.]+)%", text)]
    assert len(moved) == 5 and min(moved) > 99.0  # bf16 checkpoint, fp32 masters: every weight moves
    # bf16 again with cuDNN's attention allowed (on a GPU then off too; on a CPU the switch changes nothing).
    assert len(re.findall(r"train bf16, cuDNN attention allowed one process: 1 step in", text)) == 1
    # A one-rank group joined as --nproc joins it: the gloo object group beside the default one, and a
    # sharded checkpoint planned through it read back exactly.
    assert re.search(r"groups: default gloo bound to None, object group gloo; .* largest weight difference 0\.0e\+00",
                     text)
    gap = re.search(r"bf16 FSDP2 .* loss gap to one process ([0-9.e+-]+) over (\d+) steps \(of (\d+);", text)
    # FSDP's bf16 casts vs autocast, on the steps that trained on the same completions (at least one).
    assert gap and int(gap.group(3)) == 2 and int(gap.group(2)) >= 1 and float(gap.group(1)) < 1e-2
    # In fp32 both generators hold the same weights: every step compares, and the losses agree.
    gap = re.search(r"fp32 FSDP2 .* loss gap to one process ([0-9.e+-]+) over (\d+) steps \(of (\d+);", text)
    assert gap and int(gap.group(2)) == int(gap.group(3)) == 1 and float(gap.group(1)) < 1e-5
    assert "samples/s" in text
    # The LM head in chunks scores as the whole head does (fp32 on the CPU).
    diff = re.search(r"max \|log-prob difference\| chunked vs whole ([0-9.e+-]+)", text)
    assert diff and float(diff.group(1)) < 1e-5
    # A few rows at a time: the same greedy tokens as every row at once (bf16 on the CPU).
    assert "decode bf16: rows with the same greedy tokens whole and in pieces: 6 of 6" in text
    assert "decode fp32: rows with the same greedy tokens whole and in pieces: 6 of 6" in text
    assert len(re.findall(r"sdpa: bf16 decode .* ms a step", text)) == 3
    # The activation probe runs on the saved model and predicts a pass.
    assert re.search(r"activations: 2 x 48 tokens: predicted [0-9.]+ MiB", text)
