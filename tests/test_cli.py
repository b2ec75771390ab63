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
