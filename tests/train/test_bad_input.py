"""Bad input during training: a clear error, or counted and skipped -- never a silent wrong run."""

import json
import math
import re

import pytest
import torch

from scalerl.cli import main
from scalerl.rl.losses import POLICY_LOSSES, LossOutput, register_policy_loss
from scalerl.runlog import read_runlog

from .conftest import small_args

pytestmark = pytest.mark.slow


def _evals(out):
    return [r for r in read_runlog(out / "runlog.jsonl")[1] if r["type"] == "eval"]


@pytest.mark.parametrize("pipeline", [("--set", "pipeline=sync", "--set", "k=1"),
                                      ("--set", "task.reward_workers=2")], ids=["sync", "pipeline-2-workers"])
def test_reward_function_that_raises_or_hangs_is_counted(tiny_dir, tmp_path, capsys, pipeline):
    module = tmp_path / "my_reward.py"
    module.write_text(
        "import time\n"
        "def reward(prompt, completion, answer):\n"
        "    if completion.endswith('1'):\n"
        "        raise ValueError('boom')\n"
        "    if completion.endswith('7'):\n"
        "        time.sleep(30)\n"
        "    return 1.0 if completion.split('</think>')[-1].strip() == answer else -1.0\n"
    )
    out = tmp_path / "run"
    code = main(small_args(out, "--reward", f"{module}:reward", *pipeline,
                           "--set", "task.reward_timeout=0.5", "--steps", "2"))
    assert code == 0, capsys.readouterr().err
    last = _evals(out)[-1]
    assert last["reward_errors"] > 0  # counted, shown in the run log, and the run went on
    assert "reward_timeouts" in last


def test_math_dataset_row_missing_a_field_names_file_and_row(tmp_path, capsys):
    data = tmp_path / "train.jsonl"
    data.write_text(json.dumps({"prompt": "1+1?", "answer": "2"}) + "\n" + json.dumps({"prompt": "2+2?"}) + "\n")
    code = main(["train", "--model", "tiny", "--task", "math", "--data", str(data), "--output", str(tmp_path / "r"),
                 "--no-progress"])
    err = capsys.readouterr().err
    assert code == 2
    assert "train.jsonl" in err and "2" in err and "answer" in err


@pytest.fixture
def flaky_loss():
    """A loss that is NaN on chosen calls (registered for the test, removed after)."""
    calls = {"n": 0, "nan_on": set()}

    @register_policy_loss("test-flaky", replace=True)
    def flaky(inputs, cfg):
        calls["n"] += 1
        per_token = -(inputs.advantages[:, None] * inputs.logprobs) * inputs.mask
        if calls["n"] in calls["nan_on"]:
            per_token = per_token * torch.tensor(math.nan)
        return LossOutput(per_token, {})

    yield calls
    POLICY_LOSSES._items.pop("test-flaky", None)


def test_a_nan_step_is_skipped_counted_and_the_run_goes_on(tiny_dir, tmp_path, capsys, flaky_loss):
    flaky_loss["nan_on"] = {2}
    out = tmp_path / "run"
    code = main(small_args(out, "--set", "loss.name=test-flaky", "--set", "pipeline=sync", "--set", "k=1",
                           "--set", "run.micro_batch_size=1024"))
    assert code == 0, capsys.readouterr().err
    rows = read_runlog(out / "runlog.jsonl")[1]
    skipped = [r for r in rows if r["type"] == "train" and r["skipped"]]
    assert len(skipped) == 1 and "non-finite" in skipped[0]["skip_reason"]
    assert _evals(out)[-1]["skipped_steps"] == 1


def test_repeated_nans_stop_the_run_with_a_message(tiny_dir, tmp_path, capsys, flaky_loss):
    flaky_loss["nan_on"] = set(range(1, 100))
    out = tmp_path / "run"
    code = main(small_args(out, "--set", "loss.name=test-flaky", "--set", "pipeline=sync", "--set", "k=1",
                           "--set", "run.max_nan_steps=2", "--set", "run.micro_batch_size=1024"))
    err = capsys.readouterr().err
    assert code == 2
    assert "consecutive steps" in err and "--resume" in err


def test_a_run_whose_every_step_was_skipped_does_not_exit_0(tiny_dir, tmp_path, capsys, flaky_loss):
    # Fewer steps than run.max_nan_steps: nothing stopped it, and it "finished" untrained.
    flaky_loss["nan_on"] = set(range(1, 100))
    out = tmp_path / "run"
    code = main(small_args(out, "--set", "loss.name=test-flaky", "--set", "pipeline=sync", "--set", "k=1",
                           "--set", "run.micro_batch_size=1024", "--steps", "2", "--no-report"))
    err = capsys.readouterr().err
    assert code == 2, err
    assert "all 2 steps were skipped for a non-finite loss" in err and "is the starting model, untrained" in err, err
    assert (out / "final").is_dir()  # the run directory is complete: nothing lost


@pytest.mark.parametrize("pipeline", [["--set", "pipeline=ppo-off-policy-k", "--set", "k=2"],
                                      ["--set", "pipeline=pipeline-rl-k", "--set", "backend.updates=seeded"],
                                      ["--set", "pipeline=pipeline-rl-k", "--set", "backend.updates=timing"]],
                         ids=["own-model", "pipeline-seeded", "pipeline-timing"])
def test_dynamic_sampling_that_keeps_no_group_skips_the_step(tiny_dir, tmp_path, capsys, pipeline):
    # Every answer scores -1: every group has zero variance, dynamic sampling runs out of rounds with
    # nothing kept. The step is skipped and counted, its train row says why, and the run goes on; at
    # its end a note says that no step trained.
    module = tmp_path / "never.py"
    module.write_text("def reward(prompt, completion, answer):\n    return -1.0\n")
    out = tmp_path / "run"
    code = main(small_args(out, "--recipe", "qwen-dapo", "--reward", f"{module}:reward", "--steps", "2",
                           "--set", "filtering.max_generation_rounds=2", *pipeline))
    err = capsys.readouterr().err
    assert code == 0, err
    assert "note: all 2 steps were skipped" in err and "is the starting model, untrained" in err
    rows = read_runlog(out / "runlog.jsonl")[1]
    trains = [r for r in rows if r["type"] == "train"]
    assert [r["step"] for r in trains] == [1, 2]
    assert all(r["skipped"] and r["skip_reason"].startswith("empty batch") and r["dynamic_rounds"] == 2
               for r in trains)
    assert _evals(out)[-1]["skipped_steps"] == 2


def test_an_answer_budget_the_phrase_would_eat_is_refused_before_training(tiny_dir, tmp_path, capsys):
    # cpu-tiny: max_new_tokens 48, answer budget 8. A thinking budget up to 39 leaves 9 tokens after
    # it: enough for the answer alone (so the config alone passes), not for the phrase and the answer.
    out = tmp_path / "run"
    code = main(small_args(out, "--set", "length.think_budget=[30, 39]"))
    err = capsys.readouterr().err.strip()
    assert code == 2
    found = re.search(r"think_budget hi \(39\) \+ the interruption phrase \((\d+) tokens with this tokenizer\) \+ "
                      r"answer_budget \(8\) = (\d+) tokens, more than max_new_tokens \(48\)", err)
    assert found and int(found[2]) == 39 + int(found[1]) + 8
    assert f"set length.max_new_tokens={found[2]}" in err and len(err.splitlines()) == 1
    assert not (out / "runlog.jsonl").exists()


def test_an_evaluation_set_smaller_than_eval_problems_is_said(tmp_path, capsys):
    """A user's evaluation file of 3 problems under ``eval.problems=16`` (200 by default) was
    evaluated whole without a word: the user read its pass rate as a 200-problem one."""
    data, val = tmp_path / "train.jsonl", tmp_path / "val.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(40)))
    val.write_text("".join(json.dumps({"prompt": f"{i}+2=", "answer": str(i + 2)}) + "\n" for i in range(3)))
    code = main(small_args(tmp_path / "r", "--task", "math", "--data", str(data), "--steps", "1",
                           "--set", f"task.settings={{eval_data: {{val: {val}}}}}"))
    err = capsys.readouterr().err
    assert code == 0, err
    assert ("note: eval.problems is 16 but the evaluation set(s) hold fewer problems (val: 3): all of them are "
            "evaluated") in err


def test_a_refused_start_leaves_no_directory_it_made(tiny_dir, tmp_path, capsys):
    """Review at: an evaluation set the task does not have was refused, and an empty --output directory was
    left where there was none (the README: the directory is left as it was). One that existed stays."""
    for made in (False, True):
        out = tmp_path / f"run-{made}"
        if made:
            out.mkdir()
        code = main(small_args(out, "--set", "eval.sets=[nosuch]"))
        err = capsys.readouterr().err
        assert code == 2 and "has no set 'nosuch'" in err, err
        assert out.is_dir() == made and (not made or not any(out.iterdir()))


def test_a_run_stopped_before_its_first_checkpoint_leaves_no_directory_it_made(tiny_dir, tmp_path, monkeypatch, capsys):
    """Review au: a stop after the set-up, before the step-0 checkpoint (`kill PID` during the first evaluation),
    was discarded ("nothing kept in ...") and left the empty directory it made: only a refused set-up removed it."""
    import scalerl.train.trainer as trainer_module

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt  # (the stop lands before the first checkpoint is written)

    monkeypatch.setattr(trainer_module, "save_checkpoint", stopped)
    out = tmp_path / "new"
    code = main(small_args(out))
    err = capsys.readouterr().err
    assert code != 0 and "before its first checkpoint (nothing kept" in err, err
    assert not out.exists(), sorted(p.name for p in out.iterdir())
