"""The README's "Bring your own model" commands and docs/models.md's, run as written on the model
examples/user_model.py builds locally. The commands are parsed out of the documents, so this test
breaks when the documents drift from what the code does.

Conventions read from the documents: a trailing ``# ...`` is a comment; a command followed by a
comment ``# -> exit N: "a ... b"`` or ``# scalerl CMD: error: ...`` must fail with that status
(2 for the latter) and that message (``...`` elides text); ``# -> "a ... b"``: exits 0 and prints
that. Every other command must exit 0 (tests/test_docs_commands.py reads the other documents'
commands with the same conventions).
Changes made to run here: ``python`` is this interpreter, ``pip install`` lines are skipped
(the packages are installed), and ``scalerl train`` gets ``--threads 1`` (a shared machine) and
is cut to ``--steps 1`` with evaluations of 8 problems (the random model writes every token of
its 256-token budget: the documented 4 steps and 32 problems took 215 s here under load, for no
more coverage of the commands' flags, paths and errors).
"""

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from scalerl.cli import main

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[1]


def _bash_blocks(text: str) -> list[str]:
    return re.findall(r"```bash\n(.*?)```", text, re.S)


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end != -1 else None]


def parse_commands(block: str) -> list[dict]:
    """``[{"argv": [...], "code": 0, "fragments": []}]`` from one ```bash block."""
    commands: list[dict] = []
    lines = block.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("#"):  # a comment block: the expected outcome of the command before it
            comment = [line.lstrip()[1:].strip()]
            while i + 1 < len(lines) and lines[i + 1].lstrip().startswith("#"):
                i += 1
                comment.append(lines[i].lstrip()[1:].strip())
            text = " ".join(comment)
            exit_form = re.match(r'-> (?:exit (\d+): )?"(.*)"$', text)
            if exit_form:
                commands[-1]["code"] = int(exit_form[1] or 0)
                commands[-1]["fragments"] = [f.strip() for f in exit_form[2].split("...") if f.strip()]
            elif re.match(r"scalerl \w+: error: ", text):
                commands[-1]["code"] = 2
                commands[-1]["fragments"] = [text]
            i += 1
            continue
        joined = line
        while joined.rstrip().endswith("\\"):
            i += 1
            joined = joined.rstrip()[:-1] + " " + lines[i].strip()
        i += 1
        argv = shlex.split(joined, comments=True)
        if argv:
            commands.append({"argv": argv, "code": 0, "fragments": []})
    return commands


def documented_commands() -> list[dict]:
    readme = _section((ROOT / "README.md").read_text(), "## Bring your own model")
    models = (ROOT / "docs" / "models.md").read_text()
    seen: dict[tuple, dict] = {}
    for block in [*_bash_blocks(readme), *_bash_blocks(models)]:
        for cmd in parse_commands(block):
            key = tuple(cmd["argv"])
            if cmd["argv"][:2] == ["pip", "install"]:
                continue
            if key in seen:  # the same command in both documents: run once, check both expectations
                seen[key]["fragments"] += cmd["fragments"]
                assert seen[key]["code"] == cmd["code"], f"the documents disagree on {shlex.join(cmd['argv'])}"
            else:
                seen[key] = cmd
    return list(seen.values())


def test_the_parser_reads_the_documents():
    cmds = documented_commands()
    programs = {tuple(c["argv"][:2]) for c in cmds}
    assert ("python", "examples/user_model.py") in programs and ("scalerl", "train") in programs
    assert ("scalerl", "eval") in programs
    failing = [c for c in cmds if c["code"] != 0]
    assert failing and all(c["code"] == 2 and c["fragments"] for c in failing)


# `extended` (make test-all, ~65 s): CI time. The default run keeps the parser's test above, and
# the commands' own behaviour is tested where each is built (tests/train/test_preflight.py, ...).
@pytest.mark.extended
def test_the_documented_user_model_commands_run_as_written(tmp_path, monkeypatch, capsys, scalerl_cache):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for cmd in documented_commands():
        argv = cmd["argv"]
        if argv[0] == "python":
            proc = subprocess.run([sys.executable, *argv[1:]], capture_output=True, text=True, timeout=600)
            code, err = proc.returncode, proc.stdout + proc.stderr
        else:
            assert argv[0] == "scalerl", argv
            extra = ["--threads", "1", "--no-progress", "--steps", "1", "--set", "eval.problems=8"] \
                if argv[1] == "train" else []
            code = main([*argv[1:], *extra])
            err = "".join(capsys.readouterr())  # (out, err)
        assert code == cmd["code"], f"{shlex.join(argv)} -> exit {code}:\n{err}"
        flat = " ".join(err.split())
        for fragment in cmd["fragments"]:
            assert " ".join(fragment.split()) in flat, f"{shlex.join(argv)}: {fragment!r} not in:\n{err}"
