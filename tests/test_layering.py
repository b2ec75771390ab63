"""Imports run one way: commands on top; the drivers (study, train, pipeline); the pieces of a run
(rollout, rl, generate, tasks, models); the foundations (curves, config, runlog, ...).

Parsed from the source with ``ast`` -- every import, module level or inside a function, except
those under ``if TYPE_CHECKING:`` (never executed) -- so a violation fails here, not in a review.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parent.parent / "src" / "scalerl"

#: Top-level packages and modules of scalerl, lowest layer first. A module may import from its
#: own layer or a lower one, never a higher one.
LAYERS: list[set[str]] = [
    {"errors", "atomic_files", "config", "runlog", "curves", "report_text", "seeds", "stop_signals", "parent_death", "hub"},  # foundations: no model, no run
    {"rollout", "rl", "generate", "tasks", "models"},  # the pieces of a run
    {"study", "train", "pipeline"},  # what drives runs
    {"commands", "cli", "__main__"},  # the command line
]
LAYER = {name: i for i, names in enumerate(LAYERS) for name in names}


def _module_name(path: Path) -> str:
    parts = path.relative_to(SRC.parent).with_suffix("").parts
    return ".".join(p for p in parts if p != "__init__")


def _under_type_checking(node: ast.AST, parents: dict[ast.AST, ast.AST]) -> bool:
    while node in parents:
        node = parents[node]
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            return True
    return False


def _imports(path: Path) -> set[str]:
    """Every scalerl module ``path`` imports (``from a.b import c`` counts as a.b.c when that is a module)."""
    tree = ast.parse(path.read_text())
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    out: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [f"{node.module}.{a.name}" for a in node.names] + [node.module]
        else:
            continue
        if _under_type_checking(node, parents):
            continue
        out.update(n for n in names if n.startswith("scalerl.") or n == "scalerl")
    return out


MODULES = {_module_name(p): p for p in SRC.rglob("*.py")}
GRAPH = {name: {m for m in _imports(path) if m in MODULES and m != name} for name, path in MODULES.items()}


def _top(module: str) -> str:
    return module.split(".")[1] if module.count(".") else module


def test_every_top_level_package_has_a_layer():
    tops = {_top(m) for m in MODULES if m != "scalerl"}
    assert tops <= set(LAYER), f"put {sorted(tops - set(LAYER))} in a layer of LAYERS"


@pytest.mark.parametrize("module", sorted(m for m in MODULES if m != "scalerl"))
def test_no_module_imports_a_higher_layer(module):
    mine = LAYER[_top(module)]
    up = sorted(m for m in GRAPH[module] if m != "scalerl" and LAYER[_top(m)] > mine)
    assert not up, f"{module} (layer {mine}) imports {up} from a higher layer"


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """A cycle of ``graph`` (as a path), or None."""
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    stack: list[str] = []

    def visit(n: str) -> list[str] | None:
        state[n] = 1
        stack.append(n)
        for m in sorted(graph.get(n, ())):
            if state.get(m) == 1:
                return stack[stack.index(m):] + [m]
            if m not in state and (found := visit(m)):
                return found
        stack.pop()
        state[n] = 2
        return None

    for n in sorted(graph):
        if n not in state and (found := visit(n)):
            return found
    return None


def test_packages_depend_on_each_other_one_way():
    # Within a layer too: train imports pipeline, so pipeline must not import train.
    packages: dict[str, set[str]] = {}
    for module, targets in GRAPH.items():
        if module != "scalerl":
            packages.setdefault(_top(module), set()).update(_top(t) for t in targets if t != "scalerl")
    for p, targets in packages.items():
        targets.discard(p)
    assert _cycle(packages) is None, f"package import cycle: {' -> '.join(_cycle(packages))}"


def test_no_module_import_cycle():
    assert _cycle(GRAPH) is None, f"module import cycle: {' -> '.join(_cycle(GRAPH))}"


def test_the_checker_sees_violations(tmp_path):
    # The parser catches function-local imports and skips TYPE_CHECKING ones.
    src = tmp_path / "m.py"
    src.write_text("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from scalerl.train import x\n"
                   "def f():\n    from scalerl.study import runner\n")
    assert _imports(src) == {"scalerl.study", "scalerl.study.runner"}
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]


def test_the_trainer_imports_without_the_packages_a_gpu_box_may_lack():
    """benchmarks/gpu_check.py runs the trainer on a GPU box with torch and transformers only: importing the
    trainer must not need scipy, matplotlib, peft, ray, ... (the run directory's bookkeeping once reached
    scipy through the report module -- found only by the extended GPU-check test, not in CI)."""
    import subprocess
    import sys

    from tests.test_gpu_check import ABSENT

    code = (f"import sys\nfor name in {ABSENT!r}:\n    sys.modules[name] = None\n"
            "import scalerl.train.trainer, scalerl.train.launch, scalerl.train.run_directory")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
