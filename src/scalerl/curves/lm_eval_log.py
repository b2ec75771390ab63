"""Read lm-evaluation-harness results of a series of checkpoints: ``lm_eval --model vllm --model_args
pretrained=CKPT --output_path OUT`` writes, per evaluation, ``OUT/<model>/results_<date>.json``
(``<model>`` the checkpoint's path with ``/`` and ``:`` made ``__``); with ``--output_path X.json``,
``X_<date>.json``. Such a file, or the directory of them, is read:

* each file is one evaluation, of the checkpoint its ``model_name`` names (else ``config.model_args``'
  ``pretrained=``, else its directory's name); the checkpoint's step is the number of the last part
  of that path that names one: ``checkpoint-N`` (Hugging Face / TRL), ``global_step_N`` (verl),
  ``iter_N`` (Megatron), ``step_N`` / ``stepN``. The part before it names the run: checkpoints of
  several trainings in one directory are runs of their own. A checkpoint on the hub named by its
  revision (``pretrained=EleutherAI/pythia-160m,revision=step1000``; OLMo's
  ``stage1-step1000-tokens5B``) takes the step the revision names. The column ``step`` is the x;
* its metrics are columns named as lm-eval's own W&B logger names them: ``<task>/<metric>,<filter>``
  (``gsm8k/exact_match,strict-match``), ``,none`` left off (``mmlu/acc``); a group's too. Strings
  (``"N/A"`` standard errors, aliases) are no columns;
* a checkpoint evaluated by several runs of lm_eval (other tasks, or the same again) is one row: the
  later evaluation (by its ``date``) wins where both have a metric, said in the notes;
* an evaluation of a model whose path names no step (the base model) has no place on the curve: it
  is left out, said in the notes.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from scalerl.curves.checkpoint_evals import candidates, holds, load_json, rows_by_checkpoint, with_revision
from scalerl.curves.rows import read_from_rows
from scalerl.errors import InputError

#: The keys of an lm-eval results file besides ``results`` (any one of them).
_RESULT_KEYS = ("n-shot", "configs", "higher_is_better", "n-samples", "config")
#: lm-eval's filter name that its W&B logger leaves off.
_NO_FILTER = ",none"


def _load(path: Path) -> dict | None:
    doc = load_json(path)
    if (isinstance(doc, dict) and isinstance(doc.get("results"), dict) and "versions" in doc
            and "config_general" not in doc and any(k in doc for k in _RESULT_KEYS)):
        return doc
    return None


def is_lm_eval(path: Path) -> bool:
    """Whether ``path`` is an lm-eval results file, or a directory holding them."""
    return holds(path, _load)


def _model_args(doc: dict) -> dict[str, str]:
    """``config.model_args``, given as lm-eval's ``k=v,k=v`` string or as a mapping."""
    args = (doc.get("config") or {}).get("model_args")
    if isinstance(args, dict):
        return {str(k): str(v) for k, v in args.items()}
    if isinstance(args, str):
        return {k.strip(): v.strip() for k, _, v in (a.partition("=") for a in args.split(",")) if k.strip()}
    return {}


def _model_path(doc: dict, file: Path) -> str:
    """The evaluated checkpoint's path (its ``model_name``, else ``pretrained=``), with the step that
    its ``revision=`` names where it names one; else the results' directory."""
    args = _model_args(doc)
    for model in (doc.get("model_name"), args.get("pretrained"), args.get("model"), args.get("path")):
        if isinstance(model, str) and model:
            return with_revision(model, args.get("revision"))
    return file.parent.name


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
    files = [path] if path.is_file() else candidates(path)
    docs = [(f, doc) for f in files if (doc := _load(f)) is not None]
    if not docs:
        raise InputError(f"{path}: no lm-evaluation-harness results file (a JSON with 'results' and 'versions')")
    docs.sort(key=lambda fd: _when(fd[1], fd[0]))  # the later evaluation of a checkpoint wins
    return rows_by_checkpoint(path, ((_model_path(doc, f), _metrics(doc)) for f, doc in docs), "lm-eval")


read_lm_eval = read_from_rows(read_lm_eval_rows)
