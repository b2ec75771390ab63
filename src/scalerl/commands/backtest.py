"""``scalerl backtest``: fit on a prefix of a run, score the rest -- the forecast against the
paper's sigmoid, the plain sigmoid and the power law, and how its bands did.

    scalerl backtest examples/data/real_rl_curves.csv --x cum_wall_hours --y val_score \\
        --run verl_training_log__grpo_run_deepseek7b_llm --cut-fraction 0.5
    # every run of a file, one summary table (score the forecaster on your own logs)
    scalerl backtest examples/data/rl_curve_corpus.csv --x x --y val_score --all-runs --cut-fraction 0.5
    # every run of several logs (a console per run): one summary table
    scalerl backtest runs/*.log --x step --y eval_math_pass1
    # each run cut at 30%, 50% and 70% of its compute: a row per run and cut, a summary per cut and pooled
    scalerl backtest runs/*.log --x step --y eval_math_pass1 --cut-fraction 0.3 0.5 0.7
"""

from __future__ import annotations

import json
import math
import shlex
from pathlib import Path
from typing import NamedTuple

from scalerl.commands._curve_args import (add_data_args, add_fit_args, calibration_line, distinct_cuts,
                                          fit_kwargs, g, plot_path, progress_bar, read_logs, table)
from scalerl.commands._run_names import named_apart
from scalerl.curves.plot import shortened_apart
from scalerl.errors import InputError
from scalerl.runlog import finite_json


def add_arguments(p) -> None:
    add_data_args(p, many=True)
    p.add_argument("--run", metavar="NAME", help="which run, when the (one) log holds several")
    cut = p.add_mutually_exclusive_group()
    cut.add_argument("--cut", type=float, metavar="X", help="fit on compute <= X, score the rest")
    cut.add_argument("--cut-fraction", type=float, nargs="+", action="extend", metavar="F",
                     help="cut at F x the last compute (default, without --cut: 0.5); several (0.3 0.5 0.7): each run "
                          "at each, in one summary table, as the shipped calibration scores runs")
    p.add_argument("--all-runs", action="store_true",
                   help="every run in the file, one summary table; runs that "
                        "cannot be forecast are listed with the reason, not fatal; implied by several PATHs or cuts")
    add_fit_args(p, fit_until=False)
    p.set_defaults(bootstrap=200)
    p.add_argument("--plot", metavar="FILE",
                   help="write the figure (.png, .svg or .pdf): one run's forecast; several runs or cuts, a panel each")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (one is shown for several runs or cuts)")


def run(args) -> int:
    if len(args.paths) > 1:
        if args.run:
            raise InputError(f"{len(args.paths)} logs: every run of each is scored in one table; drop --run "
                             "(or give one log)")
        args.all_runs = True
    if args.all_runs and args.run:
        raise InputError("--all-runs scores every run: drop --run (or drop --all-runs)")
    if args.cut_fraction is not None and len(args.cut_fraction) > 1:  # (of one --run, or of every run)
        args.all_runs = True
    if args.cut is None and args.cut_fraction is None:  # (review fa: "give --cut" came before the log's columns)
        args.cut_fraction = [0.5]
    bad = [f for f in args.cut_fraction or () if not 0 < f < 1]
    if bad:
        raise InputError(f"--cut-fraction {bad[0]:g}: give a share of the run's last compute between 0 and 1 (e.g. 0.5)")
    distinct_cuts("--cut-fraction", args.cut_fraction)
    if args.cut is not None:
        from scalerl.curves.backtest import check_cut

        check_cut(args.cut)
    settings = fit_kwargs(args)  # a bad setting is the command's error, not a reason to skip each run
    if args.plot is not None:  # ('' too: an unset shell variable wrote no figure, in silence -- review FY)
        plot_path(args.plot)
    paths, per_log, unread = read_logs(args, run=args.run)
    paths, per_log, given = _read_once(paths, per_log)
    # Runs of one name in several logs (each console its own 'exp_001'), or one log given again for
    # another metric, told apart by their path (and metric): the table showed rows of one name.
    curves = named_apart([(path, c) for path, log in zip(paths, per_log) for c in log])
    if args.all_runs:
        return _all_runs(curves, args, settings, unread, given)
    if len(curves) == 1:  # one run: what stops it is the command's error
        results, skipped = [_backtest(curves[0], args, settings, _cuts(args)[0])], []
    else:
        scored, skipped = _scored_and_skipped(curves, _cuts(args), args, settings, unread, "run")
        results = [bt for _, bt in scored]
    if not results:
        raise InputError("no run could be backtested:\n" + "\n".join(f"  {s.shown}: {s.reason}" for s in skipped))
    plotted = _plot(results, args) if args.plot else None
    if args.json:
        objs = [bt.as_dict() for bt in results]
        if len(curves) == 1:
            out = objs[0]
        else:  # (with the summary the text prints under the reports -- review FY)
            from scalerl.curves import summarize

            out = {"runs": objs, "skipped": [s.as_json() for s in skipped],
                   "summary": summarize(results, tolerance=0.001).as_dict() if len(results) > 1 else None}
        out["bands_calibration"] = _bands_calibration(results, args)
        if args.plot:  # (as fit's JSON says where its figure went)
            out["plot"] = args.plot
        print(json.dumps(finite_json(out), allow_nan=False, default=_jsonable))
        return 0
    several = len(results) > 1
    for bt in results:
        print(_text(bt, legend=not several))
        print()
    for entry in skipped:
        print(f"skipped {entry.shown}: {entry.reason}")
    if several:  # the legend once, and what the reports add up to (--all-runs: one table instead)
        from scalerl.curves import summarize

        print(LEGEND)
        print("\n" + _summary_lines(summarize(results, tolerance=0.001), "runs", skipped=len(skipped),
                                     label=_level_label(results)))
        print("(--all-runs: one line per run instead of a report)")
    if args.calibration:  # (said only by --all-runs: a backtest's bands did not say whose factors they had)
        print(calibration_line(args.calibration, settings["calibration"], args.level))
    if plotted:
        print(plotted)
    return 0


def _backtest(curve, args, settings: dict, cut_fraction: float | None):
    from scalerl.curves import backtest

    return backtest(curve, cut=args.cut, cut_fraction=cut_fraction, n_boot=args.bootstrap, level=args.level,
                    seed=args.seed, **settings)


def _cuts(args) -> list[float | None]:
    """The cut fractions asked for; ``[None]``: the one compute ``--cut X``."""
    return [None] if args.cut_fraction is None else args.cut_fraction


class Skipped(NamedTuple):
    """A run (at a cut, among several) that could not be backtested, and why."""

    run: str
    reason: str
    cut: float | None = None

    @property
    def shown(self) -> str:
        return self.run + (f" at {self.cut:g}" if self.cut is not None else "")

    def as_json(self) -> dict:
        # The run's own name and its cut apart (review bw: "short8 at 0.3" named no run a script could match).
        return {"run": self.run, "reason": self.reason, **({"cut_fraction": self.cut} if self.cut is not None else {})}


def _backtests(curves, cuts, args, settings: dict, bar=None) -> tuple[list, list[Skipped]]:
    """Each run at each cut: ``([(cut fraction, backtest)], [(run, reason)])`` -- a run that cannot be
    forecast at a cut is reported with the reason, not fatal, the others still scored."""
    results, skipped = [], []
    for c in curves:
        for f in cuts:
            try:
                results.append((f, _backtest(c, args, settings, f)))
            except InputError as exc:
                skipped.append(Skipped(c.name, str(exc), f if len(cuts) > 1 else None))
            if bar is not None:
                bar.update(1)
    return results, skipped


def _backtests_shown(curves, cuts, args, settings: dict, unit: str) -> tuple[list, list[Skipped]]:
    """:func:`_backtests` under a progress bar (none with --no-progress or --json), a tick per ``unit``."""
    bar = progress_bar(len(curves) * len(cuts), args.no_progress or args.json, "backtesting", unit)
    try:
        return _backtests(curves, cuts, args, settings, bar)
    finally:
        if bar is not None:
            bar.close()


def _scored_and_skipped(curves, cuts, args, settings: dict, unread, unit: str) -> tuple[list, list[Skipped]]:
    """Every run at every cut (:func:`_backtests_shown`) and every run skipped: a log that could not be
    read, a run its reader left out (a W&B export's run with a cell that is no number), a run that
    could not be forecast -- one list for a backtest of several runs with or without --all-runs (without
    it, the runs the reader left out were counted as "0 skipped" and missing from the JSON)."""
    results, skipped = _backtests_shown(curves, cuts, args, settings, unit)
    left_out = list(dict.fromkeys(pair for c in curves for pair in c.left_out))
    return results, [*(Skipped(*pair) for pair in [*unread, *left_out]), *skipped]


def _run_notes(curves, log_notes: list[str]) -> list[tuple[str, str]]:
    """``(run, note)`` for what a run's reader said of it alone -- its rows dropped as missing, NaN or
    infinite first --, once per run (not per cut): the table of --all-runs printed only the notes every
    run shares, so a run scored on 8 of its 10 evaluations said nothing of the other 2."""
    from scalerl.curves.data import dropped_note
    from scalerl.curves.rows import left_out_note

    shared = {*log_notes, *(left_out_note(c.left_out) for c in curves if c.left_out)}
    out = []
    for c in curves:
        said = [dropped_note(c), *(n for n in c.notes if n not in shared)]
        out += [(c.name, n) for n in dict.fromkeys(said) if n]
    return out


def _bands_calibration(results, args) -> dict | None:
    """The factors the bands had and the level they hold at ``--level`` (``Calibration.as_json``): the
    text says "a 92.3% band, not 99%" where the file's run-cuts cannot give the level; the JSON said 0.99."""
    if not results:
        return None
    return results[0].forecast.bands.calibration.as_json(args.calibration, args.level)


def _jsonable(v):
    return None if isinstance(v, float) and not math.isfinite(v) else str(v)


LEGEND = ("sigmoid: the paper's law on the default window (the fit behind A, B, C_mid); plain sigmoid: every point, "
          "R0 = first evaluation; end-level error: forecast minus observed, mean of the last quarter")


def _text(bt, *, legend: bool = True) -> str:
    c = bt.forecast.curve
    fit = bt.forecast.fit
    lines = [f"run: {c.name}",
             f"cut at {g(bt.cut)} {c.x_name}: {bt.n_fit} points fitted, {bt.n_test} held out"
             + (f" (sigmoid fitted from {g(fit.fit_from)})" if fit.fit_from is not None else "")]
    if bt.unstable:
        lines.append(f"UNSTABLE at the cut -- {bt.forecast.stability.text()}; the scores below are of an "
                     "extrapolation, not a forecast")
    elif bt.unscored:  # (review ck: scored and "MISSES it" with no word that the run fell after the cut)
        lines.append(f"UNSTABLE over the whole run ({bt.unscored}) -- {bt.run_stability.text()}; the forecast is "
                     "not held to it: --all-runs does not score it")
    rows = []
    for name, s in (("forecast", bt.default), ("sigmoid", bt.sigmoid), ("plain sigmoid", bt.plain_sigmoid),
                    ("power law", bt.power_law)):
        if s is not None:
            rows.append([name, f"{s.mae:.4f}", f"{s.end_error:+.4f}", f"{s.last_error:+.4f}", f"{s.max_abs_error:.4f}"])
    lines.append(table(rows, ["law", "MAE", "end-level error", "last error", "max |error|"]))
    b = bt.bands
    pct = _level_label([bt])
    lines.append(f"end level (mean of the last quarter held out) {bt.end_level:.4f}: {pct} confidence band "
                 f"[{b.end_lo:.4f}, {b.end_hi:.4f}] {'covers it' if b.end_covered else 'MISSES it'}"
                 + (" but is over twice as wide as the run's whole range of values (it says nothing)"
                    if b.end_covered and b.wider_than_run else "")
                 + "; "
                 f"{pct} prediction band (median half-width {b.point_half_width:.4f}) holds "
                 f"{100 * b.point_coverage:.0f}% of the held-out evaluations"
                 + ("" if b.calibrated else " (partly beyond the calibrated horizon)"))
    if legend:
        lines.append(LEGEND)
    lines += [f"warning: {w}" for w in fit.warnings] + [f"note: {n}" for n in bt.forecast.notes]
    return "\n".join(lines)


def _plot(results, args, cut_labels=None) -> str:
    """One backtest: its forecast figure; several (runs, cuts): a panel each (small multiples).
    Returns the line that names the file (printed after the text it illustrates; not with --json)."""
    from scalerl.curves.plot import MAX_PANELS, plot_backtest, plot_backtests

    if len(results) == 1:
        plot_backtest(results[0], args.plot)
        return f"plot: {args.plot}"
    plot_backtests(results, args.plot, title=f"backtests: {', '.join(args.y)} against {', '.join(args.x)}",
                   cut_labels=cut_labels)
    more = f" (the first {MAX_PANELS} of {len(results)} backtests)" if len(results) > MAX_PANELS else ""
    return f"plot: {args.plot}, a panel per {'run and cut' if cut_labels else 'run'}{more}"


def _read_once(paths: list, per_log: list) -> tuple[list, list, list[str]]:
    """The logs read (``paths``, with ``per_log`` their curves) with each run an earlier log gave already kept once,
    and a note for each log that gave runs again (review dh: a log given twice had its runs counted twice in the
    summary's shares, unsaid; calibrate counts a repeated curve once, compare refuses). A run is given again where
    the same values of the same metric come again under its name -- the log given twice, by another path or a
    symlink -- or from a log inside the other (a log directory and its file: the names differ); two runs of other
    names in two files that happen to hold equal values are two runs (review dp). One log given again for
    another metric is read for each."""
    def content(c):
        return c.x_name, c.y_name, c.x.tobytes(), c.y.tobytes()

    def nested(a, b) -> bool:
        a, b = Path(a).resolve(), Path(b).resolve()
        return a == b or a in b.parents or b in a.parents

    seen: dict[tuple, list] = {}  # content -> [(path, name)] of the runs kept
    kept_paths, kept_logs, notes = [], [], []
    for path, log in zip(paths, per_log):
        fresh, again = [], []
        for c in log:
            earlier = [p for p, name in seen.get(content(c), []) if name == c.name or nested(p, path)]
            (again if earlier else fresh).append((c, earlier[:1]))
        for c, _ in fresh:
            seen.setdefault(content(c), []).append((path, c.name))
        if again:
            where = ", ".join(dict.fromkeys(str(e[0]) for _, e in again))
            notes.append(f"{path}: {len(again)} run(s) {where} gave already ({', '.join(c.name for c, _ in again)}): "
                         "read once")
        if fresh:
            kept_paths.append(path)
            kept_logs.append([c for c, _ in fresh])
    return kept_paths, kept_logs, notes


def _all_runs(curves, args, settings: dict, unread=(), notes: list[str] = ()) -> int:
    """Every run at every cut: one table (or JSON object) with the skipped runs, the log's notes (and
    ``notes``, the command's own) and a summary per cut and pooled."""
    cuts = _cuts(args)
    several = len(cuts) > 1
    what = "run-cuts" if several else "runs"
    # Runs a log held but the reader could not read (in percent, say) are skipped runs too: counted
    # in the summary, listed with the others, not only in a note.
    results, skipped = _scored_and_skipped(curves, cuts, args, settings, unread, "run-cut")
    by_cut, summary = _summaries(results, cuts)
    log_notes = [*notes, *_log_notes(curves)]
    run_notes = _run_notes(curves, log_notes)
    plotted = None
    if args.plot and results:
        plotted = _plot([bt for _, bt in results], args, cut_labels=[f"{f:g}" for f, _ in results] if several else None)
    if args.json:
        print(_all_runs_json(args, cuts, results, skipped, log_notes, run_notes, summary, by_cut, what))
        _check_any_backtested(results, skipped, what, "in the JSON's \"skipped\"")
        return 0
    print(_runs_table(results, several))
    for entry in skipped:
        print(f"skipped {entry.shown}: {entry.reason}")
    for note in log_notes:
        print(f"note: {note}")
    for run, note in run_notes:
        print(f"note: {run}: {note}")
    if args.calibration:
        print(calibration_line(args.calibration, settings["calibration"], args.level))
    if summary is not None:
        print(_summaries_text(summary, by_cut, cuts, what, len(skipped), args, results))
    if plotted:
        print(plotted)
    _check_any_backtested(results, skipped, what, "listed above ('skipped RUN: ...')")
    return 0


def _summaries(results, cuts) -> tuple[dict, object]:
    """``({cut fraction: summary of its backtests}, summary of all)``; a cut no run could be backtested at
    has no summary, and with no backtest at all the pooled one is None."""
    from scalerl.curves import summarize

    by_cut = {f: summarize([bt for g_, bt in results if g_ == f], tolerance=0.001) for f in cuts
              if any(g_ == f for g_, _ in results)}
    summary = summarize([bt for _, bt in results], tolerance=0.001) if results else None
    return by_cut, summary


def _log_notes(curves) -> list[str]:
    """What the reader says of the log as a whole (runs it left out, resumes it joined): the notes
    every run carries, less the note of runs left out (listed as skipped runs instead)."""
    from scalerl.curves.rows import left_out_note

    listed = {left_out_note(c.left_out) for c in curves if c.left_out}
    return [n for n in curves[0].notes if all(n in c.notes for c in curves) and n not in listed] if curves else []


def _all_runs_json(args, cuts, results, skipped, log_notes, run_notes, summary, by_cut, what: str) -> str:
    several = len(cuts) > 1
    notes_of = {}
    for run, note in run_notes:
        notes_of.setdefault(run, []).append(note)
    return json.dumps(finite_json({
        "cut": args.cut, "cut_fraction": cuts if several else cuts[0],
        "runs": [{"run": bt.run, "cut": bt.cut, **({"cut_fraction": f} if several else {}), "n_fit": bt.n_fit,
                  "n_test": bt.n_test, "unstable": bt.unstable,
                  # (objects, as one run's backtest JSON gives them: a script read ["stability"]["kind"] -- FY)
                  "scored": bt.scored, "run_stability": bt.run_stability.as_dict(),
                  "stability": bt.forecast.stability.as_dict(), "forecast": _scores(bt.default),
                  "sigmoid": _scores(bt.sigmoid), "plain_sigmoid": _scores(bt.plain_sigmoid),
                  "power_law": _scores(bt.power_law), "bands": bt.bands.as_dict(), "end_level": bt.end_level,
                  "dropped_rows": bt.forecast.curve.dropped, "notes": notes_of.get(bt.run, [])}
                 for f, bt in results],
        "skipped": [s.as_json() for s in skipped],
        "notes": log_notes,
        "summary": summary.as_dict() if summary else None,
        **({"summary_by_cut": {f"{f:g}": s.as_dict() for f, s in by_cut.items()}} if several else {}),
        # Said in the text only, before: a script reading the JSON never learnt that its bands missed.
        "calibration": args.calibration, "bands_calibration": _bands_calibration([bt for _, bt in results], args),
        "calibrate_advice": _calibrate_advice(summary, what, results, args),
        **({"plot": args.plot} if args.plot and results else {}),  # (where the figure went, as fit's JSON: FY, GA)
    }), allow_nan=False, default=_jsonable)


def _level_label(results) -> str:
    """The level the backtests' bands hold ("95%", or "85.7%" from a calibration of few run-cuts: the tables
    said 95% above the note that said 85.7% -- review ct); ``results`` backtests or ``(cut, backtest)`` pairs."""
    bt = results[0][1] if isinstance(results[0], tuple) else results[0]
    return bt.forecast.level_text


def _runs_table(results, several: bool) -> str:
    """A line per run (and cut): its fit and held-out points, the forecast's scores, its bands, the laws beside it."""
    pct = _level_label(results) if results else "95%"
    rows = []
    labels = shortened_apart([bt.run for _, bt in results], 48)
    for label, (f, bt) in zip(labels, results):
        rows.append([label, *([f"{f:g}"] if several else []), f"{bt.n_fit}/{bt.n_test}", f"{bt.default.mae:.4f}",
                     f"{bt.default.end_error:+.4f}",
                     ("yes (over 2x the run)" if bt.bands.wider_than_run else "yes") if bt.bands.end_covered else "NO",
                     f"{bt.bands.end_half_width:.3f}",
                     f"{100 * bt.bands.point_coverage:.0f}%",
                     f"{bt.plain_sigmoid.mae:.4f}" if bt.plain_sigmoid else "-",
                     f"{bt.power_law.mae:.4f}" if bt.power_law else "-", _status(bt)])
    return table(rows, ["run", *(["cut"] if several else []), "fit/held", "MAE", "end error", f"end in {pct} band",
                        "half-width", "points in band", "plain sigmoid MAE", "power law MAE", "stability"])


def _summaries_text(summary, by_cut: dict, cuts, what: str, n_skipped: int, args, results) -> str:
    """The summary per cut (several cuts) and of all, and -- where the bands missed too many end
    levels -- how to make factors from these runs; ``results``: the backtests."""
    label = _level_label(results) if results else "95%"
    several = len(cuts) > 1
    lines = []
    for f, s in by_cut.items() if several else ():
        lines += [f"\ncut at {f:g} of each run's compute:", _summary_lines(s, what, skipped=None, label=label)]
    if several:
        lines.append(f"\nall cuts ({', '.join(f'{f:g}' for f in cuts)}) pooled:")
    lines.append(("" if several else "\n") + _summary_lines(summary, what, skipped=n_skipped, label=label))
    advice = _calibrate_advice(summary, what, results, args)
    if advice:
        lines.append(f"  {advice}")
    return "\n".join(lines)


def _calibrate_advice(summary, what: str, results, args) -> str | None:
    """Where the bands covered too few end levels to be chance: that the runs are not like the shipped factors'
    and the command that makes factors from them, read and forecast as these were (the text and the JSON's
    ``"calibrate_advice"``); else None. ``results``: the backtests, ``(cut, backtest)`` pairs."""
    if summary is None or not results:
        return None
    fc = (results[0][1] if isinstance(results[0], tuple) else results[0]).forecast
    chance = _chance_of_so_few(summary, fc.held_level)
    if chance >= 0.05:
        return None
    command = shlex.join(["scalerl", "calibrate", *args.paths, "--x", *args.x, "--y", *args.y, *_calibrate_flags(args)])
    return (f"the {fc.level_text} bands covered {_pct(summary.end_coverage)} of these {what}' end "
            f"levels (so few by chance: p = {chance:.2g}): they are not like the runs the "
            f"{'factors of ' + args.calibration if args.calibration else 'shipped factors'} come from; "
            f"`{command}` makes factors from your runs (then --calibration FILE)")


def _calibrate_flags(args) -> list[str]:
    """The flags of this backtest that ``calibrate`` must be given to read the runs and forecast them as it did
    (review du: the command given without --y-scale failed on logs in percent, and without --fit-from / --r0 /
    --keep-excursions it would have calibrated another forecaster)."""
    flags = []
    for flag, value, default in (("--run-column", args.run_column, None), ("--format", args.format, None),
                                 ("--y-scale", args.y_scale, 1.0), ("--fit-from", args.fit_from, "auto"),
                                 ("--r0", args.r0, "first")):
        if value != default:
            flags += [flag, f"{value:g}" if isinstance(value, float) else str(value)]
    return flags + [flag for flag, on in (("--unbounded", args.unbounded),
                                          ("--keep-excursions", getattr(args, "keep_excursions", False))) if on]


def _chance_of_so_few(summary, level: float) -> float:
    """How likely bands that hold ``level`` would cover this few end levels, or fewer (binomial, one tail); 1 with
    fewer than 3 scored. The note it gates said "not like the runs the shipped factors come from" whenever
    coverage fell 5 points below the level: 8 of 9 (89%) at 95%, which bands of exactly 95% give 37% of the time,
    and 2 of 3 (14%). ``level``: what the bands hold -- a calibration of few run-cuts gives less than asked
    (review du: 2 of 4 was "p = 0.014" against 95% for bands labelled 85.7%)."""
    from scipy.stats import binom

    n = summary.n_scored
    if n < 3:
        return 1.0
    covered = int(round(summary.end_coverage * n))
    return float(binom.cdf(covered, n, level))


def _check_any_backtested(results, skipped, what: str, where: str) -> None:
    """--all-runs where every run was skipped: the table (or JSON) lists why, and the command fails
    as it does without --all-runs -- an empty table with exit 0 read as a forecaster that passed."""
    if not results:
        raise InputError(f"no run could be backtested: all {len(skipped)} {what} were skipped, each for the reason "
                         f"{where}; do what those say (more evaluations, a later --cut-fraction, another --x / --y)")


def _summary_lines(s, what: str, *, skipped: int | None, label: str) -> str:
    """The summary of a set of backtests, as two lines of text; ``label``: the level the bands hold."""
    pct = label
    return (f"{s.n_runs} {what} backtested; not scored: {s.n_unstable} unstable at the cut (no forecast given), "
            f"{s.n_unstable_later} unstable over the whole run only (fell after it, or too few evaluations before it "
            "to test)"
            + (f"; {skipped} skipped" if skipped is not None else "") + f". Over the {s.n_scored} scored:\n"
            f"  MAE <= 0.015 in {_pct(s.mae_ok)} (median {s.median_mae:.4f}); |end-level error| <= 0.02 in "
            f"{_pct(s.end_ok)}; end level inside the {pct} confidence band in {_pct(s.end_coverage)} "
            + (f"({s.n_covered_wider_than_run} of them in a band over twice as wide as the run's whole range of "
               "values: covered without saying anything) " if s.n_covered_wider_than_run else "")
            + f"(median half-width {s.median_end_half_width:.3f}); {_pct(s.point_coverage)} of held-out evaluations "
            f"inside the {pct} prediction band; forecast MAE no worse than the better of plain sigmoid and power law "
            f"(that better one picked with hindsight) in {_pct(s.no_worse_strict)} strictly, {_pct(s.no_worse_noise)} "
            f"within the held-out noise (sigma/sqrt(n)), {_pct(s.no_worse)} within {s.tolerance:g}")


def _status(bt) -> str:
    if bt.unstable:
        return "UNSTABLE at the cut"
    if not bt.scored:
        return f"{bt.unscored} (not scored)"
    return "ok"


def _scores(s):
    return None if s is None else {"mae": s.mae, "end_error": s.end_error, "last_error": s.last_error}


def _pct(v: float) -> str:
    return "-" if math.isnan(v) else f"{100 * v:.0f}%"
