"""TensorBoard event files: a file, or a directory in which each sub-directory with event files is a run.

Scalars are read whether written as simple values (PyTorch's ``SummaryWriter``, tensorboardX) or as
scalar tensors (TF2's ``tf.summary.scalar``, JAX / Flax writers). A run resumed from a checkpoint appends a
new event file to its directory and logs the steps after the checkpoint again: where the new file opens with a
purge mark (``SummaryWriter(purge_step=N)``, as scalerl's own runs write it) the earlier events from step N on
are dropped, as TensorBoard drops them; where it has none, a directory whose event files follow one another in
time, each starting within the steps of the one before, is read file by file as that training's attempts, each
earlier file's events from the next one's first step on dropped; otherwise a step logged more than once keeps
its later value. Each said in the notes.

A Hugging Face ``Trainer`` (TRL's trainers too) writes each start of a training to a directory of
its own, ``runs/<Mon><DD>_<HH-MM-SS>_<host>``: a training resumed from a checkpoint lands next to
the attempt it resumed. Such a directory whose first step comes after the first step of an earlier
one of the same host, and no later than one past its last (it starts where a checkpoint of it left
off), is read as that run's continuation: joined, the earlier attempt's steps from there on dropped,
said in the notes. A directory that starts at the first step again is a training of its own.
"""

from __future__ import annotations

import bisect
import importlib.util
import itertools
import logging
import math
import re
from functools import partial
from pathlib import Path

from scalerl.curves.attempts import continues
from scalerl.curves.data import Curve
from scalerl.curves.overhead_timers import NOT_TRAINING, overhead_note
from scalerl.curves.rows import (CUMULATIVE, UnknownColumn, absent_terms_note, cumulative_terms, readable_curves,
                                 taken_off_too_much, unknown_column, with_left_out)
from scalerl.errors import InputError


class _PurgeMarks(logging.Filter):
    """The purge marks TensorBoard's loader applied (a resumed run's event file marks the steps the
    stopped attempt logged after its checkpoint as stale: PyTorch's ``SummaryWriter(purge_step=...)``,
    scalerl's own runs): kept as the steps they purged from. The loader says each as a warning on
    stderr about "a TensorFlow restart", which read as an error in ``scalerl fit``; here it is a note."""

    MESSAGE = re.compile(r"Purging expired events .*current step: (-?\d+)")

    def __init__(self) -> None:
        super().__init__()
        self.steps: list[int] = []

    def filter(self, record: logging.LogRecord) -> bool:
        found = self.MESSAGE.search(record.getMessage())
        if found:
            self.steps.append(int(found.group(1)))
        return found is None


def _event_dirs(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    dirs = sorted({p.parent for p in path.rglob("*tfevents*") if p.is_file()})  # not a directory named so
    if not dirs:
        raise InputError(f"{path}: no TensorBoard event files (*tfevents*) found")
    return dirs


class _Scalars:
    """A directory's scalar series by tag: TensorBoard's simple values (PyTorch's SummaryWriter,
    tensorboardX, TF1) and scalar tensors (TF2's ``tf.summary.scalar``, and the JAX / Flax writers
    built on it), each ``(wall_time, step, value)`` in file order, read when asked for."""

    def __init__(self, directory: Path) -> None:
        from tensorboard.backend.event_processing import event_accumulator as ea

        self.acc = ea.EventAccumulator(str(directory), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
        marks, tb_logger = _PurgeMarks(), logging.getLogger("tensorboard")
        tb_logger.addFilter(marks)
        try:
            self.acc.Reload()
        finally:
            tb_logger.removeFilter(marks)
        self.purged = marks.steps
        tags = self.acc.Tags()
        self.simple = set(tags.get("scalars", []))
        self.tensors = {t for t in tags.get("tensors", [])
                        if self.acc.SummaryMetadata(t).plugin_data.plugin_name == "scalars"}
        self.tags = sorted(self.simple | self.tensors)
        # Where the directory's events begin and end (for joining a resumed training's directories).
        ends = [(events[0], events[-1]) for events in map(self._events, self.tags) if events]
        self.first_time = min((first.wall_time for first, _ in ends), default=0.0)
        self.last_time = max((last.wall_time for _, last in ends), default=0.0)
        self.first_step = min((first.step for first, _ in ends), default=0)
        self.last_step = max((last.step for _, last in ends), default=0)

    def _events(self, tag: str) -> list:
        return self.acc.Scalars(tag) if tag in self.simple else self.acc.Tensors(tag)

    def series(self, tag: str) -> list[tuple[float, int, float]]:
        if tag in self.simple:
            return [(e.wall_time, e.step, e.value) for e in self.acc.Scalars(tag)]
        from tensorboard.util import tensor_util

        return [(e.wall_time, e.step, float(tensor_util.make_ndarray(e.tensor_proto).item()))
                for e in self.acc.Tensors(tag)]


#: The directory a Hugging Face ``Trainer`` logs one start of a training to: ``Dec01_20-42-13_host``.
HF_RUN_DIR = re.compile(r"[A-Z][a-z]{2}\d{2}_\d{2}-\d{2}-\d{2}_(?P<host>.+)")


class _Resumed:
    """A run logged over several directories, one per attempt (a training resumed from a checkpoint):
    each attempt's events up to the step the next one started from, then the next one's."""

    def __init__(self, attempts: list[_Scalars], *, files: bool = False) -> None:
        self.attempts = attempts
        self.files = files  # the attempts are event files of one directory, not directories
        self.tags = sorted(set().union(*(a.tags for a in attempts)))
        self.first_time = attempts[0].first_time
        self.first_step, self.last_step = attempts[0].first_step, attempts[-1].last_step
        self.last_time = attempts[-1].last_time
        self.purged = [step for a in attempts for step in a.purged]

    def series(self, tag: str) -> list[tuple[float, int, float]]:
        out: list[tuple[float, int, float]] = []
        for attempt, following in zip(self.attempts, [*self.attempts[1:], None]):
            if tag not in attempt.tags:
                continue
            stop = following.first_step if following is not None else math.inf
            # At the step the next attempt starts from, a tag it logs again there is its; one it does not (verl
            # validates at its checkpoint's step first: the training metrics of that step) stays the earlier
            # attempt's, as the row logs read a resume (attempts.split_attempts; review ct).
            again = following is not None and tag in following.tags and any(
                step == stop for _, step, _ in following.series(tag))
            out += [e for e in attempt.series(tag) if e[1] < stop or (e[1] == stop and not again)]
        return out


def _join_resumed(dirs: list[Path]) -> list[tuple[Path, _Scalars | _Resumed, list[Path]]]:
    """``(directory, scalars, resumed attempts' directories)`` per run: Hugging Face run directories of
    one host that continue an earlier one (see the module docstring) are joined to it."""
    runs: list[tuple[Path, _Scalars | _Resumed, list[Path]]] = []
    chains: dict[tuple[Path, str], int] = {}  # (parent, host) -> index in runs of its latest run
    loaded = [(d, _attempts_of(d)) for d in dirs]
    for d, scalars in sorted(loaded, key=lambda item: item[1].first_time):
        hf = HF_RUN_DIR.fullmatch(d.name)
        key = (d.parent, hf.group("host")) if hf else None
        if key in chains:
            first, joined, later = runs[chains[key]]
            attempts = joined.attempts if isinstance(joined, _Resumed) else [joined]
            if continues(attempts[0].first_step, attempts[-1].last_step, scalars.first_step):
                runs[chains[key]] = (first, _Resumed([*attempts, scalars]), [*later, d])
                continue
        if key is not None:
            chains[key] = len(runs)
        runs.append((d, scalars, []))
    return sorted(runs, key=lambda run: run[0])


def _attempts_of(d: Path) -> "_Scalars | _Resumed":
    """A directory's scalars, as one training's attempts where its event files are (:func:`_resumed_files`)."""
    whole = _Scalars(d)
    return whole if whole.purged else (_resumed_files(d) or whole)


def _resumed_files(d: Path) -> "_Resumed | None":
    """A directory whose event files are one training's attempts, each resumed from a checkpoint of the one
    before (verl, a script's SummaryWriter: a resumed launch writes a new file beside the old one, with no purge
    mark): each file's steps up to the next one's first step, as for Hugging Face's run directories. Read as one
    directory, the later value of each step won, and what the abandoned attempt logged after the resumed one
    had got to stayed on the curve (its step 60 after the resumed attempt's 50: review cr). None where the
    directory has one event file, files whose times overlap (several writers at once: ranks of one training),
    a file that logs none of the tags of the one before (another job's: an evaluator's) or a file that starts
    over. (A purge mark is TensorBoard's loader's to apply: :func:`_attempts_of`.)"""
    files = [f for f in d.glob("*tfevents*") if f.is_file()] if d.is_dir() else []
    if len(files) < 2:
        return None
    attempts = sorted((_Scalars(f) for f in files), key=lambda a: a.first_time)
    if not all(a.tags for a in attempts):
        return None
    for before, after in zip(attempts, attempts[1:]):
        # A resumed attempt logs what the one it resumed logged: a file of other tags beside a trainer's (an
        # evaluation job's, written after the training ended) is no resume, and every trainer tag was cut at
        # its first step (review cs).
        if (after.first_time < before.last_time or not set(after.tags) & set(before.tags)
                or not continues(attempts[0].first_step, before.last_step, after.first_step)):
            return None
    return _Resumed(attempts, files=True)


#: Directory names that say "TensorBoard events" rather than which run: such a run is named after the
#: directory above (NeMo-RL writes ``logs/exp_<NNN>/tensorboard``, as its dumps reader names ``exp_<NNN>``).
GENERIC_DIRS = ("tensorboard", "tensorboard_log", "tb", "tb_logs")


def _run_name(d: Path) -> str:
    """A run's name: its directory's (or event file's), the one above where that is generic (``.``: resolved)."""
    d = d.resolve() if not d.name else d
    if d.name.lower() in GENERIC_DIRS and d.parent.name:
        return d.parent.name
    return d.name or "run"


def _distinct_names(path: Path, curves: list) -> list:
    """Runs whose directories share a leaf name (``a/run1``, ``b/run1``) named by their path under ``path``
    instead: one name for both could not be chosen with ``--run`` and read as seeds of one run."""
    names = [name for name, *_ in curves]
    if len(set(names)) == len(names):
        return curves
    out = []
    for name, xs, ys, source, notes in curves:
        if names.count(name) > 1:
            rel = Path(source).relative_to(path) if Path(source).is_relative_to(path) else Path(source)
            name = rel.as_posix() if rel.parts else name
        out.append((name, xs, ys, source, notes))
    return out


def _running_total(scalars: "_Scalars | _Resumed", d: Path, x: str, steps: list[int]) -> tuple[list[float], tuple[str, ...]]:
    """``cum:TAG`` at each of ``steps``: the sum of a per-step tag (a step's seconds, verl's
    ``timing_s/step``) over every step up to and including it -- or of every tag a glob matches, less
    the tags after a ``-`` (taken off the steps that log the summed tags only, as the row readers do;
    more than a step holds is refused with their error). A step logged again keeps its later value; a
    NaN adds nothing. With it, the notes: a tag taken off that the run never logged (taken off as 0), and
    what :func:`scalerl.curves.overhead_timers.overhead_note` says of the checkpoint saves and
    validation it counts."""
    plus, minus = cumulative_terms(d, set(scalars.tags), x)
    per_step: dict[int, float] = {}
    for tag in plus:
        for step, v in {step: v for _, step, v in scalars.series(tag)}.items():
            if math.isfinite(v):
                per_step[step] = per_step.get(step, 0.0) + v
    for tag in minus:  # taken off the steps that log the summed tags (a step without it: 0 off)
        for step, v in {step: v for _, step, v in scalars.series(tag)}.items():
            if math.isfinite(v) and step in per_step:
                per_step[step] -= v
    order = sorted(per_step)
    short = next((s for s in order if per_step[s] < 0), None)
    if short is not None:
        raise taken_off_too_much(d, x, plus, minus, short, per_step[short])
    totals = list(itertools.accumulate(per_step[s] for s in order))
    by_step: dict[int, dict[str, float]] = {}  # the step's rows, as the row logs hold them, for the note
    for tag in {*plus, *minus, *(t for t in NOT_TRAINING if t in scalars.tags)}:
        for step, v in {step: v for _, step, v in scalars.series(tag)}.items():
            by_step.setdefault(step, {})[tag] = v
    notes = tuple(n for n in (absent_terms_note(d, set(scalars.tags), x),
                              overhead_note([by_step[s] for s in sorted(by_step)], x, plus, minus)) if n)
    return [totals[i - 1] if (i := bisect.bisect_right(order, step)) else 0.0 for step in steps], notes


def read_tensorboard(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """``x`` may be ``step``, ``wall_time`` (hours since the run's first event of any tag, as the row
    readers measure it from the run's first logged row), another scalar tag
    (joined on step, e.g. a logged compute counter) or ``cum:TAG`` (its running total over steps)."""
    if importlib.util.find_spec("tensorboard") is None:
        raise InputError("reading TensorBoard logs needs the tensorboard package: pip install 'scalerl[tensorboard]'")
    path = Path(path)
    curves, without, without_x = [], [], []
    for d, scalars, resumed in _join_resumed(_event_dirs(path)):
        if y not in scalars.tags:  # a run that has not logged it (yet): left out, unless none has
            without.append((d, scalars.tags))
            continue
        # A run resumed from a checkpoint writes a new event file in the same directory and logs the
        # steps after the checkpoint again: the later value of a step wins, as in the other readers.
        logged = scalars.series(y)  # in file order: the later file's events come later
        latest = {step: (t, step, v) for t, step, v in logged}
        relogged = len(logged) - len(latest)
        events = [latest[step] for step in sorted(latest)]
        notes = (f"{relogged} step(s) of {y!r} logged again (a resumed run?): the later values kept",) if relogged else ()
        if scalars.purged:
            notes += (f"a resumed attempt's purge mark dropped the events a stopped one logged from step "
                      f"{', '.join(map(str, scalars.purged))} on (steps it logged again)",)
        if isinstance(scalars, _Resumed) and scalars.files:
            dropped = sum(len(a.series(y)) for a in scalars.attempts if y in a.tags) - len(logged)
            notes += (f"its {len(scalars.attempts)} event files are attempts of one training, each resumed from a "
                      "checkpoint of the one before: each earlier file's steps from the next one's first step on "
                      f"dropped ({dropped} of {y!r})",)
        if resumed:
            notes += (f"joined with the directories of its resumed attempt(s), {', '.join(r.name for r in resumed)} "
                      "(a training resumed from a checkpoint): each earlier attempt's steps from the next one's "
                      "first step on dropped",)
        if x == "step":
            xs = [float(step) for _, step, _ in events]
        elif x == "wall_time":
            # From the run's start as best known (its first event of any tag), not its first evaluation:
            # a run evaluated first at step 50 would put that evaluation at compute 0 and shift the axis.
            t0 = min(scalars.first_time, *(t for t, _, _ in events))
            xs = [(t - t0) / 3600.0 for t, _, _ in events]
        elif x.startswith(CUMULATIVE):
            try:
                xs, overhead = _running_total(scalars, d, x, [step for _, step, _ in events])
            except UnknownColumn as exc:  # (a run without the summed tags: left out as one without x -- review dn)
                without_x.append((d, scalars.tags, exc))
                continue
            notes += overhead
        else:
            if x not in scalars.tags:  # left out, the others read (review dm: one run without it failed them all)
                without_x.append((d, scalars.tags, None))
                continue
            by_step = {step: v for _, step, v in scalars.series(x)}
            xs = [float(by_step.get(step, math.nan)) for _, step, _ in events]
        ys = [v * y_scale for _, _, v in events]
        name = _run_name(d if d != path else path)
        curves.append((name, xs, ys, str(d), notes))
    if not curves and without_x:  # (the cum: terms' own error where there is one: it names the tags to sum)
        d, tags, error = without_x[0]
        raise error or unknown_column(d if len(without_x) == 1 else path, "x", x,
                                      ["step", "wall_time", *set().union(*(tags for _, tags, _ in without_x))])
    if not curves:
        # Every directory's tags: add_scalars('eval', {'gsm8k': ...}) writes tag 'eval' into directories of
        # its own (eval_gsm8k, ...), and the first directory's list alone ('train/loss') hid it.
        tags = set().union(*(tags for _, tags in without))
        error = unknown_column(without[0][0] if len(without) == 1 else path, "y", y, tags)
        main, _, key = y.rpartition("/")
        own = f"{main.replace('/', '_')}_{key}"  # the directory add_scalars(main, {key: ...}) writes
        if main and any(d.name == own and main in t for d, t in without):
            raise UnknownColumn(f"{error} -- add_scalars wrote {main!r} of {key!r} into a directory of its own: "
                                f"--y {main} --run {own}", error.available)
        raise error
    # The runs without y or x named with the ones read (two directories 'run1' apart by their paths), each left
    # out with its reason: a skipped run for backtest --all-runs, the reason for fit --run (review dn: a note
    # alone, "0 skipped", and 'no run named' for --run).
    # (a directory under another run's -- add_scalars' 'lr_actor', ... -- is no run of its own: review dp)
    read_dirs = {Path(source) for *_, source, _ in curves} | {d for d, _ in without} | {d for d, *_ in without_x}
    without = [(d, tags) for d, tags in without if not any(p in read_dirs for p in d.parents)]
    skipped = [(d, f"no y tag {y!r}") for d, _ in without] + [(d, f"no x tag {x!r}") for d, _, _ in without_x]
    named = _distinct_names(path, [*curves, *((_run_name(d), [], [], str(d), ()) for d, _ in skipped)])
    curves = named[: len(curves)]
    left_out = tuple((name, why) for (name, *_), (_, why) in zip(named[len(curves):], skipped))
    # One run that cannot be read (in percent, say) is left out with its reason, not fatal to the others.
    return with_left_out(readable_curves(
        partial(Curve.from_arrays, xs, ys, name=name, x_name=x, y_name=y, source=source, bounded=bounded,
                notes=notes)
        for name, xs, ys, source, notes in curves), left_out)
