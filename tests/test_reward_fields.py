"""The reward function's fields (``task.reward``, ``reward_timeout``, ``reward_workers``,
``reward_load_timeout``) are the task's own, not task settings: given as settings they are refused in one
line naming how train, and eval, take them (a TypeError traceback before: "got multiple values for keyword
argument"); ``scalerl eval`` takes the two time limits with ``--set``, checked as train checks them."""

import argparse

import pytest

from scalerl.cli import main
from scalerl.errors import InputError


def _refused(argv):
    """The command stopped with an error (a return code or SystemExit, as the CLI does either)."""
    try:
        return main(argv) != 0
    except SystemExit as exc:
        return exc.code != 0


def _eval_refusal(argv) -> str:
    from scalerl.commands.evaluate import _chosen_settings, _eval_task, add_arguments

    p = argparse.ArgumentParser()
    add_arguments(p)
    args = p.parse_args(argv)
    pick, base, _ = _chosen_settings(args)
    with pytest.raises(InputError) as exc:
        _eval_task(args, pick, base)
    return str(exc.value)


def test_reward_load_timeout_in_task_settings_is_an_input_error_not_a_traceback(capsys):
    assert _refused(["eval", "--task", "arithmetic", "--set", "task.settings={reward_load_timeout: 120}",
                     "--problems", "1", "--k", "1", "--no-progress"])
    err = capsys.readouterr().err
    assert ("task.settings 'reward_load_timeout' is not a task setting but the reward function's "
            "task.reward_load_timeout: eval takes it as --set task.reward_load_timeout=SECONDS") in err


def test_train_refuses_a_reward_field_as_a_task_setting(tmp_path, capsys):
    assert _refused(["train", "--model", "tiny", "--steps", "1", "--output", str(tmp_path / "run"), "--no-progress",
                     "--set", "task.settings={reward_timeout: 30}"])
    assert "task.settings 'reward_timeout' is not a task setting but task.reward_timeout itself" in capsys.readouterr().err


def test_eval_takes_the_load_timeout_its_refusal_advises(capsys):
    try:
        rc = main(["eval", "--task", "arithmetic", "--set", "task.reward_load_timeout=120",
                   "--problems", "1", "--k", "1", "--no-progress"])
    except SystemExit as exc:
        rc = exc.code
    err = capsys.readouterr().err
    assert "eval takes task.settings={KEY: VALUE, ...} only" not in err
    assert rc == 0, err


def test_eval_reward_limits_are_checked_as_trains(capsys):
    assert _refused(["eval", "--task", "arithmetic", "--set", "task.reward_load_timeout=0", "--problems", "1", "--k",
                     "1", "--no-progress"])
    assert "task.reward_load_timeout must be seconds in (0, 86400]" in capsys.readouterr().err


def test_eval_s_refusal_of_reward_workers_as_a_setting_names_a_flag_eval_takes():
    message = _eval_refusal(["--task", "arithmetic", "--set", "task.settings={reward_workers: 2}",
                             "--max-new-tokens", "8"])
    assert "eval takes it as --reward-workers N" in message, message
    message = _eval_refusal(["--task", "arithmetic", "--set", "task.settings={reward: x.py:f}", "--max-new-tokens", "8"])
    assert "eval takes it as --reward MODULE:FUNCTION" in message, message


def test_a_reward_limit_without_a_reward_function_is_said_to_have_no_effect(caplog):
    """task.reward_timeout etc. limit a --reward function's calls only; set without one they were taken
    without a word (a user who meant math-verify's calls believed they had that limit)."""
    from scalerl.tasks.registry import get_task

    with caplog.at_level("WARNING", logger="scalerl.tasks.registry"):
        get_task("arithmetic", reward_timeout=0.5, reward_workers=2)
    assert ("task.reward_timeout=0.5, task.reward_workers=2: no effect without a reward function of your own "
            "(task.reward / --reward)") in caplog.text
    assert "verify_timeout" in caplog.text
    caplog.clear()
    with caplog.at_level("WARNING", logger="scalerl.tasks.registry"):
        get_task("arithmetic")  # the defaults: nothing to say
    assert caplog.text == ""


def test_a_generator_process_does_not_say_the_trainers_reward_warning_again(caplog, char_tokenizer):
    """task.reward_workers=4 with no reward function: the trainer's get_task says once that it does nothing; each
    generator process (and Ray actor) built its task with the same fields and said it again."""
    from scalerl.models.tiny import TinyArchitecture, build_tiny_model
    from scalerl.pipeline.work import WorkerSpec, build_worker
    from scalerl.rl.recipe import RecipeConfig

    model = build_tiny_model(char_tokenizer, TinyArchitecture(hidden_size=16, intermediate_size=32, num_hidden_layers=1,
                                                              num_attention_heads=2, num_key_value_heads=2), seed=0)
    spec = WorkerSpec(model_config=model.config, tokenizer=char_tokenizer, dtype="float32", fp32_lm_head=False,
                      recipe=RecipeConfig(), task_name="arithmetic", task_settings={}, task_reward=None,
                      task_reward_timeout=10.0, task_reward_workers=4, seed=0)
    with caplog.at_level("WARNING", logger="scalerl.tasks.registry"):
        worker = build_worker(spec, {}, -1, 0)  # (no weights: as a Ray actor starts)
    assert worker.ctx.task.name == "arithmetic"
    assert "no effect without a reward function" not in caplog.text
