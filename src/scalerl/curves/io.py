"""Read compute-performance curves from the logs users have.

Formats (chosen from the path, or by ``fmt``):

* ``jsonl`` -- scalerl's run log (a header line, then rows; or its run directory), or any JSON-lines log;
* ``csv`` -- one run, or many with a ``run`` column; ``#`` comment lines allowed; comma, ``;``
  (with decimal commas), tab or ``|`` delimited (a Markdown table too, in any file: the lines around it
  passed over and said in the notes);
* ``wandb`` -- a W&B chart export (columns ``"<run> - <metric>"``, plus ``__MIN``/``__MAX``);
* ``tensorboard`` -- event files (a file, or a directory; each sub-directory is a run);
* ``verl`` -- verl's console log, the stdout of a run (``step:N - key:value - ...`` lines);
* ``skyrl`` -- SkyRL's console log (``trainer.logger=console``: ``Step N:`` over a printed dict);
* ``nemo-rl`` -- NeMo-RL's console log (``===== Step N/M =====`` over its ``Validation Results`` /
  ``Training Results`` / ``Timing`` sections);
* ``areal`` -- AReaL's console log or log file (``StatsLogger``'s ``Train step N/T done.`` and a
  table of the step's stats);
* ``roll`` -- ROLL's console log or driver log file (its ``stdout`` tracker: ``metrics_tag: {"step": N,
  "metrics": {...}}`` lines);
* ``prime-rl`` -- prime-rl's orchestrator console or ``logs/attempt_<n>/orchestrator.log`` (its
  ``Step N | ... | Reward ...`` and ``Evaluated ENV (Step N) | ...`` lines), or the output directory
  (or its ``logs``) holding them: the attempts' consoles in turn, one run;
* ``verl-file`` -- verl's file logger (``trainer.logger=[..., 'file']``): ``{"step": N, "data": {...}}`` lines;
* ``hf-trainer`` -- a Hugging Face / TRL ``trainer_state.json``, or the run directory holding
  its ``checkpoint-*`` directories (the latest one is read);
* ``dict-lines`` -- a console log of printed metric dicts, one per line (HF Trainer / TRL stdout; a
  console of one dict is told as one where a Trainer printed it -- its ``epoch`` -- or it is all the file holds);
* ``mlflow`` -- an MLflow tracking store: its SQLite database (``mlruns.db``), an ``mlruns``
  file-store directory, or a tracking server's address (``http(s)://host:port``, or the UI's
  address of an experiment or run); each MLflow run is a run;
* ``wandb-run`` -- W&B's local run file (``run-<id>.wandb``), a run directory, or a ``wandb``
  directory of runs (needs the ``wandb`` package);
* ``trackio`` -- a Trackio project's SQLite database (``~/.cache/huggingface/trackio/<project>.db``),
  its Parquet export (a Trackio Space's dataset), or the directory of them; each Trackio run is a run;
* ``parquet`` -- a Parquet table of metrics (pandas' ``to_parquet``: a row per step, a column per
  metric; one run, or one per value of a ``run`` column);
* ``swanlab`` -- SwanLab's local run file (``*.swanlab``), a run directory, or a ``swanlog``
  directory of runs (swanlab >= 0.8's files need the ``swanlab`` package);
* ``clearml`` -- a ClearML offline session (``offline-<id>/`` with ``metrics.jsonl`` and
  ``task.json``, or its ``.zip``), or the ``offline`` directory of several;
* ``eval-dumps`` -- evaluations a trainer dumps to disk: verl's ``validation_data_dir`` (a
  ``<step>.jsonl`` of samples per validation), SkyRL's ``dumped_evals`` directory, or NeMo-RL's
  log directory (``logs/exp_<NNN>/val_data_step<N>.jsonl``; the ``logs`` directory of its launches);
* ``lm-eval`` -- lm-evaluation-harness results of a series of checkpoints (``results_<date>.json``
  per evaluation, or the ``--output_path`` directory of them): x ``step``, the checkpoint's;
* ``torchtune`` -- torchtune's ``DiskLogger`` file (``log_<time>.txt``: ``Step N | name:value ...``
  lines), its ``log_dir`` of them (one run), or a console its ``StdoutLogger`` printed into;
* ``deepspeed-chat`` -- the console of DeepSpeed-Chat's RLHF stage (``epoch: E|step: S|ppo_ep: P|act_loss: ...``
  lines, each with the ``average reward score: ...`` line after it);
* ``mlx-lm`` -- the console of mlx-lm's ``mlx_lm.lora`` or mlx-lm-lora's trainers (``Iter N: Train loss ...,
  Trained Tokens ...`` and ``Iter N: Val loss ...`` reports; mlx-lm-lora's GRPO report blocks; mlx-lm's
  table UI of June 2026);
* ``lighteval`` -- lighteval results of a series of checkpoints (``results/<model>/results_<date>.json``
  per evaluation, or the ``--output-dir`` directory): x ``step``, the checkpoint's.

The user names the x (compute) and y (metric) columns. An unknown name is an error that
lists the available ones. Missing, NaN and infinite values are dropped and counted. In
every format but the W&B chart export (one metric per column: no timers), x may be
``cum:COL``, the running total of a per-step column (``cum:timing_s/step``), or ``cum:GLOB``,
of every column matching it (``cum:timing/*``).
"""

from __future__ import annotations

import fnmatch
import itertools
import math
import numbers
import json
import os
import re
import shlex
from dataclasses import replace
from pathlib import Path
from typing import Callable

from scalerl.curves.areal_log import looks_like_areal, read_areal
from scalerl.curves.clearml_log import is_clearml_session, read_clearml
from scalerl.curves.console import ANSI, cut_last_line
from scalerl.curves.csv_log import looks_like_markdown_table, read_csv
from scalerl.curves.data import Curve
from scalerl.curves.deepspeed_chat_log import looks_like_deepspeed_chat, read_deepspeed_chat
from scalerl.curves.dict_lines_log import lone_printed_dict, looks_like_dict_lines, read_dict_lines
from scalerl.curves.eval_dumps import is_eval_dumps, read_eval_dumps
from scalerl.curves.hf_trainer_log import is_trainer_state, read_hf_trainer
from scalerl.curves.jsonl_log import read_jsonl
from scalerl.curves.lighteval_log import is_lighteval, read_lighteval
from scalerl.curves.lm_eval_log import is_lm_eval, read_lm_eval
from scalerl.curves.mlflow_log import is_mlflow_store, read_mlflow
from scalerl.curves.mlflow_server import is_server
from scalerl.curves.mlx_lm_log import looks_like_mlx_lm, read_mlx_lm
from scalerl.curves.nemo_rl_log import looks_like_nemo_rl, read_nemo_rl
from scalerl.curves.primerl_log import attempt_logs, looks_like_primerl, read_primerl
from scalerl.curves.parquet_log import is_parquet, read_parquet
from scalerl.curves.roll_log import looks_like_roll, read_roll
from scalerl.curves.rows import CUMULATIVE, UnknownColumn, likely_columns, named_reason
from scalerl.curves.skyrl_log import looks_like_skyrl, read_skyrl
from scalerl.curves.sqlite_db import is_sqlite
from scalerl.curves.swanlab_log import is_swanlab_run, read_swanlab
from scalerl.curves.tensorboard_log import read_tensorboard
from scalerl.curves.torchtune_log import disk_logs, looks_like_torchtune, read_torchtune
from scalerl.curves.trackio_log import is_trackio, read_trackio
from scalerl.curves.unpack import (ARCHIVE_ROOTS, COMPRESSED, STDIN, file_tail, stdin_copy, stream_copy, unwrapped,
                                   without_last_line, wrapping)
from scalerl.curves.verl_file_log import looks_like_verl_file, read_verl_file
from scalerl.curves.verl_log import looks_like_verl, read_verl
from scalerl.curves.wandb_run_log import is_wandb_run, read_wandb_run
from scalerl.errors import InputError
from scalerl.runlog import RUNLOG


#: The shortest prefix of a run id ``--run`` matches (W&B ids have 8 characters; MLflow's UI shows 8 of 32).
MIN_ID_PREFIX = 6


def _pick_runs(path: Path, curves: list[Curve], run: str | None) -> list[Curve]:
    """The runs ``run`` names: by name, else by the tracker's run id (or its first characters: what a
    W&B or MLflow address shows)."""
    if run is None:
        return curves
    picked = [c for c in curves if c.name == run]
    if not picked:
        picked = [c for c in curves if c.run_id and (c.run_id == run or
                                                     (len(run) >= MIN_ID_PREFIX and c.run_id.startswith(run)))]
    if len({c.run_id for c in picked}) > 1 and not any(c.name == run for c in picked):
        names = ", ".join(f"{c.name!r} ({c.run_id})" for c in picked)
        raise InputError(f"{path}: {run!r} begins the ids of {len(picked)} runs: {names}; give more of the id")
    if not picked:
        # A run of the file that could not be read (left out, the others read): why, not "no run named".
        reason = next((why for c in curves for name, why in c.left_out if name == run), None)
        if reason is not None:
            said = named_reason(run, reason)
            raise InputError(said if str(path) in said else f"{path}: {said}")
        names = ", ".join(repr(c.name) + (f" ({c.run_id})" if c.run_id and c.run_id != c.name else "") for c in curves)
        raise InputError(f"{path}: no run named {run!r}; runs in the file: {names}")
    return picked


READERS: dict[str, Callable[..., list[Curve]]] = {
    "csv": read_csv,
    "wandb": read_csv,  # detected from the header; the name is accepted for clarity
    "jsonl": read_jsonl,
    "tensorboard": read_tensorboard,
    "verl": read_verl,
    "verl-file": read_verl_file,
    "skyrl": read_skyrl,
    "nemo-rl": read_nemo_rl,
    "hf-trainer": read_hf_trainer,
    "mlflow": read_mlflow,
    "dict-lines": read_dict_lines,
    "wandb-run": read_wandb_run,
    "trackio": read_trackio,
    "swanlab": read_swanlab,
    "parquet": read_parquet,
    "eval-dumps": read_eval_dumps,
    "clearml": read_clearml,
    "lm-eval": read_lm_eval,
    "lighteval": read_lighteval,
    "roll": read_roll,
    "areal": read_areal,
    "prime-rl": read_primerl,
    "torchtune": read_torchtune,
    "mlx-lm": read_mlx_lm,
    "deepspeed-chat": read_deepspeed_chat,
}


#: The trackers' stores, each recognised by its own probe (a file, or a directory of them); tried in
#: this order, for files and directories alike.
TRACKER_PROBES: tuple[tuple[str, Callable[[Path], bool]], ...] = (
    ("mlflow", is_mlflow_store),
    ("wandb-run", is_wandb_run),
    ("swanlab", is_swanlab_run),
    ("trackio", is_trackio),
    ("clearml", is_clearml_session),
)

#: The evaluation harnesses' results of a series of checkpoints (a results file, or a directory of
#: them: one that holds no tracker's store nor event files).
HARNESS_PROBES: tuple[tuple[str, Callable[[Path], bool]], ...] = (
    ("lm-eval", is_lm_eval),
    ("lighteval", is_lighteval),
)

#: The consoles -- a process's stdout, written line by line: a last line a kill cut off inside a number
#: (:func:`~scalerl.curves.console.cut_last_line`) is left out of them. (Not the JSON-lines formats nor
#: printed dicts: a row cut short there lacks its closing brace, and their readers skip it as torn. Not a
#: CSV: one is more often a finished export whose last row has no newline after it -- Google Sheets,
#: a hand-made file -- than a stream cut by a kill, and that row is data; the CSV reader leaves it out
#: only where its last number is visibly cut (shorter than its column's fixed precision), and refuses a
#: row cut short of its columns.)
LINE_FORMATS = frozenset({"verl", "skyrl", "nemo-rl", "roll", "areal", "prime-rl", "torchtune",
                          "mlx-lm", "deepspeed-chat"})

#: The formats whose runs are told apart by a column of their rows (``run_column``).
RUN_COLUMN_FORMATS = ("csv", "jsonl", "parquet")


def _first_line(path: Path) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return next((line.strip() for line in f if line.strip()), "")


def _is_binary(path: Path) -> bool:
    """NUL bytes in the first 8 KiB: no text log (nor one of the text formats read here)."""
    with open(path, "rb") as f:
        return b"\0" in f.read(8192)


def _is_json(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def has_event_files(path: Path) -> bool:
    """Whether directory ``path`` holds a TensorBoard event file (a directory named like one is none: it was
    read as one, an IsADirectoryError's traceback)."""
    return any(p.is_file() for p in path.rglob("*tfevents*"))


def _run_directory(path: Path) -> bool:
    """Whether directory ``path`` is read as one run's log: a scalerl run directory, a Trainer's
    output directory, event files, a tracker's store."""
    return ((path / RUNLOG).is_file() or is_trainer_state(path) or has_event_files(path)
            or any(probe(path) for _, probe in TRACKER_PROBES))


def _files_held(path: Path) -> str:
    """What a directory holds, for an error that asks for the log among its files."""
    files = sorted(str(f.relative_to(path)) for f in itertools.islice(path.rglob("*"), 1000) if f.is_file())
    return (f"it holds {', '.join(files[:6])}{', ...' if len(files) > 6 else ''}: name the log among them"
            if files else "it holds no files")


def _check_event_files(path: Path) -> None:
    """A directory of no known log: saying "no TensorBoard event files" of one that holds good.csv
    sent the user looking for TensorBoard; what it holds is named instead, to pick the log from."""
    if has_event_files(path):
        return
    held = _files_held(path)
    runs = [d for d in itertools.islice(sorted(path.iterdir()), 200) if d.is_dir() and _run_directory(d)]
    if len(runs) > 1:  # a folder of run directories (TRL's output_dir per run, a sweep's)
        held += (f" -- or, a directory of {len(runs)} runs ({', '.join(d.name for d in runs[:3])}"
                 f"{', ...' if len(runs) > 3 else ''}): compare and calibrate take each of them, "
                 f"as {path}/*/ lists them; fit and backtest one")
    raise InputError(f"{path}: a directory holding no log of a format read as a directory (a scalerl run directory, "
                     "TensorBoard event files, an MLflow, W&B, Trackio, SwanLab or ClearML store, a trainer_state.json "
                     "run directory, a prime-rl output directory, dumped evaluations, lm-evaluation-harness or "
                     f"lighteval results); {held}")


#: W&B's end-of-run block in a console (``wandb: Run summary:``), and where it says the run's files are.
_WANDB_SUMMARY = "wandb: Run summary:"
_WANDB_LOGS_AT = re.compile(r"wandb: Find logs at: (\S+?)/logs\b")


def _wandb_summary_only(path: Path) -> str | None:
    """Where a console that holds W&B's run summary (and no log of a format read here: asked last) says its
    run's files are -- ``wandb/run-<date>-<id>``, or ``wandb/latest-run`` where it names none; None for a
    console without the summary. Read as CSV (a .txt) the summary gave "no y column; available: 'Training...'"."""
    tail = ANSI.sub("", file_tail(path).decode("utf-8", errors="replace"))
    if _WANDB_SUMMARY not in tail:
        return None
    found = _WANDB_LOGS_AT.search(tail)
    return found.group(1) if found else "wandb/latest-run"


#: The consoles told by their lines (a file named like none of the formats read by name), tried in this order.
_CONSOLE_PROBES: tuple[tuple[str, Callable[[Path], bool]], ...] = (
    ("verl", looks_like_verl),
    ("areal", looks_like_areal),
    ("roll", looks_like_roll),  # before dict-lines: ROLL's tracker line is a JSON dict after a prefix
    ("skyrl", looks_like_skyrl),  # before dict-lines: SkyRL's one-line status dicts are no metric rows
    ("nemo-rl", looks_like_nemo_rl),  # before dict-lines: NeMo-RL prints its config as a dict
    ("prime-rl", looks_like_primerl),  # before JSON lines: with log.json_logging, each line is a JSON record
    ("torchtune", looks_like_torchtune),  # before the CSV guess: 'Step 1 | loss:0.5 ...' read as '|'-delimited
    ("deepspeed-chat", looks_like_deepspeed_chat),  # before the CSV guess: its step lines are '|'-delimited
    ("mlx-lm", looks_like_mlx_lm),  # before dict-lines: mlx-vlm prints a dict beside each report
)


def detect_format(path: Path) -> str:
    """The format (a key of :data:`READERS`) of the log at ``path``, from its name and what it holds;
    :class:`InputError` where it is none read here, saying what it is and what to do."""
    if path.is_dir() and is_trainer_state(path):
        return "hf-trainer"
    if is_eval_dumps(path):
        return "eval-dumps"
    found = next((fmt for fmt, probe in TRACKER_PROBES if probe(path)), None)
    if found:
        return found
    if path.is_dir():
        return _directory_format(path)
    return _file_format(path)


def _directory_format(path: Path) -> str:
    """A directory that is no tracker's store nor a Trainer's run directory."""
    if attempt_logs(path) is not None:  # prime-rl's output directory (or its logs): the attempts' consoles
        return "prime-rl"
    if disk_logs(path) is not None:  # torchtune's log_dir: a DiskLogger file per start of the recipe
        return "torchtune"
    if not has_event_files(path):
        harness = next((fmt for fmt, probe in HARNESS_PROBES if probe(path)), None)
        if harness:
            return harness
    _check_event_files(path)
    return "tensorboard"  # a directory of nothing else: event files


def _file_format(path: Path) -> str:
    """A file that is no tracker's store: the binary formats, then the formats told by the file's name."""
    name = path.name.lower()
    if name.endswith(".parquet") or is_parquet(path):
        return "parquet"
    if is_sqlite(path):
        raise InputError(f"{path}: an SQLite database that is neither an MLflow store ('runs' and 'metrics' tables) "
                         "nor a Trackio project ('metrics' with run_name, step, timestamp, metrics); "
                         "export the metrics as CSV/JSONL")
    if "tfevents" in name:
        return "tensorboard"
    if name.endswith(".json") and is_trainer_state(path):
        return "hf-trainer"
    if name.endswith(".json") and (harness := next((fmt for fmt, probe in HARNESS_PROBES if probe(path)), None)):
        return harness
    if _is_binary(path):
        raise InputError(f"{path}: a binary file, not a log of a format read here ({', '.join(READERS)}; compressed "
                         "logs and tar or zip archives are unpacked first); export the metrics as CSV/JSONL")
    if looks_like_verl_file(path):
        return "verl-file"
    if name.endswith((".jsonl", ".json", ".ndjson")):
        return "jsonl"
    if name.endswith((".csv", ".tsv")):
        return "csv"
    return _text_format(path, name)


def _text_format(path: Path, name: str) -> str:
    """A text file named like no format: by its lines."""
    console = next((fmt for fmt, probe in _CONSOLE_PROBES if probe(path)), None)
    if console:
        return console
    first = _first_line(path)
    if first.startswith(("{", "[")) and (_is_json(first) or first in ("{", "[")):
        return "jsonl"  # JSON lines, or a JSON document (pretty-printed: its first line a lone bracket)
    if looks_like_dict_lines(path):
        return "dict-lines"
    if looks_like_markdown_table(path):  # (a .log of a pasted table; a .txt or .md one is read as CSV anyway)
        return "csv"
    _check_text_log(path, name)
    # .txt or an unknown extension: by the first non-blank character.
    if first:
        return "jsonl" if first.startswith(("{", "[")) else "csv"
    raise InputError(f"{path}: the file is empty")


def _check_text_log(path: Path, name: str) -> None:
    """:class:`InputError` for a text file that holds no curve: W&B's run summary alone, one printed dict
    among other lines, or a console (``.log``, ``.out``, ``.err``) of no framework read here."""
    if (run_dir := _wandb_summary_only(path)) is not None:
        raise InputError(f"{path}: a console whose only metrics are W&B's 'Run summary' (each metric's last value) and "
                         "'Run history' sparklines: no curve; read the run's local W&B files instead -- "
                         f"scalerl fit {shlex.quote(str(run_dir))} (the directory W&B names in 'Find logs at:')")
    if lone_printed_dict(path):
        raise InputError(f"{path}: one printed dict ({{'key': value, ...}}) among other lines, with no step printed "
                         "before it nor a Trainer's 'epoch' in it; if it is a row of metrics, give --format dict-lines")
    if name.endswith((".log", ".out", ".err")):
        raise InputError(f"{path}: a text log without verl step lines ('step:N - key:value - ...'), ROLL "
                         f"'metrics_tag:' lines, AReaL 'Train step N/T done.' stats tables, SkyRL 'Step N:' blocks, NeMo-RL 'Step N/M' blocks, prime-rl 'Step N | ...' lines, torchtune 'Step N | name:value ...' lines, mlx-lm 'Iter N: ...' reports or table rows, DeepSpeed-Chat 'epoch: E|step: S|ppo_ep: ...' lines or printed metric dicts ({{'key': value, ...}}); give --format ({', '.join(READERS)}) or export "
                         "the metrics as CSV/JSONL")


def read_curves(
    path,
    x: str,
    y: str,
    *,
    run: str | None = None,
    fmt: str | None = None,
    y_scale: float = 1.0,
    bounded: bool = True,
    run_column: str | None = None,
) -> list[Curve]:
    """Every run in ``path`` (or only ``run``) as :class:`Curve` objects. ``run_column`` names the
    column that tells runs apart in a CSV / JSONL log (default ``run``); the other formats define
    their runs themselves. ``path`` ``-`` reads standard input. A ``y`` with ``*``, ``?`` or ``[``
    that is no column of the log is a glob: every metric it matches, each run's curve of each
    named ``"<run> | <metric>"`` (several evaluation sets, ``val-core/*/reward/mean@1``)."""
    if not (isinstance(y_scale, numbers.Real) and not isinstance(y_scale, bool) and math.isfinite(y_scale)
            and y_scale > 0):  # (numpy's scalars too: review am)
        # 0 made every y 0, NaN every row "dropped as NaN" (review al); the command line checks its --y-scale
        raise InputError(f"y_scale must be a positive number (0.01 for percentages), got {y_scale!r}")
    again = dict(x=x, y=y, run=run, fmt=fmt, y_scale=y_scale, bounded=bounded, run_column=run_column)
    if os.fspath(path) == STDIN:
        with stdin_copy() as copy:
            return _read_instead(copy, "<stdin>", again)
    if is_server(path):  # an MLflow tracking server's address (http://host:port, or its UI's): no file
        if fmt not in (None, "mlflow"):
            raise InputError(f"{path}: an address is read as an MLflow tracking server, not as {fmt!r}")
        fmt = "mlflow"
    else:
        path = Path(os.fspath(path))
        if not path.exists():
            raise InputError(f"{path}: no such file or directory")
        if not path.is_file() and not path.is_dir():  # a pipe or FIFO: read once, into a file
            with stream_copy(path) as copy:
                return _read_instead(copy, str(path), again)
        _check_not_empty(path)
        with unwrapped(path) as inner:
            if inner != path:  # compressed, an archive, or UTF-16: read what it holds
                return _read_instead(inner, str(path), again)
        if path.is_dir() and (path / RUNLOG).is_file() and fmt in (None, "jsonl"):
            path = path / RUNLOG  # a scalerl run directory: its run log
        _check_not_empty(path)
        fmt = fmt or detect_format(path)
        if fmt in LINE_FORMATS and path.is_file() and (cut := cut_last_line(path)) is not None:
            return _read_without_cut_line(path, cut, {**again, "fmt": fmt})
    if fmt not in READERS:
        raise InputError(f"unknown log format {fmt!r}; known: {', '.join(READERS)}")
    if any(c in y for c in _GLOB):  # here, after unpacking and detection: each metric's read does neither again
        resolved = {**again, "fmt": fmt}
        metrics = _matching(path, y, resolved)
        if metrics is not None:
            return _read_metrics(path, metrics, resolved)
    curves = _read_format(path, fmt, x, y, y_scale=y_scale, bounded=bounded, run_column=run_column)
    if not curves:
        raise InputError(f"{path}: no run has values in column {y!r}")
    return _already_fractions(_pick_runs(path, curves, run), y, y_scale)


def _already_fractions(curves: list[Curve], y: str, y_scale: float) -> list[Curve]:
    """``curves`` with a note where a y_scale below 1 (``--y-scale 0.01``, for a log in percent) met values that
    were fractions already -- every one in [0, 1] before scaling: the fits then saw pass rates 100x too small, and
    nothing said so (review dh: A = 0.0079)."""
    scaled = [c for c in curves if c.y.size]
    if not (y_scale < 1 and scaled and all(float(abs(c.y).max()) <= y_scale for c in scaled)):
        return curves
    note = (f"every {y!r} value was in [0, 1] before --y-scale {y_scale:g} (fractions already?): the fits see them "
            f"{1 / y_scale:g}x smaller -- drop --y-scale for a log of fractions")
    return [replace(c, notes=(*c.notes, note)) for c in curves]


def _check_not_empty(path: Path) -> None:
    if path.is_file() and path.stat().st_size == 0:
        raise InputError(f"{path}: the file is empty")


def _read_without_cut_line(path: Path, cut: str, args: dict) -> list[Curve]:
    """A console whose last line a kill cut off (``cut``): read without it, and said in each curve's notes."""
    with without_last_line(path) as whole:
        curves = _read_instead(whole, str(path), args)
    note = (f"the file ends inside its last line, with no newline after it (a run killed while writing): "
            f"that line ({cut[-50:]!r}) left out -- its last number may have been cut short")
    return [replace(c, notes=(*c.notes, note)) for c in curves]


def _read_format(path, fmt: str, x: str, y: str, *, y_scale: float, bounded: bool,
                 run_column: str | None) -> list[Curve]:
    """The curves ``fmt``'s reader reads from ``path``; its errors with what else the path tells (tracker
    logs beside dumped evaluations, a misnamed compressed file)."""
    kwargs = {"y_scale": y_scale, "bounded": bounded}
    if run_column is not None:
        if fmt not in RUN_COLUMN_FORMATS:
            raise InputError(f"--run-column applies to {', '.join(RUN_COLUMN_FORMATS)} logs; a {fmt} log "
                             "names its runs itself (--run picks one)")
        kwargs["run_column"] = run_column
    try:
        return READERS[fmt](path, x, y, **kwargs)
    except IsADirectoryError:  # (--format csv, jsonl, a console's: a reader of one file, given a directory)
        raise InputError(f"{path}: a directory, and --format {fmt} reads one file; {_files_held(Path(path))}") from None
    except UnknownColumn as exc:
        beside = _tracker_logs_beside(path) if fmt == "eval-dumps" and _NO_COLUMN not in (x, y) else []
        if beside:
            raise exc.reworded(f"{exc}. The directory also holds tracker logs, which have the trainer's other "
                               f"metrics (timers, training reward): read {' or '.join(str(b) for b in beside)}") from None
        raise
    except InputError as exc:
        misnamed = _misnamed(path)
        if misnamed:
            raise InputError(f"{exc} ({misnamed})") from None
        raise


def _misnamed(path) -> str:
    """What a file named as compressed (``log.csv.gz``) that is not says, for the error it gives: read as
    the text it is, a plain file renamed .gz failed with "a header but no rows" and no word of why."""
    suffix = Path(str(path)).suffix.lower()
    kinds = {s: name for name, _, s in COMPRESSED.values()}
    if suffix in kinds and Path(str(path)).is_file() and wrapping(Path(str(path))) is None:
        return f"the name ends in {suffix}, but the file is not {kinds[suffix]}-compressed: is it the file meant?"
    return ""


#: Where a trainer that dumps its evaluations keeps its trackers' logs beside them (NeMo-RL:
#: ``logs/exp_<NNN>/{tensorboard,wandb,swanlab,mlflow}`` when those trackers are on).
_TRACKER_DIRS = ("tensorboard", "wandb", "swanlab", "mlflow")


def _tracker_logs_beside(path: Path) -> list[Path]:
    """Tracker directories inside a directory of dumped evaluations (or one level down)."""
    if not path.is_dir():
        return []
    return sorted(d for pattern in ("*", "*/*") for d in path.glob(pattern)
                  if d.is_dir() and d.name in _TRACKER_DIRS)[:4]


def _read_instead(inner: Path, shown: str, args: dict) -> list[Curve]:
    """Read ``inner`` -- a temporary copy or unpacking of what the user named -- with messages and
    curves (their notes and the reasons for runs left out too) naming ``shown``, the user's name for it."""
    try:
        curves = read_curves(inner, **args)
    except UnknownColumn as exc:
        raise exc.reworded(str(exc).replace(str(inner), shown)) from None
    except InputError as exc:
        message = str(exc).replace(str(inner), shown)
        if inner.is_dir() and inner.name in ARCHIVE_ROOTS:
            top = sorted(p.name for p in inner.iterdir())
            message += (f" (the archive holds {len(top)} entries at its top: {', '.join(top[:6])}"
                        f"{', ...' if len(top) > 6 else ''}; unpack it and name one)")
        raise InputError(message) from None

    def named(text: str) -> str:
        # The notes and the reasons for runs left out too: said after the copy is gone, they named a
        # temporary path that no longer exists.
        return text.replace(str(inner), shown)

    return [replace(c, source=shown, notes=tuple(map(named, c.notes)),
                    left_out=tuple((name, named(why)) for name, why in c.left_out)) for c in curves]


#: A column name no log has: asking for it makes a reader say which columns the log has.
_NO_COLUMN = "\x00"
#: The characters that make ``--y`` a glob over the log's metrics.
_GLOB = "*?["
#: Between a run's name and a metric's in the curves of a ``--y`` glob.
METRIC_SEP = " | "


def _matching(path, pattern: str, args: dict) -> list[str] | None:
    """The log's metrics ``pattern`` matches; None where ``pattern`` is itself one of its columns."""
    rows, text = log_column_listing(path, fmt=args["fmt"], run_column=args["run_column"])
    columns = list(rows)
    if pattern in columns:
        return None
    # The x column (and a run column) is never a metric of its own: a table with a column per run
    # read with --y '*' would otherwise try the step as a curve too and say it was left out.
    axes = {args.get("x"), args.get("run_column") or "run"}
    matches = [c for c in fnmatch.filter(columns, pattern) if c not in axes]
    if not matches:
        likely = likely_columns("y", columns, text)[:30]  # (text: no metric -- review fm)
        raise InputError(f"{path}: no metric matches --y {pattern!r}; metric-like columns: "
                         f"{', '.join(map(repr, likely)) or '(none)'}")
    return matches


def _read_metrics(path, metrics: list[str], args: dict) -> list[Curve]:
    """Each run's curve of each metric, named ``"<run> | <metric>"``; a metric no run can be a curve of
    is left out, said in the notes (an error only when none can). ``run`` may name a run (its curve
    of each metric) or one of these names (that run's curve of that metric)."""
    run = args["run"]
    if run is not None and METRIC_SEP in run:
        run, metric = run.split(METRIC_SEP, 1)
        if metric not in metrics:
            raise InputError(f"{path}: {metric!r} is not among the metrics --y matches: {', '.join(metrics)}")
        metrics, args = [metric], {**args, "run": run}
    curves, left_out = [], []
    for metric in metrics:
        try:
            found = read_curves(path, **{**args, "y": metric})
        except InputError as exc:
            left_out.append(f"{metric} ({exc})")
            continue
        curves += [replace(c, name=f"{c.name}{METRIC_SEP}{metric}") for c in found]
    if _column_runs(path, args["fmt"], args["run_column"], curves):
        curves = [replace(c, column_run=True) for c in curves]
    if not curves:
        raise InputError(f"{path}: none of the {len(metrics)} matching metrics reads as a curve: {'; '.join(left_out)}")
    if left_out:
        note = f"{len(left_out)} matching metric(s) left out: " + "; ".join(left_out)
        curves = [replace(c, notes=(*c.notes, note)) for c in curves]
    return curves


#: The formats whose table may hold a column per run (a W&B chart export names its runs itself).
_TABLE_FORMATS = ("csv", "parquet")


def _column_runs(path, fmt: str, run_column: str | None, found: list[Curve]) -> bool:
    """Whether a ``--y`` glob's columns of ``path`` (``found``: their curves, as read) are runs, a column
    each (:attr:`Curve.column_run`): a CSV or Parquet table that names no run -- no run column, nor a W&B
    export's ``"<run> - <metric>"``: every curve then has the reader's name for an unnamed run, the
    file's -- is a table with a column per run, which scalerl tells users to read with ``--y '*'`` (its
    error for a table with a row per run). Decided here, once: calibrate counted such columns as runs in
    its header and provenance and held them out as one training."""
    return (fmt in _TABLE_FORMATS and run_column is None and len(found) > 1
            and all(c.name.split(METRIC_SEP, 1)[0] == Path(os.fspath(path)).stem for c in found))


def log_columns(path, **kwargs) -> list[str]:
    """The columns (metrics) a log offers for ``--x`` / ``--y``, as its reader sees them."""
    return list(log_column_rows(path, **kwargs))


def log_column_rows(path, **kwargs) -> dict[str, int | None]:
    """The columns a log offers (as :func:`log_columns`), each with the number of rows that give it a
    value where the reader counted them (the row logs: CSV, JSONL, consoles), else None."""
    return log_column_listing(path, **kwargs)[0]


def log_column_listing(path, **kwargs) -> tuple[dict[str, int | None], frozenset[str]]:
    """:func:`log_column_rows`, and the columns whose values are never a number where the reader looked
    (text: a dataset summary, a name), which no listing offers as a metric."""
    try:
        read_curves(path, _NO_COLUMN, _NO_COLUMN, **kwargs)
    except UnknownColumn as exc:
        return {c: exc.rows.get(c) for c in exc.available if not c.startswith(CUMULATIVE)}, exc.text
    return {}, frozenset()


def read_curve(path, x: str, y: str, *, run: str | None = None, **kwargs) -> Curve:
    """Exactly one run; several runs in the file need ``run``."""
    curves = read_curves(path, x, y, run=run, **kwargs)
    if len(curves) > 1:
        names = ", ".join(repr(c.name) for c in curves)
        # Said for both callers: the command line's flag, and read_curve's keyword (a notebook has no --run).
        raise InputError(f"{path}: holds {len(curves)} runs ({names}); choose one with --run NAME "
                         "(from Python: read_curve(..., run=NAME), or read_curves for all of them)")
    return curves[0]
