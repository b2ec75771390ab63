"""``scalerl fit``: forecast one run -- the sigmoid's parameters with intervals, the forecast
with its confidence and prediction bands, compute to reach a target, a verdict, a plot.

    scalerl fit examples/data/real_rl_curves.csv --x cum_wall_hours --y val_score \\
        --run verl_training_log__grpo_run_deepseek7b_llm --fit-until 12 --predict 24 48 --plot fit.png
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass

import numpy as np

from scalerl.commands._curve_args import (add_data_args, add_fit_args, calibration_line, fit_kwargs, g,
                                          plot_path, read_kwargs, table)
from scalerl.errors import InputError
from scalerl.runlog import finite_json


def add_arguments(p) -> None:
    add_data_args(p)
    add_fit_args(p)
    p.add_argument("--predict", nargs="+", action="extend", type=float, metavar="C", help="compute values to predict at "
                   "(default: the last point, 2x and 10x it)")
    p.add_argument("--target", nargs="+", action="extend", type=float, metavar="R", help="pass rates to report the compute to reach")
    p.add_argument("--verdict", nargs=2, type=float, metavar=("FROM", "TO"), help="is it worth going from budget FROM to TO?")
    p.add_argument("--plot", metavar="FILE", help="write the figure (.png or .svg)")


def run(args) -> int:
    from scalerl.curves import forecast, read_curve

    if args.plot is not None:  # ('' too: an unset shell variable wrote no figure, in silence -- review FY)
        plot_path(args.plot)
    _check_predict(args.predict)
    _check_targets(args.target, bounded=not args.unbounded)
    kwargs = read_kwargs(args)  # (first: for a scalerl run it chooses --x / --y where they are not given)
    curve = read_curve(args.path, args.x, args.y, run=args.run, **kwargs)
    try:
        fc = forecast(curve, fit_until=args.fit_until, n_boot=args.bootstrap, level=args.level, seed=args.seed,
                      **fit_kwargs(args))
    except InputError as exc:  # what the reader noted may be why (review en: a W&B output.log's cut lines)
        if not curve.notes:
            raise
        more = f"; and {len(curve.notes) - 3} more" if len(curve.notes) > 3 else ""
        raise InputError(f"{exc} [the reader noted: {'; '.join(curve.notes[:3])}{more}]") from None
    later = _after_the_window(fc, curve)
    fell = (f"the run's evaluations after --fit-until fall: UNSTABLE over the whole run -- {later.text()}; the "
            "forecast is the window's, and does not hold past the fall") if later and later.unstable and not fc.unstable else ""
    points = args.predict or [float(fc.ensemble.x_end) * m for m in (1, 2, 10)]
    # An unstable run gets no forecast: its extrapolation is not one (the fit is still shown).
    preds = [] if fc.unstable else fc.predict(points)
    targets = [_no_reach(fc, r) if fc.unstable else _reach(fc, r) for r in (args.target or [])]
    verdict = (_no_verdict(fc, *args.verdict) if fc.unstable else fc.verdict(*args.verdict)) if args.verdict else None
    if args.plot:
        from scalerl.curves.plot import plot_forecast

        plot_forecast(fc, args.plot)
    if args.json:
        out = _as_json(fc, preds, targets, verdict, args)
        out["run_stability"] = later.as_dict() if later else None
        out["notes"] = [*out.get("notes", []), *([fell] if fell else [])]
        print(json.dumps(finite_json(out), allow_nan=False, default=_jsonable))
        return 0
    print(_as_text(fc, preds, targets, verdict, args) + (f"\nnote: {fell}" if fell else ""))
    return 0


def _after_the_window(fc, curve):
    """The whole run's stability where ``--fit-until`` left later evaluations out of the fit, else None: a run that
    peaks and falls after the window is said to, as ``backtest`` says it (review FY) -- the forecast stays the
    window's, whatever the evaluations after it."""
    from scalerl.curves import check_stability

    if fc.fit.fit_until is None or not (curve.x > fc.fit.fit_until).any():
        return None
    return check_stability(curve.x, curve.y, R0=fc.fit.R0 if fc.fit.r0_mode != "free" else None)


def _check_predict(points) -> None:
    """Compute values to forecast at must be > 0: at 0 (before training) the power-law member is
    -inf and the forecast came out -inf with NaN bands; the curve's value there is its R0."""
    if points and any(not math.isfinite(c) or c <= 0 for c in points):
        bad = next(c for c in points if not math.isfinite(c) or c <= 0)
        raise InputError(f"--predict values must be finite compute values > 0, got {bad:g} "
                         "(at 0, before training, the forecast is the run's R0, printed as R0)")


def _check_targets(targets, *, bounded: bool) -> None:
    """Targets are pass rates: finite, and in [0, 1] unless the metric is --unbounded."""
    for r in targets or []:
        if not math.isfinite(r):
            raise InputError(f"--target values must be finite, got {r:g}")
        if bounded and not 0 <= r <= 1:
            raise InputError(f"--target {r:g} is not a pass rate in [0, 1]; give a fraction "
                             "(0.6, not 60), or pass --unbounded for a metric that is not a pass rate")


def _reach(fc, r: float) -> tuple[float, float, float, float, str]:
    """``(target, compute, lo, hi, status)``: the compute to reach ``r``, with what the numbers mean
    where there is none to spend -- a target the run starts at, or one above where it levels off."""
    if r <= fc.fit.R0:  # the search starts at the first compute > 0; the curve is at R0 before it
        return r, 0.0, 0.0, 0.0, f"already reached (R0 = {fc.fit.R0:.4g})"
    c, lo, hi = fc.compute_to_reach(r)
    if not math.isfinite(c):
        held = _held_from(fc, r)
        if held is not None:  # a curve that levels off at r never reaches it; the run's evaluations did (review ch)
            return r, held, math.nan, math.nan, (f"reached in the evaluations (each one from compute {held:.4g} on); "
                                                 "the fitted curve levels off just below it")
    ceiling = fc.ceiling()
    if not math.isfinite(c) and r >= ceiling:
        return r, c, lo, hi, f"above the forecast ceiling (about {ceiling:.4g}): not reached"
    return r, c, lo, hi, "" if math.isfinite(c) else "not reached within 10^6x the fit window"


#: Fewest evaluations in a row, to the window's end, at or above a target for the run to have reached it: one
#: evaluation above it is noise as often as not (review cj: a plateau's last evaluation 3 noise sds high).
HELD_EVALUATIONS = 3


def _held_from(fc, r: float) -> float | None:
    """The compute from which every evaluation of the fit window is at least ``r``, where that is the last
    :data:`HELD_EVALUATIONS` or more (None: not so)."""
    window = fc.curve.window(None, fc.fit.fit_until)
    x, y = np.asarray(window.x, float), np.asarray(window.y, float)
    pos = x > 0
    x, y = x[pos], y[pos]
    below = np.flatnonzero(y < r)
    start = 0 if below.size == 0 else int(below[-1]) + 1
    return float(x[start]) if x.size - start >= HELD_EVALUATIONS else None


def _no_reach(fc, r: float) -> tuple[float, float, float, float, str]:
    """``--target`` of an unstable run: said, not left out, with no compute -- as ``--verdict`` is."""
    return r, math.nan, math.nan, math.nan, f"no answer (unstable run): {fc.stability.text()}"


def _jsonable(v):
    return None if isinstance(v, float) and not math.isfinite(v) else str(v)


def _finite(v):
    return v if (isinstance(v, (int, float)) and math.isfinite(v)) else None


@dataclass
class _NoVerdict:
    """``--verdict`` of an unstable run: said, not left out (review bw: the JSON had no ``verdict`` key, the text no
    word), with no gain -- the extrapolation of a falling curve is no forecast."""

    budget_from: float
    budget_to: float
    word: str
    why: str

    def text(self, unit: str = "") -> str:
        u = f" {unit}" if unit else ""
        return f"Going from {self.budget_from:.4g}{u} to {self.budget_to:.4g}{u}: {self.word} -- {self.why}."


def _no_verdict(fc, budget_from: float, budget_to: float) -> _NoVerdict:
    v = fc.verdict(budget_from, budget_to)  # (its checks: a budget that goes backwards is refused, as for any run)
    return _NoVerdict(v.budget_from, v.budget_to, v.word, fc.stability.text())


def _as_json(fc, preds, targets, verdict, args) -> dict:
    f = fc.fit
    out = {
        "run": fc.curve.name,
        "x": fc.curve.x_name,
        "y": fc.curve.y_name,
        "status": "unstable" if fc.unstable else "ok",
        "stability": fc.stability.as_dict(),
        "method": f.method,
        "r0_mode": f.r0_mode,
        "A": f.A,
        "B": f.B,
        "C_mid": f.C_mid,
        "R0": f.R0,
        "sse": f.sse,
        "n_points": f.n_points,
        "fit_from": f.fit_from,
        "fit_until": f.fit_until,
        "seconds": f.seconds,
        "intervals": fc.intervals(),
        "level": fc.level,
        "ensemble": fc.ensemble.describe(),
        # The level the bands hold beside the one asked ("level"), as the text says it.
        "calibration": fc.bands.calibration.as_json(args.calibration, fc.level),
        "predictions": [p.as_dict() for p in preds],
        "targets": [{"R": r, "C": _finite(c), "lo": _finite(lo), "hi": _finite(hi), "status": status or "reached"}
                    for r, c, lo, hi, status in targets],
        "power_law": ({**fc.power_law.law.params(), "sse": fc.power_law.sse} if fc.power_law else None),
        "warnings": f.warnings,
        "notes": fc.notes + [n for n in [fc.above_ceiling_note(preds)] if n],  # (the text's notes)
        "dropped_rows": fc.curve.dropped,
        "excursions": [{"x": x, "y": y, "depth": d} for x, y, d in zip(fc.excursions.x, fc.excursions.y, fc.excursions.depth)],
    }
    if verdict is not None:
        out["verdict"] = {**verdict.__dict__, "text": verdict.text(fc.curve.x_name)}
    if args.plot:
        out["plot"] = args.plot
    return out


def forecast_table(fc, preds) -> str:
    """The forecast at each compute with both bands, the sigmoid and the power law beside it."""
    pct = fc.level_text
    rows = [[g(p.C) + ("" if p.calibrated else " *"), f"{p.R:.4f}", f"[{p.lo:.4f}, {p.hi:.4f}]",
             f"[{p.obs_lo:.4f}, {p.obs_hi:.4f}]", f"{float(fc.fit.law(p.C)):.4f}",
             f"{float(fc.power_law.law(p.C)):.4f}" if fc.power_law else "-"] for p in preds]
    return table(rows, ["compute", "forecast", f"{pct} confidence (curve)", f"{pct} prediction (an evaluation)",
                        "sigmoid", "power law"])


def ensemble_line(fc) -> str:
    parts = ", ".join(f"{m['member']} {m['weight']:.2f}" for m in fc.ensemble.describe())
    return f"forecast: ensemble of {parts} ({fc.ensemble.weighting()})"


def _as_text(fc, preds, targets, verdict, args) -> str:
    f, c = fc.fit, fc.curve
    lines = [
        f"run: {c.name}   ({len(c)} points, x={c.x_name}, y={c.y_name})",
        f"fit: sigmoid R0 + (A-R0)/(1+(C_mid/C)^B), method {f.method}, R0 {f.r0_mode}, "
        f"{f.n_points} points in [{g(f.fit_from) if f.fit_from is not None else 'start'}, "
        f"{g(f.fit_until) if f.fit_until is not None else 'end'}], SSE {f.sse:.4g}, {1000 * f.seconds:.1f} ms",
        "",
    ]
    iv = fc.intervals()
    level = f"{int(round(100 * fc.boot.level))}% interval" if fc.boot else "interval"
    rows = []
    for name in ("A", "B", "C_mid", "R0"):
        lo_hi = iv.get(name)
        rows.append([name, g(getattr(f, name)), f"[{g(lo_hi[0])}, {g(lo_hi[1])}]" if lo_hi else "-"])
    lines.append(table(rows, ["param", "estimate", level]))
    if fc.power_law is not None:
        pl = fc.power_law.law
        lines += ["", f"power law A - D (C/C_ref)^-B: A={g(pl.A)} D={g(pl.D)} B={g(pl.B)} C_ref={pl.C_ref:.4g} "
                      f"SSE {fc.power_law.sse:.4g}"]
    lines.append("")
    if fc.unstable:
        lines.append(f"NO FORECAST -- unstable run: {fc.stability.text()}")
    else:
        lines += [ensemble_line(fc), forecast_table(fc, preds)]
        if args.calibration:
            lines.append(calibration_line(args.calibration, fc.bands.calibration, args.level))
        above = fc.above_ceiling_note(preds)
        if above:
            lines.append(f"note: {above}")
        if not all(p.calibrated for p in preds):
            lines.append(f"* beyond the calibrated horizon ({math.exp(fc.bands.calibration.h_max):.2g}x the last fitted "
                         "compute) or too few points to validate: bands stretched, not calibrated")
    if targets:
        lines += ["", table([[f"{r:.4f}", g(cc), g(lo), g(hi), status] for r, cc, lo, hi, status in targets],
                            ["target R", "compute", "lo", "hi", "note"])]
    if verdict is not None:
        lines += ["", verdict.text(c.x_name)]
    for w in f.warnings:
        lines.append(f"warning: {w}")
    for n in fc.notes:
        lines.append(f"note: {n}")
    if args.plot:
        lines.append(f"plot: {args.plot}")
    return "\n".join(lines)
