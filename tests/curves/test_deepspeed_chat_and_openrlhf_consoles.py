"""DeepSpeed-Chat's console as it prints since August 2023 ("Epoch: 0 | Step: 3 | PPO Epoch: 1 | Actor Loss: ...") and an
OpenRLHF console resumed soon after its checkpoint (the resumed first row is that step again, not a late
evaluation) -- review do."""

from __future__ import annotations

import pytest

from scalerl.curves.io import detect_format, read_curves


def _deepspeed_chat_current(path):
    """The console of DeepSpeed-Chat's step3_rlhf_finetuning/main.py as microsoft/DeepSpeedExamples master
    prints it (commit 2d1f3b38: 'Epoch: E | Step: S | PPO Epoch: P | Actor Loss: ...', print_throughput_step3's
    lines, then 'Average reward score: R | EMA reward score: E')."""
    lines = ["***** Running training *****", "Beginning of Epoch 1/1, Total Generation Batches 8"]
    for s in range(8):
        lines += [
            f"Epoch: 0 | Step: {s} | PPO Epoch: 1 | Actor Loss: {0.5 - 0.01 * s} | Critic Loss: {0.3 - 0.01 * s} "
            "| Unsupervised Loss: 0.0",
            "End-to-End => Latency: 10.21s, TFLOPs: 3.20, Samples/sec: 0.39, Time/seq 2.55s, Batch Size: 4, "
            "Total Seq. Length: 512",
            "Generation => Latency: 6.10s, Per-token Latency 23.83 ms, TFLOPs: 1.10, BW: 80.00 GB/sec, "
            "Answer Seq. Length: 256",
            "Training   => Latency: 4.11s, TFLOPs: 6.30",
            f"Average reward score: {-1.0 + 0.25 * s} | EMA reward score: {-1.0 + 0.1 * s}",
            "-" * 85,
        ]
    lines.append("saving model ...")
    path.write_text("\n".join(lines) + "\n")
    return path


def test_deepspeed_chat_current_console_is_read(tmp_path):
    log = _deepspeed_chat_current(tmp_path / "step3.log")
    assert detect_format(log) == "deepspeed-chat"
    (curve,) = read_curves(log, "global_step", "average_reward_score", bounded=False)
    assert list(curve.x) == list(range(8))
    assert list(curve.y) == pytest.approx([-1.0 + 0.25 * s for s in range(8)])


def _openrlhf_resumed(path, killed_after: int):
    """OpenRLHF's console (its logger under Ray: '✨ Global step N: {...}'), saved at step 4, killed after
    step ``killed_after``, resumed from the step-4 checkpoint into the same console (tee -a): the resumed
    attempt prints steps 5.. again (OpenRLHF: steps = consumed_samples // rollout_batch_size + 1)."""
    prefix = "(PPOTrainer pid=2201) INFO 05-12 10:00:00 ppo_trainer.py:380] "
    lines = [prefix + f"✨ Global step {s}: {{'policy_loss': 0.01, 'reward': {0.1 + 0.03 * s:.2f}, "
             f"'kl': 0.001, 'timing/step_total': 10.0}}" for s in range(1, killed_after + 1)]
    lines += [prefix + f"✨ Global step {s}: {{'policy_loss': 0.02, 'reward': {0.5 + 0.01 * s:.2f}, "
              f"'kl': 0.001, 'timing/step_total': 20.0}}" for s in range(5, 13)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_openrlhf_resume_far_from_checkpoint_is_resolved(tmp_path):
    """Control: killed 4 steps after the checkpoint, the resume is read right (abandoned steps dropped)."""
    (curve,) = read_curves(_openrlhf_resumed(tmp_path / "openrlhf.log", 8), "cum:timing/step_total", "reward")
    assert list(curve.x) == [10, 20, 30, 40, *range(60, 60 + 20 * 8, 20)]


def test_openrlhf_resume_two_steps_after_checkpoint_drops_abandoned_steps(tmp_path):
    (curve,) = read_curves(_openrlhf_resumed(tmp_path / "openrlhf.log", 6), "cum:timing/step_total", "reward")
    # steps 1-4 of the first attempt (10 s each), steps 5-12 of the resumed one (20 s each)
    assert list(curve.x) == [10, 20, 30, 40, *range(60, 60 + 20 * 8, 20)]
    assert list(curve.y) == pytest.approx([0.13, 0.16, 0.19, 0.22, *[0.5 + 0.01 * s for s in range(5, 13)]])
    assert not any("asynchronous" in n for n in curve.notes)
