"""Read prime-rl's orchestrator console: its stdout, or the log file ``uv run rl`` writes it to
(``<output_dir>/logs/attempt_<n>/orchestrator.log``, one per launch; ``logs/latest`` points at the
newest). The orchestrator logs each training step it ships and each evaluation it finishes as one
loguru line (``src/prime_rl/orchestrator/orchestrator.py``: ``log_train_batch``,
``finalize_eval_batch``; the format of ``src/prime_rl/utils/logger.py``, colours forced)::

    14:02:11 SUCCESS Step 12 |   41.3s | Reward 0.4123 | Trainable 120/128 (93.8%) | Turns 1.0 | Branches 1.0 | Max Off-Policy 1 | Error 0.0% | Cancelled 0.0% | Truncation 2.3%
    14:02:40 SUCCESS Evaluated gsm8k (Step 10) | Policy v9 |  2m 5s | Reward 0.5120 | Turns 1.0 | Branches 1.0 | Error 0.0% | Truncation 1.0%

Each is a row at its step: a step's ``time/step`` (seconds, as prime-rl prints them: to 0.1 s
under a minute, cut to the second, minute or hour above), ``train/reward``, ``train/trainable``,
``train/turns``, ``train/branches``, ``train/max_off_policy``, ``train/error``,
``train/cancelled``, ``train/truncation`` (percentages as fractions); a run of several training
environments adds a ``╰─ <env> | Ratio ... | Reward ...`` line per environment below the step's,
read as ``train/<env>/ratio``, ``train/<env>/reward``, ...; an evaluation's ``eval/<env>/reward``
(the mean reward of its non-errored rollouts, printed to 4 decimals: the pass rate where rewards are
0 or 1), ``eval/<env>/policy_version``, ``eval/<env>/time``, ``eval/<env>/turns``, ... The
evaluation before training is logged at step 1 (prime-rl's first step). With ``log.json_logging``
each line is a JSON object whose ``message`` is that text: read the same. The rest of the console
(the pipeline view, set-up lines, warnings) is passed over.

The console of a prime-rl from before June 2026 (``Step N | Time: 73.77s | Reward: 0.3887 | ...``, its
evaluations without their step) is read too: :mod:`scalerl.curves.primerl_legacy`.

* evaluations finish while training goes on, so an evaluation's line comes after later steps':
  it stays at its own step (and a ``cum:`` x is the one its step left);
* a console several launches printed into (``tee -a``, or the attempts' files joined) is read by
  the step: where it goes back, a run resumed from a checkpoint (what the abandoned attempt logged
  from there on is dropped) or started over (a run of its own: ``<stem>#1``, ``<stem>#2``, ...);
  after a ``Resuming orchestrator from checkpoint step N`` line (or the next attempt's file), a
  step logged again that the abandoned attempt logged last -- killed after step N + 1 and its
  evaluation -- is such a resume too: the resumed attempt's step and evaluation are the run's;
* the output directory (or its ``logs``) is read as that: the attempts' consoles in attempt order
  (``attempt_10`` after ``attempt_9``; ``logs/latest`` is no attempt of its own), one run named after
  the output directory; an empty or missing attempt log is skipped and said, one that cannot be read
  is an error;
* a step or evaluation line cut off (no ``Truncation``, the last figure prime-rl prints) or
  unreadable is skipped and counted.

prime-rl also writes every metric at full precision to ``<output_dir>/metrics.jsonl`` (its file
monitor, on by default), which the JSONL reader reads (name the file); the console is for a run
without it. An output directory holding both is read by its consoles, as is one holding its W&B
monitor's store (``wandb/``, read when named).
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from scalerl.curves.attempts import RESTART, RESUMED, split_attempts
from scalerl.curves.console import ANSI, shown_lines, skipped_lines_note, text_head
from scalerl.curves.data import Curve
from scalerl.curves.primerl_legacy import eval_row as legacy_eval
from scalerl.curves.primerl_legacy import evals_step as legacy_evals_step
from scalerl.curves.primerl_legacy import step_row as legacy_step
from scalerl.curves.rows import curves_from_rows
from scalerl.errors import InputError

STEP = "step"
#: loguru's line prefix in prime-rl's format: ``HH:mm:ss`` and the level, padded to 7.
_PREFIX = re.compile(r"^\s*(?:\d\d:\d\d:\d\d\s+)?(?:(?:TRACE|DEBUG|INFO|SUCCESS|WARNING|ERROR|CRITICAL)\s+)?")
#: What ``log.level=debug`` appends to each message: `` [file.py::line]``.
_DEBUG_SUFFIX = re.compile(r"\s\[[^\[\]\s]+::\d+\]\s*$")
_STEP = re.compile(r"^Step (\d+) \| (.*)$")
_EVAL = re.compile(r"^Evaluated (.+?) \(Step (\d+)\) \| Policy v(\d+) \| (.*)$")
_ENV = re.compile(r"^\s*╰─ (.+?)\s*\| (.*)$")
_FIELD = re.compile(r"^([A-Za-z][A-Za-z -]*?) (?:(-?\d+(?:\.\d+)?|nan|-?inf)(%?)|(\d+)/(\d+) \(\d+(?:\.\d+)?%\))$")
#: prime-rl's ``format_time``: ``800ms``, ``41.3s``, ``2m 5s``, ``1h 23m``, ``1d 2h``.
_TIME = re.compile(r"^(?:(\d+(?:\.\d+)?)ms|(\d+(?:\.\d+)?)s|(\d+)m (\d+)s|(\d+)h (\d+)m|(\d+)d (\d+)h)$")
#: The last figure of a step's and an evaluation's line: a line without it was cut off.
LAST = "truncation"
#: The text a line of either kind holds, colours and all: the cheap test before lines are parsed.
_ANYWHERE = re.compile(r"(?:Step \d+|Evaluated .+ \(Step \d+\) \| Policy v\d+) \| .*\| Reward[ :]")
#: How much of a file's start is searched for a step or evaluation line to tell a prime-rl console.
SNIFF_CHARS = 4_000_000
_RESUMING = re.compile(r"Resuming orchestrator from checkpoint step (\d+)")
#: A launch's directory in ``<output_dir>/logs`` (``latest`` links to the newest) and its console.
_ATTEMPT = re.compile(r"^attempt_(\d+)$")
CONSOLE = "orchestrator.log"


def seconds(text: str) -> float | None:
    """A duration as prime-rl's ``format_time`` prints it, in seconds; None where it is none."""
    found = _TIME.match(text.strip())
    if not found:
        return None
    g = found.groups()
    if g[0] is not None:
        return float(g[0]) / 1000
    if g[1] is not None:
        return float(g[1])
    for i, unit, sub in ((2, 60, 1), (4, 3600, 60), (6, 86400, 3600)):
        if g[i] is not None:
            return int(g[i]) * unit + int(g[i + 1]) * sub
    return None


def _figures(fields: list[str]) -> dict[str, float] | None:
    """``Label value`` fields (``Reward 0.4123``, ``Error 0.0%``, ``Trainable 120/128 (93.8%)``) as
    ``{label: number}``, percentages and counts out of a total as fractions; None where a field is
    unreadable or the line's last figure is missing (a line cut off)."""
    out: dict[str, float] = {}
    for field in fields:
        found = _FIELD.match(field.strip())
        if not found:
            return None
        label, number, percent, part, whole = found.groups()
        key = label.strip().lower().replace(" ", "_").replace("-", "_")
        if number is not None:
            out[key] = float(number) / (100 if percent else 1)
        else:
            out[key] = int(part) / int(whole) if int(whole) else 0.0
    return out if LAST in out and fields[-1].strip().endswith("%") else None


def _message(line: str) -> str:
    """The message of one console line: loguru's prefix and the debug suffix removed; of a JSON log
    line (``log.json_logging``), its ``message``."""
    if line.startswith("{"):
        try:
            record = json.loads(line)
        except ValueError:
            record = None
        if isinstance(record, dict) and isinstance(record.get("message"), str):
            return record["message"]
    return _DEBUG_SUFFIX.sub("", line[_PREFIX.match(line).end():])


def _parse(message: str, last: dict[str, Any] | None,
           evals_at: int | None = None) -> tuple[str, dict[str, Any] | None]:
    """``(kind, row)`` of one message line: ``"step"`` / ``"eval"`` (row None where it is cut off or
    unreadable), ``"env"`` (the figures added to ``last``, the step's row above it), or ``""``. The
    console of a prime-rl before June 2026 (:mod:`scalerl.curves.primerl_legacy`) is read too; its
    evaluations are of the step ``evals_at`` (what the line before them named)."""
    if message.startswith("Step "):
        old, row = legacy_step(message)
        if old:
            return "step", row
        found = _STEP.match(message)
        if not found:
            return "", None  # ("Step 5: empty train batch ...": a warning, no step line)
        time, *fields = found.group(2).split(" | ")
        figures, took = _figures(fields), seconds(time)
        if figures is None or took is None:
            return "step", None
        return "step", {STEP: int(found.group(1)), "time/step": took, **{f"train/{k}": v for k, v in figures.items()}}
    if message.startswith("Evaluated "):
        old, row = legacy_eval(message, evals_at)
        if old:
            return "eval", row
        found = _EVAL.match(message)
        if not found:
            return "eval", None
        env, step, policy, rest = found.groups()
        time, *fields = rest.split(" | ")
        figures, took = _figures(fields), seconds(time)
        if figures is None or took is None:
            return "eval", None
        return "eval", {STEP: int(step), f"eval/{env}/policy_version": int(policy), f"eval/{env}/time": took,
                        **{f"eval/{env}/{k}": v for k, v in figures.items()}}
    if last is not None and "╰─" in message:
        found = _ENV.match(message)
        figures = _figures(found.group(2).split(" | ")) if found else None
        if figures is not None:
            last.update({f"train/{found.group(1)}/{k}": v for k, v in figures.items()})
            return "env", last
    return "", None


def _messages(path: Path, head: str | None = None):
    """``(line number, message line)`` of the console (of ``head``, the start of it, where given), a
    multi-line message (a JSON line's) split."""
    lines = ((n, ANSI.sub("", line)) for n, line in enumerate(head.splitlines(), 1)) \
        if head is not None else shown_lines(path)
    for lineno, line in lines:
        for part in _message(line).split("\n"):
            yield lineno, part


def _rows(path: Path, head: str | None = None):
    """``(line number, kind, row or None)`` per step, evaluation and resume line, in log order."""
    last = None
    evals_at = last_step = None  # (an older console's evaluations: the step the line before them named)
    for lineno, message in _messages(path, head):
        kind, row = _parse(message, last, evals_at)
        if kind in ("step", "eval"):
            yield lineno, kind, row
            if kind == "step" and row is not None:
                last_step = row[STEP]
        elif kind == "" and (resumed := _RESUMING.search(message)):
            yield lineno, "resume", {STEP: int(resumed.group(1))}
        elif kind == "" and (named := legacy_evals_step(message, last_step)) is not None:
            evals_at = named
        if kind != "env":
            last = row if kind == "step" else None


def looks_like_primerl(path: Path) -> bool:
    """Whether the start of ``path`` holds a step or evaluation line of prime-rl's orchestrator."""
    head = text_head(path, SNIFF_CHARS)
    if head is None or "| Reward" not in head or not _ANYWHERE.search(head):
        return False
    return any(row is not None for _, kind, row in _rows(path, head) if kind != "resume")


def attempt_logs(path: Path) -> tuple[str, list[tuple[Path, str]]] | None:
    """The orchestrator consoles of a prime-rl output directory (``logs/attempt_<n>/orchestrator.log``)
    or of its ``logs`` directory, in attempt order (``attempt_10`` after ``attempt_9``), each with its
    name inside ``path``, and the run's name (the output directory's); None where ``path`` is neither.
    ``logs/latest``, a link to the newest attempt, is no attempt of its own. An attempt directory
    without an orchestrator log is listed (and said when read)."""
    if not path.is_dir():
        return None
    for logs in (path, path / "logs"):
        try:
            found = sorted((int(m.group(1)), d.name) for d in logs.iterdir()
                           if (m := _ATTEMPT.match(d.name)) and d.is_dir() and not d.is_symlink())
        except OSError:
            continue
        consoles = [(logs / name / CONSOLE, str((logs / name / CONSOLE).relative_to(path))) for _, name in found]
        if any(log.exists() for log, _ in consoles):
            return logs.resolve().parent.name, consoles  # (the output directory's name)
    return None


def _holds_text(log: Path) -> bool:
    """Whether an attempt's console holds anything (False: empty or missing); an InputError where it
    cannot be read. (Bytes that are not UTF-8 are read as a single console's are: replaced.)"""
    if not log.exists():
        return False
    try:
        with open(log, "rb") as f:
            return bool(f.read(1))
    except OSError as exc:
        raise InputError(f"{log}: cannot be read ({exc.strerror or exc})") from None


def _joined_rows(consoles: list[tuple[Path, str]], name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows (``step`` and the figures) of one console, or of several launches' in turn, in log order,
    resumes and restarts resolved (a run started over named ``<name>#2``), and notes; a console's
    shown name (where given) ends its note of lines skipped."""
    rows: list[dict[str, Any]] = []
    notes: list[str] = []
    resumed_from = None
    for path, shown in consoles:
        torn: list[int] = []
        if rows:  # another launch's console: its first step may be the one the last launch logged last
            rows.append({RESTART: True})
        for lineno, kind, row in _rows(path):
            if kind == "resume":
                if not rows:
                    resumed_from = row[STEP]
                else:  # where a launch resumed: the step it logs first may be the one logged last
                    rows.append({RESTART: RESUMED})
            elif row is None:
                torn.append(lineno)
            else:
                rows.append(row)
        notes += [f"{note} in {shown}" if shown else note for note in skipped_lines_note(torn, "step or evaluation")]
    if resumed_from is not None:
        notes.append(f"the log begins where the orchestrator resumed from the checkpoint at step {resumed_from}: "
                     "the steps before are in an earlier attempt's log (logs/attempt_<n>/orchestrator.log)")
    # Each launch is marked (its banner, its attempt's log): a step logged again without a mark is no
    # resume, nor worth a note -- the final evaluations of a run that ends on an evaluation step evaluate
    # that step again.
    rows, more = split_attempts(rows, STEP, name, late_rows=True, relogs=False)
    return rows, notes + more


def read_primerl_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    """Rows (``step`` and the figures) in log order, resumes and restarts resolved, and notes."""
    return _joined_rows([(path, "")], path.stem)


_NO_LINES = "no prime-rl orchestrator lines ('Step N | ... | Reward ...' or 'Evaluated ENV (Step N) | ...')"


def _read_output_dir(path: Path) -> tuple[str, list[dict[str, Any]], list[str]]:
    """The run's name, rows and notes of a prime-rl output directory (or its ``logs``): its attempts'
    consoles read as one console several launches printed into; empty ones skipped and said."""
    found = attempt_logs(path)
    if found is None:
        raise InputError(f"{path}: a directory without prime-rl's logs/attempt_<n>/orchestrator.log; "
                         "name the console or log file to read")
    name, consoles = found
    held = [(log, shown) for log, shown in consoles if _holds_text(log)]
    rows, notes = _joined_rows(held, name)
    if not rows:
        raise InputError(f"{path}: {_NO_LINES} in its attempts' logs ({', '.join(s for _, s in consoles)})")
    empty = [shown for log, shown in consoles if (log, shown) not in held]
    if empty:
        notes.append(f"{len(empty)} attempt log(s) empty or missing, skipped: {', '.join(empty)}")
    return name, rows, notes


def read_primerl(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """prime-rl's orchestrator console, or an output directory of them: see
    :mod:`scalerl.curves.primerl_log`; ``x`` may be ``step``, or ``cum:time/step`` (seconds of
    training so far)."""
    path = Path(path)
    if path.is_dir():
        name, rows, notes = _read_output_dir(path)
    else:
        name, (rows, notes) = path.stem, read_primerl_rows(path)
        if not rows:
            raise InputError(f"{path}: {_NO_LINES} in the file")
    return curves_from_rows(path, rows, x, y, default_name=name, notes=notes, y_scale=y_scale,
                            bounded=bounded, step_column=STEP)
