"""``scalerl train``: train a Hugging Face causal LM with a recipe; writes a run directory.

    scalerl train --model tiny --recipe scalerl --steps 200 --output runs/mine
    scalerl train --model ./my-model --task math --data train.jsonl --set lr=1e-6 --output runs/math
    scalerl train --output runs/mine --resume          # continue after a kill
"""

from __future__ import annotations

from scalerl.commands._train_args import add_config_args, config_from_args


def add_arguments(p) -> None:
    add_config_args(p)
    p.add_argument("--output", metavar="DIR", help="run directory (default: runs/run)")
    p.add_argument("--resume", action="store_true", help="continue the run in --output from its latest checkpoint")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")


def run(args) -> int:
    from scalerl.config import dump_yaml

    if args.resume:
        return _resume(args)
    cfg = config_from_args(args, output=args.output)
    if args.print_config:
        print(dump_yaml(cfg))
        return 0
    from scalerl.train.trainer import Trainer

    return _finish(Trainer(cfg).run())


def _resume(args) -> int:
    from scalerl.errors import InputError
    from scalerl.train.trainer import Trainer

    if not args.output:
        raise InputError("--resume needs --output DIR: the run directory to continue")
    changed = [flag for flag, value in (("--config", args.config), ("--recipe", args.recipe), ("--model", args.model),
               ("--task", args.task), ("--data", args.data), ("--set", args.overrides), ("--seed", args.seed),
               ("--eval-every", args.eval_every), ("--backend", args.backend), ("--profile", args.profile))
               if value not in (None, [])]
    if changed:
        raise InputError(f"--resume continues the run as it was configured; drop {', '.join(changed)} "
                         "(only --steps may change, to extend it)")
    trainer = Trainer.resumed(args.output, steps=args.steps, progress=False if args.no_progress else None)
    return _finish(trainer.run())


def _finish(summary) -> int:
    from scalerl.train.report import summary_lines, write_run_report

    report = write_run_report(summary.output)
    print(f"run directory: {summary.output}")
    for k, v in summary_lines(report):
        print(f"  {k}: {v}")
    print(f"report: {summary.output / 'report.html'}  final model: {summary.output / 'final'}")
    return 0
