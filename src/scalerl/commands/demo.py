"""``scalerl demo``: the tiny model learns 2-digit addition on a CPU under the ScaleRL recipe,
with the live forecast, then a report: the sigmoid fitted on the first half of the compute
and the later evaluations it predicted. About 2.5 minutes on 2 free cores (up to ~4 on a busy
machine).

    scalerl demo --output runs/demo
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

from scalerl.commands._train_args import add_config_args, config_from_args, overwrite_run_dir

#: The demo run: the scalerl preset on the tiny model (profile cpu-tiny), sized for a few
#: minutes. Evaluations every 10 steps (31 points, 16 in the half-budget fit) rather than 30:
#: with 30 the half-budget fit had 4-5 points for 3 parameters and its forecast of the final
#: pass rate missed by a median 0.13 over 5 seeds; with 10, by 0.08
#: (benchmarks/demo_figures.py), for ~20% more wall time.
DEMO_DEFAULTS = {"steps": 300, "eval_every": 10}


def add_arguments(p) -> None:
    add_config_args(p)
    p.add_argument("--output", default="runs/demo", metavar="DIR", help="run directory (default: runs/demo)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted demo in --output")
    p.add_argument("--overwrite", action="store_true", help="delete --output first if it holds an earlier demo")
    p.set_defaults(steps=DEMO_DEFAULTS["steps"], eval_every=DEMO_DEFAULTS["eval_every"])


def run(args) -> int:
    from scalerl.train.report import summary_lines, write_run_report
    from scalerl.train.trainer import Trainer

    out = Path(args.output)
    if args.overwrite and not args.resume:
        overwrite_run_dir(out)
    if args.resume:
        trainer = Trainer.resumed(out, progress=False if args.no_progress else None)
        cfg = trainer.cfg
    else:
        cfg = config_from_args(args, output=str(out))
        trainer = Trainer(cfg)
    print(f"scalerl demo: {cfg.recipe_name} recipe ({cfg.recipe.off_policy.pipeline}, k={cfg.recipe.off_policy.k}, "
          f"{cfg.recipe.loss.name} loss) on the tiny model, {cfg.run.steps} steps, evaluation every {cfg.eval.every}; "
          f"output {out}", file=sys.stderr)
    t0 = time.perf_counter()
    summary = trainer.run()
    report = write_run_report(summary.output)
    print(f"\nscalerl demo finished in {time.perf_counter() - t0:.0f} s")
    for k, v in summary_lines(report):
        print(f"  {k}: {v}")
    print(f"\nreport: {out / 'report.html'} (also report.md, curve.png)")
    print(f"final model: {out / 'final'}  (AutoModelForCausalLM.from_pretrained loads it)")
    print(f"forecast it yourself: scalerl fit {out / 'runlog.jsonl'} --x {report.x} --y {report.y}")
    return 0
