"""Is the run still a compute-performance curve? Unstable runs: peaked and fell, or falling now.

The sigmoid and the power law both rise monotonically; on a run that collapses (the pass
rate falls back towards where it started) or keeps declining, any extrapolation of them is
a statement the data contradict. :func:`check_stability` says so from the evaluations alone,
with three tests:

* **peaked and fell** -- the evaluations in equal-count bins (2-8 bins, >= 4 points each from 8
  points on): the fall from the best bin mean to the last bin mean;
* **falling at the end** -- a least-squares line in ln C through the last third of the
  points (>= 5): the drop it implies across them, its standard errors read in Student's t with
  the line's k - 2 degrees of freedom;
* **fell in its last evaluations** -- the last ``n_end`` (2) evaluations, each at least
  ``n_sd`` noise sds below the median of the best stretch of consecutive evaluations before them
  (a bin's length, 3 at least), their mean by ``n_se`` standard errors (from the noise of one
  evaluation, no less than the scatter inside that stretch about its own line), by
  ``n_sd_late`` sds, and by ``end_share`` (3/4) of the gain: a collapse gives most of it back,
  where healthy runs dip for two evaluations and come back (a review found such dips flagged on 7
  shipped runs cut mid-run when this test asked for less). A collapse that only the last two
  evaluations show escapes the other two tests: averaged into the last bin, and into the
  line through the last third, with the scatter it causes counted as noise. SofT-GRPO's
  public TensorBoard logs (zz1358m/SofT-GRPO-master, ``soft_0.1``: MATH 0.80 for 500 steps,
  then 0.70 and 0.61 in its last two evaluations, below where it started) were called stable
  and forecast at 0.77 by a fit whose own 95% prediction band missed its last point.

A fall counts when it is beyond the noise in both senses, *significant* and *material*:

* at least ``n_se`` (3) standard errors -- Welch's, from the scatter inside the two bins, or
  the line's from its residuals (as many as 3 are of a normal variable: 9.2 at 5 points);
* at least ``min_share`` (10%) of the gain the run had made at its best (best bin - R0),
  *and* at least ``n_sd`` (3) times the noise of one evaluation
  (:func:`scalerl.curves.window.noise_sd`) -- ``n_sd_late`` (4) for the line, which a short
  dip of a few evaluations can tilt.

Why both: on long runs a drift of 0.005 is many standard errors (Deep-GRPO runs of 600-1,000
greedy GSM8K evaluations drift down by up to 5% of their gain late), yet a forecast absorbs
it; on short noisy runs a dip of 0.02 can be 10% of the gain and still only twice the
noise of one evaluation. Evidence on the 42 shipped real runs
(``python benchmarks/forecast_corpus.py --stability``): among healthy runs the largest fall
is 10% of the gain at 2.2 evaluation-noise sds (TinyZero ``qwen_dots``, which dips in the
middle and recovers) and the largest late drop 7% of the gain at 2.6 sds (Deep-GRPO
``gamma1``); the declining run, TreeRL, gave back 23% at 4.6 sds (13 standard errors) and
is the only one flagged. On synthetic data: 0 of 1,200 noisy sigmoids (12-200 points, noise
0.005-0.02) flagged; a rise to 0.25 that collapses to 0 flagged 200 of 200 times, one that
declines to 0.18 (noise 0.01, 30 points) 198 of 200 (same command).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from scalerl.curves.window import noise_sd


STABLE, PEAKED, FALLING = "stable", "peaked and fell", "falling at the end"
#: Too few evaluations to tell a fall from noise (fewer than :data:`MIN_POINTS` with compute > 0): not
#: flagged, and not called stable either (review ch: "stable: no fall beyond the noise" on a 5-point run
#: that fell from 0.62 to 0.05, below its start).
UNTESTED = "not tested"
#: Fewest evaluations with compute > 0 that the check tests.
MIN_POINTS = 6


@dataclass(frozen=True)
class Stability:
    """The outcome of :func:`check_stability` (all levels in the metric's units)."""

    kind: str
    """'stable', 'peaked and fell', 'falling at the end', or 'not tested' (too few evaluations)."""
    gain: float
    """Best bin mean minus R0: what the run had gained at its best."""
    peak_x: float
    """Compute at the middle of the best bin."""
    fall: float
    """Best bin mean minus last bin mean (>= 0)."""
    fall_se: float
    late_drop: float
    """Drop across the last third implied by a line in ln C (negative: still rising)."""
    late_drop_se: float
    n_points: int
    peak_span: tuple[float, float] = (math.nan, math.nan)
    """The compute of the first and the last evaluation of the best stretch: what the text names (its
    geometric middle, :attr:`peak_x`, is no logged compute -- "peaked at compute 129.2" on a run logged every
    10 steps)."""

    @property
    def unstable(self) -> bool:
        return self.kind in (PEAKED, FALLING)

    @property
    def untested(self) -> bool:
        """Too few evaluations to test (:data:`UNTESTED`): neither flagged nor called stable."""
        return self.kind == UNTESTED

    def text(self) -> str:
        """One line for warnings, reports and tables."""
        if self.kind == PEAKED:
            lo, hi = self.peak_span
            where = f"at compute {lo:.4g}" if lo == hi else f"between compute {lo:.4g} and {hi:.4g}"
            return (f"the run peaked {where} and fell by {self.fall:.3f} "
                    f"({self._share(self.fall)} of its gain, {self._z(self.fall, self.fall_se)} standard errors): "
                    "the law does not hold, so its extrapolation is not a forecast")
        if self.kind == FALLING:
            return (f"the run is falling at the end: {self.late_drop:.3f} across its last third "
                    f"({self._share(self.late_drop)} of its gain, {self._z(self.late_drop, self.late_drop_se)} "
                    "standard errors): the law does not hold, so its extrapolation is not a forecast")
        if self.kind == UNTESTED:
            return (f"not tested for a fall: {self.n_points} evaluation(s) after the start, {MIN_POINTS} needed to tell "
                    "one from the noise")
        return "stable: no fall beyond the noise"

    def _share(self, v: float) -> str:
        return f"{100 * v / self.gain:.0f}%" if self.gain > 0 else "all"

    @staticmethod
    def _z(v: float, se: float) -> str:
        return f"{v / se:.1f}" if se > 0 else "many"

    def as_dict(self) -> dict:
        return {**asdict(self), "unstable": self.unstable, "text": self.text()}


def _bins(n: int) -> list[np.ndarray]:
    """Equal-count bins in evaluation order: 2 to 8 of them, at least 4 points each where the run has 8
    (3 each for 6-7 points). Three bins of a 6-11-point run held 2-3 points, whose two-point Welch errors
    can be ~0: flat runs on 30-100-problem evaluation sets were called "peaked and fell" 3-4% of the
    time at 6 points (``benchmarks/stability_false_alarms.py``)."""
    k = int(min(8, max(2, n // 4)))
    return [b for b in np.array_split(np.arange(n), k) if b.size]


def _scatter_about_line(v: np.ndarray) -> float:
    """The sd of ``v`` about its least-squares line in evaluation order (``v.size - 2`` degrees of freedom)."""
    i = np.arange(v.size, dtype=float)
    resid = v - np.polyval(np.polyfit(i, v, 1), i)
    return math.sqrt(float((resid**2).sum()) / max(v.size - 2, 1))


def check_stability(
    x, y, *, R0: float | None = None, n_se: float = 3.0, min_share: float = 0.1, n_sd: float = 3.0,
    n_sd_late: float = 4.0, n_end: int = 2, end_share: float = 0.75
) -> Stability:
    """Test a run's evaluations ``(x, y)`` for a fall (see the module docstring).

    ``R0``: the metric before training (default: the mean at zero compute, else the first
    evaluation). Too few points to test (fewer than :data:`MIN_POINTS` with compute > 0): :data:`UNTESTED`.
    """
    x = np.asarray(x, dtype=float)
    y = np.asarray(y, dtype=float)
    if R0 is None:
        R0 = float(y[x == 0].mean()) if (x == 0).any() else float(y[0])
    pos = x > 0
    xs, ys = x[pos], y[pos]
    n = int(xs.size)
    if n < MIN_POINTS:
        return Stability(UNTESTED, 0.0, math.nan, 0.0, 0.0, 0.0, 0.0, n)
    bins = _bins(n)
    levels = np.array([ys[b].mean() for b in bins])
    i_peak = int(np.argmax(levels))
    peak, end = float(levels[i_peak]), float(levels[-1])
    fall = peak - end
    # Welch's standard error from the scatter inside the two bins: real evaluations dip for a
    # few points at a time, which a robust noise estimate would call impossible.
    fall_se = math.sqrt(sum(ys[b].var(ddof=1) / b.size for b in (bins[i_peak], bins[-1])))
    gain = peak - R0
    peak_x = float(np.exp(np.log(xs[bins[i_peak]]).mean()))
    peak_span = (float(xs[bins[i_peak]].min()), float(xs[bins[i_peak]].max()))

    k = max(5, n // 3)
    u, v = np.log(xs[-k:]), ys[-k:]
    du = u - u.mean()
    sxx = float((du**2).sum())
    if sxx > 0:
        slope = float((du * (v - v.mean())).sum() / sxx)
        resid = v - v.mean() - slope * du
        s_res = math.sqrt(float((resid**2).sum()) / max(k - 2, 1))
        span = float(u[-1] - u[0])
        late_drop, late_se = -slope * span, s_res / math.sqrt(sxx) * span
        # The line's error comes from its own k - 2 residuals: as many standard errors as n_se is of a
        # normal variable, in Student's t with k - 2 degrees of freedom (3 of them at 5 points: 9.2 for
        # 3). With 3 flat, noisy 5-point lines read as falling 3% of the time, not 0.1%.
        late_q = float(student_t.isf(norm.sf(n_se), k - 2))
    else:  # all at one compute value: no slope to speak of
        late_drop, late_se, late_q = 0.0, 0.0, n_se

    sigma = noise_sd(ys)

    def falls(amount: float, se: float, k_sd: float, n_errors: float) -> bool:
        significant = amount >= n_errors * se
        material = amount >= max(min_share * max(gain, 0.0), k_sd * sigma)
        return amount > 0 and significant and material

    # The last evaluations against the best level before them, with the noise of one evaluation from
    # the whole run (successive differences: the collapse itself is one large step that the MAD
    # ignores). Each of them must lie below the best level, so one low evaluation at the end (a dip
    # that the next would undo) is not enough. Real runs dip for two evaluations and come back
    # (Deep-GRPO gamma3: 0.547, 0.550, then 0.573, 0.592; verl's deepseek7b: a fall of 52% of its
    # gain), and a small evaluation set's pass rates come in steps the successive-difference noise can
    # read as 0: a collapse at the very end gives back most of the gain (``end_share``; SofT-GRPO's
    # soft_0.1 fell below where it started), against the median of the best stretch of consecutive
    # evaluations (one high evaluation does not make a peak), with a noise no smaller than the scatter
    # inside it about its own line. That stretch is found among the evaluations *before* the last n_end, as long as a bin
    # (3 at least): found among the bins of all of them, a collapse in the last 2-3 evaluations of a
    # short run shared the last bin with its peak (two bins at 8-11 points), and a rise to 0.58 that fell
    # back to 0.21, its start, in three evaluations read as stable (review m).
    end = ys[-n_end:]
    before = ys[:-n_end]
    ended_low = False
    if n_end >= 2 and before.size >= 3:
        w = max(3, math.ceil(before.size / 8))
        start = max(range(before.size - w + 1), key=lambda i: before[i:i + w].mean())
        best = before[start:start + w]
        peak_end = float(np.median(best))
        # The noise from the evaluations before the ones judged: with them, the steps of the fall being
        # judged were counted as noise, and a noise-free rise to 0.64 that fell back to its start in three
        # evaluations read as 0.12 of noise, stable (review ch). Its floor, the scatter inside the best
        # stretch (a small evaluation set's pass rates come in steps the successive differences read as no
        # noise), is taken about the stretch's own line: its sd held the rise of a run still rising when it
        # fell (0.35, 0.50, 0.60: sd 0.13) and hid a fall from 0.60 to 0.05 in its last two evaluations. (Not
        # from second differences of all the evaluations before: one jump to a plateau, a run learning its
        # answer format, read as 0.12 of noise there -- review cs.) benchmarks/stability_false_alarms.py:
        # healthy curves called unstable 28 of 28,800 (25), the shipped runs' cuts unchanged.
        sigma_end = max(noise_sd(before), _scatter_about_line(best))
        end_fall = peak_end - float(end.mean())
        end_se = sigma_end * math.sqrt(1.0 / n_end + 1.0 / best.size)
        ended_low = (bool((end <= peak_end - n_sd * sigma_end).all())
                     and end_fall >= end_share * max(peak_end - R0, 0.0)
                     and end_fall >= n_se * end_se and end_fall >= n_sd_late * sigma_end)

    kind = STABLE
    if falls(fall, fall_se, n_sd, n_se) and i_peak < len(bins) - 1:
        kind = PEAKED
    elif falls(late_drop, late_se, n_sd_late, late_q):
        kind = FALLING
    elif ended_low:  # said from the stretch it was measured from (a bin's gain gave "4250% of its gain")
        kind, fall, fall_se = PEAKED, end_fall, end_se
        gain, peak_x = peak_end - R0, float(np.exp(np.log(xs[start:start + w]).mean()))
        peak_span = (float(xs[start:start + w].min()), float(xs[start:start + w].max()))
    return Stability(kind, gain, peak_x, fall, fall_se, late_drop, late_se, n, peak_span)
