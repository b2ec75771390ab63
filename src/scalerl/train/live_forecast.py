"""The live forecast: after each evaluation, refit the sigmoid to the run so far.

Logs ``forecast/A``, ``forecast/B``, ``forecast/C_mid`` with their bootstrap intervals and the
forecast pass rate at the run's budget (the compute the run will have used at its last step,
projected from the compute per step so far) with its confidence band (``_lo``/``_hi``: the
expected curve) and prediction band (``_obs_lo``/``_obs_hi``: one evaluation), calibrated on
real runs. A fit that is not possible yet (too few points, no rise so far) is logged as
``forecast/status`` instead -- never a made-up number; a run that peaked and fell gets
``forecast/status`` "unstable: ..." and no forecast at the budget. ``forecast/stability`` is the stability
check's kind ("stable", "not tested" below 6 evaluations after the start, "peaked and fell", "falling at the
end"), and ``forecast/notes`` what ``scalerl fit`` would say beside the same forecast: its notes (not yet tested
for a fall, evaluations left out as excursions ...), why the bands at the budget are not calibrated, the fit's
warnings.

A refit's cost grows with the evaluations it fits (0.5-0.75 CPU-s at 1,000, 3.7-4.0 at 10,000:
``benchmarks/live_forecast_cost.py``), so refitting at every evaluation costs a run of n evaluations
O(n^2): hours for a run evaluated at each of 10,000 steps. Past ``2 / forecast.refit_growth``
evaluations the refits thin out to one per ``refit_growth`` more (:func:`refit_points`, a function of
the count alone, so a resumed run refits where the uninterrupted one did); the rows between say
``forecast/status`` "not refitted: ...", and the last evaluation of a run always refits.
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import Any, Sequence

from scalerl.atomic_files import write_text_atomically
from scalerl.curves import Calibration, Curve, Forecast, forecast
from scalerl.curves.bands import DEFAULT_LEVEL, read_calibration
from scalerl.errors import InputError
from scalerl.train.config import CALIBRATION_COPY


def run_calibration(configured: str | None, output: Path) -> Calibration | None:
    """The bands' calibration of the run in ``output``: its copy when it has one, else the file
    ``configured`` (``forecast.calibration``), copied into the run directory; None: the shipped one."""
    copy = Path(output) / CALIBRATION_COPY
    if copy.exists():
        return read_calibration(copy, level=DEFAULT_LEVEL)
    if not configured:
        return None
    cal = read_calibration(configured, level=DEFAULT_LEVEL)
    # Whole or not at all: a copy cut by a kill was read first by every later resume, which refused it.
    write_text_atomically(copy, json.dumps(cal.as_dict(), indent=2) + "\n")
    return cal


def changed_calibration_note(configured: str | None, output: Path) -> str | None:
    """What a resume says when ``forecast.calibration`` no longer holds the factors of the run's copy
    (written again by ``scalerl calibrate`` since the run started): the copy is what the run keeps
    using, and a resume that used it without a word read as if the new factors were in."""
    copy = Path(output) / CALIBRATION_COPY
    if not configured or not copy.exists() or not Path(configured).is_file():
        return None
    try:
        changed = read_calibration(configured) != read_calibration(copy)
    except InputError as exc:
        return (f"forecast.calibration {configured} cannot be read now ({exc}); the run goes on with its copy "
                f"{copy}, made when it started")
    if not changed:
        return None
    return (f"forecast.calibration {configured} has other factors than when the run started; the run keeps its "
            f"copy {copy} (its live forecast and report use it): start a new run to use the new factors, or "
            f"`scalerl report {shlex.quote(str(output))} --calibration {shlex.quote(str(configured))}` to see "
            f"its report with them")


def refit_points(n: int, *, min_points: int, growth: float) -> list[int]:
    """The evaluation counts, up to ``n``, at which the live forecast refits: the first at
    ``min_points``, then each ``max(1, floor(growth * count))`` evaluations later -- every evaluation
    below ``2 / growth`` evaluations, about one per ``growth`` more after (``growth`` 0: every one)."""
    points, count = [], max(int(min_points), 1)
    while count <= n:
        points.append(count)
        count += max(1, math.floor(growth * count))
    return points


def next_refit(n: int, *, min_points: int, growth: float) -> int:
    """The first count after ``n`` at which the live forecast refits."""
    last = refit_points(n, min_points=min_points, growth=growth)
    return last[-1] + max(1, math.floor(growth * last[-1])) if last else max(int(min_points), 1)


def live_forecast(
    rows: Sequence[dict[str, Any]],
    *,
    x: str,
    y: str,
    total_steps: int,
    min_points: int = 5,
    n_boot: int = 200,
    seed: int = 0,
    calibration: Calibration | None = None,
    refit_growth: float = 0.0,
    last: bool = False,
) -> dict[str, Any]:
    """Forecast columns for the next run-log row, from the evaluation rows so far; the bands'
    factors from ``calibration`` (default: the shipped ones). Between :func:`refit_points` of
    ``refit_growth`` (0: every evaluation) only a status, unless this is the run's ``last`` evaluation."""
    points = [(r[x], r[y]) for r in rows if r.get(x) is not None and r.get(y) is not None]
    if len(points) < min_points:
        return {"forecast/status": f"waiting for {min_points} evaluations ({len(points)} so far)"}
    if not last and refit_growth > 0 and refit_points(len(points), min_points=min_points,
                                                       growth=refit_growth)[-1] != len(points):
        upcoming = next_refit(len(points), min_points=min_points, growth=refit_growth)
        return {"forecast/status": f"not refitted: the next refit at {upcoming:,} evaluations "
                                   f"(forecast.refit_growth {refit_growth:g})"}
    last = rows[-1]
    step = max(int(last.get("step", 0)), 1)
    budget = float(last[x]) * total_steps / step
    try:
        # (Named after its metric: a "no fit yet" status said run 'run'.)
        curve = Curve.from_arrays([p[0] for p in points], [p[1] for p in points], name=y, x_name=x, y_name=y)
        fc = forecast(curve, n_boot=n_boot, seed=seed, power_law=False, calibration=calibration)
    except InputError as exc:
        return {"forecast/status": f"no fit yet: {exc}"}
    iv = fc.intervals()
    (pred,) = fc.predict([budget])
    out: dict[str, Any] = {"forecast/status": "ok", "forecast/x": x, "forecast/budget": budget,
                           "forecast/stability": fc.stability.kind}
    for name in ("A", "B", "C_mid"):
        out[f"forecast/{name}"] = getattr(fc.fit, name)
        if name in iv:
            out[f"forecast/{name}_lo"], out[f"forecast/{name}_hi"] = iv[name]
    if fc.unstable:
        out["forecast/status"] = f"unstable: {fc.stability.text()}"
        return out
    out.update({"forecast/R_budget": pred.R, "forecast/R_budget_lo": pred.lo, "forecast/R_budget_hi": pred.hi,
                "forecast/R_budget_obs_lo": pred.obs_lo, "forecast/R_budget_obs_hi": pred.obs_hi})
    notes = _said_by_fit(fc, budget)
    if notes:
        out["forecast/notes"] = notes
    return out


def _said_by_fit(fc: Forecast, budget: float) -> str:
    """What ``scalerl fit`` says beside the same forecast and the row would otherwise drop (reviews cm, cn): the
    forecast's notes (a curve too short to be tested for a fall, evaluations left out as excursions, a take-off
    before the first evaluation ...), why the bands at the budget are not calibrated, the fit's warnings."""
    said = list(fc.notes)
    if float(fc.bands.stretch([budget])[0]) > 1.0:
        said.append(f"the bands at the budget are stretched beyond the calibrated horizon "
                    f"({math.exp(fc.bands.calibration.h_max):.2g}x the last fitted compute), not calibrated")
    elif not fc.bands.validated:
        said.append("too few evaluations to validate the bands on the run's own points: not calibrated")
    return "; ".join(said + list(fc.fit.warnings))
