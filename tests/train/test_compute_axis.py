"""The compute axis (review cl): train/compute.py's ComputeMeter, the trainer's clock, the checkpoint round trip of
the meter, the pipeline's sources -- what the x of every forecast counts."""

import time

import pytest

from scalerl.cli import main
from scalerl.runlog import read_runlog
from scalerl.train.checkpoint import latest_checkpoint, load_checkpoint
from scalerl.train.compute import ComputeMeter

pytestmark = pytest.mark.filterwarnings("ignore::UserWarning")


def _args(out, *extra):
    return ["train", "--model", "tiny", "--output", str(out), "--no-progress", "--no-report",
            "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4",
            "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2", "--set", "forecast.enabled=false",
            *extra]


def _evals(out):
    _, rows, _ = read_runlog(out / "runlog.jsonl")
    return {r["step"]: r for r in rows if r["type"] == "eval"}


@pytest.fixture(scope="module")
def process_run(tiny_dir, tmp_path_factory):
    """PipelineRL-k on one generator *process* (backend.workers=processes), 3 steps, an evaluation each."""
    out = tmp_path_factory.mktemp("CL") / "processes"
    assert main(_args(out, "--steps", "3", "--eval-every", "1", "--set", "backend.workers=processes",
                      "--set", "backend.generators=1")) == 0
    return out


@pytest.mark.slow
def test_generator_process_start_up_is_not_training_time(process_run):
    ev = _evals(process_run)
    hours = [ev[s]["gpu_hours"] for s in range(4)]
    first, later = hours[1] - hours[0], max(hours[2] - hours[1], hours[3] - hours[2])
    # Steps of the same size: the first may wait for its batch (nothing generated it beforehand), not for ~20x a step.
    assert first < 5 * later, (first * 3600, later * 3600)


@pytest.mark.slow
def test_generator_processes_are_counted_as_devices(process_run):
    state = load_checkpoint(latest_checkpoint(process_run / "checkpoints"))
    assert state["meter"]["devices"] == 2  # the trainer and its one generator process


def test_a_resume_with_more_ranks_counts_its_own_devices():
    first = ComputeMeter(params=10, devices=2)  # --nproc 2: one hour of training
    first.seconds = 3600.0
    state = first.state_dict()
    resumed = ComputeMeter(params=10)
    resumed.devices = 3  # Trainer._make_pipeline for --nproc 3, before _restore loads the checkpoint ...
    resumed.load_state_dict(state)
    resumed.devices = 3  # ... (or after it: either order must keep the first session's device-hours)
    assert resumed.gpu_hours == pytest.approx(2.0)
    t = time.perf_counter()
    resumed.start()
    time.sleep(0.3)
    resumed.pause()
    wall = time.perf_counter() - t
    assert (resumed.gpu_hours - 2.0) * 3600 / wall == pytest.approx(3.0, rel=0.15)  # 3 devices busy since


@pytest.mark.slow
def test_prompt_prefill_flops_do_not_grow_with_generations_per_prompt(tiny_dir, tmp_path):
    prompt_part = {}
    for g in (2, 4):  # the same 4 prompts at step 1 (the sampler draws them by seed), 2 or 4 completions each
        out = tmp_path / f"g{g}"
        assert main(_args(out, "--steps", "1", "--eval-every", "1", "--set", "pipeline=sync", "--set", "k=1",
                          "--set", f"batch.generations_per_prompt={g}")) == 0
        header, _, _ = read_runlog(out / "runlog.jsonl")
        n, row = header["params"], _evals(out)[1]
        # flops = 2N (generated + prefilled prompt tokens) + 6N trained: what is left is the prompt tokens counted.
        prompt_part[g] = round(row["flops"] / (2 * n) - row["tokens"] - 3 * row["trained_tokens"])
    assert prompt_part[2] > 0
    assert prompt_part[4] == prompt_part[2], prompt_part


def test_a_checkpoint_written_before_sessions_were_kept_apart_keeps_its_device_hours():
    """A meter state without ``prior_seconds`` (an older scalerl's): all its seconds at its own device count."""
    resumed = ComputeMeter(params=10, devices=1)
    resumed.load_state_dict({"params": 10, "devices": 4, "step": 3, "seconds": 900.0})
    assert resumed.gpu_hours == pytest.approx(1.0) and resumed.devices == 1 and resumed.step == 3
    again = ComputeMeter(params=10, devices=1)
    again.load_state_dict(resumed.state_dict())  # a second resume: the first session's hours stay as they were
    assert again.gpu_hours == pytest.approx(1.0)
