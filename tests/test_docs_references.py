"""What README.md and docs/*.md name exists: every ``--flag`` written after ``scalerl COMMAND``
is an option of that command, every ``--set KEY=...`` a field of the training config, every
``--flag`` after ``python benchmarks/X.py`` (or scripts/, examples/) an option that script
defines, every relative link a file (and heading) of the repository, and every path under
benchmarks/, configs/, examples/, scripts/, src/ or tests/ a file or directory here.

Parsed out of the documents (fenced and indented code, inline code, prose), so a renamed flag
or config field, a moved file or a retitled heading fails here rather than for a reader.
"""

from __future__ import annotations

import argparse
import importlib
import re
from pathlib import Path

import pytest

from scalerl.cli import COMMANDS
from scalerl.config import resolve_key
from scalerl.errors import ConfigError
from scalerl.train.config import TrainConfig

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

#: Paths of other projects' repositories that the documents cite as theirs (not files of this one).
EXTERNAL_PATHS = {
    "examples/run_grpo.py",  # NeMo-RL's
    "examples/data_preprocess/gsm8k.py",  # verl's
}


def _text(doc: Path) -> str:
    """The document with backslash-continued lines joined."""
    return re.sub(r"\\\n\s*", " ", doc.read_text())


def _segments(text: str) -> list[str]:
    """Lines, and within a line its inline-code spans and the text between them, apart."""
    return [seg for line in text.splitlines() for seg in line.split("`")]


def _options(parser: argparse.ArgumentParser) -> set[str]:
    return {s for action in parser._actions for s in action.option_strings}


def _flags(rest: str) -> list[str]:
    rest = re.split(r"\s(?:scalerl|python|torchrun|bash)\s|\s--\s|[|#;]", rest)[0]
    return re.findall(r"(?<![\w-])(--[a-z][a-z0-9-]*)", rest)


def test_every_flag_named_after_a_scalerl_command_exists():
    options = {}
    for name, (module, _) in COMMANDS.items():
        parser = argparse.ArgumentParser(prog=f"scalerl {name}")
        importlib.import_module(module).add_arguments(parser)
        options[name] = _options(parser)
    unknown, seen = [], 0
    for doc in DOCS:
        for seg in _segments(_text(doc)):
            for m in re.finditer(r"\bscalerl(?:\.cli)?\s+(\w+)(.*)", seg):
                if m[1] not in options:
                    continue
                seen += 1
                unknown += [f"{doc.name}: scalerl {m[1]} {flag}" for flag in _flags(m[2]) if flag not in options[m[1]]]
    assert seen > 100  # the parser reads the documents
    assert not unknown, unknown


def test_every_set_key_is_a_config_field():
    keys = {key for doc in DOCS for key in re.findall(r"--set\s+['\"]?([\w.]+)\s*=", _text(doc))
            if not key.isupper()}  # (KEY=VALUE: a placeholder)
    assert len(keys) > 20
    bad = []
    for key in sorted(keys):
        try:
            resolve_key(TrainConfig, key)
        except ConfigError as exc:
            bad.append(f"{key}: {exc}")
    assert not bad, bad


def test_every_flag_named_after_a_script_is_in_the_script():
    unknown, seen = [], 0
    for doc in DOCS:
        text = re.sub(r"\s*\n\s*", " ", doc.read_text())
        for m in re.finditer(r"((?:benchmarks|scripts|examples)/[\w/-]+\.(?:py|sh))([^`|\n]*)", text):
            path = ROOT / m[1]
            if m[1] in EXTERNAL_PATHS or not path.is_file():
                continue  # (a missing file is the next test's)
            seen += 1
            source = path.read_text()
            unknown += [f"{doc.name}: {m[1]} {flag}" for flag in _flags(m[2]) if flag not in source]
    assert seen > 50
    assert not unknown, unknown


def _repository_paths(text: str) -> set[str]:
    # (a path with a brace list, `workload-{a,b}.yaml`, is left out: a shell pattern)
    return set(re.findall(r"(?<![\w./~<$-])((?:benchmarks|configs|examples|scripts|src|tests)/[\w./*-]*[\w*])(?![\w{-])",
                          text))


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_repository_path_exists(doc):
    missing = [p for p in sorted(_repository_paths(doc.read_text()) - EXTERNAL_PATHS)
               if not (any(ROOT.glob(p)) if "*" in p else (ROOT / p).exists())]
    assert not missing, missing


def _anchor(heading: str) -> str:
    """GitHub's id of a heading: lower case, punctuation but hyphens dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(doc: Path) -> set[str]:
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    return {_anchor(m[1]) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


@pytest.mark.parametrize("doc", DOCS, ids=lambda d: d.name)
def test_every_relative_link_resolves(doc):
    text = re.sub(r"```.*?```", "", doc.read_text(), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z][a-z+.-]*:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        file = (doc.parent / path).resolve() if path else doc
        if not file.exists():
            broken.append(target)
        elif anchor and file.suffix == ".md" and anchor not in _anchors(file):
            broken.append(f"{target} (no such heading)")
    assert not broken, broken
