"""The shell commands README.md and docs/*.md show, checked from the documents' own text.

Read from every ```bash / ```sh / ```console block and every indented code block (torchrun's
``-m scalerl.cli COMMAND ...`` as ``scalerl COMMAND ...``), with the conventions of
tests/test_readme_user_model_commands.py (a trailing ``# ...`` is a comment; ``# -> exit N: "a ...
b"`` / ``# -> "a ... b"``: that status and that output, ``...`` eliding text):

* every ``scalerl COMMAND ...`` line parses with that command's options (values, choices and
  counts, not only the flags' names: tests/test_docs_references.py has those), placeholders
  (``...``) aside;
* every ``scalerl train`` / ``scalerl demo`` line resolves to a training config, as
  ``--print-config`` does (presets, ``--set`` values, ``--config`` files; a model directory the
  reader is to bring, ``./my-model``, is replaced by ``tiny``);
* the commands that take seconds on a CPU run as written, in the order a document shows them, from
  a scratch directory holding the checkout's ``examples/`` and ``configs/``: the forecaster's
  ``fit`` / ``backtest`` / ``compare`` / ``calibrate`` on the shipped data, ``recipes``,
  ``study --list`` / ``--dry-run``, ``train --print-config`` (``> FILE`` writes FILE); and
  ``make forecast``'s and ``make demo``'s commands are the Makefile's. docs/forecasting.md's
  ``calibrate runs/*.csv`` is given six runs of the shipped corpus as ``runs/*.csv`` (``step``,
  ``val/acc``) and a seventh as ``next-run.csv``. The rest (training, a reader's own logs, GPUs,
  network) is left to the tests of each command.
"""

from __future__ import annotations

import argparse
import csv
import glob
import importlib
import io
import re
import shlex
from contextlib import redirect_stdout
from pathlib import Path

import pytest

from scalerl.cli import COMMANDS, main
from test_readme_user_model_commands import parse_commands

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]


def _blocks(text: str) -> list[str]:
    """The shell blocks: fenced ones, and indented ones that start with a command."""
    blocks = re.findall(r"```(?:bash|sh|console)\n(.*?)```", text, re.S)
    prose = re.sub(r"```.*?```", "", text, flags=re.S)
    for m in re.finditer(r"(?:^    (?:scalerl|torchrun) .*\n(?:^      .*\n)*)+", prose, re.M):
        blocks.append("\n".join(line[4:] for line in m[0].splitlines()))
    return blocks


def documented_commands() -> list[tuple[str, dict]]:
    """``(document name, command)`` for every ``scalerl`` command the documents show, in order."""
    out = []
    for doc in DOCS:
        for block in _blocks(doc.read_text()):
            for cmd in parse_commands(block):
                argv = cmd["argv"]
                if argv[0] == "torchrun" and "scalerl.cli" in argv:
                    argv = ["scalerl", *argv[argv.index("scalerl.cli") + 1:]]
                if argv[0] == "scalerl" and len(argv) > 1:
                    out.append((doc.name, {**cmd, "argv": argv}))
    return out


def _parser(name: str) -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=f"scalerl {name}", exit_on_error=False)
    importlib.import_module(COMMANDS[name][0]).add_arguments(p)
    return p


def _args(argv: list[str]) -> list[str]:
    """The command's arguments: a ``> FILE`` redirection left out."""
    return argv[2:argv.index(">")] if ">" in argv else argv[2:]


def test_the_documents_show_the_commands():
    cmds = documented_commands()
    assert len(cmds) > 80
    shown = {tuple(c["argv"][:2]) for _, c in cmds}
    assert {("scalerl", name) for name in ("train", "eval", "fit", "backtest", "compare", "calibrate",
                                            "recipes", "study", "report")} <= shown


def test_every_documented_command_parses():
    bad = []
    for doc, cmd in documented_commands():
        argv = cmd["argv"]
        if "..." in argv or argv[1] not in COMMANDS:
            continue
        try:
            _parser(argv[1]).parse_args(_args(argv))
        except (argparse.ArgumentError, SystemExit) as exc:
            bad.append(f"{doc}: {shlex.join(argv)}: {exc}")
    assert not bad, bad


def test_every_documented_training_command_resolves(tmp_path, monkeypatch, capsys):
    from scalerl.commands._train_args import config_from_args

    monkeypatch.chdir(tmp_path)
    assert main(["recipes", "show", "scalerl"]) == 0  # recipe.md: `scalerl recipes show scalerl > my-recipe.yaml`
    (tmp_path / "my-recipe.yaml").write_text(capsys.readouterr().out)
    bad, seen = [], 0
    for doc, cmd in documented_commands():
        argv = cmd["argv"]
        if argv[1] not in ("train", "demo") or "..." in argv or cmd["code"] or "--resume" in argv:
            continue
        if "--config" in argv and not (tmp_path / argv[argv.index("--config") + 1]).exists():
            continue  # README's my.yaml: the reader's own
        argv = [("tiny" if prev == "--model" and arg.startswith(("./", "runs/")) else arg)
                for prev, arg in zip(["", *argv], argv)]
        seen += 1
        try:
            args = _parser(argv[1]).parse_args(_args(argv))
            config_from_args(args, output=args.output, quiet=True)
        except Exception as exc:  # noqa: BLE001 -- the message is the finding
            bad.append(f"{doc}: {shlex.join(argv)}: {type(exc).__name__}: {exc}")
    assert seen > 25
    assert not bad, bad


#: What runs as written: (command, a test of its arguments).
CHEAP = {
    "fit": lambda a: True, "backtest": lambda a: True, "compare": lambda a: True, "calibrate": lambda a: True,
    "recipes": lambda a: True,
    "study": lambda a: "--list" in a or "--dry-run" in a,
    "train": lambda a: "--print-config" in a,
}


def _runnable(cmd: dict, cwd: Path) -> list[str] | None:
    """The command's arguments as the shell passes them (its log paths' globs expanded in ``cwd``),
    or None where it is not to run here."""
    argv = cmd["argv"]
    name = argv[1]
    if "..." in argv or name not in CHEAP or not CHEAP[name](argv):
        return None
    args = _args(argv)
    if name in ("fit", "backtest", "compare", "calibrate"):
        parsed = _parser(name).parse_args(args)
        paths = getattr(parsed, "paths", None) or [parsed.path]
        expanded = {p: sorted(glob.glob(p, root_dir=cwd)) if "*" in p else [p] for p in paths}
        if not all(all((cwd / p).exists() for p in found) and found for found in expanded.values()):
            return None  # a reader's own log
        args = [x for arg in args for x in (expanded[arg] if arg in expanded else [arg])]
    if "--config" in args and not (cwd / args[args.index("--config") + 1]).exists():
        return None
    return args


def _own_runs(cwd: Path) -> None:
    """forecasting.md's `calibrate runs/*.csv --x step --y val/acc` and `fit next-run.csv`: seven
    TinyZero runs of the shipped corpus."""
    runs: dict[str, list] = {}
    with open(ROOT / "examples/data/rl_curve_corpus.csv") as f:
        for row in csv.DictReader(f):
            if row["run"].startswith("cogbeh_qwen"):
                runs.setdefault(row["run"], []).append(row)
    names = sorted(runs)[:7]
    (cwd / "runs").mkdir()
    for i, name in enumerate(names):
        path = cwd / ("next-run.csv" if i == 6 else f"runs/{name}.csv")
        path.write_text("step,val/acc\n" + "".join(f"{r['x']},{r['val_score']}\n" for r in runs[name]))


@pytest.mark.slow
@pytest.mark.parametrize("doc", [d.name for d in DOCS])
def test_the_cheap_documented_commands_run_as_written(doc, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    for sub in ("examples", "configs"):
        (tmp_path / sub).symlink_to(ROOT / sub)
    _own_runs(tmp_path)
    ran = []
    for name, cmd in documented_commands():
        if name != doc:
            continue
        args = _runnable(cmd, tmp_path)
        if args is None:
            continue
        argv = cmd["argv"]
        out = io.StringIO()
        with redirect_stdout(out):
            code = main([argv[1], *args])
        text = out.getvalue() + capsys.readouterr().err
        if ">" in argv:
            (tmp_path / argv[argv.index(">") + 1]).write_text(out.getvalue())
        assert code == cmd["code"], f"{doc}: {shlex.join(argv)} -> exit {code}:\n{text}"
        flat = " ".join(text.split())
        for fragment in cmd["fragments"]:
            assert " ".join(fragment.split()) in flat, f"{doc}: {shlex.join(argv)}: {fragment!r} not in:\n{text}"
        ran.append((shlex.join(argv), text))
    if doc in ("README.md", "forecasting.md", "recipe.md", "study.md"):
        assert ran, f"{doc}: no command ran: the parser no longer reads the document"
    if doc in SHOWN:
        _check_shown_output(doc, SHOWN[doc], dict(ran))


#: Sections that show what their first command prints, in a plain ``` block.
SHOWN = {"README.md": "## Forecast a run", "forecasting.md": "## Backtests"}


def _check_shown_output(doc: str, heading: str, ran: dict[str, str]) -> None:
    """Every line of the section's first plain ``` block is in a line its first command printed
    (``...`` elides text; so does a time in ms, which is the machine's)."""
    text = (ROOT / "docs" / doc if doc != "README.md" else ROOT / doc).read_text()
    start = text.index(heading)
    section = text[start:text.find("\n## ", start + len(heading))]
    command = shlex.join(parse_commands(re.search(r"```bash\n(.*?)```", section, re.S)[1])[0]["argv"])
    shown = [m[2] for m in re.finditer(r"^```(\w*)\n(.*?)^```", section, re.S | re.M) if not m[1]][0]
    assert command in ran, f"{doc}, {heading}: {command} did not run"

    def norm(line: str) -> str:
        return " ".join(re.sub(r"\d+(?:\.\d+)? ms\b", "... ms", line).split())

    printed = [norm(line) for line in ran[command].splitlines()]
    for line in shown.splitlines():
        fragments = [f.strip() for f in norm(line).split("...") if f.strip()]
        assert any(all(f in out for f in fragments) for out in printed), \
            f"{doc}, {heading} shows {line!r}; {command} printed:\n{ran[command]}"


def test_the_make_targets_the_readme_names():
    """`make demo` = `scalerl demo --output runs/demo --overwrite` (README), and `make forecast`
    forecasts the shipped real run log: the Makefile's recipes."""
    make = re.sub(r"\\\n\s*", " ", (ROOT / "Makefile").read_text())
    recipes = {m[1]: m[2].strip().replace("$(VENV)/bin/scalerl", "scalerl")
               for m in re.finditer(r"^([\w-]+):.*\n\t(.*)", make, re.M)}
    readme = " ".join((ROOT / "README.md").read_text().split())
    assert f"`make demo` = `{recipes['demo']}`" in readme
    assert "`make forecast` forecasts a real RL run log shipped in `examples/`" in readme
    assert recipes["forecast"].startswith("scalerl fit examples/data/")


@pytest.mark.slow
def test_make_forecast_runs(tmp_path, monkeypatch, capsys):
    make = re.sub(r"\\\n\s*", " ", (ROOT / "Makefile").read_text())
    argv = shlex.split(re.search(r"^forecast:.*\n\t(.*)", make, re.M)[1])
    assert argv[0] == "$(VENV)/bin/scalerl"
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    assert main(argv[1:]) == 0
    out = capsys.readouterr().out
    assert "Verdict:" in out and (tmp_path / "runs" / "forecast.png").stat().st_size > 0
