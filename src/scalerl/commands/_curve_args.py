"""Arguments shared by the forecast commands (fit, backtest, compare)."""

from __future__ import annotations

import argparse
import math
import sys
from pathlib import Path

from scalerl.curves.bands import read_calibration
from scalerl.curves.uncertainty import N_BOOT
from scalerl.curves.forecast import check_settings
from scalerl.curves.io import READERS
from scalerl.curves.solver import PaperGrid
from scalerl.errors import InputError
from scalerl.runlog import RUNLOG, config_setting, read_header


def add_data_args(p: argparse.ArgumentParser, *, many: bool = False) -> None:
    if many:
        p.add_argument("paths", nargs="+", metavar="PATH",
                       help="run logs (a scalerl run dir or JSONL, CSV, JSON, W&B CSV export or wandb run dir, TensorBoard "
                            "dir, verl, SkyRL, NeMo-RL, ROLL or AReaL console log, trainer_state.json, MLflow store or server URL, Trackio or "
                            "SwanLab store, ClearML offline session, dumped evaluations (verl, SkyRL, NeMo-RL), lm-eval or lighteval results of checkpoints; compressed or a tar or zip archive of one)")
    else:
        p.add_argument("path", metavar="PATH", help="run log (a scalerl run dir or its JSONL, CSV, W&B CSV export, "
                                                    "a wandb dir or run-*.wandb file, TensorBoard dir or event file, "
                                                    "verl console log, HF/TRL trainer_state.json or its run dir, "
                                                    "MLflow mlruns.db, mlruns directory or http(s) server URL, "
                                                    "Trackio or SwanLab store, ClearML offline session, SkyRL, NeMo-RL, ROLL or AReaL console, "
                                                    "verl's, SkyRL's or NeMo-RL's dumped evaluations directory, lm-eval or lighteval results of "
                                                    "checkpoints, a console log of printed "
                                                    "metric dicts, a JSON document; compressed or a tar archive of "
                                                    "one; - for standard input)")
    # Several logs: one column for all, or one per log (trainers name the same metric differently:
    # NeMo-RL's validation/accuracy is OpenRLHF's eval_<set>_pass1).
    per_path = dict(nargs="+", action="extend", metavar="COL") if many else dict(metavar="COL")
    each = "; one for every PATH, or one per PATH in order" if many else ""
    p.add_argument("--x", **per_path,
                   help="compute column (e.g. gpu_hours, flops, step); cum:COL is its running total (cum:timing_s/step); "
                        f"without --x / --y a scalerl run's own (forecast.x, its first set's pass rate), another log's "
                        f"columns are listed{each}")
    p.add_argument("--y", **per_path,
                   help=f"metric column (a pass rate in [0, 1]); a glob (val-core/*/acc/mean@1) reads every matching metric{each}")
    if not many:
        p.add_argument("--run", metavar="NAME", help="which run, when the file holds several")
    p.add_argument("--run-column", metavar="COL",
                   help="CSV / JSONL / Parquet: the column naming each row's run (default: run)")
    p.add_argument("--format", choices=list(READERS), help="log format (default: from the path)")
    p.add_argument("--y-scale", type=float, default=1.0, metavar="S", help="multiply y by S (0.01 for percentages)")
    p.add_argument("--unbounded", action="store_true", help="y is not a pass rate: no [0, 1] check, A not capped at 1")


def add_fit_args(p: argparse.ArgumentParser, *, fit_until: bool = True) -> None:
    p.add_argument("--fit-from", default="auto", metavar="X",
                   help="fit points with compute >= X; 'auto' (default) leaves out an opening plateau when "
                        "forward validation says so; 'none' keeps every point")
    if fit_until:
        p.add_argument("--fit-until", type=float, metavar="X", help="fit points with compute <= X (the rest are held out)")
    p.add_argument("--keep-excursions", action="store_true",
                   help="fit every evaluation; by default a one-evaluation dip or spike far beyond the curve's noise "
                        "(a policy evaluated mid-oscillation) is left out of the fit, and a note says so")
    p.add_argument("--r0", default="first", metavar="first|free|VALUE",
                   help="pass rate before RL: the first evaluation (default), fitted, or a number")
    p.add_argument("--method", default="fast", choices=["fast", "paper"], help="fitting method (default: fast)")
    p.add_argument("--paper-a", nargs=2, type=float, metavar=("LO", "HI"), help="paper method: A grid bounds (0.45 0.8)")
    p.add_argument("--paper-cmid", nargs=2, type=float, metavar=("LO", "HI"),
                   help="paper method: C_mid grid bounds, in the x column's units (100 40000 GPU-hours)")
    p.add_argument("--bootstrap", type=int, default=N_BOOT, metavar="N", help="bootstrap resamples for intervals (0: none)")
    p.add_argument("--level", type=float, default=0.95, help="interval level (default 0.95)")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed")
    p.add_argument("--json", action="store_true", help="print one JSON object instead of tables")
    p.add_argument("--calibration", metavar="FILE",
                   help="the bands' factors from a file `scalerl calibrate` wrote from your own runs "
                        "(default: the shipped ones, calibrated on 41 real runs of three sources)")


def calibration_line(path, calibration, level: float) -> str:
    """The line that says which factors the bands have: the file and its provenance (how many runs and
    run-cuts, against which compute column) -- a file made on two runs, or on steps, says so where used;
    and, at a ``level`` its run-cuts cannot give, what the band is worth (a 2-run file's "99%" band was
    its 80% one, labelled 99%)."""
    line = f"bands: the factors of {path} ({calibration.provenance or 'no provenance'})"
    note = calibration.level_note(level)
    return line + (f"; note: {note}" if note else "")


def parse_fit_from(value):
    if value is None or str(value).lower() == "none":
        return None
    if str(value).lower() == "auto":
        return "auto"
    try:
        v = float(value)
    except ValueError:
        raise InputError(f"--fit-from must be a number, 'auto' or 'none', got {value!r}") from None
    if not math.isfinite(v):
        raise InputError(f"--fit-from must be finite, got {value!r}")
    return v


def parse_r0(value, *, bounded: bool = True):
    """``first``, ``free`` or a number: for a pass rate (``bounded``) one in [0, 1] -- a negative R0
    was fitted (A then pinned at its bound of 1), and one above 1 blamed on the y column."""
    if value in ("first", "free"):
        return value
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise InputError(f"--r0 must be 'first', 'free' or a number, got {value!r}") from None
    if not math.isfinite(v):
        raise InputError(f"--r0 must be finite, got {value!r}")
    if bounded and not 0 <= v <= 1:
        raise InputError(f"--r0 {value} is not a pass rate in [0, 1]; give a fraction (0.2, not 20), "
                         "or pass --unbounded for a metric that is not a pass rate")
    return v


def writable_file(path, option: str) -> Path:
    """``path``, checked before any work that ends in writing it: a directory, a read-only place or a
    parent that cannot be made got a traceback after the fit (or a whole calibration) was done."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{option} {path} is a directory; give a file name in it")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with open(path, "ab"):  # appending nothing: opens it as the write will, changing nothing
            pass
        if not existed:
            path.unlink()
    except OSError as exc:
        raise InputError(f"cannot write {option} {path}: {exc.strerror or exc}; give a path in a directory "
                         "you can write to") from None
    return path


def plot_path(value) -> Path:
    """``--plot FILE`` checked before the fit: a format the plots write, in a place that can be written."""
    from scalerl.curves.plot import check_plot_path

    if not str(value).strip():
        raise InputError("--plot needs a file name, e.g. --plot fit.png (.png or .svg); got an empty one")
    return writable_file(check_plot_path(value), "--plot")


def distinct_cuts(option: str, cuts) -> None:
    """Each cut once: a repeated one was scored again as another run-cut, so three copies of one cut
    passed calibrate's minimum number of run-cuts, and its errors counted thrice."""
    repeated = sorted({f for f in cuts or () if list(cuts).count(f) > 1})
    if repeated:
        raise InputError(f"{option} {repeated[0]:g} is given {list(cuts).count(repeated[0])} times; give each cut once")


def fit_kwargs(args) -> dict:
    grid = None
    if args.paper_a or args.paper_cmid:
        d = PaperGrid()
        a = args.paper_a or (d.A_lo, d.A_hi)
        c = args.paper_cmid or (d.C_mid_lo, d.C_mid_hi)
        if not (a[0] < a[1] and 0 < c[0] < c[1]):
            raise InputError("paper grid bounds must satisfy LO < HI (and C_mid LO > 0)")
        grid = PaperGrid(A_lo=a[0], A_hi=a[1], C_mid_lo=c[0], C_mid_hi=c[1])
    if args.method == "paper" and args.r0 == "free":
        raise InputError("the paper method keeps R0 fixed; use --r0 first or a value, or --method fast")
    bounded = not args.unbounded
    calibration = (read_calibration(args.calibration, level=args.level) if getattr(args, "calibration", None)
                   else None)
    # Refused here, once: a backtest of several runs listed each as skipped for it, and exited 0.
    check_settings(n_boot=args.bootstrap, level=args.level, seed=args.seed, calibration=calibration)
    return dict(
        calibration=calibration,
        method=args.method,
        r0=parse_r0(args.r0, bounded=bounded),
        fit_from=parse_fit_from(args.fit_from),
        A_max=1.0 if bounded else math.inf,
        y_floor=0.0 if bounded else -math.inf,
        paper_grid=grid,
        excursions=not getattr(args, "keep_excursions", False),
    )


def axes_per_path(args) -> list[tuple[str, str]]:
    """``(x, y)`` for each of ``args.paths``: ``--x`` / ``--y`` name one column for every log, or one per log."""
    n = len(args.paths)
    for flag, names in (("--x", args.x), ("--y", args.y)):
        if len(names) not in (1, n):
            raise InputError(f"{flag} has {len(names)} columns for {n} paths; give one for every path, or one per path")
    return [(args.x[i if len(args.x) > 1 else 0], args.y[i if len(args.y) > 1 else 0]) for i in range(n)]


def read_logs(args, **extra) -> tuple[list[str], list[list], list[tuple[str, str]]]:
    """``(paths read, their curves, (path, reason) of each that could not be)`` for every log of ``args.paths``
    (``extra``: more keywords for ``read_curves``, e.g. ``run``). One log of several that cannot be read (in
    percent, say) is skipped with its reason, as a run that cannot be forecast is, not fatal to the others;
    with one log, or none readable, its error is the command's. ``backtest`` and ``calibrate`` read so."""
    from scalerl.curves import read_curves

    kwargs = {**read_kwargs(args), **extra}
    paths, per_log, unread, errors = [], [], [], []
    for path, (x, y) in zip(args.paths, axes_per_path(args)):
        try:
            per_log.append(read_curves(path, x, y, **kwargs))
            paths.append(path)
        except InputError as exc:
            if len(args.paths) == 1:
                raise
            errors.append(exc)
            unread.append((path, str(exc)))
    if not per_log:
        raise errors[0]
    return paths, per_log, unread


def read_kwargs(args) -> dict:
    if args.y_scale <= 0 or not math.isfinite(args.y_scale):
        raise InputError(f"--y-scale must be a positive number, got {args.y_scale}")
    kwargs = dict(fmt=args.format, y_scale=args.y_scale, bounded=not args.unbounded, run_column=args.run_column)
    if args.x is None or args.y is None:
        _own_run_axes(args)
    if args.x is None or args.y is None:
        raise _missing_axes(args.path if hasattr(args, "path") else args.paths[0], kwargs)
    return kwargs


def _own_run_axes(args) -> None:
    """--x / --y not given for scalerl's own runs: the run's forecast compute (``forecast.x``, flops by
    default) and its first evaluation set's pass rate, as its report and live forecast read it, said in a note
    (they were refused with a listing of the log's 63 columns) -- for several runs, the first set they all have
    (review bb: one run's hard was compared with another's math). Where any path is another log, or the runs
    share no set, nothing: the listing asks."""
    many = not hasattr(args, "path")
    found = [_run_axes(Path(p)) for p in (args.paths if many else [args.path])]
    if not found or None in found:
        return
    # The shared set the runs list first, on the whole -- the same whatever the order the runs are given in (review
    # bi: the first run's first, and the verdict turned with the order).
    shared = sorted({s for s in found[0][1] if all(s in sets for _, sets in found)},
                    key=lambda s: (sum(sets.index(s) for _, sets in found), s))
    if not shared:
        return
    # Every scalerl run logs every compute column: runs whose forecast.x differ are read on flops, the default and
    # the same whatever the order the runs are given in (review bd: each on its own, tokens against flops, a run
    # was "efficiency worse" by 1e7x; bf: on the first run's, the verdict turned with the order).
    xs = list(dict.fromkeys(x for x, _ in found))
    axes = [(xs[0] if len(xs) == 1 else "flops", f"{shared[0]}/pass_rate") for _ in found]
    chosen = []
    for flag, name, values in (("--x", "x", [a[0] for a in axes]), ("--y", "y", [a[1] for a in axes])):
        if getattr(args, name) is None:
            values = list(dict.fromkeys(values)) if len(set(values)) == 1 else values
            setattr(args, name, values if many else values[0])
            chosen.append(f"{flag} {' '.join(values)}")
    whose = ("these scalerl runs' own, as their reports read it" if len(axes) > 1
             else "the scalerl run's own, as its report reads it")
    if len(xs) > 1 and chosen[0].startswith("--x"):
        whose = f"these scalerl runs' forecast.x differ ({', '.join(xs)}): read on flops, which every scalerl run logs"
    print(f"note: {' '.join(chosen)}: {whose} (give {'/'.join(c.split()[0] for c in chosen)} "
          "to read another column)", file=sys.stderr)


def _run_axes(path: Path) -> tuple[str, list[str]] | None:
    """``(x, evaluation sets)`` of a scalerl run directory or its run log, from the log's header; None for any other
    log."""
    log = path / RUNLOG if path.is_dir() else path
    if log.name != RUNLOG or not log.is_file():
        return None
    header = read_header(log) or {}
    sets = config_setting(header, "eval", "sets")
    if not isinstance(sets, list) or not sets:  # (not a header of ours: the listing says)
        return None
    return str(config_setting(header, "forecast", "x") or "flops"), [str(s) for s in sets]


#: How many columns of a kind the listing shows.
_LISTED = 25


def _missing_axes(path, kwargs: dict) -> InputError:
    """--x or --y not given: the error lists the log's columns, the likely ones for each first."""
    from scalerl.curves.io import log_column_listing
    from scalerl.curves.rows import DEFAULT_RUN_COLUMN, likely_columns

    rows, text = log_column_listing(path, **kwargs)
    cols = list(rows)
    run_column = kwargs.get("run_column") or DEFAULT_RUN_COLUMN
    # The column that tells runs apart is no metric nor compute: said as what it is.
    runs = f"; runs told apart by {run_column!r}" if run_column in cols else ""
    cols = [c for c in cols if c != run_column]

    def listed(names: list[str], shown=repr) -> str:
        more = f" (and {len(names) - _LISTED} more)" if len(names) > _LISTED else ""
        return ", ".join(shown(c) for c in names[:_LISTED]) + more or "(none)"

    compute = likely_columns("x", cols)
    metrics = likely_columns("y", cols, text)  # (text: never a number, no metric -- review fl)
    other = [c for c in cols if c not in metrics and c not in compute]
    # A name cannot tell an evaluation from a value printed per sample or per step (a hand-written
    # trainer's 'answer_reward', 2,000 times): how many rows log each can, where the counts differ.
    counts = [rows[c] for c in metrics if rows[c] is not None]
    counted = len(counts) == len(metrics) and len(set(counts)) > 1
    told = (", with the rows logging each: an evaluation is logged far fewer times than a per-step or "
            "per-sample value") if counted else ""
    return InputError(
        f"give --y (the metric: a pass rate) and --x (the compute); {path} has {len(cols)} columns -- "
        f"metrics (evaluation-like names{told}): {listed(metrics, (lambda c: f'{c!r} ({rows[c]})') if counted else repr)}; "
        f"compute (step, time, token-like names; cum:COL sums a per-step one): {listed(compute)}; "
        f"other: {listed(other)}{runs}{_wide_table_hint(cols)}")


def _wide_table_hint(cols: list[str]) -> str:
    """Where most column names are numbers (a row per run, a column per step: a pivoted export, a paper's
    table), how to turn it into a table scalerl reads -- said as the listing's columns alone did not."""
    def number(c: str) -> float | None:
        try:
            v = float(c)
        except ValueError:
            return None
        return v if math.isfinite(v) else None

    numeric = sorted((c for c in cols if number(c) is not None), key=number)
    labels = [c for c in cols if number(c) is None]
    if len(numeric) < 3 or len(numeric) < len(cols) / 2 or not labels:
        return ""
    shown = ", ".join(numeric[:4]) + (", ..." if len(numeric) > 4 else "")
    return (f"; the column names {shown} are numbers: a row per run and a column per step? scalerl reads a column "
            f"per run or a row per evaluation: transpose it first, e.g. with pandas: "
            f"df.set_index({labels[0]!r}).T.rename_axis('step').reset_index().to_csv('by_step.csv', index=False), "
            "then --x step --y RUN (or --y '*' for every run)")


def table(rows: list[list[str]], header: list[str]) -> str:
    """A plain aligned text table."""
    cols = [header, *rows]
    widths = [max(len(str(r[i])) for r in cols) for i in range(len(header))]
    line = lambda r: "  ".join(str(v).rjust(w) if i else str(v).ljust(w) for i, (v, w) in enumerate(zip(r, widths)))
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])


def g(v: float, digits: int = 4) -> str:
    if v is None:
        return "-"
    if isinstance(v, float) and math.isinf(v):
        return "inf" if v > 0 else "-inf"
    return f"{v:.{digits}g}"


def progress_bar(total: int, off: bool, desc: str, unit: str):
    """A tqdm bar on stderr (gone when done) for work over ``total`` items, or None: off, or one item."""
    if off or total < 2:
        return None
    from tqdm.auto import tqdm

    return tqdm(total=total, desc=desc, unit=unit, leave=False)
