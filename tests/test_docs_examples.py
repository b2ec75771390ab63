"""The Python examples of README.md and docs/*.md run, and print what the page says they print.

Every fenced ```python block is run, in page order, each in a fresh namespace (a block is what a
reader copies into a notebook cell: it imports what it uses), with a page's blocks sharing one
temporary working directory (a later block may read the run directory an earlier one wrote) in
which ``examples/`` is the repository's, so the shipped data read as the page writes it.

Two HTML comments, invisible on the rendered page, steer it:

* ``<!-- docs-test: skip REASON -->`` on the line before a block's opening fence: not run (a
  block that needs a GPU, a run directory of the reader's own, a hub download);
* a ```text block right after a python block (blank lines between at most) is the output the
  block prints, compared line by line -- numbers within 1% or two units of the last digit the
  page shows (another CPU's float rounding moves the last digit of a fit); with
  ``<!-- docs-test: output varies REASON -->`` between the two (a training run's pass rates,
  timings) the output is shown to the reader and not compared.

A page whose examples train (``Trainer``, ``run_study``) gets the session's cached tiny model
(tests/conftest.py) and is marked slow.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]

SKIP = re.compile(r"^\s*<!--\s*docs-test:\s*skip\b(.*?)-->\s*$")
VARIES = re.compile(r"^\s*<!--\s*docs-test:\s*output varies\b(.*?)-->\s*$")
FENCE = re.compile(r"^(\s*)```\s*([\w+-]*)\s*$")
NUMBER = re.compile(r"[-+]?(?:\d+\.\d*|\.\d+|\d+)(?:[eE][-+]?\d+)?")
#: Words in a page's code that mean it trains (and needs the tiny model).
TRAINS = ("Trainer", "run_study")


@dataclass
class Block:
    page: Path
    line: int
    """1-based line of the opening fence."""
    code: str
    skip: str | None = None
    """Why it is not run (None: run)."""
    expected: str | None = None
    """The ```text block after it: what it prints (None: nothing shown)."""
    compare: bool = True


def _fences(lines: list[str]) -> list[tuple[int, int, str]]:
    """(opening line index, closing line index, info string) of every fenced block."""
    out, i = [], 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if m:
            j = i + 1
            while j < len(lines) and not re.match(r"^\s*```\s*$", lines[j]):
                j += 1
            out.append((i, j, m.group(2)))
            i = j + 1
        else:
            i += 1
    return out


def _body(lines: list[str], start: int, end: int) -> str:
    indent = len(lines[start]) - len(lines[start].lstrip())
    return "\n".join(line[indent:] if line[:indent].isspace() else line for line in lines[start + 1:end]) + "\n"


def blocks(page: Path) -> list[Block]:
    """The python blocks of ``page`` with their markers and expected output."""
    lines = page.read_text(encoding="utf-8").splitlines()
    fences = _fences(lines)
    out = []
    for k, (start, end, info) in enumerate(fences):
        if info != "python":
            continue
        before = next((lines[i] for i in range(start - 1, -1, -1) if lines[i].strip()), "")
        skip = SKIP.match(before)
        block = Block(page, start + 1, _body(lines, start, end), skip=(skip.group(1).strip() or "marked") if skip else None)
        i = end + 1
        while i < len(lines) and not lines[i].strip():
            i += 1
        if i < len(lines) and VARIES.match(lines[i]):
            block.compare = False
            i += 1
            while i < len(lines) and not lines[i].strip():
                i += 1
        nxt = next((f for f in fences[k + 1:k + 2] if f[0] == i), None)
        if nxt is not None and nxt[2] == "text":
            block.expected = _body(lines, nxt[0], nxt[1])
        out.append(block)
    return out


def _close(shown: str, got: str) -> bool:
    """``got`` matches the number the page shows: within 1%, or two units of its last digit."""
    a, b = float(shown), float(got)
    decimals = len(shown.split(".")[1].split("e")[0].split("E")[0]) if "." in shown else 0
    exponent = int(re.split("[eE]", shown)[1]) if re.search("[eE]", shown) else 0
    return math.isclose(a, b, rel_tol=0.01, abs_tol=2 * 10.0 ** (exponent - decimals))


def same_output(expected: str, got: str) -> bool:
    """Line by line, the text alike and each number close (:func:`_close`)."""
    exp = [line.rstrip() for line in expected.strip("\n").splitlines()]
    act = [line.rstrip() for line in got.strip("\n").splitlines()]
    if len(exp) != len(act):
        return False
    for e, a in zip(exp, act):
        if NUMBER.split(e) != NUMBER.split(a):
            return False
        ne, na = NUMBER.findall(e), NUMBER.findall(a)
        if len(ne) != len(na) or not all(_close(x, y) for x, y in zip(ne, na)):
            return False
    return True


def run_block(block: Block) -> str:
    """Run ``block`` in a fresh namespace in the current directory; what it printed."""
    buffer = io.StringIO()
    namespace = {"__name__": "__main__"}
    code = compile(block.code, f"{block.page.name}:{block.line}", "exec")
    with contextlib.redirect_stdout(buffer):
        exec(code, namespace)  # noqa: S102 -- the repository's own documentation
    return buffer.getvalue()


def _pages():
    for page in PAGES:
        found = blocks(page)
        if not any(b.skip is None for b in found):
            continue
        trains = any(word in b.code for b in found if b.skip is None for word in TRAINS)
        yield pytest.param(page, marks=[pytest.mark.slow] if trains else [], id=page.name)


@pytest.mark.parametrize("page", list(_pages()))
def test_python_examples_run_and_print_what_the_page_says(page, tmp_path, monkeypatch, request):
    found = [b for b in blocks(page) if b.skip is None]
    if any(word in b.code for b in found for word in TRAINS):
        request.getfixturevalue("tiny_dir")  # the cached tiny model, built once per session
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    monkeypatch.chdir(tmp_path)
    for block in found:
        got = run_block(block)
        if block.expected is not None and block.compare:
            assert same_output(block.expected, got), (
                f"{page.name}:{block.line}: the block printed\n{got}\nthe page shows\n{block.expected}")


def test_the_markers_are_read(tmp_path):
    page = tmp_path / "p.md"
    page.write_text("<!-- docs-test: skip needs a GPU -->\n```python\nraise SystemExit\n```\n\n"
                    "```python\nprint(1.2345, 'a')\n```\n\n```text\n1.2346 a\n```\n"
                    "```python\nprint(7)\n```\n<!-- docs-test: output varies timing -->\n```text\n8\n```\n"
                    "```python\nx = 1\n```\nprose\n```text\nnot its output\n```\n")
    skipped, printed, varies, silent = blocks(page)
    assert skipped.skip == "needs a GPU" and printed.skip is None
    assert printed.expected == "1.2346 a\n" and printed.compare and same_output(printed.expected, run_block(printed))
    assert varies.expected == "8\n" and not varies.compare
    assert silent.expected is None
    assert not same_output("0.50 a", "0.60 a") and not same_output("0.5 a", "0.5 b") and same_output("12 h", "12.1 h")
