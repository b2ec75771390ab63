import subprocess
import sys

import pytest

from scalerl.cli import COMMANDS, main


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


def test_train_help_names_the_defaults_of_steps_evaluation_and_seed(capsys):
    # They said none: a user could not tell a run without --steps trains 100 steps.
    from scalerl.train.config import TrainConfig

    with pytest.raises(SystemExit):
        main(["train", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    cfg = TrainConfig()
    assert f"optimizer steps (default: {cfg.run.steps}, or --config's)" in help_text
    assert f"evaluate every N steps (default: {cfg.eval.every}, or --config's)" in help_text
    assert f"random seed (default: {cfg.run.seed}, or --config's)" in help_text
    with pytest.raises(SystemExit):
        main(["demo", "--help"])
    assert "optimizer steps (default: 300, or --config's)" in " ".join(capsys.readouterr().out.split())


def test_unknown_command_exits_2(capsys):
    assert main(["nope"]) == 2
    assert "known commands" in capsys.readouterr().err


@pytest.mark.parametrize("module", ["scalerl.cli", "scalerl"])
def test_console_script_runs(module):
    proc = subprocess.run([sys.executable, "-m", module, "--version"], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert "scalerl" in proc.stdout


@pytest.mark.parametrize("stop, message, status", [
    (KeyboardInterrupt(), "interrupted", 130),  # Ctrl-C in a command that has nothing to add
    (KeyboardInterrupt("stopped at step 3; resume with --resume"), "stopped at step 3; resume with --resume", 130),
])
def test_an_interrupted_command_says_so_on_one_line(monkeypatch, capsys, stop, message, status):
    """A bare Ctrl-C printed 'scalerl recipes: ' and nothing after it: an exception object is
    truthy, so ``exc or 'interrupted'`` never fell back."""
    import scalerl.commands.recipes as recipes

    def interrupted(args):
        raise stop

    monkeypatch.setattr(recipes, "run", interrupted)
    assert main(["recipes"]) == status
    err = capsys.readouterr().err.strip()
    assert err == f"scalerl recipes: {message}"


def test_the_threads_help_says_what_the_default_recipe_gives_the_trainer(capsys):
    """--threads said "default: torch's choice"; the default recipe gives the trainer the cores the generators
    leave (1 on 2 cores: pipeline.registry.trainer_threads) -- review dc."""
    from scalerl.cli import main
    from scalerl.pipeline.config import BackendConfig
    from scalerl.pipeline.registry import trainer_threads

    assert trainer_threads("pipeline-rl-k", BackendConfig(), cores=2) == 1
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    threads_help = text[text.rindex("--threads N"):text.rindex("--nproc N")]
    assert "the cores the generators leave" in threads_help, threads_help
