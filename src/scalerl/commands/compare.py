"""``scalerl compare``: several runs (and seeds) -> A, B, C_mid with intervals, and for each
run against a baseline: did it move the ceiling, the efficiency, or nothing clear?

    scalerl compare base.jsonl loss_dapo.jsonl --x gpu_hours --y val/pass_rate --labels scalerl dapo
    # seeds: give the same label to several paths
    scalerl compare a1.jsonl a2.jsonl b1.jsonl b2.jsonl --x gpu_hours --y val/pass_rate --labels a a b b
    # logs of two trainers: one metric name per log
    scalerl compare nemo.log openrlhf.log --x step --y validation/accuracy eval_math_pass1
"""

from __future__ import annotations

import json
import os
from collections import OrderedDict
from pathlib import PurePath

from scalerl.commands._curve_args import (add_data_args, add_fit_args, axes_per_path, calibration_line,
                                          fit_kwargs, g, plot_path, read_kwargs, table)
from scalerl.errors import InputError
from scalerl.runlog import finite_json


#: No prefix matching of options: this command has no --run, and `--run NAME` was taken for --run-column.
ALLOW_ABBREV = False


def add_arguments(p) -> None:
    add_data_args(p, many=True)
    p.add_argument("--labels", nargs="+", action="extend", metavar="LABEL",
                   help="one label per PATH; paths with the same label are seeds of one run "
                        "(default: each run's own name)")
    p.add_argument("--baseline", metavar="LABEL", help="the run the others are compared with (default: the first)")
    p.add_argument("--rule", choices=["intervals", "paper"], default="intervals",
                   help="classification rule: bootstrap intervals (default) or the paper's +-margin rule")
    p.add_argument("--margin", type=float, default=0.02,
                   help="the ceiling change that matters: paper rule, |dA| at or above it is a ceiling change; intervals "
                        "rule, an efficiency verdict whose dA interval at 2 x level - 1 (90%% by default) reaches past "
                        "+-margin says that the ceiling is not pinned")
    p.add_argument("--min-effect", type=float, default=0.0, help="intervals rule: smallest |dA| called a ceiling change")
    p.add_argument("--at", type=float, metavar="C", dest="forecast_at",
                   help="compute at which every run is forecast, with its bands (default: 2x the largest last compute)")
    add_fit_args(p)
    p.set_defaults(bootstrap=300)
    p.add_argument("--plot", metavar="FILE", help="write all runs on one figure (.png or .svg)")


def _group(args, notes: list) -> "OrderedDict[str, list]":
    from scalerl.curves import read_curves

    if args.labels and len(args.labels) != len(args.paths):
        raise InputError(f"--labels has {len(args.labels)} names for {len(args.paths)} paths; give one per path")
    groups: "OrderedDict[str, list]" = OrderedDict()
    kwargs = read_kwargs(args)
    axes = axes_per_path(args)
    _refuse_repeats(args.paths, axes, args.labels)
    read = [(path, read_curves(path, x, y, **kwargs)) for path, (x, y) in zip(args.paths, axes)]
    if not args.labels:
        return _group_by_name(read, notes)
    for label, (_, curves) in zip(args.labels, read):
        for c in curves:
            # a file with several runs: keep them apart under the path's label
            groups.setdefault(label if len(curves) == 1 else f"{label}/{c.name}", []).append(c)
    return groups


def _refuse_repeats(paths: list, axes: list, labels: list | None) -> None:
    """A log given twice where its runs would be pooled with themselves as seeds -- without --labels, or twice
    under one label with the same --x/--y: each run counted as two seeds of zero spread narrowed every interval,
    silently. The same log under two labels (a run compared with itself, or one metric with another) is kept."""
    seen: dict = {}
    for i, (path, xy) in enumerate(zip(paths, axes)):
        key = (os.path.realpath(path),) if not labels else (os.path.realpath(path), xy, labels[i])
        if key in seen:
            j = seen[key]
            under = f"with the same --x/--y under the label {labels[i]!r}" if labels else "without --labels"
            raise InputError(f"{path} is given twice (paths {j + 1} and {i + 1}) {under}: its runs would be pooled "
                             "with themselves as seeds, narrowing the intervals -- give each log once"
                             + ("" if labels else ", or --labels to compare its runs (or metrics) apart"))
        seen[key] = i


def _group_by_name(read: list, notes: list) -> "OrderedDict[str, list]":
    """Each run under its own name. Runs of one name read from different places (``grpo/metrics.csv`` and
    ``ppo/metrics.csv``) are different runs until ``--labels`` says they are seeds: pooling them silently
    compared a merge of two trainings, so they are kept apart under a name that tells their paths apart."""
    by_name: "OrderedDict[str, list]" = OrderedDict()
    for path, curves in read:
        for c in curves:
            by_name.setdefault(c.name, []).append((c.source or str(path), c))
    groups: "OrderedDict[str, list]" = OrderedDict()
    for name, found in by_name.items():
        if len({source for source, _ in found}) == 1:
            groups[name] = [c for _, c in found]
            continue
        labels = _distinct_labels(name, [source for source, _ in found])
        for label, (_, c) in zip(labels, found):
            groups.setdefault(label, []).append(c)
        notes.append(f"{len(found)} runs share the name {name!r}: compared apart as "
                     f"{', '.join(dict.fromkeys(labels))}; to pool them as seeds of one run give them one label with --labels")
    return groups


def _distinct_labels(name: str, sources: list) -> list:
    """The shortest trailing parts of each source path that tell them apart (``grpo/metrics``), with the
    run's name after a colon where the path does not end in it; the whole path if nothing shorter does."""
    parts = []
    for source in sources:
        p = list(PurePath(source).parts) or [source]
        if p[-1].split(".")[0] == name:  # metrics.csv.gz -> metrics
            p[-1] = name
        parts.append(p)
    for k in range(1, max(map(len, parts)) + 1):
        labels = ["/".join(p[-k:]) + ("" if p[-1] == name else f":{name}") for p in parts]
        if len(set(labels)) == len(set(map(tuple, parts))):
            return labels
    return [f"{source}:{name}" for source in sources]


def run(args) -> int:
    from scalerl.curves import compare
    from scalerl.curves.compare import one_seed_caveat
    from scalerl.curves.compute_kind import mixed_compute

    if args.plot is not None:  # ('' too: an unset shell variable wrote no figure, in silence -- review FY)
        plot_path(args.plot)
    for option, value in (("--margin", args.margin), ("--min-effect", args.min_effect)):
        _non_negative(option, value)
    notes: list = []
    groups = _group(args, notes)
    x_names = list(dict.fromkeys(c.x_name for curves in groups.values() for c in curves))
    # Runs against different kinds of compute: C_mid and compute ratios are then in different units: said, not
    # refused (one run's seeds, pooled into one fit, are refused: scalerl.curves.compare). Columns of one kind
    # under different names (cum_wall_hours, hours) are one unit, and say nothing.
    if mixed_compute(x_names):
        notes.append(f"the runs' compute columns differ ({', '.join(map(repr, x_names))}): C_mid and the compute "
                     "ratios compare numbers in different units")
    if len(groups) < 2:
        seen = ", ".join(f"{label!r} ({len(curves)} curve(s))" for label, curves in groups.items())
        raise InputError(f"compare needs at least two runs (labels), and the paths give one: {seen}; paths with the "
                         "same label are seeds of one run -- give --labels to name them apart")
    kw = fit_kwargs(args)
    result = compare(
        groups, baseline=args.baseline, rule=args.rule, margin=args.margin, min_effect=args.min_effect,
        n_boot=args.bootstrap, level=args.level, seed=args.seed, fit_until=args.fit_until,
        forecast_at=_positive(args.forecast_at), **kw,
    )
    notes += result.notes
    caveat = one_seed_caveat(result)
    if caveat:
        notes.append(caveat)
    if args.plot:
        from scalerl.curves.plot import plot_compare

        plot_compare(result, args.plot)
    if args.json:
        out = {**_as_json(result, args, kw.get("calibration")), "notes": notes}
        if args.plot:  # (as fit's JSON says where its figure went)
            out["plot"] = args.plot
        print(json.dumps(finite_json(out), allow_nan=False, default=str))
        return 0
    rows = []
    preds = result.predictions()
    from scalerl.curves.bands import default_calibration

    # The level the bands hold: "85.7%" from a calibration of few run-cuts, where the column said 95% (review ct).
    pct = (kw.get("calibration") or default_calibration()).level_text(args.level)
    for rf in result.runs:
        f = rf.fit
        iv = lambda n: f"[{g(rf.interval(n)[0], 3)}, {g(rf.interval(n)[1], 3)}]"
        p = preds.get(rf.label)
        at = f"{p.R:.3f} [{p.lo:.3f}, {p.hi:.3f}]" + ("" if p.calibrated else " *") if p else "no forecast"
        rows.append([rf.label + (" (baseline)" if rf.label == result.baseline else ""), str(len(rf.curves)),
                     f"{f.A:.3f}", iv("A"), f"{f.B:.2f}", iv("B"), g(f.C_mid), iv("C_mid"), at,
                     "UNSTABLE" if rf.stability.unstable else "not tested" if rf.stability.untested else "ok"])
    print(table(rows, ["run", "seeds", "A", "A interval", "B", "B interval", "C_mid", "C_mid interval",
                       f"forecast at {g(result.forecast_at)} [{pct} band]", "stability"]))
    if any(p is not None and not p.calibrated for p in preds.values()):
        print("* beyond the calibrated horizon of the bands: stretched, not calibrated")
    if args.calibration:
        print(calibration_line(args.calibration, kw["calibration"], args.level))
    for rf in result.runs:
        if rf.stability.unstable:
            print(f"warning: {rf.label}: {rf.stability.text()}")
        elif rf.stability.untested:
            print(f"note: {rf.label}: {rf.stability.text()}")
        for name, st in rf.unstable_seeds:
            print(f"warning: {rf.label}: seed {name} on its own is unstable: {st.text()} (its run, the seeds pooled, "
                  "shows no fall)")
        for w in rf.fit.warnings:  # (review bw: "ceiling raised: A 1.000" without fit's "A is at its upper bound")
            print(f"warning: {rf.label}: {w}")
    print()
    crow = [[c.label, c.kind, {True: "better", False: "worse", None: "-"}[c.better], f"{c.dA:+.3f}"] for c in result.classifications]
    print(f"against the baseline {result.baseline!r} (rule: {result.rule}):")
    print(table(crow, ["run", "class", "direction", "dA"]))
    print()
    for c in result.classifications:
        print(f"{c.label}: {c.explanation}")
    for note in notes:
        print(f"note: {note}")
    if args.plot:
        print(f"plot: {args.plot}")
    return 0


def _non_negative(option: str, v: float) -> None:
    # NaN compares false with everything: |dA| >= nan never held, so a raised ceiling read "same ceiling".
    if not (0 <= v < float("inf")):
        raise InputError(f"{option} must be a finite number >= 0 (a change in the ceiling A), got {v:g}")


def _positive(v):
    if v is not None and not (v > 0 and v < float("inf")):
        raise InputError(f"--at must be a positive compute value, got {v}")
    return v


def _as_json(result, args, calibration) -> dict:
    from scalerl.curves.bands import default_calibration

    runs = []
    preds = result.predictions()
    for rf in result.runs:
        f = rf.fit
        p = preds.get(rf.label)
        runs.append({
            "stability": rf.stability.as_dict(),
            "unstable_seeds": [{"seed": name, **st.as_dict()} for name, st in rf.unstable_seeds],
            "forecast": p.as_dict() if p else None,
            "label": rf.label,
            "seeds": len(rf.curves),
            "A": f.A, "B": f.B, "C_mid": f.C_mid, "R0": f.R0, "sse": f.sse, "n_points": f.n_points,
            "intervals": {n: list(rf.interval(n)) for n in ("A", "B", "C_mid")},
            "seed_spread": rf.seeds.spread() if len(rf.curves) > 1 else None,
            "warnings": rf.fit.warnings,
        })
    return {
        "baseline": result.baseline,
        "rule": result.rule,
        "forecast_at": result.forecast_at,
        # The level the forecasts' bands hold beside the one asked, as fit's JSON and the text say it (review bw).
        "calibration": (calibration or default_calibration()).as_json(args.calibration, args.level),
        "runs": runs,
        "classifications": [c.as_dict() for c in result.classifications],
    }
