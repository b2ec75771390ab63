"""Calibrating the bands on runs of your own: conformal factors from backtests of logs you have.

The shipped factors (``calibration.json``, :mod:`scalerl.curves.bands`) come from 41 real runs
of three sources. A conformal band covers at its level when the runs it is calibrated on are
exchangeable with the run it is used on; a run of another framework, model or task may drift
more, or be noisier, than any of those three: held out, a whole source was covered at 86-100%
(docs/forecasting.md). The runs most exchangeable with your next run are your earlier ones.

:func:`calibrate` backtests each run at 30%, 50% and 70% of its compute, collects the same three
scores the shipped calibration is made of -- ``|observed end level - forecast| / (f s)``,
``|observed evaluation - forecast| / (f sqrt(s^2 + sigma^2))`` and the gain's (module
docstring of :mod:`scalerl.curves.bands`) -- and returns their conformal quantiles at every
level. What the point forecast combines (members, temperature) stays as shipped: chosen on 41
runs, it would be chosen by noise on a handful. Runs that are unstable (they peak and fall),
and cuts flagged unstable, are left out, as in the shipped calibration.

The same functions make the shipped calibration (``benchmarks/forecast_corpus.py``), there with
every source weighing the same.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

from scalerl.curves.backtest import Backtest, _end_slice, backtest
from scalerl.curves.bands import Bands, Calibration, conformal_quantile, default_calibration, gain_scale
from scalerl.curves.data import Curve
from scalerl.curves.forecast import Forecast
from scalerl.curves.io import METRIC_SEP
from scalerl.errors import InputError

#: Where each run is cut: the same shares as the shipped calibration.
CUTS = (0.3, 0.5, 0.7)
#: Levels the factors are given at (the bands interpolate between them).
LEVELS = (0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.975, 0.99)
#: Fewest scored run-cuts a calibration is made from; below it the quantiles are noise.
MIN_CUTS = 6
#: Share of the held-out evaluations the gain is measured from (its first quarter to its last).
GAIN_SHARE = 0.25


@dataclass(frozen=True)
class CutScore:
    """One run cut at one compute: how far off the forecast was, in units of its own scale."""

    run: str
    end: float
    """``|observed end level - forecast| / (f s)`` (the confidence band's score)."""
    end_unit: float
    """``f s`` at the end level: the confidence band's half-width per unit of factor."""
    points: np.ndarray
    """``|observed - forecast| / (f sqrt(s^2 + sigma^2))`` at each held-out evaluation (prediction band)."""
    horizon: float
    """Longest horizon ``ln(C / C_end)`` among the held-out evaluations."""
    gain_error: float
    """``|observed gain - forecast gain|`` from the first to the last quarter of the held-out evaluations."""
    gain_ends: tuple[float, float]
    """The bands' scale s at the two ends of that gain."""
    gain_span: float
    """``ln(TO / FROM)`` of that gain."""
    gain_horizon: float
    """Horizon of its far end."""
    small_sample: float
    """The forecast's small-sample factor f."""
    points_confidence: np.ndarray | None = None
    """``|observed - forecast| / (f s)`` at each held-out evaluation: the prediction band holds the
    confidence band (:meth:`~scalerl.curves.bands.Bands.half_widths`), so an evaluation inside the
    latter is inside the drawn prediction band whatever the prediction factor."""
    drawn: "Drawn | None" = None
    """What the bands are drawn from at the held-out evaluations (:func:`check` scores the bands as
    ``fit`` and ``backtest`` draw them: stretched past a calibration's horizon, clipped to the bounds)."""


@dataclass(frozen=True)
class Drawn:
    """A forecast's band model, curve and band scale at a run-cut's held-out evaluations, and those evaluations."""

    bands: Bands
    x: np.ndarray
    R: np.ndarray
    s: np.ndarray
    y: np.ndarray

    def band_check(self, cal: Calibration, level: float) -> tuple[bool, float, float]:
        """(end level inside the confidence band, its half-width, share of evaluations inside the prediction
        band) with ``cal``'s factors at ``level``: the bands :meth:`~scalerl.curves.bands.Bands.edges` draws."""
        lo, hi, obs_lo, obs_hi = replace(self.bands, calibration=cal, level=level).edges(self.R, self.s, self.x)
        end = _end_slice(self.y.size)
        lo_end, hi_end, at_end = float(lo[end].mean()), float(hi[end].mean()), float(self.y[end].mean())
        inside = (self.y >= obs_lo) & (self.y <= obs_hi)
        return lo_end <= at_end <= hi_end, (hi_end - lo_end) / 2, float(inside.mean())


def cut_score(fc: Forecast, x: Sequence[float], y: Sequence[float], run: str = "") -> CutScore:
    """The calibration scores of forecast ``fc`` against the held-out evaluations ``(x, y)``."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if x.size == 0:
        raise InputError(f"run {run!r}: no held-out evaluations to score")
    R, s = fc.mean(x), fc.scale(x)
    f, sigma = fc.bands.small_sample, fc.bands.sigma
    end = _end_slice(y.size)
    k = max(1, int(round(GAIN_SHARE * y.size)))
    first = slice(0, k)
    c_from, c_to = float(np.exp(np.log(x[first]).mean())), float(np.exp(np.log(x[end]).mean()))
    gain_fc = float(R[end].mean() - R[first].mean())
    gain_obs = float(y[end].mean() - y[first].mean())
    unit = f * float(s[end].mean())
    return CutScore(
        run=run,
        end=abs(float(R[end].mean()) - float(y[end].mean())) / unit,
        end_unit=unit,
        points=np.abs(R - y) / (f * np.sqrt(s**2 + sigma**2)),
        horizon=float(np.nanmax(fc.bands.horizon(x))),
        gain_error=abs(gain_obs - gain_fc),
        gain_ends=tuple(float(v) for v in fc.scale([c_from, c_to])),
        gain_span=math.log(c_to / c_from),
        gain_horizon=float(fc.bands.horizon([c_to])[0]),
        small_sample=f,
        points_confidence=np.abs(R - y) / (f * s),
        drawn=Drawn(fc.bands, x, R, s, y),
    )


def calibration_from_scores(
    scores: Sequence[CutScore],
    *,
    members: Iterable[str],
    temperature: float | None,
    weights: Sequence[float] | None = None,
    levels: Sequence[float] = LEVELS,
    provenance: str = "",
    require_gain: bool = True,
) -> Calibration:
    """The conformal factors at every level from run-cut scores; ``weights`` (default: equal)
    say how much each run-cut counts (the shipped calibration gives every source one unit). A run-cut
    that holds out one evaluation (or several at one compute) has no gain: left out of the gain factors.
    None with one: refused -- or, with ``require_gain`` False (the checks of the other two factors on a
    subset of run-cuts), NaN gain factors, which no file may hold."""
    if not scores:
        raise InputError("no run-cuts to calibrate on")
    n = len(scores)
    w = np.ones(n) if weights is None else np.asarray(weights, dtype=float)
    h_max = max(c.horizon for c in scores)
    # A run-cut that holds out one evaluation has no gain (its first and last quarter are that one): a span and
    # an error of 0, which made a file of zero gain factors that read_calibration refuses (review du).
    gains = [(c, wi) for c, wi in zip(scores, w) if c.gain_span > 0]
    if not gains and require_gain:  # (a file of zero or NaN gain factors was written: reviews du, dy)
        raise InputError(f"none of the {n} run-cuts holds out evaluations at two computes or more, so no gain "
                         "interval can be calibrated: cut the runs earlier (--cuts) or give runs with more evaluations")
    span = float(np.median([c.gain_span for c, _ in gains])) if gains else math.nan
    end = np.array([c.end for c in scores])
    pts = np.concatenate([c.points for c in scores])
    # Each run-cut's evaluations share its weight: a long held-out part counts no more than a short one.
    w_pts = np.concatenate([np.full(c.points.size, wi / c.points.size) for c, wi in zip(scores, w)])
    gain = np.array([
        c.gain_error / max(c.small_sample * gain_scale(*c.gain_ends, c.gain_span, span)
                           * max(1.0, c.gain_horizon / h_max), 1e-12)
        for c, _ in gains])
    w_gain = np.array([wi for _, wi in gains])
    q_gain = (tuple(conformal_quantile(gain, lv, weights=w_gain, n_units=len(gains)) for lv in levels) if gains
              else (math.nan,) * len(levels))
    return Calibration(
        levels=tuple(levels),
        q_confidence=tuple(conformal_quantile(end, lv, weights=w, n_units=n) for lv in levels),
        q_prediction=tuple(conformal_quantile(pts, lv, weights=w_pts, n_units=n) for lv in levels),
        q_gain=q_gain,
        h_max=h_max,
        temperature=temperature,
        members=tuple(members),
        gain_span=span,
        provenance=provenance,
        run_cuts=n,
    )


@dataclass(frozen=True)
class Check:
    """How bands with given factors did on run-cuts they were not calibrated on."""

    level: float
    end_coverage: float
    """Share of run-cuts whose observed end level lies in the confidence band."""
    end_half_width: float
    """Median half-width of the confidence band at the end level."""
    point_coverage: float
    """Mean over run-cuts of the share of held-out evaluations inside the prediction band."""


def check(scores: Sequence[CutScore], cal: Calibration, level: float = 0.95) -> Check:
    """Coverage of ``cal``'s bands at ``level`` on ``scores`` (run-cuts): of the bands as drawn where the scores
    say how (:attr:`CutScore.drawn`: stretched past ``cal``'s horizon, clipped to the bounds -- calibrate printed
    75% for the shipped bands that backtest measured at 83% on the same forecasts: review du)."""
    qc, qp = cal.q(level, "confidence"), cal.q(level, "prediction")
    parts = [c.drawn.band_check(cal, level) if c.drawn is not None else
             (c.end <= qc, qc * c.end_unit, float(np.mean(_inside_prediction_band(c, qc, qp)))) for c in scores]
    return Check(level, float(np.mean([covered for covered, _, _ in parts])),
                 float(np.median([half for _, half, _ in parts])),
                 float(np.mean([inside for _, _, inside in parts])))


def _inside_prediction_band(c: CutScore, qc: float, qp: float) -> np.ndarray:
    """Which held-out evaluations the drawn prediction band holds: its own factor's band, widened
    to the confidence band where that is the wider (as the forecast draws it)."""
    inside = c.points <= qp
    return inside if c.points_confidence is None else inside | (c.points_confidence <= qc)


def leave_one_run_out(scores: Sequence[CutScore], members: Iterable[str], temperature: float | None,
                      level: float = 0.95, *, n_runs: int | None = None, draws: int = 20,
                      seed: int = 0) -> Check | None:
    """How factors calibrated on your runs would do on a run they have not seen: each run's cuts
    scored with the factors from the other runs -- all of them, or (``n_runs``) ``draws`` random
    sets of that many, as a team with only ``n_runs`` earlier runs would have. None with fewer
    than 3 runs (or fewer than ``n_runs + 1``)."""
    runs = list(dict.fromkeys(c.run for c in scores))
    if len(runs) < max(3, (n_runs or 0) + 1):
        return None
    members = tuple(members)
    rng = np.random.default_rng(seed)
    parts = []
    for run in runs:
        held = [c for c in scores if c.run == run]
        others = [r for r in runs if r != run]
        sets = [others] if n_runs is None else [list(rng.choice(others, n_runs, replace=False)) for _ in range(draws)]
        for chosen in sets:
            rest = [c for c in scores if c.run in chosen]
            cal = calibration_from_scores(rest, members=members, temperature=temperature, require_gain=False)
            parts.append((check(held, cal, level), len(held) / len(sets)))
    w = np.array([n for _, n in parts], dtype=float)
    return Check(level, float(np.average([p.end_coverage for p, _ in parts], weights=w)),
                 float(np.median([p.end_half_width for p, _ in parts])),
                 float(np.average([p.point_coverage for p, _ in parts], weights=w)))


def leave_one_group_out(scores: Sequence[CutScore], group_of: Mapping[str, str], members: Iterable[str],
                        temperature: float | None, level: float = 0.95) -> dict[str, Check | int]:
    """How factors calibrated on some groups of runs (a log, a source) do on another's: each group's
    run-cuts scored with the factors from every other group's -- the benchmark's leave-one-source-out,
    on your runs. ``group_of`` maps each run to its group; a group whose others hold fewer than
    :data:`MIN_CUTS` run-cuts is not checked (factors from so few say nothing): its entry is how many they
    hold (it was left out of the table without a word: review du). Empty with one group."""
    members = tuple(members)
    groups = list(dict.fromkeys(group_of[c.run] for c in scores))
    out: dict[str, Check | int] = {}
    for group in groups if len(groups) > 1 else ():
        held = [c for c in scores if group_of[c.run] == group]
        rest = [c for c in scores if group_of[c.run] != group]
        out[group] = (check(held, calibration_from_scores(rest, members=members, temperature=temperature,
                                                          require_gain=False), level)
                      if len(rest) >= MIN_CUTS else len(rest))
    return out


@dataclass
class CalibrationRun:
    """What :func:`calibrate` did: the calibration, the backtests behind it, what it left out."""

    calibration: Calibration
    backtests: list[Backtest]
    """Every backtest made (scored or not)."""
    scored: list[Backtest]
    """The run-cuts the factors come from."""
    skipped: list[tuple[str, str]]
    """(run, reason) for runs or cuts that could not be backtested."""
    scores: list[CutScore]
    base: Calibration
    """The calibration the forecasts were made with (its factors: what your runs are compared with)."""

    @property
    def runs_scored(self) -> int:
        """How many runs the factors come from, counted as the leave-one-run-out check holds them out
        (:func:`training`)."""
        return len({c.run for c in self.scores})

    def check_base(self, level: float = 0.95) -> Check:
        """How the base factors (the shipped ones) did on your runs."""
        return check(self.scores, self.base, level)

    def check_new(self, level: float = 0.95) -> Check | None:
        """How the new factors do on a run they were not calibrated on (leave one run out)."""
        return leave_one_run_out(self.scores, self.calibration.members, self.calibration.temperature, level)

    def check_groups(self, group_of: Mapping[str, str], level: float = 0.95) -> dict[str, Check | int]:
        """How the new factors, made without a group's runs, do on that group's (leave one group out; the
        run-cuts the others hold, where too few to check: :func:`leave_one_group_out`)."""
        return leave_one_group_out(self.scores, group_of, self.calibration.members, self.calibration.temperature,
                                   level)


def _left_out(backtests: list, skipped: list[tuple[str, str]]) -> str:
    """Which runs were left out and why (the first reason of each): the error said only how many."""
    reasons: dict[str, str] = {}
    for run, why in skipped:
        reasons.setdefault(run, why if len(why) <= 120 else why[:117] + "...")
    for bt in backtests:
        if not bt.scored:
            reasons.setdefault(bt.run, "unstable at a cut or over the whole run")
    return (": " + "; ".join(f"{run} ({why})" for run, why in reasons.items())) if reasons else ""


def training(curve: Curve) -> str:
    """The run ``curve`` belongs to, what the leave-one-run-out check holds out and the run counts count:
    a ``--y`` glob's ``"<run> | <metric>"`` is one of ``<run>``'s evaluation sets, held out with its
    others -- except a column of a table with a column per run (:attr:`Curve.column_run`), a run of its
    own (calibrate said "calibrated on 8 run(s)" of such columns and checked them as one)."""
    return curve.name if curve.column_run else curve.name.split(METRIC_SEP, 1)[0]


def _named_apart(curves: Sequence[Curve]) -> list[Curve]:
    """``curves`` with no two of one name, as the command line names them: where any name repeats, every curve is
    ``SOURCE:NAME`` (each run a ``metrics.csv`` in a directory of its own: read_curves names each "metrics"), then,
    where names still repeat, ``SOURCE:NAME:METRIC`` (one table read for several columns), then ``#K`` on the run
    part of those still alike (curves made with one name by hand) -- every curve relabelled at once, so that a
    run's evaluation sets, ``"<run> | <metric>"``, stay one run's (reviews du, dv, dy)."""
    def where(c: Curve) -> str:
        return f"{c.source}:" if c.source else ""

    labels = [c.name for c in curves]
    for label_of in (lambda c: f"{where(c)}{c.name}", lambda c: f"{where(c)}{c.name}:{c.y_name}"):
        if len(set(labels)) == len(labels):
            break
        labels = [label_of(c) for c in curves]
    counts, seen = Counter(labels), Counter()
    for i, label in enumerate(labels):
        if counts[label] > 1:
            seen[label] += 1
            run, sep, metric = label.partition(METRIC_SEP)
            labels[i] = f"{run}#{seen[label]}{sep}{metric}"
    return [c if label == c.name else replace(c, name=label) for c, label in zip(curves, labels)]


def calibrate(
    curves: Sequence[Curve],
    *,
    cuts: Sequence[float] = CUTS,
    base: Calibration | None = None,
    provenance: str = "",
    progress: Callable[[str], None] | None = None,
    **forecast_kwargs,
) -> CalibrationRun:
    """Factors for the bands from backtests of ``curves`` (your runs) at ``cuts`` of their compute.

    The forecasts are made with ``base`` (default: the shipped calibration): its members and
    temperature are kept; only the factors are new. ``forecast_kwargs`` go to the forecast
    (r0, fit_from, A_max, ...), as the runs will be forecast later."""
    base = base or default_calibration()
    curves = _named_apart(curves)
    backtests, skipped = [], []
    # Runs a log held that its reader could not make a curve of (no finite values, say): listed
    # with the skipped ones -- they were dropped without a word, "calibrated on 5 runs" of 6 given.
    for run, why in dict.fromkeys(pair for c in curves for pair in c.left_out):
        skipped.append((run, f"not read: {why}"))
    for curve in curves:
        for f in cuts:
            try:
                backtests.append(backtest(curve, cut_fraction=f, n_boot=0, calibration=base, **forecast_kwargs))
            except InputError as exc:  # too short at this cut: the other cuts still count
                skipped.append((curve.name, f"cut at {f:g}: {exc}"))
        if progress is not None:
            progress(curve.name)
    scored = [bt for bt in backtests if bt.scored]
    if len(scored) < MIN_CUTS:
        raise InputError(
            f"{len(scored)} run-cut(s) could be scored ({len(curves)} run(s) x {len(cuts)} cuts, unstable runs and "
            f"runs too short to cut left out{_left_out(backtests, skipped)}); a calibration needs at least {MIN_CUTS}: "
            "give more runs, or longer ones")
    # Scored as the training they come from: a --y glob's curves of one run (its evaluation sets) move
    # together, and holding out one while another stayed in made a "leave one run out" check of two runs.
    run_of = {c.name: training(c) for c in curves}
    scores = [cut_score(bt.forecast, bt.test_x, bt.test_y, run_of[bt.run]) for bt in scored]
    # The compute column(s) in the provenance, which fit prints with the bands: factors made on runs
    # against steps and used on a run against GPU-hours are then not used without a word of it.
    x_names = ", ".join(dict.fromkeys(c.x_name for c in curves if c.name in {bt.run for bt in scored}))
    # Runs counted as the check holds them out (the provenance counted a glob's curves of one run each).
    n_runs = len({s.run for s in scores})
    cal = calibration_from_scores(scores, members=base.members, temperature=base.temperature,
                                  provenance=provenance or f"scalerl calibrate: {n_runs} "
                                                           f"runs, {len(scored)} run-cuts at {list(cuts)}, "
                                                           f"x: {x_names}")
    return CalibrationRun(cal, backtests, scored, skipped, scores, base)


__all__ = ["CUTS", "CalibrationRun", "Check", "CutScore", "calibrate", "calibration_from_scores", "check", "cut_score",
           "leave_one_group_out", "leave_one_run_out", "training"]
