"""JSON-lines logs: scalerl's run log (a header line, then rows), or any JSON-lines log.
"""

from __future__ import annotations

from pathlib import Path

from scalerl.curves.data import Curve
from scalerl.curves.rows import curves_from_rows
from scalerl.runlog import read_runlog


def read_jsonl(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True,
               run_column: str | None = None) -> list[Curve]:
    """One run per value of ``run_column`` (default: a ``run`` key where rows have one), else the
    header's run name."""
    path = Path(path)
    header, rows, notes = read_runlog(path)
    default_name = str(header.get("run") or header.get("recipe") or path.parent.name or path.stem)
    return curves_from_rows(path, rows, x, y, default_name=default_name, notes=notes, y_scale=y_scale,
                            bounded=bounded, run_column=run_column)
