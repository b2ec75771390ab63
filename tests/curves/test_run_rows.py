"""RunRows: a run's rows with the highest step up to each -- what a resume keeps, found from the first row that
reaches its step, must be what reading the whole run finds (review fe: a log resumed 4,000 times took 90 s)."""

import math
import random

from scalerl.curves.cells import is_number
from scalerl.curves.run_rows import RunRows

C = "step"


def _cell(rnd):
    return rnd.choice([rnd.randint(0, 12), rnd.randint(0, 12), float(rnd.randint(0, 12)), None, math.nan, True])


def _rows(rnd):
    rows = []
    for _ in range(rnd.randint(0, 30)):
        v = _cell(rnd)
        rows.append({"x": rnd.random()} if v is None else {C: v, "x": rnd.random()})
    return rows


def test_keep_before_and_at_step_match_reading_every_row():
    rnd = random.Random(0)
    for _ in range(1000):
        rows = _rows(rnd)
        run = RunRows(C)
        for r in rows:
            run.append(r)
        value, same = rnd.randint(0, 12), rnd.random() < 0.5
        at = [r for r in rows if is_number(r.get(C)) and r[C] == value]
        assert run.at_step(value) == at
        want = [r for r in rows if not isinstance(r.get(C), (int, float)) or r[C] < value or (same and r[C] == value)]
        assert run.keep_before(value, same) == len(rows) - len(want)
        assert run.rows == want and len(run.peak) == len(want)
        if want:  # (a row taken out: the rows and their peaks as if it had never been appended)
            gone = rnd.choice(want)
            run.remove(gone)
            fresh = RunRows(C)
            for r in want:
                if r is not gone:
                    fresh.append(r)
            assert run.rows == fresh.rows and run.peak == fresh.peak
