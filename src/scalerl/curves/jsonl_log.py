"""JSON logs: scalerl's run log (a header line, then rows), any JSON-lines log, or a JSON document
that holds a table of metrics (:mod:`scalerl.curves.json_document`).
"""

from __future__ import annotations

from pathlib import Path

from scalerl.curves.data import Curve
from scalerl.curves.json_document import document_rows, read_document
from scalerl.curves.rows import curves_from_rows
from scalerl.runlog import read_runlog


def read_jsonl(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True,
               run_column: str | None = None) -> list[Curve]:
    """One run per value of ``run_column`` (default: a ``run`` key where rows have one), else the
    header's run name."""
    path = Path(path)
    doc = read_document(path)
    if doc is not None:
        rows, _ = document_rows(doc, path, run_column or "run")
        return curves_from_rows(path, rows, x, y, default_name=path.stem, y_scale=y_scale, bounded=bounded,
                                run_column=run_column)
    header, rows, notes = read_runlog(path)
    default_name = str(header.get("run") or header.get("recipe") or path.parent.name or path.stem)
    return curves_from_rows(path, rows, x, y, default_name=default_name, notes=notes, y_scale=y_scale,
                            bounded=bounded, run_column=run_column)
