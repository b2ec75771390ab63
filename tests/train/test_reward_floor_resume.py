"""A user's reward whose failed calls are floored at its lowest score, across a kill and ``--resume`` of an
asynchronous run (review FN, ``--nproc 2`` on a user's bf16 checkpoint): a batch's failures score its own lowest
(extended: ~80 s; ``make test-all`` runs it)."""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.extended, pytest.mark.filterwarnings("ignore::UserWarning")]

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "user_model.py"


def _user_model(tmp_path: Path) -> tuple[Path, Path]:
    spec = importlib.util.spec_from_file_location("fn_user_model", EXAMPLES)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    model = module.save_user_model(tmp_path / "llama", "llama")  # 2 layers, hidden 64, stored in bf16
    data = module.write_math_data(tmp_path / "math.jsonl")
    return model, data


# A judge whose scale goes down to -5 on the held-out problems, and which fails on one training prompt (its call
# raises: scored as a wrong answer, -1 or the lowest score the function has returned). Its answer to each call is
# the same in every run: the marker only records that the failing prompt has been seen (it is, in the third
# training batch, before the step-2 evaluation), after which the held-out prompts score -5.
REWARD = '''
import os
MARK = {mark!r}
VAL = {{"-78", "131", "101", "27", "137", "-35", "1533", "24", "163", "4420", "135", "17", "25"}}

def score(prompt, completion, answer):
    if answer == "-63":
        open(MARK, "w").close()
        raise ValueError("judge down")
    if answer in VAL and "- 91" not in prompt and os.path.exists(MARK):
        return -5.0
    return 1.0 if len(completion) % 2 else 0.0
'''


def _command(model: Path, data: Path, reward: Path, out: Path) -> list[str]:
    return [sys.executable, "-m", "scalerl.cli", "train", "--model", str(model), "--task", "math", "--data", str(data),
            "--output", str(out), "--no-progress", "--no-report", "--steps", "4", "--eval-every", "2",
            "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4",
            "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2", "--set", "forecast.enabled=false",
            "--set", "lr=1e-3", "--reward", f"{reward}:score", "--nproc", "2"]


def _env() -> dict[str, str]:
    env = dict(os.environ, OMP_NUM_THREADS="1")
    src = str(Path(__file__).resolve().parents[2] / "src")
    env["PYTHONPATH"] = src + os.pathsep + env.get("PYTHONPATH", "")
    return env


def _train_rows(out: Path) -> dict[int, dict]:
    rows = [json.loads(line) for line in (out / "runlog.jsonl").read_text().splitlines() if line.strip()]
    return {r["step"]: r for r in rows if r["type"] == "train"}


def test_resumed_nproc_2_run_scores_failed_reward_calls_as_the_uninterrupted_run(tmp_path):
    model, data = _user_model(tmp_path)
    env = _env()

    # The uninterrupted run.
    reward = tmp_path / "judge_a.py"
    reward.write_text(REWARD.format(mark=str(tmp_path / "mark_a")))
    ref = tmp_path / "ref"
    done = subprocess.run(_command(model, data, reward, ref), env=env, capture_output=True, text=True, timeout=150)
    assert done.returncode == 0, done.stderr[-2000:]

    # The same run killed (-9, the launcher) once its step-2 checkpoint is in place, then resumed.
    reward = tmp_path / "judge_b.py"
    reward.write_text(REWARD.format(mark=str(tmp_path / "mark_b")))
    out = tmp_path / "killed"
    proc = subprocess.Popen(_command(model, data, reward, out), env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 120
        while not (out / "checkpoints" / "step_000002").exists():
            assert proc.poll() is None and time.time() < deadline, "the run ended before its step-2 checkpoint"
            time.sleep(0.005)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
    time.sleep(1)
    resumed = subprocess.run(_command(model, data, reward, out) + ["--resume"], env=env, capture_output=True,
                             text=True, timeout=150)
    assert resumed.returncode == 0, resumed.stderr[-2000:]

    want, got = _train_rows(ref), _train_rows(out)
    assert sorted(got) == sorted(want) == [1, 2, 3, 4]
    # The docs: a resumed run's rows are the uninterrupted run's, and failed reward calls count (and score) the
    # same across --resume in every pipeline mode.
    for step in (3, 4):
        assert got[step]["reward_mean"] == pytest.approx(want[step]["reward_mean"]), step
