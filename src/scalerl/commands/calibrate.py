"""``scalerl calibrate``: the bands' factors from your own runs, written to a file that ``fit``,
``backtest`` and ``compare`` take with ``--calibration``.

    scalerl calibrate runs/*.csv --x step --y val/acc --output my-calibration.json
    scalerl fit next-run.csv --x step --y val/acc --calibration my-calibration.json

Each run is backtested at 30%, 50% and 70% of its compute; the forecast's errors there, in
units of its own scale, give the conformal factors (:mod:`scalerl.curves.calibrate`). Printed:
how the shipped bands did on your runs, the new factors, and how the new factors do on a run
they were not calibrated on (leave one run out) -- the figure to trust.
"""

from __future__ import annotations

import json
import shlex
import sys
from collections import Counter
from pathlib import Path

import numpy as np

from scalerl.commands._curve_args import (add_data_args, distinct_cuts, parse_fit_from,
                                          parse_r0, progress_bar, read_logs, table, writable_file)
from scalerl.commands._run_names import named_apart
from scalerl.errors import InputError
from scalerl.runlog import finite_json

#: Fewer run-cuts than this and the 95% factor is the largest score seen (the conformal
#: quantile's finite-sample correction asks for more than all of them): with n scores, the largest
#: is exceeded by a new one with probability 1 / (n + 1).
_FULL_95 = 19


#: No prefix matching of options: this command has no --run, and `--run NAME` was taken for --run-column.
ALLOW_ABBREV = False


def add_arguments(p) -> None:
    add_data_args(p, many=True)
    p.add_argument("--output", metavar="FILE", default="scalerl-calibration.json",
                   help="where to write the calibration (default: scalerl-calibration.json)")
    p.add_argument("--cuts", type=float, nargs="+", action="extend", metavar="F",
                   help="where each run is cut, as shares of its compute (default: 0.3 0.5 0.7)")
    p.add_argument("--fit-from", default="auto", metavar="X",
                   help="as for fit: 'auto' (default), 'none' or a compute value -- use what you will forecast with")
    p.add_argument("--r0", default="first", metavar="first|free|VALUE", help="as for fit (default: first)")
    p.add_argument("--keep-excursions", action="store_true",
                   help="as for fit: every evaluation in the fits (by default one-evaluation dips or spikes far "
                        "beyond the noise are left out) -- calibrate as you will forecast")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


#: Where each run is cut by default (shares of its compute), as the shipped calibration is.
DEFAULT_CUTS = (0.3, 0.5, 0.7)


def run(args) -> int:
    """Read the runs, backtest each at each cut, write the factors, and say how they do."""
    from scalerl.curves.bands import write_calibration

    if args.cuts is None:  # (the default here, not argparse's: --cuts given twice adds to what it holds)
        args.cuts = list(DEFAULT_CUTS)
    _check_cuts(args.cuts)
    read, unread = _read(args)
    out = _output_file(args.output, [path for path, _ in read] + list(args.paths))
    read, repeats = _distinct(read)
    curves = [c for _, c in read]
    read_notes = _read_notes(read)
    for note in [*_repeat_notes(repeats), *read_notes]:
        print(f"note: {note}", file=sys.stderr if args.json else sys.stdout)
    result = _calibrate(curves, args)
    write_calibration(result.calibration, out)
    by_log = _leave_one_log_out(read, result)
    if args.json:  # (with every note the text gives: review bw)
        few = [line.removeprefix("note: ") for line in _few_cuts_note(len(result.scored))]
        for note in few:
            print(f"note: {note}", file=sys.stderr)
        print(_json(out, curves, result, by_log, [*_repeat_notes(repeats), *read_notes, *few], unread))
        return 0
    for line in _text(args, out, read, result, by_log, unread):
        print(line)
    return 0


def _check_cuts(cuts: list[float]) -> None:
    """:class:`InputError` for a cut outside (0, 1) or given twice."""
    if any(not 0 < f < 1 for f in cuts):
        raise InputError(f"--cuts must be shares of the compute in (0, 1), got {cuts}")
    distinct_cuts("--cuts", cuts)


def _read(args) -> tuple[list, list[tuple[str, str]]]:
    """``(path, curve)`` of every run of every log given, and ``(path, reason)`` of each log of several that could
    not be read (skipped with its reason, as ``backtest`` skips it; it failed the whole command)."""
    paths, per_log, unread = read_logs(args)
    return [(path, c) for path, log in zip(paths, per_log) for c in log], unread


def _output_file(output: str, logs: list) -> Path:
    """``--output`` as a path, refused where it is a directory, cannot be written, or is one of the ``logs``
    read (the log was replaced by the calibration without a word: review du)."""
    out = Path(output)
    if out.is_dir():
        raise InputError(f"--output {out} is a directory; give a file name (e.g. {out / 'calibration.json'})")
    if out.exists() and any(Path(str(log)).exists() and out.samefile(str(log)) for log in logs):
        raise InputError(f"--output {out} is one of the logs read; give another file name "
                         "(e.g. --output calibration.json)")
    writable_file(out, "--output")  # before the calibration, not a traceback after it
    return out


def _repeat_notes(repeats) -> list[str]:
    """One note per repeated run, with how often it was given (three copies printed "given twice" twice)."""
    notes = []
    for (name, first), n in Counter(repeats).items():
        what = f"{name} is given {_times(n + 1)}" if name == first else f"{name} is the same curve as {first}"
        notes.append(f"{what}: counted once (a run scored against a copy of itself would pass the "
                     "leave-one-run-out check for nothing)")
    return notes


def _calibrate(curves, args):
    """Each run backtested at each cut, scored, and the factors made from the scores (with a progress bar)."""
    import math

    from scalerl.curves.calibrate import calibrate

    bounded = not args.unbounded
    bar = progress_bar(len(curves), args.no_progress or args.json, "backtesting runs", "run")
    try:
        return calibrate(curves, cuts=tuple(args.cuts), progress=bar and (lambda _name: bar.update(1)),
                         r0=parse_r0(args.r0, bounded=bounded), fit_from=parse_fit_from(args.fit_from),
                         A_max=1.0 if bounded else math.inf, y_floor=0.0 if bounded else -math.inf,
                         excursions=not args.keep_excursions)
    finally:
        if bar is not None:
            bar.close()


def _leave_one_log_out(read, result) -> dict:
    """Each log given apart (a source, a framework) scored with the factors from the others: what
    the factors are worth on runs unlike those they were made on. Logs of one run each (a directory
    of them) would repeat the leave-one-run-out check a line per run: then not given ({})."""
    from scalerl.curves.calibrate import training

    group_of = {training(c): path for path, c in read}
    scored_runs = {c.run for c in result.scores}
    several = any(len(_trainings(read, path) & scored_runs) > 1 for path in dict.fromkeys(group_of.values()))
    return result.check_groups(group_of) if several else {}


def _unstable(result) -> list[str]:
    """The runs not scored: unstable at a cut or over the whole run."""
    return sorted({bt.run for bt in result.backtests if not bt.scored})


def _json(out: Path, curves, result, by_log: dict, notes: list[str], unread=()) -> str:
    from scalerl.curves.calibrate import MIN_CUTS, training

    new, loro = result.calibration, result.check_new()
    return json.dumps(finite_json({
        "output": str(out), "runs": len({training(c) for c in curves}), "runs_scored": result.runs_scored,
        "run_cuts": len(result.scored),
        "notes": notes,
        "not_scored": _unstable(result), "skipped": [{"run": r, "reason": why} for r, why in [*unread, *result.skipped]],
        "factors_95": {k: {"shipped": result.base.q(0.95, k), "yours": new.q(0.95, k)}
                       for k in ("confidence", "prediction", "gain")},
        "shipped_on_your_runs": vars(result.check_base()), "yours_leave_one_run_out": vars(loro) if loro else None,
        "yours_leave_one_log_out": {path: vars(chk) if not isinstance(chk, int) else
                                    {"not_checked": f"the other logs hold {chk} run-cut(s), fewer than {MIN_CUTS}"}
                                    for path, chk in by_log.items()},
        "calibration": new.as_dict()}), allow_nan=False)


def _text(args, out: Path, read, result, by_log: dict, unread=()) -> list[str]:
    """The printed report: what was scored, the factors, how the shipped and the new ones did, how to use them."""
    return [*_scored_lines(args, result, unread), _factors_table(result), *_check_lines(read, result, by_log),
            *_few_cuts_note(len(result.scored)), _usage_line(args, out)]


def _scored_lines(args, result, unread=()) -> list[str]:
    lines = [f"calibrated on {result.runs_scored} run(s), {len(result.scored)} run-cuts (each run cut at "
             f"{', '.join(f'{int(round(100 * f))}%' for f in args.cuts)} of its compute)"]
    unstable = _unstable(result)
    if unstable:
        lines.append(f"not scored (unstable at a cut or over the whole run: they peak and fall): {', '.join(unstable)}")
    lines += [f"skipped {run_name}: {why}" for run_name, why in [*unread, *result.skipped]]
    return lines


def _factors_table(result) -> str:
    new = result.calibration
    rows = [[kind, f"{result.base.q(0.95, kind):.3f}", f"{new.q(0.95, kind):.3f}"]
            for kind in ("confidence", "prediction", "gain")]
    return table(rows, ["95% factor", "shipped", "yours"])


def _check_lines(read, result, by_log: dict) -> list[str]:
    """How the shipped factors did on these runs, and the new ones on runs (and logs) they were not made on."""
    from scalerl.curves.calibrate import MIN_CUTS

    base, loro = result.check_base(), result.check_new()
    lines = [f"the shipped bands on your runs: end level in the 95% confidence band in {_pct(base.end_coverage)} of "
             f"run-cuts (median half-width {base.end_half_width:.3f}); {_pct(base.point_coverage)} of held-out "
             "evaluations in the 95% prediction band"]
    if loro is not None:
        lines.append(f"yours on a run they were not calibrated on (leave one run out): end level covered in "
                     f"{_pct(loro.end_coverage)} (median half-width {loro.end_half_width:.3f}); "
                     f"{_pct(loro.point_coverage)} of held-out evaluations in the prediction band")
    else:
        lines.append("with fewer than 3 runs the new factors cannot be checked on a run they have not seen")
    if by_log:
        lines.append("yours, made without a log's runs, on that log's (leave one log out: as on runs of another source):")
        lines.append(table([[path, str(len({c.run for c in result.scores if c.run in _trainings(read, path)})),
                             *([_pct(chk.end_coverage), f"{chk.end_half_width:.3f}", _pct(chk.point_coverage)]
                               if not isinstance(chk, int) else
                               [f"not checked: the other logs hold {chk} run-cut(s), fewer than {MIN_CUTS}", "-", "-"])]
                            for path, chk in by_log.items()],
                           ["log", "runs", "end level covered", "median half-width", "evaluations in the prediction band"]))
    return lines


def _few_cuts_note(n: int) -> list[str]:
    """With fewer than :data:`_FULL_95` run-cuts, what the "95%" factor really is."""
    if n >= _FULL_95:
        return []
    return [f"note: with {n} run-cuts the 95% factor is the largest error seen, which a new run exceeds about "
            f"1 time in {n + 1} (a {100 * n / (n + 1):.1f}% band, not 95%; run-cuts of one run are not independent "
            f"either): calibrate on more runs before trusting it -- {_FULL_95} run-cuts at least"]


def _usage_line(args, out: Path) -> str:
    """How to use the file. One column named where every log used it; else the placeholder, with the
    columns these logs used."""
    xs, ys = list(dict.fromkeys(args.x)), list(dict.fromkeys(args.y))
    cols = [f"{flag} as here: {', '.join(v)}" for flag, v in (("--x", xs), ("--y", ys)) if len(v) > 1]
    # Quoted as a shell needs them: a glob (--y 'r*') pasted unquoted is expanded against the directory.
    return (f"wrote {out}; use it with: scalerl fit LOG --x {shlex.quote(xs[0]) if len(xs) == 1 else 'X'} "
            f"--y {shlex.quote(ys[0]) if len(ys) == 1 else 'Y'} --calibration {shlex.quote(str(out))} "
            "(backtest and compare take it too)"
            + (f" -- the log's own columns ({'; '.join(cols)})" if cols else ""))


def _read_notes(read) -> list[str]:
    """What the readers said of the logs -- resumes joined, lines cut off or dropped, rows without a finite x or
    y -- once per log, and whether the runs' compute columns differ: calibrate printed none of it, so runs
    read in part, or against steps for some and GPU-hours for others, calibrated without a word."""
    notes: list[str] = []
    x_names = list(dict.fromkeys(c.x_name for _, c in read))
    if len(x_names) > 1:
        notes.append(f"the runs' compute columns differ ({', '.join(map(repr, x_names))}): each run is cut at shares "
                     "of its own compute, and the factors are used with a forecast on any of them -- calibrate on "
                     "runs read with the x you will forecast with")
    columns = Counter(path for path, c in read if c.column_run)
    for path, n in columns.items():  # (how a glob's columns are counted cannot be told from the table: said)
        notes.append(f"{path}: the --y glob's {n} columns, in a table without a run column, are {n} runs (a column "
                     "per run), each held out on its own in the check; if they are one run's evaluation sets, give "
                     "the table a run column (a run's sets are held out together)")
    for path, c in read:
        notes += [f"{path}: {n}" for n in c.notes]
        if c.dropped:
            notes.append(f"{path}: {c.name}: {c.dropped} row(s) with a missing, NaN or infinite {c.x_name!r} or "
                         f"{c.y_name!r} left out")
    return list(dict.fromkeys(notes))


def _trainings(read, path) -> set[str]:
    """The runs read from ``path`` (a --y glob's curves of one run counted as that run)."""
    from scalerl.curves.calibrate import training

    return {training(c) for p, c in read if p == path}


#: How close two curves' values may be and still be one run read twice, as a share of the metric's range over
#: both: a CSV that rounds to 5 decimals and the JSON-lines log it was written from (review du: only bit-identical
#: copies were counted once). Two runs differ by far more somewhere -- in the metric's own units (review dv: two
#: seeds of a pass rate of 0.1-0.35% differed by less than an absolute 0.001 everywhere, and were merged).
SAME_RUN_TOLERANCE = 1e-3


def _same_run(a, b) -> bool:
    """Whether curves ``a`` and ``b`` are one run: the same compute values, and metric values within
    :data:`SAME_RUN_TOLERANCE` of the range they span at each -- or within the rounding of the less precise
    one's written values (a pass rate of 0.3-0.75% written to 5 decimals: review dy)."""
    if a.x.size != b.x.size or not np.allclose(a.x, b.x, rtol=1e-6, atol=0):
        return False
    both = np.concatenate([a.y, b.y])
    tolerance = max(SAME_RUN_TOLERANCE * float(np.ptp(both)), max(_written_step(a.y), _written_step(b.y)) / 2)
    return bool(np.all(np.abs(a.y - b.y) <= tolerance * (1 + 1e-9)))


def _written_step(y: np.ndarray) -> float:
    """The step of the decimal grid ``y`` was written on (1e-5 for values written to 5 decimals), at most 1e-4 --
    values on a coarser grid are a pass rate over a few problems (k / 20), exact as written, and two such runs
    differ by a whole step where they differ; 0 where it is finer than 1e-10 (full precision)."""
    for d in range(4, 11):
        scaled = y * 10.0**d
        if np.all(np.abs(scaled - np.round(scaled)) <= 1e-6):
            return 10.0**-d
    return 0.0


def _distinct(read):
    """The (path, curve) pairs with repeats dropped (the same file given twice, or the same run in two
    formats: :func:`_same_run`), and (name, first name) of each repeat; runs of one name in several logs
    (with other values) named apart by their log, as backtest names them
    (:func:`~scalerl.commands._run_names.named_apart`)."""
    kept, repeats = [], []
    for path, c in read:
        first = next((k for _, k in kept if _same_run(c, k)), None)
        if first is not None:
            repeats.append((c.name, first.name))
            continue
        kept.append((path, c))
    return list(zip([path for path, _ in kept], named_apart(kept))), repeats


def _times(n: int) -> str:
    return "twice" if n == 2 else f"{n} times"


def _pct(v: float) -> str:
    return f"{100 * v:.0f}%"
