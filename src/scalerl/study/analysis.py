"""From a study directory's run logs to what each choice moved, with intervals.

    analysis = analyse_study("runs/study-loo")
    for v in analysis.variants: v.label, v.kind, v.A, v.A_interval, v.agreement

Steps, all from the logs (so ``scalerl report STUDY`` can redo them at any time):

1. every finished run's evaluations -> a :class:`~scalerl.curves.Curve` (x: the spec's compute
   column, y: the first evaluation set's pass rate); unfinished runs are listed, not used;
2. each variant whose curve rises is fitted with its seeds pooled (:func:`scalerl.curves.fit_seeds`)
   and classified against the base by :func:`scalerl.curves.compare.classify` -- what
   :func:`scalerl.curves.compare` does, one variant at a time, so that a variant that never
   learned is reported as not fitted instead of sinking the others (ceiling / efficiency /
   no clear effect, with intervals);
3. the paper's leave-one-out view: the stable variants refitted with one common A (least squares
   over all of them), giving each a B under that A (its interval a bootstrap of the shared fit);
4. each variant's pass rate forecast at ``spec.extrapolate`` x the budget (one common
   compute for all, the median final compute of the runs) with the forecaster's calibrated
   confidence band; a variant that peaked and fell is flagged, not extrapolated or classified;
5. the paper's expectation for what the variant changes (docs/paper.md, :mod:`scalerl.study.paper`)
   beside what was measured.

It reads logs and fits curves; re-planning the study (to know each run's variant) checks recipe
names against the registries, which needs the ``train`` extra installed.
"""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scalerl.config import load_yaml
from scalerl.curves import Curve, fit_seeds, forecast, pool_curves
from scalerl.curves.excursions import drop_seed_excursions
from scalerl.curves.bands import DEFAULT_LEVEL, Calibration, default_calibration, read_calibration
from scalerl.curves.compare import (CEILING, EFFICIENCY, NONE, UNSTABLE, Classification, CompareResult, RunFit, classify,
                                    one_seed_caveat, unmeasured_takeoff_notes)
from scalerl.curves.seed_dof import widen_for_seeds
from scalerl.curves.solver import B_BOUNDS
from scalerl.curves.uncertainty import independent_seeds
from scalerl.errors import InputError
from scalerl.study.families import Variant
from scalerl.study.paper import UNNAMED, Finding, expectation
from scalerl.study.plan import run_directory
from scalerl.study.spec import MIN_BOOTSTRAP, SPEC_FILE, StudySpec, load_saved_spec

#: Agreement of a measured classification with the paper's expectation.
AGREES, OPPOSITE, DISAGREES, INCONCLUSIVE, NOT_APPLICABLE = (
    "agrees", "same kind, opposite direction", "disagrees", "inconclusive", "n/a")
#: A variant with no classification (its fit or the base's failed): "n/a" is the paper classifying no such
#: component, and read so beside the paper's own "ceiling" (review cc).
NOT_CLASSIFIED = "not classified"


@dataclass
class VariantResult:
    """Everything the report says about one variant (its seeds pooled)."""

    label: str
    summary: str
    components: list[str]
    is_base: bool
    seeds: list[int] = field(default_factory=list)
    """Seeds whose finished runs were used."""
    pending: list[str] = field(default_factory=list)
    """Runs not (yet) finished: 'seedK: step S' -- left out of every fit."""
    left_out: list[str] = field(default_factory=list)
    """Finished or started runs that cannot be used, with the reason ('seedK: a damaged run log (...)',
    a log whose curve cannot be read) -- left out of every fit; the other runs are still analysed."""
    capped: list[str] = field(default_factory=list)
    """Finished runs that ``max_steps`` stopped short of the compute budget: 'seedK: X' (the compute it reached)
    -- fitted with the others, but their curves end before the budget the report names."""
    fit_error: str = ""
    """Why no curve could be fitted (e.g. the pass rate never rose), if so."""
    not_classified: str = ""
    """Why a variant has no classification against the base (its own fit failed, the base's did,
    or the comparison did); empty for the base and for a classified variant."""
    R0: float | None = None
    final: float | None = None
    """Mean over seeds of the last evaluation's pass rate."""
    final_x: float | None = None
    A: float | None = None
    A_interval: tuple[float, float] | None = None
    B: float | None = None
    B_interval: tuple[float, float] | None = None
    C_mid: float | None = None
    C_mid_interval: tuple[float, float] | None = None
    extrapolated: float | None = None
    """Forecast pass rate at the analysis' extrapolation compute (None for an unstable run)."""
    extrapolated_interval: tuple[float, float] | None = None
    """The forecast's confidence band there (calibrated on real runs; see scalerl.curves.bands)."""
    extrapolated_calibrated: bool = True
    """False when the extrapolation lies beyond the bands' calibrated horizon."""
    unstable: str = ""
    """Why the variant is unstable (it peaked and fell, or is falling), if it is."""
    common_B: float | None = None
    """B when every variant shares the common A (the paper's leave-one-out view)."""
    common_B_interval: tuple[float, float] | None = None
    common_C_mid: float | None = None
    classification: dict[str, Any] | None = None
    """:class:`scalerl.curves.compare.Classification` as a dict (None for the base)."""
    expected: str = UNNAMED
    """What the paper says this change moves: ceiling, efficiency, or not classified."""
    expected_note: str = ""
    expected_better: bool | None = None
    """The direction the paper leads one to expect (None: no expectation)."""
    agreement: str = NOT_APPLICABLE

    @property
    def kind(self) -> str | None:
        return self.classification["kind"] if self.classification else None


@dataclass
class StudyAnalysis:
    directory: Path
    spec: StudySpec
    x: str
    y: str
    base: str
    variants: list[VariantResult]
    bootstrap: int = 0
    """The bootstrap resamples the fits used: the spec's, or ``scalerl report --bootstrap``'s (review cc: the
    report named the spec's while the analysis used the flag's)."""
    common_A: float | None = None
    extrapolate_at: float | None = None
    compare: CompareResult | None = None
    """The forecaster's comparison (curves and fits), for the figures."""
    loo_points: dict[str, tuple[np.ndarray, np.ndarray, float]] = field(default_factory=dict)
    """label -> (x, y, R0) of the points the common-A view transforms."""
    notes: list[str] = field(default_factory=list)
    band_level: str = "95%"
    """The level the forecast bands hold under the spec's calibration ("85.7%" from few run-cuts: the report
    labelled them 95% -- review ct)."""

    def variant(self, label: str) -> VariantResult:
        return next(v for v in self.variants if v.label == label)

    def as_dict(self) -> dict[str, Any]:
        from scalerl.config import to_dict

        return {
            "directory": str(self.directory), "spec": to_dict(self.spec), "x": self.x, "y": self.y,
            "base": self.base, "bootstrap": self.bootstrap, "common_A": self.common_A, "extrapolate_at": self.extrapolate_at,
            "notes": self.notes,
            "variants": [{**{k: (list(v) if isinstance(v, tuple) else v) for k, v in vr.__dict__.items()}, "kind": vr.kind}
                         for vr in self.variants],
        }


# ----------------------------------------------------------------------------- reading


def read_study(directory: str | Path) -> tuple[StudySpec, Path]:
    directory = Path(directory)
    if not (directory / SPEC_FILE).exists():
        raise InputError(f"{directory}: no {SPEC_FILE} here; give a study directory (made by scalerl study)")
    return load_saved_spec(directory / SPEC_FILE), directory


def _y_column(run_dir: Path) -> str:
    from scalerl.train.config import TrainConfig  # no torch: config only

    cfg = load_yaml(TrainConfig, run_dir / "config.yaml")
    return f"{cfg.eval.sets[0]}/pass_rate"


def _curves(spec: StudySpec, directory: Path) -> tuple[list[Variant], dict[str, list[Curve]], dict[str, list[str]],
                                                       dict[str, list[str]], str, list[str]]:
    """Variants of the study, the curves of their finished runs, the runs still pending and the runs
    left out (with the reason: one unreadable log must not sink the analysis of all the others), the
    metric, and a note for each planned run whose last attempt failed."""
    from scalerl.study.plan import Budget, plan_study
    from scalerl.study.run_state import DAMAGED, failed_runs, read_log, run_status

    plans = plan_study(spec, directory, check_budgets=False)  # (the runs that exist are what is analysed)
    failed = failed_runs(directory)
    budget = Budget.of(spec)
    variants: list[Variant] = []
    curves: dict[str, list[Curve]] = {}
    pending: dict[str, list[str]] = {}
    left_out: dict[str, list[str]] = {}
    failures: list[str] = []
    y = "val/pass_rate"
    for p in plans:
        if p.variant.label not in curves:
            variants.append(p.variant)
            curves[p.variant.label], pending[p.variant.label], left_out[p.variant.label] = [], [], []
        rows, problem = log = read_log(p.directory)
        status = run_status(p.directory, budget, log)
        if status == DAMAGED:
            left_out[p.variant.label].append(f"seed{p.seed}: damaged run log ({problem})")
            continue
        if status != "done":
            reached = f"step {rows[-1]['step']}" if rows else None
            error = failed.get((p.directory.parent.name, p.seed))
            if error is None:
                pending[p.variant.label].append(f"seed{p.seed}: {reached or 'not started'}")
                continue
            # Named in the Seeds cell by what its log reached (a crash's record says no step: "failed at step 0"
            # was one that had trained to 100, review bt); its error, often long, in the notes (in the cell it
            # widened every row), where --resume runs it again: a planned run, its log readable.
            pending[p.variant.label].append(f"seed{p.seed}: failed " + (f"after its evaluation at {reached}" if reached
                                                                        else "before its first evaluation"))
            failures.append(f"{p.variant.label} seed{p.seed} failed: {error} -- `scalerl study --output "
                            f"{shlex.quote(str(directory))} "
                            "--resume` runs it again")
            continue
        y = _y_column(p.directory)
        try:
            curves[p.variant.label].append(Curve.from_arrays(
                [r.get(spec.x) for r in rows], [r.get(y) for r in rows], name=p.name, x_name=spec.x, y_name=y,
                source=str(p.directory / "runlog.jsonl")))
        except InputError as exc:  # no finite x, a pass rate outside [0, 1], ...
            left_out[p.variant.label].append(f"seed{p.seed}: {exc}")
            continue
        dropped = curves[p.variant.label][-1].dropped
        if dropped:  # (as scalerl fit says them: a lost step-0 row made the next evaluation the seed's R0 unsaid)
            failures.append(f"{p.variant.label} seed{p.seed}: {dropped} evaluation row(s) without a finite {y} or "
                            f"{spec.x} (null or NaN) dropped from its curve")
    return variants, curves, pending, left_out, y, failures


# ----------------------------------------------------------------------------- the common-A view


def common_A_fit(fits: dict[str, Any]) -> tuple[float, dict[str, tuple[float, float]]]:
    """One A for every fit (least squares over all their points, each keeping its own R0, B and
    C_mid): the paper's leave-one-out refit, by the forecaster's shared-A fit
    (:func:`scalerl.curves.compare.joint_fit`). Returns (A, {label: (B, C_mid)})."""
    from scalerl.curves.compare import joint_fit

    points = [(f.x[f.x > 0], f.y[f.x > 0]) for f in fits.values()]
    A, per, _ = joint_fit([x for x, _ in points], [y for _, y in points], [f.R0 for f in fits.values()],
                          [(f.A, f.B, f.C_mid) for f in fits.values()])
    return A, dict(zip(fits, per))


def _common_A_intervals(runs: list[RunFit], A: float, per: dict[str, tuple[float, float]], n: int, level: float,
                        seed: int) -> dict[str, tuple[float, float]]:
    """Each variant's interval of B under the common A: a bootstrap of the shared-A fit itself -- per replicate,
    every variant's data as its own bootstrap draws them (its seeds resampled, each its own curve:
    :class:`~scalerl.curves.uncertainty.RunResampler`), and one A fitted again to all of them. It had resampled
    one variant's pooled residuals with A held at its estimate: with seeds at B 1.2 and 1.8 the interval was
    [1.36, 1.59], holding neither, and where every variant followed one law it covered the true B 36 times in
    60 (review dx). Empty where the refits fail every time."""
    from scalerl.curves.compare import joint_replicates

    start = [(A, *per[rf.label]) for rf in runs]
    Bs, counts = [], []
    for draws, fitted in joint_replicates([rf.seeds.resampler for rf in runs], [rf.fit.R0 for rf in runs], start,
                                          max(rf.fit.A_max for rf in runs), n, np.random.default_rng(seed)):
        Bs.append([b for b, _ in fitted])
        counts.append([d[3] for d in draws])
    if not Bs:
        return {}
    Bs = np.array(Bs)
    seeds = [np.array([c[i] for c in counts]) if len(rf.seeds.resampler.parts) > 1 else None
             for i, rf in enumerate(runs)]
    a = (1 - level) / 2
    lo, hi = np.percentile(Bs, [100 * a, 100 * (1 - a)], axis=0)
    # Widened for few seeds as each variant's own intervals are (review ea: a two-seed variant's B read
    # [0.19, 8.17] on its own and [1.04, 1.94] under the common A, both "95%")
    return {rf.label: widen_for_seeds(Bs[:, i], float(lo[i]), float(hi[i]), seeds, level, log=True, bounds=B_BOUNDS)
            for i, rf in enumerate(runs)}


def linearise(x: np.ndarray, y: np.ndarray, A: float, R0: float) -> tuple[np.ndarray, np.ndarray]:
    """The paper's leave-one-out transform: ``(ln C, ln 1/F(R))`` with F(R) = (A-R0)/(R-R0) - 1.

    From R = R0 + (A-R0)/(1+(C_mid/C)^B): F(R) = (A-R)/(R-R0) = (C_mid/C)^B, so
    ``ln 1/F(R) = ln((R-R0)/(A-R)) = B ln C - B ln C_mid``: a line of slope B in ln C that
    crosses zero at C_mid. Points with R <= R0 or R >= A have no transform and are left out.
    """
    keep = (y > R0) & (y < A) & (x > 0)
    return np.log(x[keep]), np.log((y[keep] - R0) / (A - y[keep]))


# ----------------------------------------------------------------------------- expectations


def _expected_better(spec: StudySpec, v: Variant, base_value: Any) -> bool | None:
    """Direction the paper suggests: reverting a ScaleRL choice (or using another recipe) is
    worse; more batch, generation length or model is better on the ceiling."""
    if v.is_base:
        return None
    if spec.family in ("loo", "recipes"):
        return False if spec.base == "scalerl" else None
    if spec.family in ("batch-size", "gen-length"):
        return v.value > base_value
    if spec.family == "model-size":
        from scalerl.study.families import model_size_order

        return model_size_order(spec.model, v.value) > model_size_order(spec.model, base_value)
    return None


def _agreement(expected: Finding, expected_better: bool | None, c: Classification) -> str:
    if expected.kind == UNNAMED:
        return NOT_APPLICABLE
    if c.kind in (NONE, UNSTABLE):
        return INCONCLUSIVE
    if c.kind != expected.kind:
        # An efficiency verdict whose ceiling is not pinned cannot tell a ceiling change from an efficiency one (its
        # explanation says so): no contradiction of a paper that expects the ceiling to move (review dx).
        return INCONCLUSIVE if c.ceiling_pinned is False else DISAGREES
    if expected_better is not None and c.better is not None and c.better != expected_better:
        return OPPOSITE
    return AGREES


# ----------------------------------------------------------------------------- the analysis


def analyse_study(directory: str | Path, *, n_boot: int | None = None, seed: int = 0) -> StudyAnalysis:
    """Fit and classify every variant of the study in ``directory`` (see the module docstring). ``n_boot``: the
    bootstrap's resamples, at least :data:`~scalerl.study.spec.MIN_BOOTSTRAP` (None: the study's own)."""
    spec, directory = read_study(directory)
    if n_boot is None:
        n_boot = spec.bootstrap
    elif isinstance(n_boot, bool) or not isinstance(n_boot, (int, np.integer)) or n_boot < MIN_BOOTSTRAP:
        # 0 was read as "the study's own" unsaid: a caller asking for no bootstrap got 300 resamples
        raise InputError(f"n_boot must be a whole number >= {MIN_BOOTSTRAP}, got {n_boot!r} (None: the study's "
                         f"own, {spec.bootstrap}); every variant's intervals and verdicts come from the bootstrap")
    calibration = read_calibration(spec.calibration, level=DEFAULT_LEVEL) if spec.calibration else None
    variants, curves, pending, left_out, y, failures = _curves(spec, directory)
    base = next(v for v in variants if v.is_base)
    results = [_variant_result(spec, v, base.value, curves[v.label], pending[v.label], left_out[v.label])
               for v in variants]
    analysis = StudyAnalysis(directory, spec, spec.x, y, base.label, results, bootstrap=n_boot)
    analysis.notes.extend(failures)
    analysis.band_level = (calibration or default_calibration()).level_text(DEFAULT_LEVEL)
    _note_capped(analysis, curves)
    fits = _fit_variants(analysis, curves, n_boot=n_boot, seed=seed)
    # Every fitted variant's own fit and forecast are reported, whether or not the base could be
    # fitted: a variant that fitted is not "not fitted" because the base failed.
    if fits:
        finals = [float(c.x[-1]) for rf in fits.values() for c in rf.curves]
        analysis.extrapolate_at = spec.extrapolate * float(np.median(finals))
    for rf in fits.values():
        _fill_fit(analysis.variant(rf.label), rf, analysis.extrapolate_at, calibration, seed)
    if base.label not in fits:
        why = analysis.variant(base.label).fit_error
        analysis.notes.append(f"the base {base.label} has no fitted curve ({why}); nothing can be compared yet")
        for vr in results:
            if not vr.is_base:
                vr.not_classified = vr.fit_error or f"the base {base.label} has no fitted curve ({why})"
                vr.agreement = NOT_CLASSIFIED
        return analysis
    result = _classify_variants(analysis, fits, n_boot=n_boot, seed=seed)
    _common_A_view(analysis, result, n_boot, seed)
    _add_study_notes(analysis, result)
    for vr in results:
        if not vr.is_base and vr.classification is None:
            vr.not_classified = vr.fit_error
            vr.agreement = NOT_CLASSIFIED
    for v in results:
        if v.fit_error:
            analysis.notes.append(f"not fitted: {v.label}: {v.fit_error}")
    return analysis


def _note_capped(analysis: StudyAnalysis, curves: dict[str, list[Curve]]) -> None:
    """Name every variant whose finished runs ``max_steps`` stopped short of the compute budget, with the
    compute each reached (:attr:`VariantResult.capped`, and a note): such a run counts as finished, and the
    report read as if every run had met the budget it names."""
    spec = analysis.spec
    if spec.compute is None:
        return
    for vr in analysis.variants:
        vr.capped = [f"{c.name.rsplit('/', 1)[-1]}: {float(c.x[-1]):.3g}" for c in curves[vr.label]
                     if float(c.x[-1]) < spec.compute]
    capped = [f"{vr.label} ({', '.join(vr.capped)})" for vr in analysis.variants if vr.capped]
    if capped:
        analysis.notes.append(
            f"stopped by max_steps ({spec.max_steps}) short of the compute budget ({spec.compute:g} {spec.x}): "
            f"{'; '.join(capped)} {spec.x} reached -- their curves end before the budget, so they are compared "
            f"on less compute than it; raise max_steps (scalerl study --output "
            f"{shlex.quote(str(analysis.directory))} --max-steps N) "
            "to extend them to it")


def _variant_result(spec: StudySpec, v: Variant, base_value: Any, cs: list[Curve], pending: list[str],
                    left_out: list[str]) -> VariantResult:
    """A variant's entry before any fit: what the paper expects of it, its seeds, start and end."""
    exp = expectation(list(v.components)) if not v.is_base else Finding(UNNAMED, "")
    vr = VariantResult(v.label, v.summary, list(v.components), v.is_base, pending=pending, left_out=left_out,
                       expected=exp.kind, expected_note=exp.note, expected_better=_expected_better(spec, v, base_value))
    vr.seeds = [_seed(c.name) for c in cs]
    if cs:
        vr.R0 = float(np.mean([c.y[0] for c in cs]))
        vr.final = float(np.mean([c.y[-1] for c in cs]))
        vr.final_x = float(np.mean([c.x[-1] for c in cs]))
    elif vr.left_out:
        vr.fit_error = "no usable run: " + "; ".join(vr.left_out)
    else:
        vr.fit_error = "no finished run yet"
    return vr


def _fit_variants(analysis: StudyAnalysis, curves: dict[str, list[Curve]], *, n_boot: int,
                  seed: int) -> dict[str, RunFit]:
    """Each variant fitted on its own (seeds pooled), so one curve that cannot be a sigmoid -- a
    variant that never learned -- is reported as such instead of sinking the whole comparison.
    One-evaluation excursions (a policy evaluated mid-oscillation) are left out of the fits, seed
    by seed, as a forecast leaves them out of its window; the finals keep them."""
    fits: dict[str, RunFit] = {}
    # Each variant's bootstrap on its own stream, as compare's: on one, two variants drew the same seeds in
    # every replicate, and the bootstrap of their difference held a covariance their data do not have.
    for vr, stream in zip(analysis.variants, independent_seeds(seed, len(analysis.variants))):
        if curves[vr.label]:
            fitted, left = drop_seed_excursions(vr.label, curves[vr.label], hint=False)  # no such option here
            analysis.notes.extend(left)
            try:
                fits[vr.label] = RunFit(vr.label, fitted, fit_seeds(fitted, n_boot=n_boot, seed=stream),
                                        read=curves[vr.label])
            except InputError as exc:
                vr.fit_error = str(exc)
                if " --" in vr.fit_error:  # (the forecaster's advice names scalerl fit's options: review cc)
                    vr.fit_error += (f" (those options are scalerl fit's: `scalerl fit "
                                     f"{run_directory(analysis.directory, vr.label, vr.seeds[0] if vr.seeds else 0)}`)")
    return fits


def _classify_variants(analysis: StudyAnalysis, fits: dict[str, RunFit], *, n_boot: int, seed: int) -> CompareResult:
    """Every fitted variant against the base: the class, and whether it agrees with the paper."""
    base = analysis.base
    result = CompareResult(runs=list(fits.values()), baseline=base, rule=analysis.spec.rule)
    analysis.compare = result
    for rf in result.runs:
        vr = analysis.variant(rf.label)
        if rf.label == base:
            continue
        try:
            c = classify(rf, fits[base], rule=analysis.spec.rule, n_boot=n_boot, seed=seed)
        except (InputError, ValueError) as exc:
            vr.fit_error = f"fitted, but the comparison with the base failed: {exc}"
            continue
        result.classifications.append(c)
        vr.classification = c.as_dict()
        vr.agreement = _agreement(Finding(vr.expected, vr.expected_note), vr.expected_better, c)
    return result


def _add_study_notes(analysis: StudyAnalysis, result: CompareResult) -> None:
    """What the reader must know to trust the table: one seed, ceilings at their bound, unstable
    variants, extrapolations past the calibrated horizon."""
    spec, results = analysis.spec, analysis.variants
    where = shlex.quote(str(analysis.directory))
    # (a study planned with more seeds has them still to finish: --resume; `--seeds 3` was refused by a 5-seed
    # study, which does not drop runs, and did nothing to a 3-seed one: review dx)
    damaged = [f"{v.label} {entry.partition(':')[0]}" for v in results for entry in v.left_out]
    if spec.seeds == 1:
        more = f"`scalerl study --output {where} --seeds 3` adds seeds to this study"
    else:
        more = f"`scalerl study --output {where} --resume` finishes the {spec.seeds} seeds this study plans"
        if damaged:
            more = f"repair or remove the run(s) left out ({', '.join(damaged)}: see the notes), then {more}"
    caveat = one_seed_caveat(result, more)
    if caveat:
        analysis.notes.append(caveat)
    for rf in result.runs:  # a seed that fell, pooled with seeds that did not, reads as stable (review dx)
        for name, stability in rf.unstable_seeds:
            run = shlex.quote(str(run_directory(analysis.directory, rf.label, _seed(name))))
            analysis.notes.append(f"{rf.label}: {name.rsplit('/', 1)[-1]} is unstable ({stability.text()}) though "
                                  "the variant's pooled curve is not: its fit and verdict carry that seed -- look at "
                                  f"it (`scalerl fit {run} --plot FILE`)")
    analysis.notes.extend(unmeasured_takeoff_notes(result))
    at_bound = [rf.label for rf in result.runs if rf.fit.A >= 0.999]
    if at_bound:
        analysis.notes.append(
            f"A reached its bound of 1 for {len(at_bound)} of {len(result.runs)} variant(s) ({', '.join(at_bound)}): "
            "their curves are still rising at the budget, so the ceiling is not identified (only a lower bound, "
            "the interval's low end) -- a larger budget, or a task the model cannot solve fully, is needed to "
            "compare ceilings")
    unstable = [v.label for v in results if v.unstable]
    if unstable:
        analysis.notes.append(
            f"unstable (peaked and fell, or falling): {', '.join(unstable)} -- not classified and not extrapolated: "
            "the law does not hold there")
    if any(v.extrapolated is not None and not v.extrapolated_calibrated for v in results):
        analysis.notes.append(
            f"the pass rates at {spec.extrapolate:g}x the budget lie beyond the horizon the forecast's bands were "
            "calibrated on: their intervals are stretched, not calibrated")


def _seed(name: str) -> int:
    """The seed of a study run's name (``loo-loss-dapo/seed2``)."""
    return int(name.rsplit("seed", 1)[1])


def _fill_fit(vr: VariantResult, rf: RunFit, at: float, calibration: Calibration | None, seed: int) -> None:
    """``vr``'s own fit (A, B, C_mid and their intervals), its stability and, for a stable run,
    its forecast at ``at`` with the calibrated band."""
    f = rf.fit
    vr.A, vr.B, vr.C_mid = f.A, f.B, f.C_mid
    vr.A_interval, vr.B_interval, vr.C_mid_interval = (rf.interval(p) for p in ("A", "B", "C_mid"))
    if rf.stability.unstable:
        vr.unstable = rf.stability.text()
        return
    # The forecaster's forecast (ensemble, calibrated band), not the sigmoid's bootstrap alone.
    try:
        fc = forecast(pool_curves(rf.curves), n_boot=0, power_law=False, seed=seed, calibration=calibration,
                      excursions=False)  # rf.curves are without them already
        (p,) = fc.predict([at])
        vr.extrapolated, vr.extrapolated_interval, vr.extrapolated_calibrated = p.R, (p.lo, p.hi), p.calibrated
    except InputError as exc:
        vr.fit_error = f"no forecast: {exc}"


def _common_A_view(analysis: StudyAnalysis, result: CompareResult, n_boot: int, seed: int) -> None:
    """The paper's leave-one-out view: one A for every stable variant, each variant's B (and C_mid) under it. An
    unstable one (peaked and fell) is left out: the law does not hold there, and in the shared fit it pulled the
    common A and every B with it (review dx)."""
    stable = [rf for rf in result.runs if not rf.stability.unstable]
    left = [rf.label for rf in result.runs if rf.stability.unstable]
    if len(stable) < 2:  # (with none, the refit's error was Python's "max() arg is an empty sequence": review dz)
        analysis.notes.append(f"no leave-one-out view (common A): {len(stable)} stable variant(s) -- it needs two")
        return
    if left:
        analysis.notes.append(f"left out of the leave-one-out view (common A), unstable: {', '.join(left)}")
    fits = {rf.label: rf.fit for rf in stable}
    try:
        A, per = common_A_fit(fits)
    except ValueError as exc:
        analysis.notes.append(f"the common-A refit failed: {exc}")
        return
    analysis.common_A = A
    # (200 resamples give a stable 95% interval)
    intervals = _common_A_intervals(stable, A, per, min(n_boot, 200), 0.95, seed)
    for rf in stable:
        vr = analysis.variant(rf.label)
        B, C_mid = per[rf.label]
        vr.common_B, vr.common_C_mid = B, C_mid
        vr.common_B_interval = intervals.get(rf.label, (B, B))
        analysis.loo_points[rf.label] = (rf.fit.x, rf.fit.y, rf.fit.R0)


def run_fits(result: CompareResult) -> dict[str, RunFit]:
    return {rf.label: rf for rf in result.runs}


__all__ = ["analyse_study", "common_A_fit", "linearise", "StudyAnalysis", "VariantResult", "CEILING", "EFFICIENCY"]
