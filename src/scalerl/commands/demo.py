"""``scalerl demo``: a tiny model learns the ``arithmetic-mix`` workload on a CPU under the ScaleRL
recipe, with the live forecast, then a report: the sigmoid fitted on the first half of the
compute and the later evaluations it predicted. The workload has a ceiling below 1 by
construction (the thinking budget cannot hold every scratchpad), so the fit has an A to find.

    scalerl demo --output runs/demo
"""

from __future__ import annotations

import shlex
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING

from scalerl.commands._train_args import (add_config_args, config_from_args, devices_kept_on_resume, overwrite_run_dir,
                                          resume_changes, saved_config_to_resume)
from scalerl.errors import InputError

if TYPE_CHECKING:
    from scalerl.train.config import TrainConfig

#: The demo run: the scalerl preset on the tiny-m model and the arithmetic-mix task (profile
#: cpu-tiny-mix: 16 prompts x 8 generations, lr 1e-4, thinking budget [26, 34] -> a ceiling of
#: 0.614 by construction; evaluation 500 problems x mean@2 of the stratified val set, chosen by
#: benchmarks/eval_noise.py), every 20 steps: 16 points, 8 in the half-budget fit (docs/workload.md).
#: Defaults, not flags: a --config file's own model, task, steps or eval.every are kept.
DEMO_DEFAULTS = {"model.name_or_path": "tiny-m", "task.name": "arithmetic-mix", "run.steps": 300, "eval.every": 20}


def add_arguments(p) -> None:
    add_config_args(p, defaults=DEMO_DEFAULTS)
    p.add_argument("--output", default="runs/demo", metavar="DIR", help="run directory (default: runs/demo)")
    p.add_argument("--resume", action="store_true", help="continue an interrupted demo in --output")
    p.add_argument("--overwrite", action="store_true", help="delete --output first if it holds an earlier demo")


def _refuse_processes(nproc: int, cfg: TrainConfig) -> None:
    """The demo trains in one process: more is ``scalerl train``'s, said with the command that runs them."""
    if nproc > 1:
        raise InputError(f"the demo trains in one process; --nproc {nproc} is for scalerl train (the demo's run with "
                         f"{nproc} trainer processes: scalerl train --model {cfg.model.name_or_path} --task "
                         f"{cfg.task.name} --steps {cfg.run.steps} --eval-every {cfg.eval.every} --nproc {nproc} "
                         "--output DIR)")


def run(args) -> int:
    from scalerl.train.report import summary_lines, write_run_report
    from scalerl.train.trainer import Trainer

    out = Path(args.output)
    if args.resume and args.overwrite:  # as scalerl train: resuming what --overwrite deletes means nothing
        raise InputError("--resume continues the demo in --output, --overwrite deletes it: choose one")
    if args.resume:
        # As `scalerl train --resume`: the saved config is the truth; --steps may extend the demo,
        # --threads and --no-progress change how it runs; any other flag that differs is refused by
        # name (they were ignored, unsaid: `demo --resume --set lr=1e-3` went on with the saved lr).
        saved = saved_config_to_resume(out, args, what="demo")
        changes = resume_changes(args, saved)  # (a --set run.steps=9 was dropped unsaid: review cz)
        # (review db: a --nproc 2 here was dropped unsaid, as a new demo refuses it)
        _refuse_processes(changes.pop("nproc", 1), saved)
        with devices_kept_on_resume(out):
            trainer = Trainer.resumed(out, **changes)
        cfg = trainer.cfg
    else:
        cfg = config_from_args(args, output=str(out), defaults=DEMO_DEFAULTS)
        # A --set run.output wins over --output: the directory the demo goes to is the one --overwrite empties and
        # the lines below name (review cx: it trained there, emptied --output's -- an earlier demo -- and named it).
        out = Path(cfg.run.output)
        # (it trained in one process, saved nproc N, and its own `train --resume` was refused)
        _refuse_processes(cfg.run.nproc, cfg)
        if args.overwrite:
            overwrite_run_dir(out)
        trainer = Trainer(cfg)
    print(f"scalerl demo: {cfg.recipe_name} recipe ({cfg.recipe.off_policy.pipeline}, k={cfg.recipe.off_policy.k}, "
          f"{cfg.recipe.loss.name} loss), model {cfg.model.name_or_path}, task {cfg.task.name}, {cfg.run.steps} steps, evaluation every {cfg.eval.every}; "
          f"output {out}", file=sys.stderr)
    t0 = time.perf_counter()
    summary = trainer.run(hold_directory=True)
    try:  # the directory held until the report is written (commands/train.py's _finish says why)
        report = write_run_report(summary.output)
    finally:
        summary.release_directory()
    print(f"\nscalerl demo finished in {time.perf_counter() - t0:.0f} s")
    for k, v in summary_lines(report):
        print(f"  {k}: {v}")
    print(f"\nreport: {out / 'report.html'} (also report.md, curve.png)")
    print(f"final model: {out / 'final'}  (AutoModelForCausalLM.from_pretrained loads it)")
    print(f"forecast it yourself: scalerl fit {shlex.quote(str(out / 'runlog.jsonl'))} --x {report.x} --y {report.y}")
    return 0
