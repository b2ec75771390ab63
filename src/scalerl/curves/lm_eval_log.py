"""Read lm-evaluation-harness results of a series of checkpoints: ``lm_eval --model vllm --model_args
pretrained=CKPT --output_path OUT`` writes, per evaluation, ``OUT/<model>/results_<date>.json``
(``<model>`` the checkpoint's path with ``/`` and ``:`` made ``__``); with ``--output_path X.json``,
``X_<date>.json``. Such a file, or the directory of them, is read:

* each file is one evaluation, of the checkpoint its ``model_name`` names (else ``config.model_args``'
  ``pretrained=``, else its directory's name); the checkpoint's step is the number of the last part
  of that path that names one: ``checkpoint-N`` (Hugging Face / TRL), ``global_step_N`` (verl),
  ``iter_N`` (Megatron), ``step_N`` / ``stepN``. The part before it names the run: checkpoints of
  several trainings in one directory are runs of their own. The column ``step`` is the x;
* its metrics are columns named as lm-eval's own W&B logger names them: ``<task>/<metric>,<filter>``
  (``gsm8k/exact_match,strict-match``), ``,none`` left off (``mmlu/acc``); a group's too. Strings
  (``"N/A"`` standard errors, aliases) are no columns;
* a checkpoint evaluated by several runs of lm_eval (other tasks, or the same again) is one row: the
  later evaluation (by its ``date``) wins where both have a metric, said in the notes;
* an evaluation of a model whose path names no step (the base model) has no place on the curve: it
  is left out, said in the notes.
"""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any

from scalerl.curves.data import Curve
from scalerl.curves.rows import DEFAULT_RUN_COLUMN, curves_from_rows
from scalerl.errors import InputError

#: The keys of an lm-eval results file besides ``results`` (any one of them).
_RESULT_KEYS = ("versions", "n-shot", "configs", "higher_is_better", "n-samples")
#: The files lm-eval writes its results to (``results_<date>.json``, or ``<stem>_<date>.json``).
RESULTS_GLOB = "*.json"
#: How many JSON files of a directory are opened to tell whether it holds lm-eval results.
SNIFF_FILES = 20
#: A part of a checkpoint's path that names its step.
_STEP_PART = re.compile(r"^(?:global_step|checkpoint|ckpt|iter|step)[-_]?(\d+)$", re.I)
#: lm-eval's filter name that its W&B logger leaves off.
_NO_FILTER = ",none"
STEP = "step"


def _load(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8") as f:
            doc = json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if isinstance(doc, dict) and isinstance(doc.get("results"), dict) and any(k in doc for k in _RESULT_KEYS):
        return doc
    return None


def _candidates(path: Path) -> list[Path]:
    """The JSON files of a directory that may be results, ``results_*`` first."""
    files = sorted(itertools.islice(path.rglob(RESULTS_GLOB), 100_000))
    return sorted(files, key=lambda f: not f.name.startswith("results"))


def is_lm_eval(path: Path) -> bool:
    """Whether ``path`` is an lm-eval results file, or a directory holding them."""
    if path.is_file():
        return path.suffix.lower() == ".json" and _load(path) is not None
    if path.is_dir():
        return any(_load(f) is not None for f in itertools.islice(_candidates(path), SNIFF_FILES))
    return False


def _model_path(doc: dict, file: Path) -> str:
    if isinstance(doc.get("model_name"), str) and doc["model_name"]:
        return doc["model_name"]
    args = (doc.get("config") or {}).get("model_args")
    if isinstance(args, dict):
        args = ",".join(f"{k}={v}" for k, v in args.items())
    if isinstance(args, str):
        found = re.search(r"(?:^|,)\s*(?:pretrained|model|path)=([^,]+)", args)
        if found:
            return found.group(1).strip()
    return file.parent.name


def checkpoint_of(model: str) -> tuple[str, int | None]:
    """The run and the step a checkpoint's path names; the step None where no part names one."""
    parts = [p for p in re.split(r"[/\\]+|__", model) if p]
    for i in range(len(parts) - 1, -1, -1):
        found = _STEP_PART.match(parts[i])
        if found:
            run = parts[i - 1] if i > 0 else "/".join(parts[:i] + ["*"] + parts[i + 1:])
            return run, int(found.group(1))
    return model, None


def _metrics(doc: dict) -> dict[str, float]:
    """``<task>/<metric>,<filter>``: every number of the file's ``results`` (and ``groups``)."""
    out: dict[str, float] = {}
    for section in ("results", "groups"):
        for task, metrics in (doc.get(section) or {}).items():
            if not isinstance(metrics, dict):
                continue
            for name, value in metrics.items():
                if isinstance(value, bool) or not isinstance(value, (int, float)):
                    continue
                if name.endswith(_NO_FILTER):
                    name = name[: -len(_NO_FILTER)]
                out.setdefault(f"{task}/{name}", float(value))
    return out


def _when(doc: dict, file: Path) -> tuple[float, str]:
    date = doc.get("date")
    return (float(date) if isinstance(date, (int, float)) and not isinstance(date, bool) else 0.0, file.name)


def read_lm_eval_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """A row per evaluated checkpoint (``run``, ``step`` and its metrics), in step order, and notes."""
    files = [path] if path.is_file() else _candidates(path)
    docs = [(f, doc) for f in files if (doc := _load(f)) is not None]
    if not docs:
        raise InputError(f"{path}: no lm-evaluation-harness results file (a JSON with 'results' and 'versions')")
    docs.sort(key=lambda fd: _when(fd[1], fd[0]))  # the later evaluation of a checkpoint wins
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    no_step: list[str] = []
    again: set[int] = set()
    for file, doc in docs:
        model = _model_path(doc, file)
        run, step = checkpoint_of(model)
        if step is None:
            no_step.append(model)
            continue
        metrics = _metrics(doc)
        row = rows.setdefault((run, step), {DEFAULT_RUN_COLUMN: run, STEP: step})
        if any(k in row for k in metrics):
            again.add(step)
        row.update(metrics)
    notes = []
    if no_step:
        shown = ", ".join(sorted(set(no_step))[:5]) + (", ..." if len(set(no_step)) > 5 else "")
        notes.append(f"{len(no_step)} evaluation(s) of a model whose path names no checkpoint step left out: {shown}")
    if again:
        notes.append(f"{len(again)} checkpoint(s) evaluated more than once (steps "
                     f"{', '.join(map(str, sorted(again)[:5]))}{', ...' if len(again) > 5 else ''}): "
                     "the latest evaluation's value kept")
    if not rows:
        raise InputError(f"{path}: {len(no_step)} lm-eval result(s), none of a checkpoint whose path names its step "
                         "(checkpoint-N, global_step_N, iter_N, step_N): no curve over training")
    ordered = sorted(rows.values(), key=lambda r: (r[DEFAULT_RUN_COLUMN], r[STEP]))
    return ordered, notes


def read_lm_eval(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    path = Path(path)
    rows, notes = read_lm_eval_rows(path)
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded)
