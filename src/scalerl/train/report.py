"""A run's report, from its run log alone: the pass-rate curve, the forecast from the first half
of the compute with its confidence and prediction bands and the later points it predicted, the
sigmoid and the power law beside it, the fit on the whole run, whether the run is stable, and
every evaluation set side by side.

Writes ``curve.png``, ``sets.png``, ``report.md`` and ``report.html`` into the run directory.
``scalerl report RUN_DIR`` regenerates them at any time (also while the run is going).
"""

from __future__ import annotations

import dataclasses
import html
import json
import math
import re
import shlex
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scalerl.atomic_files import write_text_atomically
from scalerl.curves import Curve, backtest, forecast
from scalerl.curves.backtest import points_to_fit
from scalerl.curves.bands import DEFAULT_LEVEL, level_text, read_calibration
from scalerl.curves.jsonl_log import runlog_attempts
from scalerl.curves.rows import DEFAULT_RUN_COLUMN, quoted_number
from scalerl.curves.uncertainty import N_BOOT
from scalerl.errors import InputError
from scalerl.report_text import html_page, html_table, md_fence, md_table, md_text
from scalerl.runlog import RESUME, config_setting, final_model_step, finite_json, has_final_model, read_runlog
from scalerl.tasks.rewards import SCORED_AS_WRONG
from scalerl.train.collapse import collapse_note, collapsed_steps
from scalerl.train.config import CALIBRATION_COPY
from scalerl.train.report_files import CURVE_PNG, REPORT_HTML, REPORT_MD, SETS_PNG
from scalerl.train.run_directory import finished_with_final, planned_steps, trained_steps



@dataclass
class RunReport:
    output: Path
    header: dict[str, Any]
    rows: list[dict[str, Any]]
    x: str
    y: str
    facts: dict[str, Any] = field(default_factory=dict)
    files: list[Path] = field(default_factory=list)
    sample: dict[str, Any] | None = None
    """One completion of the last evaluation (samples.jsonl), shown in the report."""


def _eval_sets(rows: list[dict[str, Any]], header: dict[str, Any]) -> list[str]:
    """The evaluation sets the rows log (a set only some rows have is one: the first row's alone, read as every
    row's, ended the report in a KeyError -- review di), the one the forecast fits first: the run's own
    ``eval.sets[0]``, as ``scalerl fit`` takes it (review dk: a set the first row alone logged was fitted), else
    the one most rows log; the rest in the order they first appear."""
    names: Counter[str] = Counter()
    for row in rows:
        for key in row:
            if key.endswith("/pass_rate"):  # (the live forecast logs none: a set named 'forecast' is a set, review bc)
                names[key[: -len("/pass_rate")]] += 1
    if not names:
        return []
    configured = _configured_set(header)
    first = configured if configured in names else max(names, key=names.__getitem__)  # (ties: the first to appear)
    return [first, *(name for name in names if name != first)]


def _configured_set(header: dict[str, Any]) -> str | None:
    """The run's ``eval.sets[0]`` from the log's header; None where there is none (a hand-edited header may hold
    anything there -- review dn: a mapping was a TypeError)."""
    configured = config_setting(header, "eval", "sets")
    ok = isinstance(configured, list) and configured and isinstance(configured[0], str)
    return configured[0] if ok else None


def write_run_report(output: str | Path, *, x: str | None = None, fraction: float = 0.5, n_boot: int = N_BOOT,
                     calibration: str | Path | None = None) -> RunReport:
    """Build the report of the run in ``output`` (see the module docstring); the bands' factors
    from the ``calibration`` file (default: the run's ``forecast.calibration``, else the shipped ones)."""
    output = Path(output)
    log = output / "runlog.jsonl"
    header, rows, evals, log_notes = _read_evals(output, log)
    x = x or str(config_setting(header, "forecast", "x") or "flops")
    cal = read_calibration(calibration, level=DEFAULT_LEVEL) if calibration else None  # asked for: an error if unreadable
    sets = _eval_sets(evals, header)
    if not sets:
        raise InputError(f"{log}: no evaluation row logs a pass rate (SET/pass_rate)")
    y = f"{sets[0]}/pass_rate"
    check_x_column(evals, x, log)
    rep = RunReport(output, header, evals, x, y)
    # A value the run log holds as null (JSON has no NaN: the writer stores one as null) is NaN here, left
    # out and named below with the NaNs; float(None) ended the report in a TypeError.
    xs = np.array([_number(r.get(x)) for r in evals], dtype=float)
    ys = np.array([_number(r.get(y)) for r in evals], dtype=float)
    _check_fractions(ys, y, log)
    f = rep.facts
    last_step = _last_step(evals, log)
    f.update(_run_facts(output, header, rows, last_step, len(evals), evals[-1], ys[np.isfinite(ys)]))
    # A torn last line (a kill mid-write), as fit says of it; evaluations without a pass rate, which the
    # fits leave out (start and final once read "nan -> ...").
    f["log_notes"] = [*log_notes, *_not_finite(evals, ys, y), *_not_finite(evals, xs, x)]
    if (configured := _configured_set(header)) not in (None, sets[0]):  # (review dn: fitted another set unsaid)
        f["log_notes"].append(f"the run's eval.sets[0], {configured!r}, is in no evaluation row: the fits are of "
                              f"{sets[0]!r}, the set most rows log")
    # Read before any file is written: a damaged samples.jsonl stopped the report after its figures were
    # rewritten (new figures beside the old text); the sample is an illustration, so the report goes on.
    try:
        rep.sample = last_sample(output, step=last_step)
    except InputError as exc:
        f["log_notes"].append(f"no sample shown: {exc}")
    cal, said = _calibration(output, config_setting(header, "forecast", "calibration"), calibration, cal)
    if said is not None:
        f["calibration"] = said
    if cal is not None and cal.level_note(DEFAULT_LEVEL):  # (review bw: a 6-run-cut file's bands were called 95%)
        f["band_level"], f["band_level_note"] = cal.band_level(DEFAULT_LEVEL), cal.level_note(DEFAULT_LEVEL)
    curve = Curve.from_arrays(xs, ys, name=output.name, x_name=x, y_name=y)
    # The forecasts on the evaluations with a number (a NaN last one made its error "+nan").
    ok = np.isfinite(xs) & np.isfinite(ys)
    xs, ys, scored = xs[ok], ys[ok], [e for e, keep in zip(evals, ok) if keep]
    facts, figure = _half_budget_forecast(curve, xs, ys, output, fraction=fraction, n_boot=n_boot, calibration=cal,
                                          finished=bool(f.get("finished")))
    f.update(facts)
    rep.files.append(figure)
    f.update(_whole_run_fit(curve, scored, xs, n_boot=n_boot, calibration=cal))
    rep.files.append(_plot_sets(evals, sets, x, output / SETS_PNG))
    rep.files += _write_text(rep, sets)
    return rep


def _read_evals(output: Path, log: Path) -> tuple[dict[str, Any], list[dict[str, Any]], list[dict[str, Any]], list[str]]:
    """``(header, rows, evaluation rows, what reading the log skipped)`` of the run log; :class:`InputError`
    without a log or an evaluation."""
    if not log.exists():
        raise InputError(f"{output}: no runlog.jsonl here; give a run directory (made by scalerl train or demo)")
    header, rows, notes = read_runlog(log)
    rows, read = _as_fit_reads(rows, output.name)
    evals = [r for r in rows if r.get("type") == "eval"]
    if not evals:
        raise InputError(f"{log}: no evaluation rows yet")
    return header, rows, evals, [*notes, *read]


def _as_fit_reads(rows: list[dict[str, Any]], name: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The run log's rows as ``scalerl fit`` reads them (:func:`scalerl.curves.jsonl_log.runlog_attempts`), and what
    that reading said: a resumed attempt appended after the abandoned one's rows (a log another writer
    continued; scalerl's trainer cuts its own back) keeps the resumed attempt alone -- the report counted
    both, an evaluation twice, and took its best and its fit over both (review ai); a training started over
    (two logs put together) is a run of its own, and the report is of the last (fit reads each: review am).
    The resume markers stay in place, for the report's list of resumes and its trained steps."""
    split, read = runlog_attempts(rows, "step", name)
    runs = list(dict.fromkeys(r[DEFAULT_RUN_COLUMN] for r in split if DEFAULT_RUN_COLUMN in r))
    start = 0
    if len(runs) > 1:
        split = [r for r in split if r.get(DEFAULT_RUN_COLUMN) == runs[-1]]
        kept = {id(r) for r in split}  # (split_attempts names the rows it keeps, not copies of them)
        start = next((i for i, r in enumerate(rows) if id(r) in kept), 0)
        read = [*read, f"the log holds {len(runs)} trainings, each started from step 0: this report is of the "
                       f"last ({runs[-1]}); scalerl fit reads each as a run"]
    # The last training's own resumes (review ao: the report of the last listed the first's), each where the log
    # has it: trained_steps reads the rows in order (a resume sets the step back to its checkpoint's).
    at = {id(r): i for i, r in enumerate(rows)}
    placed, where = [], -1
    for r in split:
        where = at.get(id(r), where)  # (a row merged into a copy sits where the row before it did)
        placed.append((where, r))
    placed += [(i, r) for i, r in enumerate(rows) if r.get("type") == RESUME and i >= start]
    placed.sort(key=lambda p: p[0])  # (stable: the kept rows keep their order)
    return [r for _, r in placed], read


def _number(v: Any) -> float:
    """``v`` as a float -- a number written as text (``"0.475"``) too, as ``scalerl fit`` reads it (review di: the
    report left it out, and its forecast differed from backtest's on the same log); NaN for null or anything
    that is not a number."""
    v = quoted_number(v)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def _last_step(evals: list[dict[str, Any]], log: Path) -> int:
    """The last evaluation's step: the last one a step is written for, where a hand edit left the last
    without (a KeyError ended the report -- review di)."""
    steps = [s for s in (_number(r.get("step")) for r in evals) if math.isfinite(s)]
    if not steps:
        raise InputError(f"{log}: no evaluation row has a step; the run log's evaluation rows need one")
    return int(steps[-1])


def _check_fractions(ys: np.ndarray, y: str, log: Path) -> None:
    """A pass rate outside [0, 1] (a log in percent), said with what a user of this command can do: the fits'
    own message advised --y-scale and --unbounded, flags of ``scalerl fit`` that ``scalerl report`` has not."""
    bad = ys[np.isfinite(ys) & ((ys < 0) | (ys > 1))]
    if bad.size:
        raise InputError(f"{log}: {y} has values outside [0, 1] (e.g. {bad[0]:g}), and the report reads a pass rate "
                         f"as a fraction; for a log in percent, fit it with: scalerl fit {shlex.quote(str(log))} --y "
                         f"{shlex.quote(y)} --y-scale 0.01")


def _not_finite(evals: list[dict[str, Any]], values: np.ndarray, column: str) -> list[str]:
    """A note naming the evaluations whose ``column`` is NaN / inf / null (none: no note)."""
    bad = [str(evals[i].get("step", "?")) for i in np.flatnonzero(~np.isfinite(values))]
    if not bad:
        return []
    return [f"{len(bad)} evaluation{'s' if len(bad) > 1 else ''} without a finite {column} (at step{'s' if len(bad) > 1 else ''} "
            f"{', '.join(bad[:8])}{', ...' if len(bad) > 8 else ''}): left out of the fits"]


def _run_facts(output: Path, header: dict[str, Any], rows: list[dict[str, Any]], last_step: int, evaluations: int,
               last: dict[str, Any], ys: np.ndarray) -> dict[str, Any]:
    """What the run is and did: its recipe, model and task, its compute (``last``: its last evaluation's row, at
    ``last_step``), the pass rate's start, end and best (``ys``: the finite pass rates), its reward failures,
    resumes and collapses, whether it finished."""
    if ys.size == 0:
        raise InputError(f"{output}: no evaluation with a finite pass rate yet")
    trained = trained_steps(rows, last_step)
    has_final = has_final_model(output)
    final_step = final_model_step(output) if has_final else None
    planned = planned_steps(output)
    return dict(
        trained_steps=trained, has_final=has_final, final_step=final_step, planned_steps=planned,
        finished=finished_with_final(has_final, final_step, trained, planned),
        recipe=header.get("recipe"), model=header.get("model"), task=header.get("task"),
        params=_count(header.get("params")), steps=last_step, evaluations=evaluations,
        start=float(ys[0]), final=float(ys[-1]), gain=float(ys[-1] - ys[0]), best=float(ys.max()),
        gpu_hours=_number(last.get("gpu_hours")), flops=_number(last.get("flops")),
        samples=_count(last.get("samples")),
        reward_errors=_count(last.get("reward_errors", 0)) or 0,
        reward_timeouts=_count(last.get("reward_timeouts", 0)) or 0,  # (null: none counted -- review by, a TypeError)
        resumed_from_steps=[r.get("from_step") for r in rows if r.get("type") == RESUME],
        collapsed_steps=collapsed_steps(r for r in rows if r.get("type") == "train"),
        skip_reasons=_skip_reasons(rows),
        lr=config_setting(header, "recipe", "optimizer", "lr"),
    )


def _calibration(output: Path, configured, asked, cal):
    """``(the bands' factors, what the report says of them)``: ``cal`` read from the file ``asked`` for; else
    the run's ``forecast.calibration`` (``configured``); else the shipped factors ``(None, None)``."""
    copy = output / CALIBRATION_COPY
    if cal is None and (configured or copy.exists()):
        try:  # the run's own copy first: the original may have moved since the run started
            cal = read_calibration(copy if copy.exists() else configured, level=DEFAULT_LEVEL)
            # Named as what was read: the original path alone read as its factors now, which can
            # differ from the copy's (calibrated again since) or be gone.
            return cal, (f"{copy} (the run's copy of {configured}, made when it started)"
                         if copy.exists() and configured else str(configured or copy))
        except InputError as exc:  # the run trained; its report falls back, and says so
            return None, f"the shipped factors: the run's forecast.calibration could not be read ({exc})"
    if cal is not None:
        return cal, str(asked)
    return None, None


def _half_budget_forecast(curve: Curve, xs: np.ndarray, ys: np.ndarray, output: Path, *, fraction: float,
                          n_boot: int, calibration, finished: bool) -> tuple[dict[str, Any], Path]:
    """The half-budget forecast: fit on compute <= fraction x final compute, predict the rest.
    ``(its facts, its figure)``; too early for a forecast, the figure is the curve alone and the facts
    say why (``forecast_error_message``)."""
    from scalerl.curves.plot import plot_backtest

    f: dict[str, Any] = {}
    try:
        early = _too_early(xs, fraction, finished)
        if early:
            raise InputError(early)
        bt = backtest(curve, cut_fraction=fraction, n_boot=n_boot, calibration=calibration)
        (pred,) = bt.forecast.predict([xs[-1]])
        f.update(
            forecast_cut=bt.cut, forecast_points=bt.n_fit, forecast_final=pred.R, forecast_final_lo=pred.lo,
            forecast_final_hi=pred.hi, forecast_final_obs_lo=pred.obs_lo, forecast_final_obs_hi=pred.obs_hi,
            forecast_error=pred.R - ys[-1], forecast_mae=bt.default.mae, forecast_unstable=bt.unstable,
            # The end level (mean of the last quarter of the held-out evaluations): one evaluation can
            # be caught mid-oscillation, the end level is what a user means by "where the run ends".
            forecast_end_level=bt.end_level, forecast_end_error=bt.default.end_error,
            forecast_stability=bt.forecast.stability.text(), sigmoid_mae=bt.sigmoid.mae,
            forecast_A=bt.forecast.fit.A, power_law_final=(bt.power_law.predictions[-1] if bt.power_law else None),
            power_law_mae=(bt.power_law.mae if bt.power_law else None),
        )
        return f, plot_backtest(bt, output / CURVE_PNG, title=f"{output.name}: sigmoid fitted on the first "
                                f"{int(fraction * 100)}% of the compute")
    except InputError as exc:
        f["forecast_error_message"] = str(exc)
        from scalerl.curves.plot import plot_curves

        # Too early for a forecast: still draw what there is.
        return f, plot_curves([curve], output / CURVE_PNG, title=f"{output.name}: {exc}")  # (finish wraps it to the figure)


def _too_early(xs: np.ndarray, fraction: float, finished: bool) -> str | None:
    """Why the run is too short (``finished``: for good, else yet) for its half-budget forecast, said as what it
    lacks (None: it is not). A run in its first steps got backtest's advice on backtest's flags ("is --x the compute
    column?", "cut later"), which a report takes none of (review cm)."""
    pos = xs[xs > 0]
    yet = "" if finished else " yet"
    if pos.size == 0:
        return f"too few evaluations{yet}: only the one before training"
    need = points_to_fit()
    before = int((pos <= fraction * pos.max()).sum())
    if before < need or before == pos.size:
        return (f"too few evaluations{yet}: {before} after the start in the first {fraction:.0%} of the compute and "
                f"{pos.size - before} after it, where the forecast needs {need} to fit and one to score"
                + ("" if not finished else "; a run evaluated more often (a smaller eval.every) gets one"))
    return None


def _whole_run_fit(curve: Curve, evals: list[dict[str, Any]], xs: np.ndarray, *, n_boot: int,
                   calibration) -> dict[str, Any]:
    """The sigmoid fitted on the whole run: A, B and C_mid with their intervals, whether the run is
    stable, and the excursions left out of the fit (or why there is no fit)."""
    f: dict[str, Any] = {}
    try:
        full = forecast(curve, n_boot=n_boot, power_law=False, calibration=calibration)
        iv = full.intervals()
        for name in ("A", "B", "C_mid"):
            f[f"fit_{name}"] = getattr(full.fit, name)
            f[f"fit_{name}_interval"] = iv.get(name)
        f["run_unstable"], f["run_stability"] = full.unstable, full.stability.text()
        f["run_untested"] = full.stability.untested
        f["fit_warnings"] = list(full.fit.warnings)  # (review bw: "A = 1.000" without fit's "A is at its upper bound")
        # Said at their steps, not at their FLOPs.
        steps = tuple(float(evals[int(np.flatnonzero(xs == v)[0])]["step"]) for v in full.excursions.x)
        f["fit_excursions"] = dataclasses.replace(full.excursions, x=steps).describe("step")
    except InputError as exc:
        f["fit_error_message"] = str(exc)
    return f


def check_x_column(evals: list[dict[str, Any]], x: str, log: Path) -> None:
    """:class:`InputError` naming the columns when ``x`` is not in every evaluation row
    (``scalerl report RUN --x nope`` gave a KeyError traceback)."""
    if all(x in r for r in evals):
        return
    numeric = sorted({k for r in evals for k, v in r.items() if isinstance(v, (int, float)) and not isinstance(v, bool)
                      and "/" not in k})
    raise InputError(f"{log}: no column {x!r} in every evaluation row; give --x one of: {', '.join(numeric)}")


def last_sample(output: Path, step: int | None = None) -> dict[str, Any] | None:
    """A completion of the run's last evaluation from ``samples.jsonl`` (a passing one if there
    is one: it shows what the model learned to write), or None when the run logged none. ``step``: the last
    evaluation the run log holds -- a kill during an evaluation leaves its samples written and its row not
    (a resume cuts them back), and the report showed a sample of an evaluation it does not list."""
    path = output / "samples.jsonl"
    if not path.exists() or path.stat().st_size == 0:  # (a run opens it before its first evaluation writes to it)
        return None
    _, rows, _ = read_runlog(path)
    if step is not None:
        rows = [r for r in rows if isinstance(r.get("step"), (int, float)) and r["step"] <= step]
    if not rows:
        return None
    last = [r for r in rows if r.get("step") == rows[-1].get("step") and r.get("set") == rows[-1].get("set")]
    return next((r for r in last if r.get("passed")), last[0])


def _sample_lines(sample: dict[str, Any]) -> tuple[str, list[tuple[str, str]]]:
    head = (f"A sample from the last evaluation (step {sample.get('step')}, set {sample.get('set')}, "
            f"problem {sample.get('problem_id')}); more in samples.jsonl")
    return head, [("prompt", str(sample.get("prompt"))), ("completion", str(sample.get("completion"))),
                  ("reference answer", str(sample.get("answer"))), ("reward", _sample_reward(sample))]


def _sample_reward(sample: dict[str, Any]) -> str:
    """The sample's reward, and whether the reward function failed on it (then it is no verdict on the
    completion: the call raised or timed out and was scored as a wrong answer)."""
    text = _fmt(sample.get("reward"))
    if sample.get("reward_failed"):
        text += " (the reward function failed on this completion -- raised or timed out -- and it was scored as a wrong answer)"
    return text


def _plot_sets(evals, sets, x, path: Path) -> Path:
    from scalerl.curves.plot import _plt, finish

    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.2), dpi=120)
    for i, s in enumerate(sets):
        # (as the fits read them: a number written as text is one, a row without this set's pass rate is left out)
        both = ((_number(r.get(x)), _number(r.get(f"{s}/pass_rate"))) for r in evals)
        pts = [(vx, vy) for vx, vy in both if vx > 0 and math.isfinite(vx) and math.isfinite(vy)]
        if pts:
            ax.plot(*zip(*pts), "o-", ms=3, lw=1.2, color=f"C{i}", label=f"{s}/pass_rate")
    ax.set_xlabel(x)
    ax.set_ylabel("pass rate (mean@k)")
    return finish(fig, ax, path, title="every evaluation set against training compute")


def _fmt(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and math.isnan(v)):
        return "-"
    if isinstance(v, float):  # (a value below 0.01 in significant digits: a C_mid of 6.3e-05 read 0.000 -- FY)
        return f"{v:.{digits}f}" if v == 0 or 1e-2 <= abs(v) < 1e4 else f"{v:.3g}"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_fmt(u, digits) for u in v) + "]"
    return str(v)


def _unfinished(f: dict[str, Any], output: Path) -> list[tuple[str, str]]:
    """A status line for a run that did not reach its end with final/ saved (still training, or stopped):
    without it, a report of a run in progress, or of an extension stopped before its new end, read like the
    report of a finished one ("final" = the latest)."""
    finished = f.get("finished", True)
    if finished:
        return []
    trained = f.get("trained_steps", f["steps"])
    planned = f.get("planned_steps")
    of = f" of {planned}" if planned is not None and trained < planned else ""
    resume = f"go on with: scalerl train --output {shlex.quote(str(output))} --resume"  # (a path with a space)
    if finished is None:
        older = "final/ does not record its step (saved by an older scalerl)"
        if planned is None:
            return [("status", f"whether the run finished cannot be told: {older} and there is no readable config.yaml "
                               f"to compare the log's last step ({trained}) with")]
        return [("status", f"whether the run finished cannot be told: {older}, and the log's last step ({trained}) is not "
                           f"config.yaml's end ({planned}), which that scalerl did not update on --resume --steps: a run "
                           f"shortened or extended to step {trained} and finished there, or an extension stopped part-way "
                           f"(final/ then holds the model the run was extended from; {resume})")]
    if f.get("has_final"):  # an extension stopped part-way: final/ is the earlier end's model
        return [("status", f"unfinished: trained to step {trained}{of}; final/ holds the model of step {f['final_step']}, "
                           f"an earlier end (the run was extended since); 'final' below is the latest evaluation; {resume}")]
    return [("status", f"unfinished (no final/ model yet): this covers the steps logged so far, to step {trained}{of}; "
                       f"'final' below is the latest evaluation; if the run was stopped, {resume}")]


def _reward_failures(f: dict[str, Any]) -> list[tuple[str, str]]:
    """The reward function's failures over the run, where there were any: each scored like a wrong
    answer, so a report without them read as if every reward had been computed."""
    if not f.get("reward_errors") and not f.get("reward_timeouts"):
        return []
    return [("reward function failures", f"{f['reward_errors']} errors and {f['reward_timeouts']} timeouts, "
                                         f"{SCORED_AS_WRONG} (reward_errors, reward_timeouts in the run log)")]


def reward_failure_lines(evals: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """The run's reward failures from its evaluation rows (the last holds the run's totals), for a run
    that writes no report (``--no-report``): they went unsaid there, but for the first one's warning."""
    last = evals[-1] if evals else {}
    return _reward_failures({"reward_errors": _count(last.get("reward_errors", 0)) or 0,
                             "reward_timeouts": _count(last.get("reward_timeouts", 0)) or 0})


def _resumed(f: dict[str, Any]) -> list[tuple[str, str]]:
    """How often the run was stopped and resumed, and from which checkpoints: its rows alone read
    the same as a run trained in one go. No line for a run log without resume rows (never resumed,
    or written before they were)."""
    steps = f.get("resumed_from_steps") or []
    if not steps:
        return []
    n = len(steps)
    if n > 1 and len(set(steps)) == 1:  # resumed again from the same checkpoint, stopped each time before the next
        return [("resumed", f"{n} times, each from the checkpoint at step {steps[0]}")]
    where = ", ".join(str(s) for s in steps[:-1]) + (" and " if n > 1 else "") + str(steps[-1])
    return [("resumed", f"{n} time{'s' if n > 1 else ''}, from the checkpoint{'s' if n > 1 else ''} "
                        f"at step{'s' if n > 1 else ''} {where}")]


#: The numbers in a skip reason ("non-finite loss 0.0731 or grad norm inf", "... at loss scale 65536; ..."): each
#: step's own, so reasons are counted with them masked (review cn: five steps, five "1 step" entries).
_NUMBER = re.compile(r"[-+]?\d+(?:\.\d+)?(?:e[-+]?\d+)?")


def _skip_reasons(rows: list[dict[str, Any]]) -> dict[str, int]:
    """``{reason: steps}`` of the steps that trained nothing (train rows with ``skipped``: a non-finite loss, every
    group's rewards alike ...), its numbers as "N", most first; a step logged twice (a resume's redone step) counts
    once."""
    by_step = {int(r["step"]): r for r in rows
               if r.get("type") == "train" and isinstance(r.get("step"), (int, float)) and not isinstance(r["step"], bool)}
    reasons = Counter(_NUMBER.sub("N", str(r.get("skip_reason") or "no reason logged"))
                      for r in by_step.values() if r.get("skipped") is True)
    return dict(reasons.most_common())


def _skipped(f: dict[str, Any]) -> list[tuple[str, str]]:
    """The steps that trained nothing, by reason: a run stopped by ``run.max_nan_steps``, or one most of whose steps
    were skipped, read as a run still training or a finished one (review cm)."""
    reasons = f.get("skip_reasons") or {}
    if not reasons:
        return []
    n = sum(reasons.values())
    why = "; ".join(f"{k} step{'s' if k > 1 else ''}: {reason}" for reason, k in reasons.items())
    return [("skipped steps", f"{n} of {f.get('trained_steps', f['steps'])} trained nothing ({why}; skip_reason "
                              "in the run log)")]


def _collapsed(f: dict[str, Any]) -> list[tuple[str, str]]:
    """A streak of steps whose every completion failed after the run had trained: the trainer said
    so on stderr while it ran; the report says it too (its pass rates alone read as a hard task)."""
    if not f.get("collapsed_steps"):
        return []
    lr = f.get("lr")
    return [("collapse?", collapse_note(*f["collapsed_steps"], lr if isinstance(lr, (int, float)) else math.nan))]


def summary_lines(rep: RunReport) -> list[tuple[str, str]]:
    f = rep.facts
    lines = [
        ("recipe", _fmt(f["recipe"])),
        ("model", f"{f['model']} ({f['params']:,} parameters)" if f.get("params") else _fmt(f["model"])),
        ("steps / evaluations", f"{f['steps']} / {f['evaluations']}" if f.get("trained_steps", f["steps"]) <= f["steps"]
         else f"{f['trained_steps']} (the last evaluation at step {f['steps']}) / {f['evaluations']}"),
        *_unfinished(f, rep.output),
        *_resumed(f),
        ("compute", _compute(f)),
        (f"{rep.y}: start -> final", f"{f['start']:.3f} -> {f['final']:.3f} (gain {f['gain']:+.3f}, best {f['best']:.3f})"),
        *_reward_failures(f),
        *_skipped(f),
        *_collapsed(f),
        *(("run log", note) for note in f.get("log_notes", ())),
    ]
    if f.get("calibration"):
        lines.append(("forecast bands", f"calibrated by {f['calibration']}"
                      + (f"; note: {f['band_level_note']}" if f.get("band_level_note") else "")))
    if f.get("run_unstable"):
        lines.append(("stability", f"UNSTABLE: {f['run_stability']}"))
    elif f.get("run_untested"):  # (review ck: a 5-evaluation collapse, unsaid)
        lines.append(("stability", f["run_stability"]))
    if "forecast_final" in f and f.get("forecast_unstable"):
        lines.append((f"forecast of the final {rep.y} from the first half of the compute",
                       f"none -- unstable at the cut: {f['forecast_stability']}"))
    elif "forecast_final" in f:
        lines.append((
            f"forecast of the final {rep.y} from the first half of the compute",
            f"{f['forecast_final']:.3f} ({_band_level(f)} confidence band {f['forecast_final_lo']:.3f}-"
            f"{f['forecast_final_hi']:.3f}, "
            f"prediction band for one evaluation {f['forecast_final_obs_lo']:.3f}-{f['forecast_final_obs_hi']:.3f}; "
            f"observed {f['final']:.3f}, error {f['forecast_error']:+.3f}; the end level (mean of the last "
            f"quarter of the held-out evaluations) {f['forecast_end_level']:.3f}, error {f['forecast_end_error']:+.3f}; "
            f"MAE over the held-out points "
            f"{f['forecast_mae']:.3f}, the sigmoid alone {f['sigmoid_mae']:.3f})",
        ))
        if f.get("power_law_final") is not None:
            lines.append(("power law's forecast of the final point", f"{f['power_law_final']:.3f} (MAE {f['power_law_mae']:.3f})"))
    elif "forecast_error_message" in f:
        lines.append(("half-budget forecast", f"not possible: {f['forecast_error_message']}"))
    if "fit_A" in f:
        lines.append((
            # An unstable run's fit describes no trend (review ai: an A above the run's best, B on its bounds).
            "sigmoid fitted on the whole run" + (" (an unstable run: no ceiling or trend to read off it)"
                                                 if f.get("run_unstable") else ""),
            "A = {} {}, B = {} {}, C_mid = {} {}".format(
                _fmt(f["fit_A"]), _fmt(f["fit_A_interval"]), _fmt(f["fit_B"], 2), _fmt(f["fit_B_interval"], 2),
                _fmt(f["fit_C_mid"]), _fmt(f["fit_C_mid_interval"]),
            ),
        ))
    elif "fit_error_message" in f:  # (review cm: a run that fell got no fit line and no word why)
        lines.append(("sigmoid fitted on the whole run", f"none: {f['fit_error_message']}"))
    lines += [("warning", w) for w in f.get("fit_warnings", ())]
    if f.get("fit_excursions"):
        lines.append(("left out of the fits", f["fit_excursions"]))
    return lines


def _count(value: Any) -> int | None:
    """A count of the run log's (samples, reward errors), None where the row holds none (JSON's null: reviews bx, by,
    a TypeError) or none that a count can be (a boolean, a negative number: review bz, "-3 errors")."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
        return None
    return int(value)


def _compute(f: dict[str, Any]) -> str:
    """The run's compute, and the samples trained per device-second (evaluation excluded, as in the progress bar's
    samples/s, which is per wall second: the two differ by the devices busy, under --nproc or with generator
    processes): the report said how much compute, not how fast it went. A count the log did not give is said so
    (reviews bw, bx: "nan device-seconds", "nan FLOPs")."""
    seconds, samples = f["gpu_hours"] * 3600, f["samples"]
    parts = [f"{f['flops']:.3g} FLOPs" if math.isfinite(f["flops"]) else "FLOPs not logged",
             f"{seconds:.0f} device-seconds" if math.isfinite(seconds) else "device time not logged",
             f"{samples:,} samples" if samples is not None else "samples not logged"]
    rate = (f" ({samples / seconds:,.1f} samples per device-second)"
            if samples and math.isfinite(seconds) and seconds > 0 else "")
    return ", ".join(parts) + rate


def _band_level(f: dict[str, Any]) -> str:
    """The level the report's bands hold: 95%, or less where the calibration's run-cuts are too few (its note)."""
    return level_text(f.get("band_level", DEFAULT_LEVEL))


def curve_caption(f: dict[str, Any]) -> str:
    """What curve.png shows. It said "Filled points ... Bands ..." under every figure, also under
    an unstable run's (drawn without bands: no forecast) and a too-short run's (its points alone)."""
    if "forecast_final" not in f:
        return "The evaluations so far, joined by lines: too few for a forecast (see above), so no fit is drawn."
    if f.get("forecast_unstable"):
        return ("Filled points: the evaluations of the first half of the compute; open circles: the later ones. The run "
                "was unstable by the cut, so there is no forecast and no band: the dotted line is the fit's "
                "extrapolation, not a forecast. Thin line: the paper's sigmoid; dashed: the power law A - D/C^B "
                "fitted on the same points.")
    return ("Filled points: the evaluations the forecast was fitted on (first half of the compute). Open circles: the "
            f"later evaluations it predicted. Bands: {_band_level(f)} confidence (the expected curve, dark) and "
            "prediction (one evaluation, light), calibrated on real runs. Thin line: the paper's sigmoid; dashed: the "
            "power law A - D/C^B fitted on the same points. Red crosses: one-evaluation excursions (a policy evaluated "
            "mid-oscillation) the fits left out.")


def _write_text(rep: RunReport, sets: list[str]) -> list[Path]:
    lines = summary_lines(rep)
    md = [f"# scalerl run report: {md_text(rep.output.name)}", "", *md_table([["", ""], *lines])]
    md += ["", f"![pass rate against {rep.x}](curve.png)", "",
           curve_caption(rep.facts), "",
           "![every evaluation set](sets.png)", "", "## Evaluations", ""]
    cols = ["step", rep.x, *[f"{s}/pass_rate" for s in sets]]
    table = [cols] + [[_fmt(r.get(c), 4) if c != rep.x or not isinstance(r.get(c), (int, float)) else f"{r.get(c):.4g}"
                       for c in cols] for r in rep.rows]
    md += md_table(table)
    sample_html = ""
    if rep.sample is not None:
        head, parts = _sample_lines(rep.sample)
        md += ["", "## A sample", "", md_text(head) + ":", ""]
        for name, text in parts:
            md += [f"**{name}**", "", md_fence(text), text, md_fence(text), ""]
        sample_html = f"<h2>A sample</h2><p>{html.escape(head)}:</p>" + "".join(
            f'<p><b>{html.escape(name)}</b></p><pre class="sample">{html.escape(text)}</pre>' for name, text in parts)
    md_path = rep.output / REPORT_MD
    write_text_atomically(md_path, "\n".join(md) + "\n")
    body = f"""{html_table([["", ""], *[[k, v] for k, v in lines]])}
<img src="curve.png" alt="pass rate against compute"><p>{html.escape(curve_caption(rep.facts))}</p><img src="sets.png" alt="every evaluation set">
{sample_html}
<h2>Evaluations</h2>{html_table(table)}
<details><summary>facts (JSON)</summary><pre>{html.escape(json.dumps(finite_json(rep.facts), indent=1, default=str, allow_nan=False))}</pre></details>"""
    page = html_page(f"scalerl run report: {rep.output.name}", body, max_width=960)
    html_path = rep.output / REPORT_HTML
    write_text_atomically(html_path, page)
    return [md_path, html_path]
