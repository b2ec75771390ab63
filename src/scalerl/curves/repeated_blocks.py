"""A block of rows a log holds twice verbatim, right after itself -- ``cat log log``, a file appended to itself, a
buffer flushed twice -- found so that it is read once (:func:`drop_repeated_blocks`), before
:func:`scalerl.curves.attempts.split_attempts` reads where a log's step goes back as a resume or a restart."""

from __future__ import annotations

import bisect
import math

from scalerl.curves.cells import is_number


def drop_repeated_blocks(rows: list[dict], counter: str) -> list[int]:
    """The indices of ``rows`` less each block the log holds twice verbatim, right after itself: where ``counter``
    goes back, rows that repeat, every cell the same (a NaN as a NaN), the block logged just before them
    (:func:`_repeats_at` says where it may start). Read as a restart or a resume, such a block would only say again
    what the log said (review fa: a JSONL whose steps 251-279 were written twice was read as two runs, the first a
    copy of the second's start). A training started over or resumed logs rows of its own (another sample, a time),
    which stay for ``split_attempts`` to read; one that logged the very same rows again says nothing the block read
    once does not. Rows alike but for their counter (a per-step ``lr`` the same every epoch) are no copy. ``rows``
    must be whole rows: a table's records of the columns read only can be alike where the rows are not (review fc:
    two seeds of a CSV with equal evaluations)."""
    values = [r.get(counter) if is_number(r.get(counter)) else None for r in rows]
    at: dict[float, list[int]] = {}  # a counter value -> the indices of the rows that log it, in order
    for k, v in enumerate(values):
        if v is not None:
            at.setdefault(v, []).append(k)
    if all(len(ks) == 1 for ks in at.values()):
        return list(range(len(rows)))  # (the counter never goes back to a value: nothing can repeat)
    blocks = _RowBlocks(rows, counter, values, at)
    reading = _Reading(len(rows))
    last, i = None, 0
    while i < len(rows):
        value = values[i]
        if last is not None and value is not None and value < last:
            found = _repeats_at(blocks, reading, i)
            if found:
                t, start, n = found
                reading.drop(start, i - t, n)
                i += n - t
                continue
        reading.kept.append(i)
        last = value if value is not None else last
        i += 1
    return reading.kept


class _Reading:
    """The rows kept so far and, for each row of a dropped copy, the kept row it stands for (the row its block had
    there) and where that block started. A block may hold rows of a copy dropped before it -- the third copy's block
    is the second (it stands for the first), a log appended to itself holds its own inner copies (which the reading
    of the block leaves out, as it left them out the first time) -- but read so, it must be the kept rows right
    before the new copy (review fg: a training's rows matched a block made of the dropped copy of another's start,
    and were lost with it)."""

    def __init__(self, n_rows: int) -> None:
        self.kept: list[int] = []
        self.stands_for = list(range(n_rows))
        self.copied_from = [-1] * n_rows  # per row of a dropped copy: where the block it copies starts
        self.floor = 0  # where the last dropped copy ends: the rows from here on are all kept

    def reads_as_kept(self, start: int, again: int) -> bool:
        """Whether ``rows[start:again]``, read as this reading reads them, are the kept rows right before ``again``."""
        # (from the end back, to the first row that differs: a block from far back that holds many copies fails fast)
        k = bisect.bisect_left(self.kept, again)
        for r in range(again - 1, start - 1, -1):
            if self.copied_from[r] < start:
                k -= 1
                if k < 0 or self.kept[k] != self.stands_for[r]:
                    return False
        return True

    def drop(self, start: int, again: int, n: int) -> None:
        """Drop the copy ``rows[again:again + n]`` of the block from ``start``."""
        while self.kept and self.kept[-1] >= again:  # (the counter-less rows that start it, kept already)
            self.kept.pop()
        for k in range(n):
            self.stands_for[again + k] = self.stands_for[start + k]
            # (a row of a copy inside the block is one inside the copy too: the block from its start on reads it as
            # the rows it repeats -- review fj: cat f f f of steps 1 1 2 1 2, each step's row alike, read as more
            # than f)
            inner = self.copied_from[start + k]
            self.copied_from[again + k] = again + inner - start if inner >= start else start
        self.floor = again + n


#: The most starts of a repeated block tried at one place, half the nearest, half the farthest: enough for any copy a
#: log shows; a copy of a block whose start has more than 32 rows alike its first (and its last) on both sides is
#: read as logged (review fm: the nearest 64 alone never reached the start of a file of 65 alike-ended epochs).
MAX_STARTS = 64


def _repeats_at(blocks: "_RowBlocks", reading: _Reading, i: int) -> tuple[int, int, int] | None:
    """``(t, start, n)`` of the longest block the log repeats verbatim, right after itself, at the go-back to
    ``rows[i]`` (None where there is none): ``n`` rows from ``start``, the copy from ``i - t`` on, the block
    standing for the kept rows right before it (:class:`_Reading`). ``t`` of the rows without a counter right before
    ``i``, kept, start the copy (any number: a launch banner before it, a counter-less row that ended the block --
    review fd); of one length, the most of them. The block holds a counted row of ``rows[i]``'s value ``t`` rows
    after its start (review ff: a pair of counter-less rows logged twice was dropped as a block); it begins with a
    row alike the copy's first and ends with one alike its last: of the two sets of starts these give, the smaller
    is tried (review fe), :data:`MAX_STARTS` of them, half the nearest, half the farthest (review fh: the farthest
    alone, and a log appended to itself 193 times or more kept copies past them), each by hash in constant time
    (:meth:`_RowBlocks.hashed_alike`), then, longest first, row by row until one holds (review fj: every one
    checked row by row made a log appended to itself 100 times 33 times slower).

    The longest, not the nearest: the nearest took a restart's first steps, repeated inside ``cat f f``, for the copy
    and kept the rest as another run (review fi). Neither rule reads every log the shortest way: the longest can
    take a block across the end of a file -- ``cat f f`` of a log that holds a deterministic restart and then a
    buffer flushed twice reads as three runs where f reads as two (review fj). A look-ahead between the longest and
    the nearest block, tried, read 10 of 2,169 random 7-12-row logs appended to themselves otherwise than once
    (the longest: 11) at 40 times the row checks; a search of every reading for the shortest read them all right
    and is exponential."""
    positions = blocks.at[blocks.values[i]]
    found = []
    for t in range(min(blocks.uncounted_before[i], i - reading.floor), -1, -1):
        again = i - t
        # (a block from lower down would not fit twice in the log; one of rows alike but for their counter is none)
        low, high = max(0, 2 * again - len(blocks.rows)), min(again, blocks.run_start[again - 1]) if again else 0
        if low >= high:
            continue
        # (index ranges, not slices: a row logged alike all through a long log would be copied at every go-back)
        firsts = blocks.where[blocks.prints[again]]
        f0, f1 = bisect.bisect_left(firsts, low), bisect.bisect_left(firsts, high)
        lasts = blocks.where[blocks.prints[again - 1]]
        l0, l1 = bisect.bisect_right(lasts, 2 * again - 1 - high), bisect.bisect_right(lasts, 2 * again - 1 - low)
        # (the nearest and the farthest: a copy of the block right before it, and of a whole file from its start)
        if f1 - f0 <= l1 - l0:
            starts = (firsts[k] for k in _ends_of(f0, f1))
        else:  # (by where the block's last row is logged again: the earliest end is the nearest start)
            starts = (2 * again - 1 - lasts[k] for k in _ends_of(l0, l1))
        found += [(t, start, again - start) for start in starts
                  if _holds(positions, start + t) and blocks.hashed_alike(start, again)]

    # (reads as the kept rows, then row for row: a hash is no proof)
    return next(((t, start, n) for t, start, n in sorted(found, key=lambda o: (-o[2], -o[0]))
                 if reading.reads_as_kept(start, start + n) and blocks.same_rows(start, start + n)), None)


def _ends_of(low: int, high: int) -> range | list[int]:
    """Of the indices ``low`` to ``high`` (excluded), the first and the last :data:`MAX_STARTS` / 2: all of them
    where they are no more."""
    if high - low <= MAX_STARTS:
        return range(low, high)
    return [*range(low, low + MAX_STARTS // 2), *range(high - MAX_STARTS // 2, high)]


def _holds(positions: list[int], k: int) -> bool:
    at = bisect.bisect_left(positions, k)
    return at < len(positions) and positions[at] == k


class _RowBlocks:
    """A log's rows, with what tells in constant time whether a block of them is repeated right after itself:
    each row's cells as text (a NaN as a NaN) and their prefix hashes, and where each run of rows alike but for
    their counter starts -- a log of many per-epoch step counts asks that of many blocks (review fc: row-by-row
    comparisons took a 200,000-row CSV from 5 s to 49 s)."""

    _MOD = (1 << 61) - 1
    _BASE = 1_000_003

    def __init__(self, rows: list[dict], counter: str, values: list, at: dict[float, list[int]]) -> None:
        self.rows = rows
        self.values = values  # each row's counter value, None where it logs none
        self.at = at  # a counter value -> the rows that log it, in order
        rest = [repr(sorted((k, repr(v)) for k, v in r.items() if k != counter)) for r in rows]
        #: run_start[k]: the first row of the run of rows alike but for their counter that holds row k
        self.run_start = [0] * len(rows)
        for k in range(1, len(rows)):
            self.run_start[k] = self.run_start[k - 1] if rest[k] == rest[k - 1] else k
        #: uncounted_before[k]: how many rows without a counter come right before row k
        self.uncounted_before = [0] * len(rows)
        for k in range(1, len(rows)):
            self.uncounted_before[k] = 0 if values[k - 1] is not None else self.uncounted_before[k - 1] + 1
        self.prints = [hash((repr(r.get(counter)), cells)) % self._MOD for r, cells in zip(rows, rest)]
        self.where: dict[int, list[int]] = {}  # a row's print -> the rows that hold it, in order
        for k, p in enumerate(self.prints):
            self.where.setdefault(p, []).append(k)
        self.prefix, self.power = [0], [1]
        for p in self.prints:
            self.prefix.append((self.prefix[-1] * self._BASE + p) % self._MOD)
            self.power.append(self.power[-1] * self._BASE % self._MOD)

    def _hash(self, start: int, end: int) -> int:
        return (self.prefix[end] - self.prefix[start] * self.power[end - start]) % self._MOD

    def hashed_alike(self, start: int, again: int) -> bool:
        """Whether the rows repeat the block ``rows[start:again]`` from ``again`` on, by their hashes (constant time;
        :meth:`same_rows` checks it row by row)."""
        n = again - start
        return 0 <= start and 0 < n and again + n <= len(self.rows) and \
            self._hash(start, again) == self._hash(again, again + n)

    def same_rows(self, start: int, again: int) -> bool:
        """Whether the rows repeat the block ``rows[start:again]`` from ``again`` on, cell for cell."""
        return all(_same_row(self.rows[again + k], self.rows[start + k]) for k in range(again - start))


def _same_row(a: dict, b: dict) -> bool:
    """Whether two rows hold the same cells, a NaN the same as a NaN (each copy of a line parses its own ``nan``, and
    a console's ``'grad_norm': nan`` kept a block written twice from being seen as one: review fb)."""
    return a == b or (a.keys() == b.keys() and all(
        x == y or (isinstance(x, float) and isinstance(y, float) and math.isnan(x) and math.isnan(y))
        for x, y in ((a[k], b[k]) for k in a)))
