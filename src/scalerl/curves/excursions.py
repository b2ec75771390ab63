"""One-evaluation excursions: a single evaluation far below (or above) the points on both sides.

RL curves have them: the policy is evaluated mid-oscillation -- an episode of 10-40 steps in which
it gets worse, undone by the next ones -- and one evaluation lands 0.1-0.2 below a curve that is back
where it was at the next evaluation (the arithmetic-mix workload shows up to two per 300-step run;
they follow no gradient-norm spike and no logged signal ahead of them: docs/workload.md,
``benchmarks/demo_dips.py``). A least-squares fit pays for such a point with the square of its distance, so one dip drags a ceiling down, and a fit near the end of its window can no
longer place it at all (A on its bound, the interval [0.46, 1.0]).

The rule (a Hampel identifier, with the curve's own noise level as the scale): an evaluation is
an *excursion* when it is

1. an interior point of the window (one with evaluations on both sides: the last point of a fit
   window may be the start of a real change, and nothing after it can tell) -- the point before the
   last only where the last agrees with the one before it (nearer to it than the point judged is to
   their mean): else it is the last point that stands apart, and a clean point would be condemned
   on the evidence of the one point that cannot be judged,
2. a strict local extreme (below both neighbours, or above both) -- a step of a jump (the model
   learning the answer format) lies between its neighbours and is never one,
3. farther than :data:`EXCURSION_SD` times the noise of that distance from the median of the
   evaluations around it -- as many on each side, two at most --, the noise level being the
   robust one of the window (:func:`scalerl.curves.window.noise_sd`, with the floor of a pass
   rate's). One pass: what a left-out point's neighbours would look like without it is not
   judged again.

Excursions are left out of the fit and said in a note; they stay in the data (plots show them,
backtests score the held-out evaluations as they are). A sustained fall is several points and
never an excursion: that is for :mod:`scalerl.curves.stability`.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import numpy as np

from scalerl.curves.data import Curve
from scalerl.curves.ensemble import SIGMA_FLOOR
from scalerl.curves.window import noise_sd

#: How far from its neighbours' median an extreme evaluation must lie to be left out, in units of
#: the distance's own noise (the noise level times sqrt(1 + 1/(2h)) for h neighbours a side).
#: Chosen for false alarms, not for any run's figures: on Gaussian evaluation noise 5 flags
#: 3 of 45,600 points (1,200 synthetic curves; 4 flagged 31), on the shipped real runs 1 point
#: in 126 fit windows, and in the arithmetic-mix demo the dips of 0.05-0.2 it should
#: (``python benchmarks/excursions.py``).
EXCURSION_SD = 5.0

#: Fewest evaluations after training starts for the rule to judge any (fewer: none is left out).
MIN_POINTS = 5

#: How a note says what an excursion is.
_RULE = f"from the median of the evaluations on both sides, over {EXCURSION_SD:g} times the noise of that distance"


def _count(n: int, kind: str) -> str:
    return f"{n} one-evaluation {kind}{'s' if n > 1 else ''}"


def _around(ys: np.ndarray, j: int) -> np.ndarray:
    """The evaluations around ``ys[j]``: as many on each side, two at most -- on a rising curve a
    one-sided set would put the reference above or below the point by the slope alone."""
    h = min(2, j, ys.size - 1 - j)
    return np.concatenate([ys[j - h:j], ys[j + 1:j + 1 + h]])


def excursion_mask(x: np.ndarray, y: np.ndarray, *, k: float = EXCURSION_SD, floor: float = SIGMA_FLOOR) -> np.ndarray:
    """Boolean mask of the excursions among ``(x, y)`` (x non-decreasing). Points at zero
    compute (the R0 evaluation) are never judged nor used as neighbours."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    out = np.zeros(x.size, dtype=bool)
    idx = np.flatnonzero(x > 0)
    if idx.size < MIN_POINTS:
        return out
    sigma = max(noise_sd(y[idx]), floor, 1e-12)  # (a flat unbounded series: floor 0)
    # Largest first, then again without it: one excursion shifts the median of its neighbours'
    # neighbours, and judged all at once a clean point beside a deep dip could look like a spike.
    # An excursion is one evaluation: a point whose neighbour would stand out the same way once it is left
    # out is half of a two-evaluation one, and neither is left out (review ch: both of two adjacent high
    # evaluations were, as "2 one-evaluation excursions"; review cj: then the deeper of a two-evaluation dip
    # alone). A point next to one already left out is not judged again.
    kept = np.arange(idx.size)
    judged = np.ones(idx.size, dtype=bool)  # (False: one of a pair, or beside a point left out)
    for _ in range(idx.size):
        if out.sum() >= idx.size // 4:
            break
        ys = y[idx[kept]]
        scores = np.where(judged[kept], _scores(ys) / sigma, 0.0)
        at = int(np.argmax(scores))
        if not scores[at] > k:
            break
        twin = _twin(ys, at, sigma, k)
        if twin is not None:
            judged[kept[[at, twin]]] = False
            continue
        out[idx[kept[at]]] = True
        judged[kept[max(at - 1, 0):at + 2]] = False
        kept = np.delete(kept, at)
    return out


def _twin(ys: np.ndarray, at: int, sigma: float, k: float) -> int | None:
    """The neighbour of ``ys[at]`` that stands out on the same side once ``ys[at]`` is left out (the other half
    of a two-evaluation excursion), or None."""
    rest = np.delete(ys, at)
    scores = _scores(rest) / sigma
    side = np.sign(ys[at] - np.median(_around(ys, at)))
    for j, orig in ((at - 1, at - 1), (at, at + 1)):  # its neighbours' places without it
        if 0 <= j < rest.size and scores[j] > k and np.sign(rest[j] - np.median(_around(rest, j))) == side:
            return orig
    return None


def _scores(ys: np.ndarray) -> np.ndarray:
    """Each point's distance from the median of :func:`_around` it, in units of that distance's
    own noise per unit of sigma (sqrt(1 + 1/neighbours)); 0 for a point that is not a strict local
    extreme, for the two ends, and for the point before the last where the last stands apart. All
    points at once: a log of a thousand evaluations is judged in well under a millisecond a pass."""
    n = ys.size
    out = np.zeros(n)
    if n < 3:
        return out
    mid = ys[1:-1]
    extreme = ((mid < ys[:-2]) & (mid < ys[2:])) | ((mid > ys[:-2]) & (mid > ys[2:]))
    ref = (ys[:-2] + ys[2:]) / 2.0  # one a side (the second and the second-to-last point)
    factor = np.full(n - 2, np.sqrt(1.5))
    if n >= 5:  # two a side elsewhere: the median of four is the mean of the middle two
        four = np.sort(np.stack([ys[:-4], ys[1:-3], ys[3:-1], ys[4:]], axis=1), axis=1)
        ref[1:-1] = (four[:, 1] + four[:, 2]) / 2.0
        factor[1:-1] = np.sqrt(1.25)
    out[1:-1] = np.where(extreme, np.abs(mid - ref) / factor, 0.0)
    # The point before the last has one neighbour on its right, the last point, which nothing can judge:
    # a drop there (a collapse starting, a value cut short) puts the two on opposite sides of a clean
    # point as much as a spike between two clean points does. It is judged only where the last point
    # agrees with the one before it -- nearer to it than the point judged is to the two's mean -- so
    # that the point judged, not the last one, is the odd one of the three.
    if abs(ys[-1] - ys[-3]) >= abs(ys[-2] - (ys[-1] + ys[-3]) / 2.0):
        out[-2] = 0.0
    return out


@dataclass(frozen=True)
class Excursions:
    """The evaluations a fit left out as excursions."""

    x: tuple[float, ...] = ()
    y: tuple[float, ...] = ()
    depth: tuple[float, ...] = ()
    """Each one's distance from its neighbours' median (negative: a dip)."""

    def __len__(self) -> int:
        return len(self.x)

    def mask(self, x: np.ndarray, y: np.ndarray) -> np.ndarray:
        """Which of the points ``(x, y)`` are these excursions (for plots)."""
        out = np.zeros(np.shape(x), dtype=bool)
        for ex, ey in zip(self.x, self.y):
            out |= (np.asarray(x) == ex) & (np.asarray(y) == ey)
        return out

    @property
    def kind(self) -> str:
        """"dip" when every one lies below its neighbours, else "excursion"."""
        return "dip" if all(d < 0 for d in self.depth) else "excursion"

    def points(self, x_name: str = "compute") -> str:
        """Each one's value, place and depth: ``0.412 at step 120 (-0.134)``, comma-separated."""
        return ", ".join(f"{y:.3f} at {x_name} {x:.4g} ({d:+.3f})" for x, y, d in zip(self.x, self.y, self.depth))

    def describe(self, x_name: str = "compute") -> str:
        """What was left out, in words ("" when nothing was)."""
        if not self.x:
            return ""
        return f"{_count(len(self.x), self.kind)}: {self.points(x_name)} {_RULE}"

    def note(self, x_name: str = "compute", run: str = "", *, hint: bool = True) -> str | None:
        """One line for a command's output, or None when nothing was left out. ``hint``: name the
        option that keeps them (commands that have it: fit, backtest, compare)."""
        if not self.x:
            return None
        tail = "; --keep-excursions fits every evaluation" if hint else ""
        return f"{run + ': ' if run else ''}left out of the fit {self.describe(x_name)}{tail}"


def drop_excursions(curve: Curve, until: float | None = None, *, bounded: bool = True,
                    k: float = EXCURSION_SD) -> tuple[Curve, Excursions]:
    """``curve`` without the excursions among its points with ``x <= until`` (all points: None),
    and what was left out. Points after ``until`` (held out) are kept as they are. ``bounded``: y
    is a pass rate, whose noise level is at least ``SIGMA_FLOOR`` (else the floor is 1% of y's range, as the
    ensemble's)."""
    judged = np.ones(curve.x.size, dtype=bool) if until is None else curve.x <= until
    idx = np.flatnonzero(judged)
    floor = SIGMA_FLOOR if bounded else (0.01 * float(np.ptp(curve.y[idx])) if idx.size else 0.0)
    flagged = np.zeros(curve.x.size, dtype=bool)
    flagged[idx] = excursion_mask(curve.x[idx], curve.y[idx], k=k, floor=floor)
    if not flagged.any():
        return curve, Excursions()
    # Each one's depth against the neighbours the rule judged it by: the points not left out.
    pos = np.flatnonzero(judged & (curve.x > 0) & ~flagged)
    depth = []
    for i in np.flatnonzero(flagged):
        ys = np.insert(curve.y[pos], int(np.searchsorted(pos, i)), curve.y[i])
        depth.append(float(curve.y[i] - np.median(_around(ys, int(np.searchsorted(pos, i))))))
    left = Excursions(tuple(float(v) for v in curve.x[flagged]), tuple(float(v) for v in curve.y[flagged]), tuple(depth))
    return replace(curve, x=curve.x[~flagged], y=curve.y[~flagged]), left


def drop_seed_excursions(label: str, curves: list[Curve], until: float | None = None, *,
                         bounded: bool = True, hint: bool = True) -> tuple[list[Curve], list[str]]:
    """Each seed of run ``label`` without its excursions (points with ``x <= until``), and the note
    that says what was left out (``hint``: see :meth:`Excursions.note`): none, or one for the run --
    a study of many seeds said it once per seed, the rule's explanation each time. Seeds are judged
    one by one: their pooled series interleaves them."""
    kept, found = [], []
    for c in curves:
        c2, left = drop_excursions(c, until, bounded=bounded)
        kept.append(c2)
        if left:
            found.append((c, left))
    if len(found) == 1:
        c, left = found[0]
        return kept, [left.note(c.x_name, run=label if len(curves) == 1 else f"{label} ({c.name})", hint=hint)]
    if not found:
        return kept, []
    kind = "dip" if all(left.kind == "dip" for _, left in found) else "excursion"
    each = "; ".join(f"{c.name}: {left.points(c.x_name)}" for c, left in found)
    tail = "; --keep-excursions fits every evaluation" if hint else ""
    return kept, [f"{label}: left out of the fit {_count(sum(len(left) for _, left in found), kind)} in {len(found)} "
                  f"of {len(curves)} seeds ({each}) {_RULE}{tail}"]
