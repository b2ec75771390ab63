import subprocess
import sys

import pytest

from scalerl.cli import COMMANDS, main


def test_help_lists_every_command(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in COMMANDS:
        assert name in out


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
