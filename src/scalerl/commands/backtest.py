"""``scalerl backtest``: fit on a prefix of a run, score the rest -- sigmoid vs power law.

    scalerl backtest examples/data/real_rl_curves.csv --x cum_wall_hours --y val_score \\
        --run verl_training_log__grpo_run_deepseek7b_llm --cut-fraction 0.5
"""

from __future__ import annotations

import json

from scalerl.commands._curve_args import add_data_args, add_fit_args, fit_kwargs, g, read_kwargs, table


def add_arguments(p) -> None:
    add_data_args(p)
    cut = p.add_mutually_exclusive_group(required=True)
    cut.add_argument("--cut", type=float, metavar="X", help="fit on compute <= X, score the rest")
    cut.add_argument("--cut-fraction", type=float, metavar="F", help="cut at F x the last compute (e.g. 0.5)")
    add_fit_args(p, fit_until=False)
    p.set_defaults(bootstrap=200)
    p.add_argument("--plot", metavar="FILE", help="write the figure (.png or .svg)")


def run(args) -> int:
    from scalerl.curves import backtest, read_curves

    curves = read_curves(args.path, args.x, args.y, run=args.run, **read_kwargs(args))
    if len(curves) > 1 and args.plot:
        from scalerl.errors import InputError

        raise InputError(f"{args.path} holds {len(curves)} runs; choose one with --run to plot")
    results = [
        backtest(c, cut=args.cut, cut_fraction=args.cut_fraction, n_boot=args.bootstrap, level=args.level,
                 seed=args.seed, **fit_kwargs(args))
        for c in curves
    ]
    if args.plot:
        from scalerl.curves.plot import plot_backtest

        plot_backtest(results[0], args.plot)
    if args.json:
        objs = [{"run": c.name, **bt.as_dict()} for c, bt in zip(curves, results)]
        print(json.dumps(objs[0] if len(objs) == 1 else {"runs": objs}))
        return 0
    for c, bt in zip(curves, results):
        print(f"run: {c.name}")
        print(f"cut at {g(bt.cut)} {c.x_name}: {bt.n_fit} points fitted, {bt.n_test} held out"
              + (f" (fit from {g(bt.forecast.fit.fit_from)})" if bt.forecast.fit.fit_from is not None else ""))
        rows = []
        for name, s in (("sigmoid", bt.sigmoid), ("power law", bt.power_law)):
            if s is None:
                continue
            rows.append([name, f"{s.mae:.4f}", f"{s.last_error:+.4f}", f"{s.max_abs_error:.4f}", f"{s.params['A']:.4f}"])
        print(table(rows, ["law", "MAE", "last error", "max |error|", "A"]))
        for w in bt.forecast.fit.warnings:
            print(f"warning: {w}")
        for n in bt.forecast.notes:
            print(f"note: {n}")
        print()
    return 0
