"""Regenerate the files derived from the recipe presets: configs/*.yaml and the reference
table in docs/recipe.md. The tests fail when these are out of date.

    .venv/bin/python scripts/sync_recipes.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from scalerl.rl.presets import config_files, reference_markdown

ROOT = Path(__file__).resolve().parent.parent
BEGIN, END = "<!-- BEGIN GENERATED: recipe reference -->", "<!-- END GENERATED: recipe reference -->"


def sync_docs(doc: Path) -> None:
    text = doc.read_text()
    head, _, rest = text.partition(BEGIN)
    _, _, tail = rest.partition(END)
    doc.write_text(f"{head}{BEGIN}\n{reference_markdown()}{END}{tail}")


def main() -> int:
    for path, text in config_files(ROOT / "configs").items():
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        print(f"wrote {path.relative_to(ROOT)}")
    sync_docs(ROOT / "docs" / "recipe.md")
    print("updated docs/recipe.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
