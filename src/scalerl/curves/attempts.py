"""Resumed and restarted trainings in one log: which rows belong to the run that went on.

A training resumed from a checkpoint logs the steps after the checkpoint again: in trackers that
keep one run across the resume (W&B, Trackio, SwanLab) and in consoles appended to (``tee -a``),
the run's step goes back. What the abandoned attempt logged from the resumed attempt's first step
on is not part of the run that went on: it is dropped, and the notes say how much. (TensorBoard and
MLflow give a resumed attempt a run of its own; their readers join it to the run it continues.)
A training resumed from the checkpoint of the step it logged last logs that step again without the
step going back: that is a resume only where the log shows a new launch before it -- a restart
banner (:data:`RESTART`) or a new attempt's file or directory --, for a step logged again by rows of
one kind is also how some logs are written (two evaluation sets, an epoch's summary row); without
one every row stays and the notes say where. At the step a resume begins at the resumed attempt's
rows take the place of the abandoned attempt's of their kind, the later values winning, as the
trackers' readers keep a step's later value.
"""

from __future__ import annotations

import heapq
import re

from scalerl.curves.cells import is_number, logged
from scalerl.curves.repeated_blocks import drop_repeated_blocks
from scalerl.curves.run_rows import RunRows
from scalerl.curves.untimed_steps import COUNTERS

#: The trainer's step, which ``transformers``' W&B and Trackio callbacks (TRL's trainers included) log
#: in every row: the clock that tells a resumed attempt from the one it abandoned.
TRAINER_STEP = "train/global_step"
#: The step counters a table of one run's rows is split by where it goes back (a resumed training appended to
#: the log), the first a log has: the trainer's own before W&B's ``_step``, which goes on over a resume (the
#: rows of the attempt a resume abandoned kept their ``_step``); LLaMA-Factory's ``current_steps``.
STEP_COLUMNS = (TRAINER_STEP, "trainer/global_step", "global_step", "step", "current_steps", "_step")


#: W&B's own counters, which go on over a resume and a new training alike.
WANDB_CLOCKS = ("_step", "_runtime", "_timestamp")
#: Words of an x that is a clock -- a ``wall_time``, ``time``, ``timestamp``, ``elapsed_s`` or ``*_hours`` column: a
#: step that goes back on it tells a resume or a new training, where a counter the trainer restores from its
#: checkpoint (tokens, samples) goes back with the step. Whole words of the name (:func:`name_words`), not parts of
#: one: ``num_updates`` holds "date" and ``total_timesteps`` "time", and both are counters (review cu).
CLOCK_WORDS = frozenset({"time", "times", "timestamp", "datetime", "date", "walltime", "wallclock", "wall", "clock",
                         "runtime", "elapsed", "hour", "hours", "hrs", "minutes", "mins", "seconds", "secs", "sec"})


def name_words(name: str) -> list[str]:
    """A column name's words, lower case: split at anything not a letter and where camelCase turns
    (``train/wallTime_s`` -> ``train``, ``wall``, ``time``, ``s``)."""
    return [w.lower() for w in re.findall(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])", name)]


def is_clock(records: list[dict], x: str) -> bool:
    """Whether ``x`` goes on whatever the training does: a clock (:data:`WANDB_CLOCKS`, a name with one of
    :data:`CLOCK_WORDS`), or no column of the rows at all (the derived wall_time, a ``cum:`` running total, which
    the reader computes after the split). (``train/global_step`` is no clock: it goes back at a resume.)"""
    return (x in WANDB_CLOCKS or any(word in CLOCK_WORDS for word in name_words(x))
            or not any(x in r for r in records))


def steps_count_again(records: list[dict], step: str, x: str) -> bool:
    """Whether the step counts again per epoch in one training: each time it goes back, it goes back to its
    start, and ``x``, a counter the trainer logs (not a clock), does not go back there. A resume goes back to its
    checkpoint's step and a new training takes such a counter back with the step (review cs: a step counted per
    epoch was refused in a CSV and cut in Parquet; review ct: on a wall_time column a resume read as per-epoch
    steps). The start is the least step so far or the next one up (:func:`_start_steps`): an evaluation logged at
    step 0 before the first epoch's first step, a 0- or 1-based count (review cu); an epoch that opens with an
    evaluation logs the counter where the epoch before left it."""
    if is_clock(records, x):
        return False
    went_back, last, seen = False, None, set()
    for r in records:
        s, v = r.get(step), r.get(x)
        if not (is_number(s) and is_number(v)):
            continue
        if last is not None and s < last[0]:
            if v < last[1] or s > _start_steps(seen):
                return False
            went_back = True
        last = (s, v)
        seen.add(s)
    return went_back


def _start_steps(steps: set) -> float:
    """The highest step a go-back to an epoch's start may land at: the next step up from the least
    logged so far (an opening evaluation at step 0 before training steps 10, 20, ...), at least one past
    the least (steps counted from 0 in one epoch, from 1 in another)."""
    least, *above = heapq.nsmallest(2, steps)
    return max(least + 1, above[0] if above else least)


def continues(first: float, last: float, start: float) -> bool:
    """A run whose first step is ``start`` continues one that logged steps ``first`` .. ``last``: it
    starts after that run's first step (a run that starts at the first step again is a training of
    its own) and no later than one past its last (where a checkpoint of it can have left off). For
    the trackers that give a resumed training a run of its own (TensorBoard, MLflow)."""
    return first < start <= last + 1


def drop_abandoned_attempts(rows: list[dict], counter: str, kinds: dict[int, frozenset] | None = None
                            ) -> tuple[list[dict], int, int, int, int, list[float]]:
    """One run's rows in log order, where a training resumed from a checkpoint kept logging into the
    same run: where ``counter`` (the run's step) goes back, the rows the abandoned attempt logged
    after the resumed attempt's first step go -- what it evaluated after the checkpoint was never
    part of the run that went on. Rows without ``counter`` stay. A 0 where the step goes back is no
    step yet: W&B fills a step metric (TRL's ``train/global_step``) that a new process has not
    logged yet with 0, so the resumed attempt's first step is its first one above 0. Where the reader
    saw a new attempt begin (a :data:`RESTART` row: the attempt's own file or directory, the time a
    tracker's run was opened again), an attempt whose first step is the one the abandoned attempt
    logged last resumed there too; without such a mark a step logged again stays (no resume shown).

    At that first step the abandoned attempt's rows stay until the resumed attempt logs a row of
    their kind there (:class:`_Replaced`), which takes their place with their other values under it
    (the later values win): verl resumed from its step-N checkpoint logs only its evaluation at N,
    and step N's training metrics (``timing_s/step``) are the run's -- as :func:`split_attempts`
    reads a console and the W&B reader a later file that starts at the step the earlier ended on.

    A step logged again by a row of the kind a row at that step logged, with no launch before it, stays
    (:class:`_Relogs`): the steps where that happened are returned for the note (:func:`relogged_note`),
    where the row holds a value besides the counters (one the reader kept, where it keeps only those the
    curve reads).
    ``kinds`` gives what a row logs (by ``id``) where the reader kept only some of its columns (W&B's,
    Trackio's: a training row keeps no column an evaluation row lacks); else it is read off the row.
    Returns ``(rows, resumes, rows dropped, rows merged, resumes at the step logged last, steps logged
    again)``."""
    kept = RunRows(counter)
    resumes = dropped = at_last = 0
    last = None
    resuming = relaunched = False
    replaced = _Replaced(counter)
    again = _Relogs()
    kinds = kinds or {}
    for row in rows:
        if row.get(RESTART):
            relaunched = last is not None
            again.reset()
            continue
        value = row.get(counter)
        if value is not None:
            if last is not None and (value < last or (relaunched and value == last)):
                resumes += 1
                at_last += value == last
                resuming = True
            relaunched = False
            if resuming and value > 0:
                dropped += kept.keep_before(value, True)
                replaced.start(kept, value)
                again.reset(value)
                resuming = False
            kind = kinds.get(id(row))
            merged_before = replaced.dropped
            row = replaced(kept, row)
            # (a 0 before a resumed attempt's first step is no step of it; a row that holds no value the reader
            # kept -- TRL's profiling rows, one per call, where only the curve's columns are read -- fits nothing)
            if is_number(value) and not resuming and any(logged(v) and not _counter(k) for k, v in row.items() if k != counter):
                again.see(value, kind if kind is not None else _kind(row, counter),
                          kept=replaced.dropped == merged_before)  # (one that took a row's place is once)
            last = value
        kept.append(row)
    return kept.rows, resumes, dropped + replaced.dropped, replaced.merged, at_last, again.steps


def keep_resumed_attempts(rows: list[dict], label: str,
                          kinds: dict[int, frozenset] | None = None) -> tuple[list[dict], list[str]]:
    """One run of a tracker that a resumed training kept logging into (W&B, Trackio, SwanLab): the
    rows after :func:`drop_abandoned_attempts` by the trainer's ``train/global_step`` where the run
    logs it, else the tracker's own ``step``; and the notes that say so, if it did anything, and where
    a step was logged again by rows of one kind with no launch before them (every row kept), as the
    row readers say it (:func:`relogged_note`). ``kinds``: what each row logs, by ``id``, where a row
    holds only the columns the reader kept."""
    counter = TRAINER_STEP if any(TRAINER_STEP in r for r in rows) else "step"
    rows, resumes, dropped, merged, at_last, relogged = drop_abandoned_attempts(rows, counter, kinds)
    notes = [f"run {label!r}: " + relogged_note(counter, relogged)] if relogged else []
    if not resumes:
        return rows, notes
    how = (f"{counter} goes back" if not at_last else
           f"a later attempt starts at the {counter} the earlier ended on" if at_last == resumes else
           f"{counter} goes back: {resumes - at_last}; a later attempt starts at the {counter} the earlier ended on: {at_last}")
    return rows, [f"run {label!r} resumed from a checkpoint {resumes} time(s) ({how}): "
                  f"{dropped} row(s) the abandoned attempt(s) logged from there on were dropped" + merged_note(merged),
                  *notes]


def merged_note(merged: int) -> str:
    """What the notes add where rows at the step a resume began at were merged (:class:`_Replaced`)."""
    return (f" ({merged} at the step it resumed at merged under the resumed attempt's row of their kind: "
            "its values win, the others kept)" if merged else "")


def _next_greater(values: list) -> list:
    """For each row, the first value after it that is greater than its own (None where there is
    none, or the row has no value): one pass with a stack, so that a log whose counter stalls
    below where it was does not cost a scan per row."""
    out: list = [None] * len(values)
    stack: list[int] = []  # rows still waiting for a greater value, their values non-increasing
    for j, v in enumerate(values):
        if v is None:
            continue
        while stack and values[stack[-1]] < v:
            out[stack.pop()] = v
        stack.append(j)
    return out


def _spacing(values: list) -> float:
    """The log's usual step between consecutive counter values (the median rise; ``values`` without
    gaps): how far one row takes a training that logs in order. 1 where the counter never rises."""
    rises = sorted(b - a for a, b in zip(values, values[1:]) if b > a)
    return rises[len(rises) // 2] if rises else 1.0


#: A row a reader puts where the log shows a new launch of the training began (a restart banner:
#: prime-rl's ``Resuming orchestrator from checkpoint step N``, mlx-lm's ``Starting training...``),
#: for :func:`split_attempts`; it is no row of the run. It tells a resume whose first step is the
#: step the abandoned attempt logged last -- where the step does not go back -- from a step's
#: evaluation row and training row of one attempt, which share their step too.
RESTART = "\0restart"
#: The value a :data:`RESTART` row holds where the banner says the launch loaded a checkpoint (verl's
#: ``Resuming from .../global_step_N``, a ``Trainer``'s ``Resuming training from checkpoint``,
#: prime-rl's ``Resuming orchestrator from checkpoint``) -- not a bare launch (a new console file):
#: that launch continues the run, even where its first step is at or below the run's first (a console
#: that begins at a resumed launch, resumed from the same checkpoint again).
RESUMED = "resume"

#: The most rows a burst of late evaluations is looked for in (:class:`_LateRows`): an asynchronous
#: trainer writes a handful of evaluations at once, not hundreds.
MAX_LATE_BURST = 100


def _relogs_last(values: list, kinds: list, i: int, last: float, kept: RunRows, kind_of: dict[int, frozenset]
                 ) -> bool:
    """Whether row ``i``, whose counter went back and comes back at once to ``last`` (the step logged last), begins
    a resume: the next row that logs the counter is at ``last`` again and repeats a row of its kind ``kept`` holds
    there -- the resumed attempt training that step again (review do: OpenRLHF and verl resumed a step before the
    kill, whatever the resumed attempt logged first: review dr). A late evaluation is followed by the rest of
    step ``last``'s rows, or by later steps (review dp: a step's second late evaluation).

    Among the rows at row ``i``'s step before the counter moves on, the resumed attempt's come after the abandoned
    attempt's late ones, and it logs one row of a kind there: a row of the kind of the next step's row (a training
    row) begins the resume where there is one (the abandoned attempt's late validation of that step before it:
    review ds), else the last row of row ``i``'s kind (an abandoned late validation of the checkpoint's step, then
    the resumed attempt's own: review dr). A row below the step ``kept`` logged before ``last`` is late whatever
    follows: a resumed attempt that logs ``last`` next starts from there (review ds: step 10's late evaluation
    before a resume from step 21)."""
    window = [i]  # the rows at row i's step before the counter moves on
    j = i + 1
    while j < len(values) and (values[j] is None or values[j] == values[i]):
        if values[j] is not None:
            window.append(j)
        j += 1
    if j == len(values) or values[j] != last or kinds[j] is None:
        return False
    if not any((k := kind_of.get(id(r))) is not None and same_kind(k, kinds[j]) for r in kept.at_step(last)):
        return False
    counter = kept.counter
    before = max((r[counter] for r in kept if is_number(r.get(counter)) and r[counter] < last), default=None)
    if before is not None and values[i] < before:
        return False
    trains = [k for k in window if kinds[k] is not None and same_kind(kinds[k], kinds[j])]
    if trains:
        return trains[0] == i
    return not any(kinds[k] is not None and kinds[i] is not None and same_kind(kinds[k], kinds[i]) for k in window[1:])


class _LateRows:
    """Tells a row logged late -- an asynchronous evaluation of an earlier step, written after later
    steps -- from a resumed training's first row, where the counter goes back below ``last`` (the
    latest value before the row). A resumed training counts up again from its checkpoint, logging
    every step on its way back to ``last``; late rows do neither:

    * the first value above the row's own after it is ``last`` or beyond (the counter came back to
      where it was at once), or there is none (the log ends);
    * or the counter passes ``last`` again after fewer rows than a training would need to count
      from the row's value back to ``last`` at the log's own spacing (:func:`_spacing`): a
      burst of late evaluations, ``22, 10, 20, 23``, written after step 22. A burst is looked for
      among the next :data:`MAX_LATE_BURST` rows only, so that a log whose counter stays below a
      value it once had costs no scan to its end per row.
    """

    def __init__(self, values: list) -> None:
        self.values = values
        self.next_greater = _next_greater(values)
        self.counted = [v for v in values if v is not None]  # the rows that log the counter, in order
        self.rank = {i: k for k, i in enumerate(i for i, v in enumerate(values) if v is not None)}
        self.spacing = _spacing(self.counted)

    def __call__(self, i: int, last: float) -> bool:
        above = self.next_greater[i]
        if above is None or above >= last:
            return True
        needed = min((last - self.values[i]) / self.spacing, MAX_LATE_BURST)  # rows a resume logs to get back
        start = self.rank[i]
        for rows, v in enumerate(self.counted[start: start + MAX_LATE_BURST + 1]):
            if v > last:
                return rows < needed
            if rows + 1 >= needed:
                return False
        return False  # the log ends first: rows that never came back past ``last``


def _kind(row: dict, counter: str) -> frozenset:
    """What a row logs: its keys with a value (:func:`logged`), less the counter."""
    return frozenset(k for k, v in row.items() if k != counter and logged(v))


def _counter(key: str) -> bool:
    """Whether ``key`` is a counter or clock every kind of row carries (``train/epoch``, ``_step``, the run's
    name), not a value a row logs of its own."""
    return key == "run" or key in COUNTERS or key.rsplit("/", 1)[-1] in COUNTERS


def same_kind(a: frozenset, b: frozenset) -> bool:
    """Two rows of one step log the same kind of thing where what one logs is all among what the
    other logs: verl's evaluation of a checkpoint it resumed from (``val-core/...`` alone) and the
    step's row that evaluated it (training metrics and ``val-core/...``), the same step's training row
    logged twice; not a step's training row and its evaluation row (``loss`` / ``eval_loss``)."""
    return a <= b or b <= a


class _Replaced:
    """The abandoned attempt's rows at the step a resume begins at, each until the resumed attempt
    logs a row of its kind (:func:`same_kind`) at that step -- maybe late, after later steps (an
    asynchronous evaluation) -- which takes its place, the abandoned row's other values under it
    (the later values win): the training metrics of the step a checkpoint was saved at are the run's,
    its evaluation the resumed attempt's, and neither is fitted twice. ``kinds`` gives what a row
    logs (by ``id``) where its dict holds only some of its columns (a CSV's); else it is read off
    the row. ``dropped`` and ``merged`` count the rows replaced and those whose values were kept."""

    def __init__(self, counter: str, kinds: dict[int, frozenset] | None = None) -> None:
        self.counter = counter
        self.kinds = kinds if kinds is not None else {}
        self.abandoned: list[dict] = []
        self.at = None
        self.resumed_kinds: list[frozenset] = []  # what the resumed attempt logged at ``at`` so far
        self.dropped = self.merged = 0

    def kind(self, row: dict) -> frozenset:
        found = self.kinds.get(id(row))
        return found if found is not None else _kind(row, self.counter)

    def start(self, rows: RunRows, value: float | None) -> None:
        """A resume begins at ``value`` (None: one that keeps none of the abandoned rows)."""
        self.abandoned = [] if value is None else rows.at_step(value)
        self.at = value
        self.resumed_kinds = []

    def again(self, kind: frozenset) -> bool:
        """Whether the resumed attempt logged a row of ``kind`` at the step it resumed at already: a
        row of that kind there now is another resume from the same checkpoint (an attempt that
        evaluated the checkpoint and died, resumed again)."""
        return any(same_kind(k, kind) for k in self.resumed_kinds)

    def __call__(self, rows: RunRows, row: dict) -> dict:
        """``row`` (merged over the abandoned row it takes the place of, which leaves ``rows``)."""
        if row.get(self.counter) != self.at:
            return row
        kind = self.kind(row)
        self.resumed_kinds.append(kind)
        if not self.abandoned:
            return row
        # The abandoned row of the very same kind first: a reader that keeps only the columns it reads
        # (W&B's, Trackio's) leaves a training row no column the evaluation row lacks.
        mine = next((r for r in self.abandoned if self.kind(r) == kind), None)
        if mine is None:
            mine = next((r for r in self.abandoned if same_kind(self.kind(r), kind)), None)
        if mine is None:
            return row
        self.abandoned = [r for r in self.abandoned if r is not mine]
        rows.remove(mine)
        self.dropped += 1
        if set(mine) - set(row):  # values only the abandoned row holds (the step's training metrics)
            self.merged += 1
            row = {**mine, **row}
            self.kinds[id(row)] = kind | self.kind(mine)
        return row


def _steps_text(steps: list[float]) -> str:
    """``40, 80, 120`` (the first five, then ``...``)."""
    return ", ".join(f"{s:g}" for s in steps[:5]) + (", ..." if len(steps) > 5 else "")


def relogged_note(counter: str, steps: list[float]) -> str:
    """The note for rows of one kind logged at one step with no sign of a new launch before them
    (:class:`_Relogs`): every row kept, and the two readings the log cannot tell apart."""
    return (f"{counter} logged again by rows of one kind at {len(steps)} {counter}(s) ({_steps_text(steps)}) with no "
            "restart banner before them: all kept -- a resume from that step's checkpoint, or several evaluation "
            "sets (or samples) in one column? give --run-column to tell the sets apart, or drop the earlier rows "
            "of a resume")


class _Relogs:
    """The steps at which a row logs the kind of thing (:func:`same_kind`) a row before it at that step
    logged, no other step, resume or launch in between. With no launch banner before it, such a row
    tells nothing for sure: a training resumed from the checkpoint of the step it logged last logs it
    again (``..., 40, 40, 41``), and so does a log that writes two evaluation sets as rows of one kind,
    an epoch's summary under the step's names, or a row per sample. Nothing is dropped or merged on
    it; the notes say where (:func:`relogged_note`)."""

    def __init__(self) -> None:
        self.step = None
        self.kinds: set[frozenset] = set()  # the kinds of row logged at ``step`` so far (distinct: a few)
        self.steps: list[float] = []

    def reset(self, value: float | None = None) -> None:
        """A resume or a launch: what follows is another attempt's."""
        self.step, self.kinds = value, set()

    def see(self, value: float, kind: frozenset, kept: bool = True) -> None:
        """A row at ``value`` that logs ``kind``; ``kept``: not merged into an abandoned row of its kind.
        A row that logs only counters (a ``Trainer``'s last row, ``train/epoch`` and ``train/global_step``
        after its summary) logs nothing of its own: no kind to repeat."""
        if value != self.step:
            self.reset(value)
        if all(_counter(k) for k in kind):
            return
        if kept and (kind in self.kinds or any(same_kind(kind, k) for k in self.kinds)):
            if not self.steps or self.steps[-1] != value:
                self.steps.append(value)
        self.kinds.add(kind)


def _first_training_step(value: float, first: float, second: float | None, kind: frozenset | None,
                         opening: list[frozenset]) -> bool:
    """Whether a row the counter goes back to ``value`` at is a new training's first, where the run opened with
    rows at step 0 (``first``: an evaluation before training) and trained from ``second`` on: a checkpoint is saved
    after a trained step, and a launch resumed from it logs that step (its evaluation of the checkpoint: a row of
    the opening rows' kind) or a later one -- so a row of another kind at the first training step or before it
    is a training of its own (review ds: verl without val_before_train appended after verl with it)."""
    return (first == 0 and second is not None and value <= second and kind is not None
            and not any(same_kind(kind, k) for k in opening if k is not None))


#: A row a reader puts where the log shows a fresh launch of a training that resumes nothing (a
#: Hugging Face ``Trainer``'s ``***** Running training *****`` banner with no ``Resuming training from
#: checkpoint`` line after it): the rows after it are a run of their own, whatever their counter.
NEW_RUN = "\0new run"


def split_attempts(rows: list[dict], counter: str, stem: str, *,
                   late_rows: bool = False, relogs: bool = True,
                   kinds: list[frozenset] | None = None) -> tuple[list[dict], list[str]]:
    """A console log several trainings printed into (``tee -a``), read by a counter every row of a
    training logs (a Hugging Face ``Trainer``'s ``epoch``): where it goes back to or below where the
    current run began, a training started over -- a run of its own (``stem#1``, ``stem#2``, ...), as
    after a :data:`NEW_RUN` row; where it goes back less, a training resumed from a checkpoint -- the
    rows the abandoned attempt logged after the resumed attempt's first step go (as in
    :func:`drop_abandoned_attempts`). After a :data:`RESTART` row (a launch banner the reader saw), the
    counter logged again -- equal to the last one, not below it -- is such a resume too.

    At the step a resume begins at, each row the resumed attempt logs takes the place of the abandoned
    attempt's row of its kind at that step (:class:`_Replaced`), whose other values stay under it (the
    later values win, as W&B's reader merges a step two attempts logged): the training metrics of the
    step a checkpoint was saved at are the run's, its evaluation is the resumed attempt's, and neither
    is fitted twice. With ``relogs`` False (a clock such as a printed ``epoch`` that rounds several
    steps to one value, or a log whose every launch is marked) the abandoned attempt's rows at that
    step go instead, unless a banner marked the launch.

    A step logged again by a row of the kind a row at that step logged, with no banner before it, is
    no resume by itself (:class:`_Relogs`): every row stays, and with ``relogs`` the notes say where.
    ``kinds`` gives what each row logs where its dict holds only some of its columns (a CSV's); else it
    is read off the rows.

    With ``late_rows``, a row the counter goes back at that was logged late (:class:`_LateRows`: an
    evaluation written after later steps, as asynchronous trainers write their metrics files) stays
    in place, unless a restart banner comes before it. A block of rows the log holds twice verbatim is read once
    first (:func:`drop_repeated_blocks`; not given ``kinds``, a table's records). Returns ``(rows, notes)``."""
    # (given kinds: a table's records, of the columns read only -- see drop_repeated_blocks)
    kept = drop_repeated_blocks(rows, counter) if kinds is None else range(len(rows))
    repeated, rows = len(rows) - len(kept), [rows[i] for i in kept]
    values = [r.get(counter) if is_number(r.get(counter)) else None for r in rows]
    if kinds is None:
        kinds = [None if r.get(RESTART) or r.get(NEW_RUN) else _kind(r, counter) for r in rows]
    kind_of = {id(r): k for r, k in zip(rows, kinds)}
    late_row = _LateRows(values) if late_rows else None
    runs = [RunRows(counter)]
    first = None  # the current run's first counted value
    second = None  # its next value up: the first training step, where the run opened with an evaluation at step 0
    opening: list[frozenset] = []  # what the current run's rows at its first value log
    resumes = dropped = late = started_over = launched = 0
    how: dict[str, int] = {}  # how each resume showed -> times
    last = None
    restart = new_run = False  # a launch banner since the last counted row (a resume's / a fresh training's)
    resumed = False  # that banner said the launch loaded a checkpoint (RESUMED)
    replaced = _Replaced(counter, kind_of)  # the abandoned attempt's rows at the step a resume began at
    again = _Relogs()
    for i, row in enumerate(rows):
        if row.get(RESTART) or row.get(NEW_RUN):
            restart, new_run = bool(row.get(RESTART)) and last is not None, bool(row.get(NEW_RUN)) and first is not None
            resumed = restart and row.get(RESTART) == RESUMED
            again.reset()
            continue
        value = values[i]
        if value is None:
            runs[-1].append(row)
            continue
        goes_back = last is not None and value < last
        relogged = restart and value == last
        is_late = goes_back and not restart and late_row is not None and late_row(i, last)
        if is_late and late_row.next_greater[i] == last:  # (back at once to the step logged last: late, or a resume?)
            is_late = not _relogs_last(values, kinds, i, last, runs[-1], kind_of)
        if new_run or ((goes_back or relogged) and not is_late and not resumed
                       and (value <= first or _first_training_step(value, first, second, kinds[i], opening))):
            started_over += not new_run
            launched += new_run
            runs.append(RunRows(counter))
            first, second, opening = None, None, []
            replaced.start([], None)
            is_late = False
        elif (goes_back or relogged) and not is_late:  # the abandoned attempt's rows after the resumed one's first step go
            resumes, dropped = resumes + 1, dropped + runs[-1].keep_before(value, relogs or restart)
            reason = f"{counter} goes back" if goes_back else f"{counter} logged again after a restart"
            how[reason] = how.get(reason, 0) + 1
            replaced.start(runs[-1], value if relogs or restart else None)
            again.reset(value)
        merged_before = replaced.dropped
        row = replaced(runs[-1], row)
        runs[-1].append(row)
        if first is None:
            first = value
        if value == first:
            opening.append(kinds[i])
        elif second is None and value > first:
            second = value
        if is_late:
            late += 1
            continue
        again.see(value, kinds[i], kept=replaced.dropped == merged_before)  # (one that took a row's place is once)
        restart = new_run = resumed = False
        last = value
    notes = []
    if repeated:
        notes.append(f"{repeated} row(s) repeat the rows before them verbatim ({counter} goes back and the log says "
                     "again what it said from there: a block written more than once): read once")
    if late:
        notes.append(f"{late} row(s) logged after later {counter}s (asynchronous evaluations) kept where they are")
    if resumes:
        shown = next(iter(how)) if len(how) == 1 else "; ".join(f"{reason}: {n}" for reason, n in how.items())
        notes.append(f"the log resumes from a checkpoint {resumes} time(s) ({shown}): {dropped + replaced.dropped} "
                     "row(s) the abandoned attempt(s) logged from there on were dropped" + merged_note(replaced.merged))
    if relogs and again.steps:
        notes.append(relogged_note(counter, again.steps))
    if len(runs) > 1:
        why = "; ".join(w for w in (f"{counter} starts over {started_over} time(s)" if started_over else "",
                                    f"a new training launched {launched} time(s) (a launch banner with no resume from "
                                    "a checkpoint after it)" if launched else "") if w)
        notes.append(f"{why}: read as {len(runs)} runs, {stem}#1 ... {stem}#{len(runs)}")
        for i, run in enumerate(runs, start=1):
            for r in run:
                r["run"] = f"{stem}#{i}"
    return [r for run in runs for r in run], notes
