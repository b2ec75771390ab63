"""A new user's sharp edges, end to end on the tiny model: a full disk, a diverged learning rate,
Ctrl-C, a reward that always fails, --resume with the original command, --overwrite, a run
directory used from another working directory, samples.jsonl and the report's sample."""

import errno
import html
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch

from scalerl.cli import main
from scalerl.runlog import read_runlog

from .conftest import small_args

pytestmark = pytest.mark.slow

SYNC = ("--set", "pipeline=sync", "--threads", "1")  # k = 1 implied; one thread: fast on a shared machine


def _one_line(capsys, code, expected_code=2):
    err = capsys.readouterr().err.strip()
    assert code == expected_code, err
    lines = [line for line in err.splitlines() if line.startswith("scalerl train:")]
    assert "Traceback" not in err and len(lines) == 1, err
    return lines[0]


def _steps(out, kind="eval"):
    return [r["step"] for r in read_runlog(out / "runlog.jsonl")[1] if r["type"] == kind]


def test_a_full_disk_at_a_checkpoint_stops_with_one_line_and_the_run_resumes(tiny_dir, tmp_path, capsys, monkeypatch):
    out = tmp_path / "run"
    cmd = small_args(out, *SYNC)
    real_save, calls = torch.save, {"n": 0}

    def save(*args, **kwargs):  # the second checkpoint (step 2) hits a full disk
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), "state.pt")
        return real_save(*args, **kwargs)

    monkeypatch.setattr(torch, "save", save)
    line = _one_line(capsys, main(cmd))
    assert "stopped at step 2: cannot write state.pt: No space left on device" in line
    assert f"scalerl train --output {out} --resume" in line
    ckpts = sorted(p.name for p in (out / "checkpoints").iterdir())
    assert ckpts == ["latest", "step_000000"]  # the half-written one is gone, the last complete one kept
    monkeypatch.setattr(torch, "save", real_save)

    # The original command with --resume added: accepted; a flag whose value differs: named.
    line = _one_line(capsys, main([*cmd, "--set", "lr=1e-3", "--resume"]))
    assert "recipe.optimizer.lr: saved 0.0001, given 0.001" in line
    assert main([*cmd, "--resume"]) == 0, capsys.readouterr().err
    assert _steps(out) == [0, 2, 4] and _steps(out, "train") == [1, 2, 3, 4]
    # samples.jsonl: every evaluation once (the rows of the lost step-2 evaluation were truncated).
    _, samples, notes = read_runlog(out / "samples.jsonl")
    assert not notes
    keys = [(r["step"], r["set"], r["problem_id"]) for r in samples]
    assert len(keys) == len(set(keys)) and sorted({r["step"] for r in samples}) == [0, 2, 4]
    assert {len(r["completion"]) > 0 and r["reward"] in (1.0, -1.0) and r["passed"] == (r["reward"] > 0)
            for r in samples} == {True}


# (1e39: finite as a setting -- inf is refused up front -- but past float32's range, so the first
# update leaves infinite weights.)
@pytest.mark.parametrize("lr, where", [("1e20", "next-token logits are NaN"), ("1e39", "left non-finite weights")],
                         ids=["nan-logits", "non-finite-weights"])
def test_a_diverged_learning_rate_stops_with_a_line_naming_it(tiny_dir, tmp_path, capsys, lr, where):
    out = tmp_path / "run"
    cmd = small_args(out, *SYNC, "--set", "warmup_steps=0")
    line = _one_line(capsys, main([*cmd, "--set", f"lr={lr}"]))
    assert where in line and f"recipe.optimizer.lr = {float(lr):g}" in line and "lower it" in line
    # The directory holds the crashed run: a corrected rerun is refused ... unless --overwrite.
    assert "already holds a run" in _one_line(capsys, main(cmd))
    if lr == "1e39":
        assert main([*cmd, "--steps", "2", "--overwrite"]) == 0, capsys.readouterr().err
        assert _steps(out) == [0, 2]


def test_a_policy_that_collapsed_without_a_nan_gets_a_note(tiny_dir, tmp_path, capsys):
    """lr = 1e6 breaks the weights in one step without a NaN: from then on every completion fails,
    every group has zero variance and every step is skipped -- a note says so while the run goes on."""
    out = tmp_path / "run"
    code = main(small_args(out, *SYNC, "--set", "warmup_steps=0", "--set", "lr=1e6", "--steps", "7",
                           "--eval-every", "7", "--no-report"))
    err = capsys.readouterr().err
    assert code == 0, err
    trains = [r for r in read_runlog(out / "runlog.jsonl")[1] if r["type"] == "train"]
    assert not trains[0]["skipped"] and all(r["train_pass_rate"] == 0 for r in trains[1:6])  # the premise
    notes = [line for line in err.splitlines() if "the policy may have collapsed" in line]
    assert len(notes) == 1 and "steps 2-6: every completion failed" in notes[0], err
    assert "recipe.optimizer.lr = 1e+06" in notes[0]
    assert main(["report", str(out)]) == 0  # the report says it too
    assert "steps 2-7: every completion failed" in (out / "report.md").read_text()


def test_a_reward_that_fails_on_every_call_stops_before_training(tiny_dir, tmp_path, capsys):
    module = tmp_path / "broken.py"
    module.write_text("def reward(completion, answer):\n    return int(answer) / 0\n")
    out = tmp_path / "run"
    line = _one_line(capsys, main(small_args(out, *SYNC, "--reward", f"{module}:reward")))
    assert "failed on all 32 calls of the first evaluation" in line
    assert "the first: ZeroDivisionError: division by zero" in line
    assert not (out / "runlog.jsonl").exists() and not (out / "config.yaml").exists()  # rerun-able


def test_a_run_directory_works_from_another_working_directory(tiny_dir, tmp_path, capsys, monkeypatch):
    here, elsewhere = tmp_path / "here", tmp_path / "elsewhere"
    here.mkdir()
    elsewhere.mkdir()
    (here / "my_reward.py").write_text(
        "def exact(completion, answer):\n    return completion.rsplit('</think>', 1)[-1].strip() == answer\n")
    monkeypatch.chdir(here)
    assert main(small_args("run", *SYNC, "--steps", "2", "--reward", "my_reward:exact")) == 0, capsys.readouterr().err
    capsys.readouterr()
    saved = (here / "run" / "config.yaml").read_text()
    assert f"reward: {here / 'my_reward.py'}:exact" in saved

    monkeypatch.chdir(elsewhere)
    assert main(["eval", "--run", "../here/run", "--problems", "4", "--k", "1", "--json"]) == 0, capsys.readouterr().err
    assert json.loads(capsys.readouterr().out)["sets"]["val"]["problems"] == 4
    assert main(["train", "--output", "../here/run", "--resume", "--steps", "3", "--no-progress"]) == 0
    # The report shows a sample of the last evaluation, from samples.jsonl.
    _, samples, _ = read_runlog(here / "run" / "samples.jsonl")
    page = (here / "run" / "report.html").read_text()
    last = [r for r in samples if r["step"] == 3]
    assert last and "A sample" in page
    assert any(html.escape(r["completion"]) in page and html.escape(r["prompt"]) in page for r in last)


# SIGTERM's variant in `make test-all` (15-36 s of a worker): the rule is tests/test_stop_signals.py's, in the default run.
@pytest.mark.parametrize("stop", ["ctrl-c", pytest.param("sigterm", marks=pytest.mark.extended)])
def test_ctrl_c_says_how_to_resume_and_nothing_else(tiny_dir, tmp_path, stop):
    """SIGINT to the process group, as a terminal's Ctrl-C: the trainer and its reward worker both
    get it. One line, exit 130, no traceback from either; the run then resumes. SIGTERM to the
    trainer alone (`kill PID`, a scheduler's stop) the same, exit 143 (it ended the run at once,
    exit -15, without a word)."""
    module = tmp_path / "my_reward.py"
    module.write_text("def exact(completion, answer):\n    return completion.rsplit('</think>', 1)[-1].strip() == answer\n")
    out = tmp_path / "run"
    cmd = [sys.executable, "-m", "scalerl.cli", *small_args(out, *SYNC, "--steps", "40", "--reward",
                                                            f"{module}:exact")]
    # SIGINT back to its default in the child: a shell that starts the test suite in the background
    # (`cmd &` without job control) makes it ignored, and Python then installs no KeyboardInterrupt.
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.time() + 240
    while time.time() < deadline and proc.poll() is None:
        log = out / "runlog.jsonl"
        if log.exists() and any(r["type"] == "train" for r in read_runlog(log)[1]):
            break
        time.sleep(0.05)
    assert proc.poll() is None, proc.communicate()[1]
    if stop == "ctrl-c":
        os.killpg(proc.pid, signal.SIGINT)
    else:
        proc.terminate()
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == {"ctrl-c": 130, "sigterm": 143}[stop], err
    assert "Traceback" not in err and "KeyboardInterrupt" not in err, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("scalerl train: interrupted at step ")
    assert lines[0].endswith(f"resume with: scalerl train --output {out} --resume")
    # Where the resume goes on from: the steps after the last checkpoint are trained again.
    stopped, saved = map(int, re.search(r"at step (\d+), last checkpoint at step (\d+);", lines[0]).groups())
    assert saved in (0, 2) and saved <= stopped
    resumed = subprocess.run([sys.executable, "-m", "scalerl.cli", "train", "--output", str(out), "--resume",
                              "--steps", "2", "--no-progress"], capture_output=True, text=True)
    assert resumed.returncode == 0, resumed.stderr
    assert _steps(out, "train") == [1, 2]  # the rows after the checkpoint (step 2) written once
    resumes = [r for r in read_runlog(out / "runlog.jsonl")[1] if r["type"] == "resume"]
    assert len(resumes) == 1 and resumes[0]["from_step"] in (0, 2)  # its checkpoint: step 0 or 2
    assert "resumed: 1 time, from the checkpoint at step" in resumed.stdout
