"""What a resume must keep or refuse (review eb): the reward function's state (its failure floor, whether it has
answered in time), the config the checkpoint was written under (an edited config.yaml), the flags that name the
same run (``--recipe`` of its own recipe), and the number of ranks that generate on their shards. The runs are the
tiny CPU model with a few steps."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scalerl.cli import main
from scalerl.runlog import read_runlog

from .conftest import small_args as conftest_small_args

pytestmark = pytest.mark.slow

#: Columns that measure wall-clock time or the machine (no two runs share them), as tests/train/test_resume.py.
TIMING = ("gpu_hours",)


def small_args(output, *extra):
    """tests/train/conftest.py's few-step run, 6 steps, seed 3, no report."""
    return conftest_small_args(output, "--steps", "6", "--seed", "3", "--no-report", *extra)


def comparable(out: Path) -> list[dict]:
    _, rows, _ = read_runlog(out / "runlog.jsonl")
    return [{k: v for k, v in r.items() if k not in TIMING and not k.startswith(("pipeline/", "memory/"))}
            for r in rows if r["type"] in ("train", "eval")]


def stop_before_step(monkeypatch, step: int) -> None:
    """Ctrl-C as the run is about to train step ``step + 1`` (right after its checkpoint at ``step``)."""
    from scalerl.train.trainer import Trainer

    original = Trainer._train_step

    def stopped(self):
        if self.step == step:
            raise KeyboardInterrupt
        original(self)

    monkeypatch.setattr(Trainer, "_train_step", stopped)


def stopped_and_resumed(out: Path, extra: list[str], monkeypatch, step: int) -> int:
    """Train ``out`` with ``extra``, stopped (Ctrl-C) right after its checkpoint at ``step``, then ``--resume`` it;
    the resume's exit code."""
    stop_before_step(monkeypatch, step)
    assert main(small_args(out, *extra)) == 130
    monkeypatch.undo()
    return main(["train", "--output", str(out), "--resume", "--no-progress", "--no-report"])


def sync_batch_prompts(index: int, seed: int = 3, n: int = 4) -> list[str]:
    """The prompts of training batch ``index`` of a sync run (the sampler's epoch-0 order, no retirement yet)."""
    from scalerl.rl.sampler import PromptSampler
    from scalerl.tasks.registry import get_task

    train = list(get_task("arithmetic", settings={}).train_problems())
    by_id = {p.id: p for p in train}
    sampler = PromptSampler([p.id for p in train], seed=seed)
    batches = [sampler.sample(n) for _ in range(index + 1)]
    return [by_id[i].prompt for i in batches[index]]


# ----------------------------------------------------------------------------------------------- reward floor


def test_resume_keeps_the_floor_failed_reward_calls_score(tiny_dir, tmp_path, monkeypatch, capsys):
    """A judge-like reward: -5 for a wrong answer on the evaluation set, a raise on some training prompts. A sync run
    (README: resumes row for row) stopped after its checkpoint at step 4 and resumed must log the rows the
    uninterrupted run logged."""
    from scalerl.tasks.registry import get_task

    val = sorted({p.prompt for p in get_task("arithmetic", settings={}).eval_sets()["val"]})
    reward = tmp_path / "judge.py"
    reward.write_text(
        "import json\n"
        f"VAL = set(json.loads({json.dumps(json.dumps(val))}))\n"
        "def judge(prompt, completion, answer):\n"
        "    if completion.rsplit('</think>', 1)[-1].strip() == answer:\n"
        "        return 1.0\n"
        "    if prompt in VAL:\n"
        "        return -5.0\n"
        "    if prompt[0] in '1234':\n"
        "        raise RuntimeError('judge unavailable')\n"
        "    return -1.0\n")
    extra = ["--set", "pipeline=sync", "--reward", f"{reward}:judge"]
    assert main(small_args(tmp_path / "ref", *extra)) == 0

    out = tmp_path / "stopped"
    assert stopped_and_resumed(out, extra, monkeypatch, 4) == 0
    capsys.readouterr()
    assert comparable(out) == comparable(tmp_path / "ref")


# `extended` (~30 s: three runs on generator processes): the default run checks the same hand-over at the scheduler,
# tests/pipeline/test_reward_state.py, and the trainer's own floor across a resume above.
@pytest.mark.extended
def test_a_resumed_generator_process_keeps_the_floor_failed_calls_score(tiny_dir, tmp_path, monkeypatch, capsys):
    """The same on a generator process, which scores with a copy of the reward of its own (review ee: the checkpoint
    held only the trainer's copy, so a resumed process scored failures -1 where the run's had seen -5). The judge
    returns -5 on training batch 0's prompts and raises on batch 5's, whatever the completion: the rows of those
    batches do not depend on which weights sampled them (PipelineRL-k on processes is timing-driven), and batch 5's
    mean reward is the floor its failures scored -- -5 in the uninterrupted run and in the run stopped at step 2 and
    resumed (its batch 5 is generated after the resume, by a new process)."""
    first, sixth = sync_batch_prompts(0), sync_batch_prompts(5)
    reward = tmp_path / "judge.py"
    reward.write_text(
        f"LOW = {set(first)!r}\n"
        f"RAISE = {set(sixth)!r}\n"
        "def judge(prompt, completion, answer):\n"
        "    if prompt in LOW:\n"
        "        return -5.0\n"
        "    if prompt in RAISE:\n"
        "        raise RuntimeError('judge unavailable')\n"
        "    return 1.0 if completion.rsplit('</think>', 1)[-1].strip() == answer else -1.0\n")
    extra = ["--set", "backend.workers=processes", "--reward", f"{reward}:judge"]

    def batch_rewards(out: Path) -> dict[int, float]:
        _, rows, _ = read_runlog(out / "runlog.jsonl")
        return {r["batch_index"]: r["reward_mean"] for r in rows if r["type"] == "train" and r["batch_index"] in (0, 5)}

    assert main(small_args(tmp_path / "ref", *extra)) == 0
    assert batch_rewards(tmp_path / "ref") == {0: -5.0, 5: -5.0}

    out = tmp_path / "stopped"
    assert stopped_and_resumed(out, extra, monkeypatch, 2) == 0
    capsys.readouterr()
    assert batch_rewards(out) == {0: -5.0, 5: -5.0}  # before the fix: batch 5 -1.0


# ----------------------------------------------------------------------------------------------- hung-call guard


@pytest.mark.extended
def test_a_resume_does_not_take_a_function_that_answered_for_one_that_hangs(tiny_dir, tmp_path, monkeypatch, capsys):
    """The function hangs on the four prompts of training batch 2 only (a sandbox on some problems): the
    uninterrupted run scores them -1 (timeouts, counted) and finishes; the run stopped after its checkpoint at
    step 2 and resumed scores that batch first, and must finish with the same rows."""
    hang = sync_batch_prompts(2)
    reward = tmp_path / "sandbox.py"
    reward.write_text(
        "import time\n"
        f"HANG = {set(hang)!r}\n"
        "def run(prompt, completion, answer):\n"
        "    if prompt in HANG:\n"
        "        time.sleep(60)\n"
        "    return 1.0 if completion.rsplit('</think>', 1)[-1].strip() == answer else -1.0\n")
    extra = ["--set", "pipeline=sync", "--reward", f"{reward}:run", "--set", "task.reward_timeout=0.5",
             "--set", "task.reward_workers=4"]
    assert main(small_args(tmp_path / "ref", *extra)) == 0
    _, ref_rows, _ = read_runlog(tmp_path / "ref" / "runlog.jsonl")
    assert max(r.get("reward_timeouts", 0) for r in ref_rows) > 0  # the batch's calls did time out

    out = tmp_path / "stopped"
    rc = stopped_and_resumed(out, extra, monkeypatch, 2)
    err = capsys.readouterr().err
    assert rc == 0, err  # today: exit 2, "... has answered no call in time: it hangs"
    assert comparable(out) == comparable(tmp_path / "ref")


# ----------------------------------------------------------------------------------------------- edited config.yaml


def test_a_resume_on_an_edited_config_yaml_is_refused_or_said(tiny_dir, tmp_path, capsys):
    out = tmp_path / "run"
    assert main(small_args(out, "--set", "pipeline=sync", "--steps", "2")) == 0
    config = out / "config.yaml"
    text = config.read_text()
    assert "\n    name: cispo\n" in text and "\n  seed: 3\n" in text
    config.write_text(text.replace("\n    name: cispo\n", "\n    name: gspo\n").replace("\n  seed: 3\n", "\n  seed: 5\n"))
    capsys.readouterr()
    rc = main(["train", "--output", str(out), "--resume", "--steps", "3", "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    header, _, _ = read_runlog(out / "runlog.jsonl")
    assert header["config"]["recipe"]["loss"]["name"] == "cispo"  # what the log says the run is
    # Refused, or at least said: the steps from here train another recipe than the log and its checkpoint's.
    assert rc != 0 or ("loss.name" in err and "seed" in err), err


# ----------------------------------------------------------------------------------------------- --recipe on resume


def test_resume_naming_the_runs_own_recipe_is_not_a_conflict(tiny_dir, tmp_path, capsys):
    """resume_conflicts' docstring: '--config / --recipe / --profile: every field is in play, the single-field
    flags not repeated keep the saved values (so only what the command says can conflict)'; README: only a flag
    whose value differs from the saved config.yaml is refused."""
    out = tmp_path / "run"
    assert main(small_args(out, "--set", "pipeline=sync", "--steps", "1")) == 0
    capsys.readouterr()
    try:
        rc = main(["train", "--output", str(out), "--resume", "--recipe", "scalerl", "--no-progress", "--no-report"])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert "eval.problems" not in err and "prompts_per_step" not in err, err
    assert rc == 0, err


# ----------------------------------------------------------------------------------------------- --nproc on resume


def _cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "scalerl.cli", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=timeout)


@pytest.mark.extended
def test_a_resume_under_another_nproc_is_refused_or_said(tiny_dir, tmp_path):
    """Brief (d): a resume with another config than the checkpoint's is refused or said in one line. Here the number of
    ranks changes which seeds sample (scalerl.train.shard_generation: 'reproducible for a given number of ranks, not
    across numbers of ranks'), and launch.ranks_cores_note tells such a run 'a resume must give the same' --nproc."""
    out = tmp_path / "run"
    shards = ["--set", "pipeline=sync", "--set", "run.generate_on_shards=true", "--set", "batch.prompts_per_step=2",
              "--set", "eval.problems=4", "--set", "forecast.enabled=false", "--eval-every", "1"]
    first = _cli(*small_args(out, *shards, "--steps", "1", "--nproc", "2"))
    assert first.returncode == 0, first.stderr
    resumed = _cli("train", "--output", str(out), "--resume", "--steps", "2", "--nproc", "3", "--no-progress",
                   "--no-report")
    said = any(words in resumed.stderr for words in ("need not repeat", "not reproducible"))
    assert resumed.returncode != 0 or said, resumed.stderr


# --- review ee: regressions of the above ---


def _rc(argv) -> int:
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.mark.slow
@pytest.mark.parametrize("profile", ["auto", "cpu-tiny"])
def test_resume_naming_the_runs_own_profile_is_not_a_conflict(tiny_dir, tmp_path, capsys, profile):
    out = tmp_path / "run"
    assert main(small_args(out, "--set", "pipeline=sync", "--steps", "1")) == 0
    capsys.readouterr()
    rc = _rc(["train", "--output", str(out), "--resume", "--profile", profile, "--steps", "2", "--no-progress",
              "--no-report"])
    err = capsys.readouterr().err
    assert "eval.problems" not in err and "prompts_per_step" not in err, err
    assert rc == 0, err


# ------------------------------------------------------------------------------------------ edited config.yaml


@pytest.fixture
def scaled_loss(monkeypatch):
    """A user's loss (README: it reads its parameters from recipe.loss.extra): CISPO times extra's ``scale``
    (1 when not given)."""
    from scalerl.rl.losses import POLICY_LOSSES, LossOutput

    cispo = POLICY_LOSSES.get("cispo")

    def scaled(inputs, cfg):
        out = cispo(inputs, cfg)
        return LossOutput(out.per_token * float(cfg.extra.get("scale", 1.0)), out.metrics)

    monkeypatch.setitem(POLICY_LOSSES._items, "ee-scaled", scaled)
    return "ee-scaled"


@pytest.mark.slow
@pytest.mark.parametrize("before, after", [("{}", "{scale: 100.0}"), ("{scale: 1.0}", "{}")])
def test_an_edit_of_the_losss_extra_parameters_in_config_yaml_is_refused(tiny_dir, tmp_path, capsys, scaled_loss,
                                                                         before, after):
    out = tmp_path / "run"
    assert main(small_args(out, "--set", "pipeline=sync", "--steps", "2", "--set", f"recipe.loss.name={scaled_loss}",
                           "--set", f"recipe.loss.extra={before}")) == 0
    config = out / "config.yaml"
    text = config.read_text()
    assert f"\n    extra: {before}\n" in text
    config.write_text(text.replace(f"\n    extra: {before}\n", f"\n    extra: {after}\n"))
    capsys.readouterr()
    rc = _rc(["train", "--output", str(out), "--resume", "--steps", "3", "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    # The steps from here train with another loss than the checkpoint's and the log header's: refused, by name,
    # as an edit of a scalar field is (tests/train/test_resume_state.py).
    assert rc != 0 and "recipe.loss.extra" in err, err


# ------------------------------------------------------------------------------------------ reward state on Ray


@pytest.mark.slow
@pytest.mark.extended
@pytest.mark.ray_cluster
def test_a_ray_run_resumes_on_a_cluster_at_another_address(tiny_dir, tmp_path, capsys, monkeypatch):
    """The address says where the generator actors run, not what they compute. A run started with
    --set backend.ray_address=ADDR whose cluster has moved: editing config.yaml's address was the way on (a
    --set is refused by the resume); since the checkpoint keeps the config it is refused as 'another run'.
    Here ADDR is Ray's own 'local' and the edit null (a local cluster either way)."""
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    out = tmp_path / "run"
    assert main(small_args(out, "--set", "pipeline=sync", "--backend", "ray", "--set", "backend.ray_address=local",
                           "--steps", "1", "--set", "forecast.enabled=false")) == 0
    config = out / "config.yaml"
    text = config.read_text()
    assert "\n  ray_address: local\n" in text
    config.write_text(text.replace("\n  ray_address: local\n", "\n  ray_address: null\n"))
    capsys.readouterr()
    rc = _rc(["train", "--output", str(out), "--resume", "--steps", "2", "--no-progress", "--no-report"])
    err = capsys.readouterr().err
    assert rc == 0, err
