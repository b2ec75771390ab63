"""What the readers of evaluation harnesses' results share (lm-evaluation-harness, lighteval): a
results file per evaluation of one checkpoint, the checkpoint named by its path -- its step, and the
training run it belongs to, read from that path --, joined into a row per checkpoint."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path
from typing import Any, Callable, Iterable

from scalerl.curves.rows import DEFAULT_RUN_COLUMN
from scalerl.errors import InputError

#: The files the harnesses write their results to (``results_<date>.json``).
RESULTS_GLOB = "*.json"
#: How many JSON files of a directory are opened to tell whether it holds such results.
SNIFF_FILES = 20
#: A part of a checkpoint's path that names its step: ``checkpoint-N`` (Hugging Face / TRL),
#: ``global_step_N`` (verl), ``iter_N`` (Megatron), ``step_N`` / ``stepN``.
_STEP_PART = re.compile(r"^(?:global_step|checkpoint|ckpt|iter|step)[-_]?(\d+)$", re.I)
#: A hub revision that names a checkpoint's step: Pythia's ``step143000``, OLMo's
#: ``stage1-step140000-tokens588B``, a branch ``checkpoint-500`` (a commit hash names none).
_REVISION_STEP = re.compile(r"(?:^|[-_/])(?:global_step|checkpoint|ckpt|iter|step)[-_]?(\d+)(?=$|[-_/])", re.I)
STEP = "step"


def load_json(path: Path) -> Any:
    """A JSON file's document, or None where it is not one (unreadable, not JSON, not UTF-8)."""
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError, UnicodeDecodeError):
        return None


def candidates(path: Path) -> list[Path]:
    """The JSON files of a directory that may be results, ``results_*`` first."""
    files = sorted(itertools.islice(path.rglob(RESULTS_GLOB), 100_000))
    return sorted(files, key=lambda f: not f.name.startswith("results"))


def holds(path: Path, load: Callable[[Path], dict | None]) -> bool:
    """Whether ``path`` is a results file ``load`` reads, or a directory holding one."""
    if path.is_file():
        return path.suffix.lower() == ".json" and load(path) is not None
    if path.is_dir():  # (a look at a few files: a large directory of something else costs no full walk)
        named = itertools.islice(path.rglob("results*.json"), SNIFF_FILES)
        others = itertools.islice(path.rglob(RESULTS_GLOB), SNIFF_FILES)
        return any(load(f) is not None for f in itertools.chain(named, others))
    return False


def with_revision(model: str, revision: object) -> str:
    """The model's path with the step its hub revision names as its last part (``--model_args
    pretrained=EleutherAI/pythia-160m,revision=step1000``: every checkpoint has the same path, its
    step is in the revision); the path alone where the revision names no step."""
    found = _REVISION_STEP.search(revision) if isinstance(revision, str) else None
    return f"{model.rstrip('/')}/step_{found.group(1)}" if found else model


def checkpoint_of(model: str) -> tuple[tuple[str, ...], int | None]:
    """The run and the step a checkpoint's path names (``/`` or lm-eval's ``__`` between its parts): the
    last part that names a step, and the parts before it (the run's whole path, ``("*",)`` where the step
    part comes first); the step None (and the run the path itself) where no part names one."""
    parts = [p for p in re.split(r"[/\\]+|__", model) if p and p != "."]  # (./out is out: review cs)
    for i in range(len(parts) - 1, -1, -1):
        found = _STEP_PART.match(parts[i])
        if found:
            run = tuple(parts[:i]) if i > 0 else ("/".join(["*"] + parts[i + 1:]),)
            return run, int(found.group(1))
    return (model,), None


def run_names(runs: Iterable[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Each run's path -> its name: its last part (``ckpt``), or as many of its last parts as tell it apart
    from the others (``exp1/ckpt``, ``exp2/ckpt``: two trainings that both keep their checkpoints in
    ``ckpt/`` were one run, the first one's scores overwritten by the second's -- review cr)."""
    runs = sorted(set(runs))
    # One training's checkpoints given as a relative and an absolute path (out/..., ../proj/out/...,
    # /home/u/proj/out/...): a path that ends another, less the ``..`` it opens with, is that run, where it
    # ends only one (review cu: ``../proj/out`` was a run of its own).
    same = {run: longer[0] for run in runs
            if (tail := _below_parents(run))
            and len(longer := [o for o in runs if len(o) > len(tail) and o[-len(tail):] == tail and o != run]) == 1}
    runs = sorted(set(runs) - set(same))
    names: dict[tuple[str, ...], str] = {}
    for run in runs:
        k = 1
        while k < len(run) and any(other != run and other[-k:] == run[-k:] for other in runs):
            k += 1
        names[run] = "/".join(run[-k:])
    return {**names, **{run: names[same[run]] for run in same}}


def _below_parents(run: tuple[str, ...]) -> tuple[str, ...]:
    """A relative run path less the ``..`` parts it opens with (``../proj/out`` -> ``proj/out``)."""
    i = 0
    while i < len(run) and run[i] == "..":
        i += 1
    return run[i:]


def rows_by_checkpoint(path: Path, evaluations: Iterable[tuple[str, dict[str, float]]],
                       what: str) -> tuple[list[dict[str, Any]], list[str]]:
    """A row per evaluated checkpoint (``run``, ``step``, its metrics), by run and step, and notes;
    ``evaluations`` -- ``(model path, metrics)`` -- in the order they were made: a later evaluation of a
    checkpoint wins where both have a metric. An evaluation of a model whose path names no step is
    left out, said in the notes."""
    no_step: list[str] = []
    stepped: list[tuple[tuple[str, ...], int, dict[str, float]]] = []
    for model, metrics in evaluations:
        run, step = checkpoint_of(model)
        if step is None:
            no_step.append(model)
        else:
            stepped.append((run, step, metrics))
    # Named first, then joined at (name, step): one checkpoint evaluated by an absolute and a relative path is
    # one point, its later evaluation kept (review ct: two points at one step, both fitted).
    names = run_names(run for run, _, _ in stepped)
    rows: dict[tuple[str, int], dict[str, Any]] = {}
    again: set[int] = set()
    for run, step, metrics in stepped:
        row = rows.setdefault((names[run], step), {DEFAULT_RUN_COLUMN: names[run], STEP: step})
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
        raise InputError(f"{path}: {len(no_step)} {what} result(s), none of a checkpoint whose path names its step "
                         "(checkpoint-N, global_step_N, iter_N, step_N): no curve over training")
    return sorted(rows.values(), key=lambda r: (r[DEFAULT_RUN_COLUMN], r[STEP])), notes
