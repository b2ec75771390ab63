"""Read a console log whose metrics are printed dicts, one per line: the stdout of a Hugging Face
``Trainer`` / TRL trainer (``{'loss': '0.01', 'num_tokens': '1406', 'reward': '0.56', 'epoch':
'0.04'}``, then ``{'eval_loss': ..., 'eval_reward': ...}`` at each evaluation), or of any script
that prints ``print(metrics)``.

Each dict is a row, in the order printed; :func:`scalerl.curves.rows.curves_from_rows` makes
curves of them (a training row is not an evaluation; an evaluation row takes ``num_tokens`` from
the training row before it). What else the log holds -- warnings, progress bars (a dict written
over a bar's ``\\r`` line is found after it), colours -- is passed over. A dict spread over several
lines (``pprint``'s key per line, or a paste broken at its commas) is one row. transformers >= 5 prints
values as strings rounded to 4 significant digits (``'1.463'``): they are read as numbers, and the
log's precision is that; ``trainer_state.json`` (the ``hf-trainer`` format) keeps every digit.

A step printed before a dict on its line is the row's ``step`` (where the dict has none): OpenRLHF
logs ``✨ Global step 10: {...}`` and ``Evaluation completed in 0:01:23, global_step 10,
eval_metrics: {...}`` (its asynchronous trainer ``Eval at step 10: {...}``, after printing the same
metrics without a step as ``Async evaluation completed: {...}``: that copy is dropped), as do
scripts that print ``step 10: {...}``. slime prints its rollouts' and evaluations' metrics as
``perf 10: {...}`` and ``eval 10: {...}`` at the rollout's number (its training ``step N: {...}``
counts optimizer steps): that number is the row's ``rollout_id``, and ``rollouts`` the rollouts
trained on when it was printed (``eval 10`` follows rollout 10's training: 11; the evaluation
before training, also ``eval 0``: 0) -- the x for an evaluation's compute.

A console that several trainings printed into (``tee -a``) is told apart by the ``epoch`` every dict of
a Hugging Face ``Trainer`` carries, or else by the printed rollout number or step: where it goes back to
the start, a new run (``<stem>#2``); where it goes back less, a training resumed from a checkpoint, and
what the abandoned attempt printed from there on is dropped. A ``Trainer`` launch at INFO prints a
banner (``***** Running training *****``), and, where it resumes a checkpoint, ``Resuming training from
checkpoint ...`` after it: a banner without that line before the launch's first dict is a fresh training
-- a new run, wherever its epoch starts (a training on another data set appended); with it, a resume.
Unsloth prints its own banner instead, which says nothing of a checkpoint: a new run where the training
before it printed the ``Trainer``'s end-of-training summary (``train_runtime``, ``train_loss``) and the
banner's ``Num examples`` or ``Total batch size`` differs from the launch before, else left to the epoch. A ``Trainer``'s
printed epoch is rounded (several steps print one value), so an epoch printed again is no resume by
itself -- but after a resume's banner it is: a resumed ``Trainer`` may evaluate the checkpoint it loaded
again (``eval_on_start``; axolotl with eval_steps = save_steps), at its epoch, and that evaluation takes
the place of the abandoned attempt's, the rows of the checkpoint's step of another kind kept
(:func:`scalerl.curves.attempts.split_attempts`).
"""

from __future__ import annotations

import ast
import json
import re
from pathlib import Path
from typing import Any

from scalerl.curves.console import ANSI, text_head
from scalerl.curves.data import Curve
from scalerl.curves.attempts import NEW_RUN, RESTART, RESUMED, split_attempts
from scalerl.curves.rows import DEFAULT_RUN_COLUMN, SCALAR_REPR, curves_from_rows, scalar_of, unwrap_scalar
from scalerl.errors import InputError

#: What a Hugging Face ``Trainer`` prints in every dict, training and evaluation alike.
TRAINER_EPOCH = "epoch"
#: A printed dict of metrics: opens with a quoted key, closes the line.
_DICT = re.compile(r"\{\s*['\"][^'\"\n]+['\"]\s*:.*\}\s*$")
#: A float repr that is no Python literal: ``nan``, ``inf``, ``-inf`` as a value.
_BARE_NONFINITE = re.compile(r"(?<=:\s)(-?inf|nan)(?=\s*[,}])")
#: A step printed before the dict on its line: ``Global step 10:``, ``global_step 10,``, ``step=10``.
_STEP_BEFORE = re.compile(r"(?i)\b(?:global[ _])?step[ \t:=#]*(\d+)\b")
#: slime's rollout number, right before the dict: ``eval 10: {``, ``perf 10: {``, ``rollout 10: {``.
_ROLLOUT_BEFORE = re.compile(r"\b(eval|perf|rollout) (\d+):\s*$")
#: The keys those counters take.
PRINTED_STEP = "step"
PRINTED_ROLLOUT = "rollout_id"
#: slime: how many rollouts were trained on when the row was printed -- ``eval N`` after training
#: rollout N is N + 1, the evaluation before training (also ``eval 0``) 0, ``perf N`` N.
ROLLOUTS_TRAINED = "rollouts"
_EVAL_MARK = "\0eval"  # a row printed as ``eval N`` (read here, never a column)
#: What a Hugging Face ``Trainer`` logs (at INFO, as the example scripts and axolotl set it) when a
#: launch begins to train: a new launch -- a fresh training unless the line below follows it ...
_TRAINER_LAUNCH = re.compile(r"\*{5} Running training \*{5}")
#: ... and the line it prints after that banner where the launch resumes a checkpoint (transformers 5:
#: ``Resuming training from checkpoint with epoch E and global step N``; 4: ``Continuing training from
#: checkpoint, will skip to saved global_step``).
_TRAINER_RESUME = re.compile(r"(?:Resuming|Continuing) training from checkpoint")
#: Unsloth's banner, printed (not logged) where it patched the Trainer's "Running training" out: a launch
#: that says nothing of a checkpoint it resumes -- a new run only after a training that finished, with other
#: settings in the banner's next lines (below).
_UNSLOTH_LAUNCH = re.compile(r"Unsloth - 2x faster free finetuning")
#: The banner's settings a finished training resumed with more steps keeps: its data and its batch, which set how
#: far the epoch goes a step (not ``Total steps`` or ``Num Epochs``, which such a resume raises, nor how the batch
#: is split between devices and accumulation: review ew) -- read from the banner's own lines alone (the 4 after
#: its first: an evaluation logged before the launch's first dict says ``Num examples`` of its own set).
_UNSLOTH_SETTING = re.compile(r"(Num examples|Total batch size)[^=|]*= ([\d,]+)")
_UNSLOTH_BANNER_LINES = 4
#: The keys of the summary dict a ``Trainer`` prints as its training ends (``train_runtime``, ``train_loss``,
#: ...): nothing that launch prints later is a resume of it.
TRAINER_SUMMARY = ("train_runtime", "train_loss")
#: How many characters of a file's start are read to tell whether it is such a log.
SNIFF_CHARS = 2_000_000


def _dict_and_counter(line: str) -> tuple[str | None, str | None, int | None]:
    """The printed dict of a line, and the counter printed before it on the line -- its key
    (:data:`PRINTED_ROLLOUT`, :data:`PRINTED_STEP`) and value --, None where either is missing."""
    line = _last_drawn(ANSI.sub("", line))
    found = _DICT.search(line)
    if not found:
        return None, None, None
    before = line[: found.start()]
    if before and (rollout := _ROLLOUT_BEFORE.search(before)):
        return found.group(0), PRINTED_ROLLOUT, int(rollout.group(2))
    steps = _STEP_BEFORE.findall(before) if "tep" in before else []
    return (found.group(0), PRINTED_STEP, int(steps[-1])) if steps else (found.group(0), None, None)


def _dict_prefix(line: str) -> str:
    """What a line prints before its dict (colours and progress-bar redraws taken off)."""
    line = _last_drawn(ANSI.sub("", line))
    found = _DICT.search(line)
    return line[: found.start()] if found else ""


def _last_drawn(line: str) -> str:
    """What a terminal shows of a line redrawn with ``\r`` (a progress bar, then the dict written over
    it): its last piece -- less the line's own end, ``\r\n`` in a log written on Windows or through a
    TTY (``docker logs`` of a container run with ``-t``), whose ``\r`` left an empty last piece: every
    dict of such a console was passed over."""
    line = line.rstrip("\r\n")
    return line.rsplit("\r", 1)[-1] if "\r" in line else line


def _rollouts_trained(rows: list[dict[str, Any]]) -> None:
    """slime: each row's :data:`ROLLOUTS_TRAINED`, in place. slime evaluates *after* training rollout
    N and prints it as ``eval N``, and prints its evaluation before training as ``eval 0`` too: on
    ``rollout_id`` both sat at 0 (the trained model's score read as the run's R0) and every later
    evaluation one rollout early. An ``eval N`` printed after rollout N's ``perf N`` / ``rollout N``
    line follows its training; one before it, the evaluation before training."""
    generated: dict[object, set[int]] = {}  # per training (a console trainings were appended to: runs)
    for r in rows:
        n = r.get(PRINTED_ROLLOUT)
        evaluation = r.pop(_EVAL_MARK, False)
        if not isinstance(n, int):
            continue
        seen = generated.setdefault(r.get(DEFAULT_RUN_COLUMN), set())
        if evaluation:
            r[ROLLOUTS_TRAINED] = n + 1 if n in seen else n
        else:
            seen.add(n)
            r[ROLLOUTS_TRAINED] = n


#: A line that opens a printed dict and does not close it (``pprint``'s ``{'loss': 0.0,``), and a line
#: that goes on with its items (`` 'grad_norm': 1.92,``): a dict printed, or pasted, over several lines.
_DICT_OPENS = re.compile(r"\{\s*['\"][^'\"\n]+['\"]\s*:")
_DICT_GOES_ON = re.compile(r"^\s*['\"][^'\"\n]+['\"]\s*:")
#: The most lines one printed dict is joined over.
_MAX_DICT_LINES = 500


def _logical_lines(lines):
    """The lines, with a dict spread over several (``pprint`` of a long one: a key per line, or a
    paste broken at its commas) joined into one line where it closes; lines that break off before
    the dict closes are passed on as they were. Colours are taken off first: a coloured logger's
    message (loguru, rich) puts its codes before a line's first quote or after its closing brace,
    where the tests of a line that goes on or closes a dict look."""
    held: list[str] = []
    for line in lines:
        if "\x1b" in line:
            line = ANSI.sub("", line)
        if held:
            if _DICT_GOES_ON.match(line) and len(held) < _MAX_DICT_LINES:
                held.append(line)
                if line.rstrip().endswith("}"):
                    yield " ".join(h.rstrip("\r\n").strip() if i else h.rstrip("\r\n") for i, h in enumerate(held))
                    held = []
                continue
            yield from held
            held = []
        if "{" in line and not _DICT.search(line.rstrip("\r\n")) and _DICT_OPENS.search(line):
            held.append(line)
            continue
        yield line
    yield from held


def _dict_text(line: str) -> str | None:
    return _dict_and_counter(line)[0]


def _number_or_value(v: Any) -> Any:
    if isinstance(v, str):
        try:
            return float(unwrap_scalar(v.strip()))
        except ValueError:
            return v
    return v


def parse_printed_dict(text: str) -> dict[str, Any] | None:
    """A printed dict of metrics (``repr`` / ``pprint`` of str keys; values numbers, or numbers as
    strings as transformers and SkyRL print them) as a dict with numbers read; None if it is none."""
    text = SCALAR_REPR.sub(scalar_of, text)  # np.float64(0.5) in a dict: no literal either parser reads
    text = _BARE_NONFINITE.sub(r"'\1'", text)  # {'loss': nan}: a literal neither parser reads
    d = None
    try:
        # Fast path: a repr of str keys and str / number values is JSON once its quotes are swapped (json is ~10x
        # faster than ast.literal_eval; anything else falls through to it); a line with double quotes may be JSON
        # itself -- print(json.dumps(metrics)), whose NaN and Infinity no Python literal reads (review EU).
        d = json.loads(text.replace("'", '"') if '"' not in text and "\\" not in text else text)
    except ValueError:
        d = None
    if d is None:
        try:
            d = ast.literal_eval(text)
        except (ValueError, SyntaxError, MemoryError, RecursionError):
            return None
    if not isinstance(d, dict) or not all(isinstance(k, str) for k in d):
        return None
    return {k: _number_or_value(v) for k, v in d.items()}


def _sniffed(path: Path) -> tuple[int, dict[str, Any] | None, bool]:
    """What the head of ``path`` holds: how many printed metric dicts (one printed after its step or
    rollout number counting two), the last one read, and whether it holds other non-blank lines;
    stops at two."""
    head = text_head(path, SNIFF_CHARS, newline="")
    if head is None:
        return 0, None, False
    found, last, other = 0, None, False
    for line in _logical_lines(head.split("\n")):
        text, counter, _ = _dict_and_counter(line)
        row = parse_printed_dict(text) if text else None
        if _metrics(row):  # (a dict of text -- a data sample shown -- is no metrics: review EU)
            found, last = found + (2 if counter else 1), row
        elif line.strip():
            other = True
        if found >= 2:  # enough: parsing every dict of the sniffed head would cost as much as reading it
            break
    return found, last, other


def _metrics(row: dict[str, Any] | None) -> bool:
    return row is not None and any(isinstance(v, (int, float)) and not isinstance(v, bool) for v in row.values())


def looks_like_dict_lines(path: Path) -> bool:
    """A text file with at least two printed metric dicts among its lines, or one printed after its
    step or rollout number (slime's first ``perf 0: {...}``, OpenRLHF's ``Global step 1: {...}``: a
    console cut short after its first step is as much this format as a longer one), or one alone that
    a Hugging Face ``Trainer`` printed (its ``epoch`` in it) or that is all the file holds."""
    found, last, other = _sniffed(path)
    return found >= 2 or (found == 1 and _metrics(last) and (TRAINER_EPOCH in last or not other))


def lone_printed_dict(path: Path) -> bool:
    """Whether ``path`` holds one printed dict of numbers among other lines, with no step before it nor a
    Trainer's ``epoch`` in it: maybe a row of metrics, maybe a config -- not told as this format unasked."""
    found, last, _ = _sniffed(path)
    return found == 1 and _metrics(last)


def read_dict_lines_rows(path: Path) -> tuple[list[dict[str, Any]], list[str]]:
    rows: list[dict[str, Any]] = []
    unreadable = copies = 0
    # The same metrics printed once without their step and once with it (OpenRLHF's asynchronous
    # evaluation, from two processes: either line can reach the console first): the copy without goes.
    stepless: dict[str, int] = {}  # a dict printed without a step -> its row's index
    stepped: set[str] = set()
    # A Trainer's launch banner seen, and whether it resumes a checkpoint (RESTART) or starts afresh
    # (NEW_RUN): told by the line that follows it where it resumes, before the launch's first dict.
    launch: str | None = None
    # The training before ended (its Trainer's summary dict printed) and an Unsloth launch after it trains on
    # other data or another batch: a new training (review ES: two Unsloth trainings in one console, the second's
    # epoch starting above the first's last, were read as one run; review EV: a batch-size sweep on one data set).
    # With the same settings it may be that training resumed with more steps (review EU), and a killed one's
    # launch may be its resume: left to the epoch.
    finished = False
    banner: dict[str, str] | None = None  # the settings of the Unsloth banner being read
    banner_lines = 0  # its lines still to read
    settings: dict[str, str] | None = None  # ... of the launch before
    with open(path, encoding="utf-8", errors="replace", newline="") as f:
        for line in _logical_lines(f):
            text, counter, step = _dict_and_counter(line.rstrip("\n"))
            if text is None:
                if banner is not None and banner_lines > 0:
                    banner.update(_UNSLOTH_SETTING.findall(line))
                    banner_lines -= 1
                if _TRAINER_LAUNCH.search(line):
                    launch = NEW_RUN
                elif _UNSLOTH_LAUNCH.search(line):  # (each rank prints it, their lines interleaved: review ex)
                    banner, banner_lines = ({} if banner is None else banner), banner_lines + _UNSLOTH_BANNER_LINES
                elif launch is not None and _TRAINER_RESUME.search(line):
                    launch = RESTART
                continue
            if banner is not None:  # an Unsloth launch's first dict
                if finished and launch is None and settings is not None and banner != settings:
                    launch = NEW_RUN
                settings, banner, banner_lines = banner, None, 0
            if launch is not None:  # the first dict a launch printed: a fresh training's or a resumed one's
                rows.append({launch: RESUMED if launch == RESTART else True})
                launch, finished = None, False
            row = parse_printed_dict(text)
            if row is None:
                unreadable += 1
                continue
            if not _metrics(row):  # a log line ending in a dict of text (a data sample shown): no metrics, no row
                continue
            finished = finished or all(key in row for key in TRAINER_SUMMARY)
            if step is None or counter in row:
                if step is None and text in stepped:
                    stepped.discard(text)
                    copies += 1
                    continue
                if step is None:
                    stepless[text] = len(rows)
                rows.append(row)
                continue
            if (earlier := stepless.pop(text, None)) is not None:
                rows[earlier] = {}
                copies += 1
            else:
                stepped.add(text)
            rows.append({**row, counter: step})
            if counter == PRINTED_ROLLOUT and (kind := _ROLLOUT_BEFORE.search(_dict_prefix(line))) and kind.group(1) == "eval":
                rows[-1][_EVAL_MARK] = True
    rows = [r for r in rows if r]
    notes = [f"{unreadable} dict-like line(s) could not be read and were skipped"] if unreadable else []
    if copies:
        notes.append(f"{copies} dict(s) printed both with and without their step: the copy without it dropped")
    return rows, notes


def read_dict_lines(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """One run per file (named after it)."""
    path = Path(path)
    rows, notes = read_dict_lines_rows(path)
    if not any(not (r.get(RESTART) or r.get(NEW_RUN)) for r in rows):  # (launch banners alone are no metrics)
        raise InputError(f"{path}: no printed metric dicts ({{'key': value, ...}} lines) in the file")
    # A Trainer prints its epoch in every dict: the clock that tells a resume or a new training
    # appended to the same console (tee -a) from the run before it; else the printed rollout number
    # (slime: its evaluations print no step) or step.
    clock = next((c for c in (TRAINER_EPOCH, PRINTED_ROLLOUT) if any(c in r for r in rows)), PRINTED_STEP)
    late_rows = clock != TRAINER_EPOCH  # (an evaluation printed after later steps: OpenRLHF's asynchronous trainer)
    # A value logged again is said, and merged by kind at a resume, only on a printed step: a Trainer's
    # epoch is rounded (several steps print one value), and slime prints its evaluation before training
    # and the one after rollout 0 both as 'eval 0'.
    rows, more = split_attempts(rows, clock, path.stem, late_rows=late_rows, relogs=clock == PRINTED_STEP)
    notes = [*notes, *more]
    _rollouts_trained(rows)  # (after the abandoned attempts are dropped: a resume generates its rollouts again)
    return curves_from_rows(path, rows, x, y, default_name=path.stem, notes=notes, y_scale=y_scale, bounded=bounded,
                            step_column=clock if late_rows else None)
