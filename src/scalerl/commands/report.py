"""``scalerl report DIR``: regenerate a run's report from its run log alone.

    scalerl report runs/demo
"""

from __future__ import annotations


def add_arguments(p) -> None:
    p.add_argument("directory", metavar="DIR", help="a run directory (holds runlog.jsonl)")
    p.add_argument("--x", metavar="COL", help="compute column (default: the run's forecast.x)")


def run(args) -> int:
    from scalerl.train.report import summary_lines, write_run_report

    rep = write_run_report(args.directory, x=args.x)
    for k, v in summary_lines(rep):
        print(f"{k}: {v}")
    print("wrote: " + ", ".join(str(p) for p in rep.files))
    return 0
