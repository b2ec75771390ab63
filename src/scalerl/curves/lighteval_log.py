"""Read lighteval results of a series of checkpoints: ``lighteval vllm "model_name=CKPT,..." TASKS
--output-dir OUT`` writes, per evaluation, ``OUT/results/<model_name>/results_<date>.json`` (the
checkpoint's path kept as directories), ``{"config_general": {"model_name": ...}, "results":
{"<suite>|<task>|<shots>": {"extractive_match": ..., "extractive_match_stderr": ...}, "all": {...}},
"versions": {...}, ...}``. Such a file, or the directory of them (``OUT``, or ``OUT/results``), is read:

* each file is one evaluation, of the checkpoint ``config_general.model_name`` names; its step is
  the number of the last part of that path that names one (``checkpoint-N``, ``global_step_N``,
  ``iter_N``, ``step_N``), the part before it the run (:mod:`scalerl.curves.checkpoint_evals`); the
  column ``step`` is the x;
* its metrics are columns ``<task>/<metric>`` under the task's name in the file
  (``lighteval|math_500|0/extractive_match``; ``all/...``, lighteval's mean over the tasks);
* a checkpoint evaluated more than once is one row, the later evaluation (by the date in the file's
  name) winning; an evaluation of a model whose path names no step (the base model) is left out.
  Both are said in the notes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scalerl.curves.checkpoint_evals import candidates, holds, load_json, rows_by_checkpoint, with_revision
from scalerl.curves.rows import read_from_rows
from scalerl.errors import InputError


def _load(path: Path) -> dict | None:
    doc = load_json(path)
    if isinstance(doc, dict) and isinstance(doc.get("results"), dict) and isinstance(doc.get("config_general"), dict):
        return doc
    return None


def is_lighteval(path: Path) -> bool:
    """Whether ``path`` is a lighteval results file, or a directory holding them."""
    return holds(path, _load)


def _model_path(doc: dict, file: Path) -> str:
    """The evaluated checkpoint's path, with the step its hub revision (``model_config.revision``)
    names where it names one; else the results' directory."""
    general = doc["config_general"]
    name = general.get("model_name")
    if not (isinstance(name, str) and name):
        return str(file.parent)
    config = general.get("model_config")
    return with_revision(name, config.get("revision") if isinstance(config, dict) else None)


def _metrics(doc: dict) -> dict[str, float]:
    return {f"{task}/{name}": float(value)
            for task, metrics in doc["results"].items() if isinstance(metrics, dict)
            for name, value in metrics.items()
            if isinstance(value, (int, float)) and not isinstance(value, bool)}


def read_lighteval_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    files = [path] if path.is_file() else candidates(path)
    docs = [(f, doc) for f in files if (doc := _load(f)) is not None]
    if not docs:
        raise InputError(f"{path}: no lighteval results file (a JSON with 'config_general' and 'results')")
    docs.sort(key=lambda fd: fd[0].name)  # results_<ISO date>.json: the later evaluation of a checkpoint wins
    return rows_by_checkpoint(path, ((_model_path(doc, f), _metrics(doc)) for f, doc in docs), "lighteval")


read_lighteval = read_from_rows(read_lighteval_rows)
