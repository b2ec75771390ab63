"""The repository stands on its own: no file cites a document or directory outside it.

The paper's facts the code relies on live in docs/paper.md; code and docs cite that page (or
the paper itself), never a design note that is not shipped.
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCANNED = ("src", "docs", "benchmarks", "tests", "examples", "configs", "README.md", "Makefile", ".ci")
#: Citations of files that are not in the repository.
FOREIGN = re.compile(r"SPEC\.md|SPEC §|\.\./shared|/work/shared|ARCHITECTURE\.md")


def _files():
    for name in SCANNED:
        path = ROOT / name
        if path.is_file():
            yield path
        elif path.is_dir():
            for p in path.rglob("*"):
                if p.is_file() and p.suffix in {".py", ".md", ".yaml", ".yml", ".sh", ".toml", ".txt", ""} \
                        and "egg-info" not in str(p) and "__pycache__" not in str(p) and p != Path(__file__):
                    yield p


def test_no_citation_of_files_outside_the_repository():
    hits = []
    for path in _files():
        for i, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
            if FOREIGN.search(line):
                hits.append(f"{path.relative_to(ROOT)}:{i}: {line.strip()[:100]}")
    assert not hits, "cite docs/paper.md or the paper instead:\n" + "\n".join(hits)


def test_paper_page_exists_and_is_linked_from_the_readme():
    assert (ROOT / "docs" / "paper.md").exists()
    assert "docs/paper.md" in (ROOT / "README.md").read_text()
