"""Read the evaluations a trainer dumps to disk, one directory per run:

* **verl** (``trainer.validation_data_dir``): at every validation a file ``<step>.jsonl`` with
  one line per generated sample, ``{"input", "output", "gts", "score", "step", ...}`` plus what
  the reward function returned besides the score (``acc``, ``pred``, ...). A row per file: the
  mean of every numeric field over its samples (a bool, as verl's math reward writes ``acc``,
  counts 1 / 0), at the file's step, and ``samples``. With one validation set, ``score`` is what
  verl logs as ``val-core/<set>/reward/mean@<n>`` (the mean over prompts of the mean over their n
  samples: the same mean when every prompt has n) -- at full precision. verl's dump has no field
  naming the set; a line that has ``data_source`` (as forks add) also gives ``<source>/score``.
  The validation before training is ``0.jsonl`` (or the checkpoint's step after a resume). verl
  writes the training rollouts the same way (``trainer.rollout_data_dir``): that directory reads
  the same, as the training reward.
* **SkyRL** (``trainer.dump_eval_results``): ``<export_path>/dumped_evals/global_step_<N>_evals/``
  with ``aggregated_results.jsonl``, the evaluation's metrics as its tracker gets them
  (``eval/all/avg_score``, ``eval/<set>/pass_at_<n>``, ...), at full precision; the
  ``dumped_evals`` directory or ``export_path`` is the run.
* **NeMo-RL** (always on, trackers or not): at every validation ``val_data_step<N>.jsonl`` in the
  run's log directory (``logs/exp_<NNN>/``, a new one per launch), a line per sample
  ``{"content": [...], "rewards": [r], "idx": i}``. A row per file: ``validation/accuracy``, the
  mean reward over the samples -- what NeMo-RL logs under that name --, at full precision, and
  ``samples``; where the validation drew several samples a prompt (``val_num_generations_per_prompt``:
  a prompt's samples are consecutive lines with the same user message), ``validation/pass_k``, the
  share of prompts with a sample rewarded above 0, as NeMo-RL computes it. The ``logs`` directory
  holds a run per ``exp_<NNN>``; a launch that resumed a
  training from its checkpoint (its first validation after the previous one's first and at most a
  validation interval past its last) continues that run: the rows the abandoned launch logged from
  the resumed one's first step on are dropped, and the notes say so. The training dumps beside
  them (``train_data_step<N>.jsonl``: every token's ids and log-probs) are not read.

A file cut short by a kill (a torn last line) counts the samples it holds, and an empty last
file is skipped, each said in the notes; a malformed line in the middle is an error that names it.
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import continues
from scalerl.curves.data import Curve
from scalerl.curves.rows import curves_from_rows
from scalerl.errors import InputError
from scalerl.runlog import object_lines

#: verl's dump file of one validation: ``<step>.jsonl``.
VERL_DUMP = re.compile(r"^(\d+)\.jsonl$")
#: Fields every line of verl's dump has.
VERL_SAMPLE_KEYS = {"input", "output", "score", "step"}
#: SkyRL's directory of one evaluation, and its file of aggregated metrics.
SKYRL_EVAL_DIR = re.compile(r"^global_step_(\d+)_evals$")
SKYRL_AGGREGATED = "aggregated_results.jsonl"
SKYRL_DUMPS = "dumped_evals"
#: NeMo-RL's dump of one validation, and its directory of one launch.
NEMO_RL_DUMP = re.compile(r"^val_data_step(\d+)\.jsonl$")
NEMO_RL_EXP = re.compile(r"^exp_(\d+)$")
#: The validation's metrics the dump's rewards give (NeMo-RL's names: their mean, and pass@k over
#: each prompt's k samples).
NEMO_RL_ACCURACY = "validation/accuracy"
NEMO_RL_PASS_K = "validation/pass_k"


def _verl_files(path: Path) -> list[tuple[int, Path]]:
    return sorted((int(m.group(1)), p) for p in path.iterdir() if p.is_file() and (m := VERL_DUMP.match(p.name)))


def _skyrl_dirs(path: Path) -> list[tuple[int, Path]]:
    root = path / SKYRL_DUMPS if (path / SKYRL_DUMPS).is_dir() else path
    return sorted((int(m.group(1)), p / SKYRL_AGGREGATED) for p in root.iterdir()
                  if p.is_dir() and (m := SKYRL_EVAL_DIR.match(p.name)) and (p / SKYRL_AGGREGATED).is_file())


def _nemo_rl_files(path: Path) -> list[tuple[int, Path]]:
    return sorted((int(m.group(1)), p) for p in path.iterdir() if p.is_file() and (m := NEMO_RL_DUMP.match(p.name)))


def _nemo_rl_launches(path: Path) -> list[tuple[str, list[tuple[int, Path]]]]:
    """``(name, dump files)`` per launch: ``path`` itself, or each ``exp_<NNN>`` below it in order."""
    own = _nemo_rl_files(path)
    if own:
        return [(path.name, own)]
    exps = sorted((int(m.group(1)), p) for p in path.iterdir() if p.is_dir() and (m := NEMO_RL_EXP.match(p.name)))
    return [(p.name, files) for _, p in exps if (files := _nemo_rl_files(p))]


def _first_object(path: Path) -> dict | None:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            line = next((ln for ln in f if ln.strip()), "")
        obj = json.loads(line)
    except (OSError, ValueError):
        return None
    return obj if isinstance(obj, dict) else None


def is_eval_dumps(path: Path) -> bool:
    """A directory of verl's dumped generations, of SkyRL's dumped evaluations, or of NeMo-RL's
    validation dumps (a launch's log directory, or the ``logs`` directory of its launches)."""
    if not path.is_dir():
        return False
    try:
        files = _verl_files(path)
        if files:
            first = _first_object(files[0][1])
            return first is not None and VERL_SAMPLE_KEYS <= set(first)
        return bool(_skyrl_dirs(path)) or bool(_nemo_rl_launches(path))
    except OSError:
        return False


def _number(v: Any) -> float | None:
    if isinstance(v, bool):
        return float(v)
    if isinstance(v, (int, float)) and math.isfinite(v):
        return float(v)
    return None


def _verl_row(step: int, path: Path, notes: list[str]) -> dict[str, Any]:
    """The mean of every numeric field of one dump file's samples."""
    objects, torn = object_lines(path)
    if torn is not None:
        notes.append(f"{path.name}: skipped a torn last line ({torn}) -- the dump was cut short")
    sums: dict[str, float] = {}
    counts: dict[str, int] = {}
    samples = 0
    for _, obj in objects:
        samples += 1
        source = obj.get("data_source")
        for key, value in obj.items():
            v = _number(value)
            if v is None or key == "step":
                continue
            for name in (key, f"{source}/{key}") if isinstance(source, str) and source else (key,):
                sums[name] = sums.get(name, 0.0) + v
                counts[name] = counts.get(name, 0) + 1
    if not samples:
        raise InputError(f"{path}: no samples in the dump")
    return {"step": step, "samples": samples, **{k: sums[k] / counts[k] for k in sums}}


def _rewards(obj: dict, path: Path, lineno: int) -> list[float]:
    """A NeMo-RL dump line's rewards: a list (one per sample of the line, as its microbatch of one
    writes it) or a number."""
    value = obj.get("rewards")
    values = value if isinstance(value, list) else [value]
    out = [_number(v) for v in values]
    if not values or any(v is None for v in out):
        raise InputError(f"{path}:{lineno}: 'rewards' is {value!r}, not a number or a list of numbers "
                         "(a NeMo-RL validation dump has one per sample)")
    return out  # type: ignore[return-value]


def _prompt(obj: dict) -> str | None:
    """The user message a NeMo-RL dump line's sample answered (``content``: its message log, in a list of one)."""
    content = obj.get("content")
    log = content[0] if isinstance(content, list) and len(content) == 1 else content
    if not isinstance(log, list):
        return None
    return next((m.get("content") for m in log if isinstance(m, dict) and m.get("role") == "user"
                 and isinstance(m.get("content"), str)), None)


def _pass_k(prompts: list[str | None], rewards: list[float]) -> float | None:
    """pass@k where each prompt's k samples are consecutive (NeMo-RL's ``view(-1, k)``, k > 1), or
    None where the dump shows no such grouping."""
    if len(prompts) != len(rewards) or any(p is None for p in prompts):
        return None
    runs = [len(list(group)) for _, group in itertools.groupby(prompts)]
    k = min(runs)
    if k < 2 or any(n % k for n in runs):
        return None
    chunks = [rewards[i:i + k] for i in range(0, len(rewards), k)]
    return sum(any(r > 0 for r in chunk) for chunk in chunks) / len(chunks)


def _nemo_rl_row(step: int, path: Path, notes: list[str]) -> dict[str, Any] | None:
    """The mean reward of one validation's samples (and pass@k, where it drew several a prompt)."""
    objects, torn = object_lines(path)
    if torn is not None:
        notes.append(f"{path.parent.name}/{path.name}: skipped a torn last line ({torn}) -- the dump was cut short")
    rewards: list[float] = []
    prompts: list[str | None] = []
    for lineno, obj in objects:
        got = _rewards(obj, path, lineno)
        rewards.extend(got)
        prompts.extend([_prompt(obj)] * len(got))
    if not rewards:
        notes.append(f"{path.parent.name}/{path.name} holds no samples: skipped")
        return None
    row = {"step": step, "samples": len(rewards), NEMO_RL_ACCURACY: sum(rewards) / len(rewards)}
    if (pass_k := _pass_k(prompts, rewards)) is not None:
        row[NEMO_RL_PASS_K] = pass_k
    return row


def _nemo_rl_rows(launches: list[tuple[str, list[tuple[int, Path]]]], notes: list[str]) -> list[dict[str, Any]]:
    """Every launch's rows, a launch that resumed a training joined to the run it continues."""
    runs: list[tuple[str, list[dict[str, Any]]]] = []
    for name, files in launches:
        rows = [row for step, f in files if (row := _nemo_rl_row(step, f, notes)) is not None]
        if not rows:
            continue
        if runs:
            before, prev = runs[-1]
            steps = [r["step"] for r in prev]
            gap = max((b - a for a, b in zip(steps, steps[1:])), default=1)
            # A resumed launch validates first at most one validation interval past the last
            # validation of the launch it continues (the checkpoint lies between the two).
            if continues(steps[0], steps[-1] + gap - 1, rows[0]["step"]):
                kept = [r for r in prev if r["step"] < rows[0]["step"]]
                notes.append(f"{name} resumes {before} (its first validation, step {rows[0]['step']}, follows "
                             f"{before}'s first): joined; {len(prev) - len(kept)} validation(s) {before} logged "
                             "from there on dropped")
                runs[-1] = (before, kept + rows)
                continue
        runs.append((name, rows))
    return [{**row, "run": name} for name, rows in runs for row in rows]


def _skyrl_row(step: int, path: Path, notes: list[str]) -> dict[str, Any] | None:
    obj = _first_object(path)
    if obj is None:
        notes.append(f"{path.parent.name}/{path.name} is empty or damaged: skipped")
        return None
    return {**{k: v for k, v in obj.items() if _number(v) is not None}, "step": step}


def read_eval_dumps(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """A directory of dumped evaluations (see :mod:`scalerl.curves.eval_dumps`); ``x`` is ``step``
    (or ``samples``, or any logged number)."""
    path = Path(path)
    if not path.is_dir():
        raise InputError(f"{path}: dumped evaluations are a directory (verl's validation_data_dir, SkyRL's "
                         "dumped_evals, NeMo-RL's logs/exp_<NNN>)")
    notes: list[str] = []
    rows = []
    verl = _verl_files(path)
    if verl:
        for i, (step, f) in enumerate(verl):
            if i == len(verl) - 1 and not any(line.strip() for line in open(f, encoding="utf-8", errors="replace")):
                notes.append(f"{f.name} is empty (the run was killed while it dumped): skipped")
                continue
            rows.append(_verl_row(step, f, notes))
        name = path.name
    elif launches := _nemo_rl_launches(path):
        rows = _nemo_rl_rows(launches, notes)
        name = path.name
    else:
        for step, f in _skyrl_dirs(path):
            row = _skyrl_row(step, f, notes)
            if row is not None:
                rows.append(row)
        name = path.parent.name if path.name == SKYRL_DUMPS else path.name
    if not rows:
        raise InputError(f"{path}: no dumped evaluations (<step>.jsonl files of verl, SkyRL's "
                         f"{SKYRL_DUMPS}/global_step_<N>_evals/{SKYRL_AGGREGATED}, or NeMo-RL's "
                         "val_data_step<N>.jsonl)")
    return curves_from_rows(path, rows, x, y, default_name=name, notes=notes, y_scale=y_scale, bounded=bounded)
