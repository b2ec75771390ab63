"""Intervals for fitted curves: bootstrap over evaluation points, and across seeds.

The paper reports A with a fixed +-0.02 margin (the spread of three runs) and no interval
on B. Here every parameter and every prediction gets a percentile interval:

* ``residual`` bootstrap (default): keep the evaluation schedule (a design choice of the
  run, not a random draw), add resampled residuals of the fit to the fitted curve, refit.
  R0, when it was measured (``r0="first"``), is perturbed by a resampled residual too,
  because it is one noisy evaluation like the others.
* ``pairs`` bootstrap: resample the evaluation points themselves.
* several seeds of one configuration: a pooled fit, and a hierarchical bootstrap that
  resamples seeds (each with its own fitted curve and R0) and then residuals within each, so the
  interval includes the seed spread (:class:`RunResampler`).

Each replicate is one bounded least-squares refine warm-started at the full-data optimum. For
the residual bootstrap with R0 fixed or measured (the default) all replicates share the
evaluation schedule and are refitted together by a batched Levenberg-Marquardt
(:func:`scalerl.curves.solver.refine_many`, same optimum as one ``least_squares`` call each
to ~1e-5): 1,000 replicates on 200 points in about 0.1 s.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from scalerl.curves.data import Curve
from scalerl.curves.seed_dof import widen_for_seeds
from scalerl.curves.sigmoid_fit import SigmoidFit, fit_sigmoid
from scalerl.curves.solver import B_BOUNDS, fit_fast, ln_c_mid_bounds, refine_many, resolve_r0
from scalerl.curves.laws import Sigmoid
from scalerl.errors import InputError

PARAMS = ("A", "B", "C_mid", "R0")
NO_BOUNDS = (-math.inf, math.inf)
BOOTSTRAP_KINDS = ("residual", "pairs")

N_BOOT = 1000
"""Bootstrap resamples per interval unless told otherwise: ``forecast``, ``fit_seeds``, the commands' ``--bootstrap``
and the run report -- one number, so a run's report and ``scalerl fit`` on its log give the same intervals."""


@dataclass
class Bootstrap:
    """Bootstrap replicates of a sigmoid fit: one row of (A, B, C_mid, R0) per replicate."""

    samples: np.ndarray
    level: float = 0.95
    kind: str = "residual"
    n_failed: int = 0
    notes: list[str] = field(default_factory=list)
    seed_counts: np.ndarray | None = None
    """Several seeds: per replicate (row), how often each seed was drawn (:meth:`RunResampler.draw`):
    what :func:`scalerl.curves.seed_dof.seed_shares` tells the seeds' share of the spread by. None: one seed."""
    bounds: dict[str, tuple[float, float]] = field(default_factory=dict)
    """Several seeds: the bounds every replicate keeps, per parameter (A above the lowest start drawn and at most
    its bound, R0 from the data's floor, B within the solver's, C_mid within the fit's range), and ``"curve"``
    for the fitted curve (as A): where an interval widened for few seeds (:meth:`interval`) ends."""

    def _q(self) -> tuple[float, float]:
        a = (1.0 - self.level) / 2.0
        return 100 * a, 100 * (1 - a)

    def _widen(self, values: np.ndarray, lo: float, hi: float, *, log: bool, bounds: tuple[float, float] = NO_BOUNDS,
               keep: np.ndarray | None = None) -> tuple[float, float]:
        """A percentile interval widened for a few seeds (:func:`~scalerl.curves.seed_dof.widen_for_seeds`) within
        ``bounds``; ``keep``: the replicates ``values`` come from, where some were left out."""
        if self.seed_counts is None:
            return lo, hi
        counts = self.seed_counts if keep is None else self.seed_counts[keep]
        return widen_for_seeds(values, lo, hi, [counts], self.level, log=log, bounds=bounds)

    def interval(self, name: str) -> tuple[float, float]:
        """The percentile interval of a parameter; with a few seeds (:attr:`seed_counts`), widened about the draws'
        median by :func:`~scalerl.curves.seed_dof.few_seeds_stretch` (t over z) -- on the log scale for B and
        C_mid, where the draws are near symmetric -- within :attr:`bounds`. The percentiles of a two-seed
        variant covered its configuration's C_mid 80% of the time at 95%, the widened interval 89%; three seeds
        87-88% -> 94%; A and B 90-98% -> 94.5-99.5% (``python benchmarks/seed_intervals.py [--seed-sd-A 0.02]``,
        200 trials)."""
        col = self.samples[:, PARAMS.index(name)]
        lo, hi = _percentiles(col, self._q())
        return self._widen(col, float(lo), float(hi), log=name in ("B", "C_mid"),
                           bounds=self.bounds.get(name, NO_BOUNDS))

    def intervals(self) -> dict[str, list[float]]:
        return {p: list(self.interval(p)) for p in PARAMS}

    def laws(self) -> list[Sigmoid]:
        return [Sigmoid(A=a, B=b, C_mid=c, R0=r) for a, b, c, r in self.samples]

    def predict_interval(self, C) -> tuple[np.ndarray, np.ndarray]:
        """Percentile band of the fitted *mean* curve at compute C (widened for a few seeds, as :meth:`interval`:
        far out it is A's interval)."""
        C = np.atleast_1d(np.asarray(C, dtype=float))
        preds = _evaluate_many(self.samples, C)
        lo, hi = np.percentile(preds, self._q(), axis=0)
        if self.seed_counts is not None:
            for j in range(C.size):
                lo[j], hi[j] = self._widen(preds[:, j], lo[j], hi[j], log=False,
                                           bounds=self.bounds.get("curve", NO_BOUNDS))
        return lo, hi

    def quantity_interval(self, fn, *, bounds: tuple[float, float] = NO_BOUNDS) -> tuple[float, float]:
        """Interval of any scalar function of the law (e.g. compute to reach a target); with a few seeds widened
        as :meth:`interval` is (on the log scale where every value is positive) within ``bounds`` -- the range
        ``fn`` can take, which only the caller knows (``law.A``: ``boot.bounds["A"]``; the curve at some compute:
        ``boot.bounds["curve"]``; a compute: none)."""
        vals = np.array([fn(law) for law in self.laws()], dtype=float)
        keep = ~np.isnan(vals)
        vals = vals[keep]
        if vals.size == 0:
            return math.nan, math.nan
        lo, hi = _percentiles(vals, self._q())
        return self._widen(vals, float(lo), float(hi), log=bool((vals > 0).all()), bounds=bounds, keep=keep)


def _percentiles(values: np.ndarray, q) -> np.ndarray:
    """Percentiles that survive infinite values (e.g. "never reaches the target")."""
    if np.isinf(values).any():
        return np.percentile(values, q, method="nearest")
    return np.percentile(values, q)


def _evaluate_many(samples: np.ndarray, C: np.ndarray) -> np.ndarray:
    """Evaluate every replicate's sigmoid at every C: (n_samples, len(C))."""
    A, B, Cm, R0 = (samples[:, i : i + 1] for i in range(4))
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        t = B * (np.log(Cm) - np.log(np.where(C > 0, C, np.nan))[None, :])
        frac = np.where(C[None, :] > 0, 1.0 / (1.0 + np.exp(np.clip(t, -700, 700))), 0.0)
    return R0 + (A - R0) * frac


def _start(fit: SigmoidFit) -> tuple[float, float, float, float]:
    return (fit.A, fit.B, fit.C_mid, fit.R0)


def seeded_rng(seed) -> np.random.Generator:
    """The bootstrap's random numbers, from a whole number or a :class:`numpy.random.SeedSequence`
    (one of :func:`independent_seeds`); a seed numpy refuses (a negative one, ``--seed -1``) ended in
    numpy's traceback."""
    if not isinstance(seed, np.random.SeedSequence):
        _check_seed(seed)
    return np.random.default_rng(seed)


def _check_seed(seed) -> None:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise InputError(f"the bootstrap seed (--seed) must be a whole number >= 0, got {seed!r}")


def independent_seeds(seed, n: int) -> list[np.random.SeedSequence]:
    """``n`` independent streams from one bootstrap seed (:meth:`numpy.random.SeedSequence.spawn`), one
    per run of a comparison. Runs bootstrapped with the same seed draw the same random numbers: the same
    seeds picked and the same residual positions in every replicate of both, so the bootstrap of their
    difference carried a covariance between two independent runs' data that is not there -- with two
    seeds a run their seed deviations are perfectly correlated or anti-correlated, and the seed share of
    a difference's variance came out (s1 - s2)^2 or (s1 + s2)^2 instead of s1^2 + s2^2. Over many pairs
    the two cancelled (identical configurations of 2 seeds: 23% false verdicts before, 22% with the
    streams alone, benchmarks/compare_verdicts.py): wrong in principle, not a measurable bias."""
    _check_seed(seed)
    return np.random.SeedSequence(int(seed)).spawn(n)


def check_bootstrap(n: int, *, level: float) -> None:
    """Refuse a bootstrap too small to give intervals, or an interval level it cannot give."""
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise InputError(f"a bootstrap's resamples are a whole number (at least 10), got {n!r}")
    if n < 10:
        raise InputError(f"a bootstrap needs at least 10 resamples, got {n}")
    if not 0.5 <= level < 1.0:
        raise InputError(f"interval level must be in [0.5, 1), got {level}")


def noise_draws(resid: np.ndarray, p: int) -> np.ndarray:
    """A fit's residuals as the noise a residual bootstrap draws from: centred, and rescaled by
    sqrt(n / (n - p)) -- residuals of a p-parameter fit are smaller than the noise."""
    return (resid - resid.mean()) * math.sqrt(len(resid) / max(len(resid) - p, 1))


def bootstrap(
    fit: SigmoidFit,
    n: int = 1000,
    *,
    level: float = 0.95,
    kind: str = "residual",
    seed: "int | np.random.SeedSequence" = 0,
    A_max: float | None = None,
    y_floor: float | None = None,
) -> Bootstrap:
    """Bootstrap a sigmoid fit over its evaluation points (see the module docstring); ``A_max``,
    ``y_floor``: default, the fit's own."""
    if not isinstance(fit, SigmoidFit):
        raise InputError(f"bootstrap takes a SigmoidFit, got {type(fit).__name__}; make one with fit_sigmoid(curve)")
    A_max = fit.A_max if A_max is None else A_max
    y_floor = fit.y_floor if y_floor is None else y_floor
    if kind not in BOOTSTRAP_KINDS:
        raise InputError(f"unknown bootstrap kind {kind!r}; known: {', '.join(BOOTSTRAP_KINDS)}")
    check_bootstrap(n, level=level)
    rng = seeded_rng(seed)
    x, y = fit.x, fit.y
    free_r0 = fit.r0_mode == "free"
    fitted = fit.law(x)
    p = 4 if free_r0 else 3
    resid = noise_draws(y - fitted, p)
    perturb_r0 = fit.r0_mode == "first"
    if kind == "residual" and not free_r0 and (x > 0).all():
        # The common case, all replicates refitted at once (same schedule, same model).
        Y = fitted[None, :] + rng.choice(resid, size=(n, len(x)), replace=True)
        r0 = fit.R0 + (rng.choice(resid, size=n) if perturb_r0 else 0.0)
        r0 = np.maximum(np.broadcast_to(r0, (n,)), y_floor)  # a pass rate below 0 is an artefact, not a resample
        params, _ = refine_many(np.log(x), Y, r0, (fit.A, fit.B, fit.C_mid), A_max=A_max)
        ok = np.isfinite(params).all(1) & (params[:, 0] > r0)
        return _result(params[ok], n, int((~ok).sum()), level, kind)
    out, failed = [], 0
    for _ in range(n):
        if kind == "residual":
            xb, yb = x, fitted + rng.choice(resid, size=len(x), replace=True)
        else:
            idx = rng.integers(0, len(x), size=len(x))
            xb, yb = x[idx], y[idx]
            if np.unique(xb[xb > 0]).size < p:
                failed += 1
                continue
            order = np.argsort(xb, kind="stable")
            xb, yb = xb[order], yb[order]
        r0 = None if free_r0 else fit.R0 + (rng.choice(resid) if perturb_r0 else 0.0)
        if r0 is not None:
            r0 = max(r0, y_floor)  # a pass rate below 0 is not a resample, it is an artefact
        try:
            params, _ = fit_fast(xb, yb, r0, A_max=A_max, y_floor=y_floor, start=_start(fit))
        except (ValueError, FloatingPointError):
            failed += 1
            continue
        if r0 is not None and not params[0] > r0:
            failed += 1
            continue
        out.append(params)
    return _result(np.asarray(out, dtype=float).reshape(-1, 4), n, failed, level, kind)


def _result(samples: np.ndarray, n: int, failed: int, level: float, kind: str) -> Bootstrap:
    if len(samples) < max(10, n // 2):
        raise InputError(f"the bootstrap failed on {failed} of {n} resamples; the fit is too fragile for intervals")
    boot = Bootstrap(samples, level=level, kind=kind, n_failed=failed)
    if failed:
        boot.notes.append(f"{failed} of {n} bootstrap resamples could not be fitted and were left out")
    return boot


@dataclass
class SeedFit:
    """A pooled fit over several seeds of one configuration, with the seed spread."""

    pooled: SigmoidFit
    per_seed: list[SigmoidFit]
    boot: Bootstrap | None
    resampler: "RunResampler"
    """How this run's replicates are drawn (:class:`RunResampler`): the bootstrap's, and a comparison's."""

    def spread(self) -> dict[str, list[float]]:
        """(min, max) of each parameter across the per-seed fits."""
        return {
            p: [float(min(getattr(f, p) for f in self.per_seed)), float(max(getattr(f, p) for f in self.per_seed))]
            for p in PARAMS
        }


def pool_curves(curves: list[Curve]) -> Curve:
    """One curve from several seeds: all points, sorted by compute (R0 = mean of their R0s)."""
    if not curves:
        raise InputError("no runs to pool")
    x = np.concatenate([c.x for c in curves])
    y = np.concatenate([c.y for c in curves])
    order = np.argsort(x, kind="stable")
    c0 = curves[0]
    return Curve(
        x=x[order],
        y=y[order],
        name=c0.name if len(curves) == 1 else f"{c0.name} (+{len(curves) - 1} seeds)",
        x_name=c0.x_name,
        y_name=c0.y_name,
        dropped=sum(c.dropped for c in curves),
        source=c0.source,
        bounded=all(c.bounded for c in curves),
    )


@dataclass
class RunResampler:
    """Replicate data of a run, its seeds pooled, for a bootstrap of anything fitted to it (the run's own
    sigmoid, a joint fit with another run): :meth:`draw` gives ``(x, y, R0, seed counts)``.

    * One seed: the fitted curve plus resampled residuals (:func:`noise_draws`, as in :func:`bootstrap`);
      R0, where it was measured (``r0="first"``), plus one resampled residual too.
    * Several seeds: the seeds resampled with replacement, each as *its own* fitted curve plus its own
      resampled residuals, R0 the mean of the drawn seeds' R0s. Each seed's curve and R0 keep their
      distance from the pooled ones, scaled up by sqrt(k / (k - 1)): a bootstrap over k clusters gives
      (k - 1) / k of the spread of their mean. Before, each seed was the pooled curve plus its residuals
      centred, so seeds of one configuration ending 0.04 apart in A -- or in C_mid -- gave intervals that
      knew nothing of it: identical configurations with 3 seeds came out "ceiling" 25% and "efficiency"
      21% of the time at 95% (``python benchmarks/compare_verdicts.py --cases identical --seeds 3
      --seed-sd-A 0.02 --noise 0.01``). Every seed is drawn on the pooled fit's window (its own law refitted
      there where its own window differs), so that the replicates are of the pooled estimate's data.
    """

    parts: list[tuple[np.ndarray, np.ndarray, np.ndarray, float]]
    """Per seed: (its evaluations in the pooled fit's window, its fitted curve there, its centred residuals,
    its R0)."""
    r0: str
    """'first' (R0 measured: resampled), 'fixed' (given: kept) or 'free' (fitted: None in the draws)."""
    R0: float

    @classmethod
    def of(cls, pooled: SigmoidFit, seeds: "list[tuple[np.ndarray, np.ndarray, Sigmoid, float]] | None" = None
           ) -> "RunResampler":
        """``seeds``: per seed, ``(x, y, its own law, its R0)`` on the points the pooled fit used (its window;
        compute 0 too where R0 is fitted). None or one: the pooled fit's own points and law."""
        mode = "free" if pooled.r0_mode == "free" else ("first" if pooled.r0_mode == "first" else "fixed")
        p = 4 if mode == "free" else 3
        seeds = seeds if seeds and len(seeds) > 1 else [(pooled.x, pooled.y, pooled.law, pooled.R0)]
        k = len(seeds)
        c = math.sqrt(k / (k - 1)) if k > 1 else 0.0
        parts = []
        for x, y, law, r0 in seeds:
            base = pooled.law(x)
            own = law(x)
            parts.append((x, base + c * (own - base) if k > 1 else base, noise_draws(y - own, p),
                          pooled.R0 + c * (r0 - pooled.R0) if k > 1 else pooled.R0))
        return cls(parts, mode, pooled.R0)

    def draw(self, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, float | None, np.ndarray]:
        """One replicate: x sorted, y, R0 (None where R0 is fitted), and how often each seed was drawn for it
        (one count a seed)."""
        k = len(self.parts)
        picks = rng.integers(0, k, size=k) if k > 1 else np.zeros(1, dtype=int)
        xs, ys, r0s = [], [], []
        for i in picks:
            x, fitted, r, r0 = self.parts[i]
            xs.append(x)
            ys.append(fitted + rng.choice(r, size=len(x), replace=True))
            r0s.append(r0)
        x = np.concatenate(xs)
        order = np.argsort(x, kind="stable")
        if self.r0 == "free":
            r0 = None
        elif self.r0 == "fixed":
            r0 = self.R0
        elif k > 1:
            r0 = float(np.mean(r0s))
        else:  # one measured evaluation, as noisy as the others
            r0 = self.R0 + float(rng.choice(self.parts[0][2]))
        return x[order], np.concatenate(ys)[order], r0, np.bincount(picks, minlength=k)


def fit_seeds(
    curves: list[Curve],
    *,
    n_boot: int = N_BOOT,
    level: float = 0.95,
    seed: "int | np.random.SeedSequence" = 0,
    **fit_kwargs,
) -> SeedFit:
    """Pooled fit of several seeds plus a hierarchical bootstrap (seeds, then residuals).

    ``fit_kwargs`` go to :func:`fit_sigmoid` (method, r0, fit_from, fit_until, ...). The R0
    of the pooled fit is the mean of the seeds' own R0 values. ``seed``: the bootstrap's, a whole
    number or one of :func:`independent_seeds` (runs to be compared each need their own).
    """

    r0_choice = fit_kwargs.pop("r0", "first")
    per_seed = [fit_sigmoid(c, r0=r0_choice, **fit_kwargs) for c in curves]
    if r0_choice == "first":
        r0_pooled = float(np.mean([resolve_r0(c, "first")[0] for c in curves]))
    else:
        r0_pooled = r0_choice
    pooled = fit_sigmoid(pool_curves(curves), r0=r0_pooled, **fit_kwargs)
    if r0_choice == "first":
        pooled.r0_mode = "first"
    resampler = RunResampler.of(pooled, _seeds_on_window(curves, per_seed, pooled, r0_choice, fit_kwargs))
    if n_boot <= 0:
        return SeedFit(pooled, per_seed, None, resampler)
    if len(curves) == 1:
        return SeedFit(pooled, per_seed, bootstrap(pooled, n_boot, level=level, seed=seed), resampler)
    rng = seeded_rng(seed)
    out, counts, failed = [], [], 0
    for _ in range(n_boot):
        x, yb, r0, drawn = resampler.draw(rng)
        if r0 is not None:
            r0 = max(r0, pooled.y_floor)  # a pass rate below 0 is an artefact, not a resample
        try:
            params, _ = fit_fast(x, yb, r0, A_max=pooled.A_max, y_floor=pooled.y_floor, start=_start(pooled))
        except (ValueError, FloatingPointError):
            failed += 1
            continue
        if r0 is not None and not params[0] > r0:
            failed += 1
            continue
        out.append(params)
        counts.append(drawn)
    boot = _result(np.asarray(out, dtype=float).reshape(-1, 4), n_boot, failed, level, "seeds+residual")
    boot.seed_counts = np.asarray(counts, dtype=int).reshape(len(out), len(resampler.parts))
    boot.bounds = _seed_bounds(boot.samples, pooled)
    return SeedFit(pooled, per_seed, boot, resampler)


def _seed_bounds(samples: np.ndarray, pooled: SigmoidFit) -> dict[str, tuple[float, float]]:
    """The bounds every replicate of a several-seed bootstrap keeps (:attr:`Bootstrap.bounds`)."""
    lnC = ln_c_mid_bounds(np.log(pooled.x[pooled.x > 0]))
    start = float(samples[:, 3].min()) if len(samples) else pooled.y_floor  # every replicate's A and curve above it
    return {"A": (start, pooled.A_max), "R0": (pooled.y_floor, pooled.A_max), "B": B_BOUNDS,
            "C_mid": (math.exp(lnC[0]), math.exp(lnC[1])), "curve": (start, pooled.A_max)}


def _seeds_on_window(curves: list[Curve], per_seed: list[SigmoidFit], pooled: SigmoidFit, r0_choice,
                     fit_kwargs: dict) -> list[tuple[np.ndarray, np.ndarray, Sigmoid, float]]:
    """Each seed's points in the pooled fit's window with its own law fitted there: a seed whose own
    window differs (``fit_from="auto"`` cutting an opening plateau that the pooled fit keeps) was drawn
    from other points than the pooled estimate's, whose intervals then missed it (review m). A seed that
    cannot be fitted on that window alone keeps the pooled law (its points, its R0)."""
    if len(curves) < 2:
        return []
    out = []
    for c, f in zip(curves, per_seed):
        if (f.fit_from, f.fit_until) != (pooled.fit_from, pooled.fit_until):
            try:
                f = fit_sigmoid(c, r0=r0_choice, **{**fit_kwargs, "fit_from": pooled.fit_from,
                                                    "fit_until": pooled.fit_until})
            except InputError:
                win = c.window(pooled.fit_from, pooled.fit_until)
                keep = win.x > 0 if pooled.r0_mode != "free" else np.ones(win.x.size, dtype=bool)
                r0 = resolve_r0(c, r0_choice)[0] if pooled.r0_mode != "free" else pooled.R0
                if keep.any():  # (a seed with no evaluation in the window adds nothing to draw)
                    out.append((win.x[keep], win.y[keep], pooled.law, pooled.R0 if r0 is None else r0))
                continue
        out.append((f.x, f.y, f.law, f.R0))
    return out
