"""``scalerl train``: train a Hugging Face causal LM with a recipe; writes a run directory.

    scalerl train --model tiny --recipe scalerl --steps 200 --output runs/mine
    scalerl train --model ./my-model --task math --data train.jsonl --set lr=1e-6 --output runs/math
    scalerl train --output runs/mine --resume          # continue after a kill
    scalerl train --model ./my-model --nproc 4 ...      # the policy update sharded over 4 GPUs (FSDP)
    torchrun --nnodes 2 --nproc-per-node 8 ... -m scalerl.cli train ...   # across machines

    scalerl train --model tiny --steps 400 --output runs/mine --resume   # the same command + --resume: extends it
    scalerl train --model tiny --set lr=2e-4 --output runs/mine --overwrite   # start a crashed run over

``--resume`` accepts the run's own flags (repeat the original command and add it): only a value
that differs from the saved ``config.yaml`` is refused, by name; ``--steps`` may extend the run,
``--threads`` and ``--no-progress`` may change.
"""

from __future__ import annotations

import shlex
import sys
from pathlib import Path

from scalerl.commands._train_args import (add_config_args, config_from_args, devices_kept_on_resume, overwrite_run_dir,
                                          resume_changes, saved_config_to_resume)


def add_arguments(p) -> None:
    add_config_args(p)
    p.add_argument("--output", metavar="DIR", help="run directory (default: runs/run)")
    p.add_argument("--resume", action="store_true",
                   help="continue the run in --output from its latest checkpoint (the original flags may be repeated)")
    p.add_argument("--overwrite", action="store_true",
                   help="delete --output first if it holds a scalerl run (e.g. a crashed one); refuses any other directory")
    p.add_argument("--print-config", action="store_true", help="print the resolved config as YAML and exit")
    p.add_argument("--no-report", action="store_true",
                   help="skip the report at the end (plots and fits, a few seconds); `scalerl report DIR` writes it later")


def run(args) -> int:
    try:
        return _run(args)
    except KeyboardInterrupt as exc:
        from scalerl.errors import RunInterrupted

        if isinstance(exc, RunInterrupted):  # the run said where it stopped
            raise
        raise RunInterrupted(_follower_stopped(exc) or _stopped_before_training(args), cause=exc) from None


def _follower_stopped(exc: KeyboardInterrupt) -> str | None:
    """Under torchrun, a rank > 0's line for a stop (None elsewhere): why, tagged with the rank, and no
    advice. Every rank gets the stop (torchrun passes its SIGTERM on to each, Ctrl-C reaches them all),
    and the ranks > 0, which only follow rank 0's orders, each printed "interrupted before training went
    on; resume with ..." beside rank 0's own "interrupted at step N, last checkpoint at step C; ...":
    only rank 0 knows where the run stopped and what to run next."""
    from scalerl.train.torchrun_env import env_rank

    found = env_rank()
    if found is None or found[0] == 0:
        return None
    rank, world, _ = found
    return (f"trainer rank {rank} of {world}: {str(exc) or 'interrupted (Ctrl-C)'}; rank 0 says where the run stopped "
            "and what to run next")


def _stopped_before_training(args) -> str:
    """What to do after a stop that came before the run could say where it stopped: in the imports,
    the set-up (the model's load, W&B's start), the launch of ``--nproc`` ranks. It said
    "terminated (SIGTERM)" alone, and the user had to guess between the same command and
    ``--resume``. The directory tells: a new run stopped there has had its files removed
    (preflight.discard_unstarted_run), so its config is left only where a run can be resumed."""
    from scalerl.train.config import RunConfig
    from scalerl.train.run_directory import CONFIG

    # The resolved config's (--set run.output=...), else --output's, else the default's.
    output = Path(getattr(args, "resolved_output", None) or args.output or RunConfig.output)
    if (output / CONFIG).exists():
        return (f"interrupted before training went on; resume with: scalerl train --output {shlex.quote(str(output))} "
                "--resume")
    return (f"interrupted before the run started (nothing kept in {output}); run the same command again "
            "to start it")


def _run(args) -> int:
    from scalerl.config import dump_yaml

    from scalerl.errors import InputError

    if args.resume and args.overwrite:
        raise InputError("--resume continues the run in --output, --overwrite deletes it: choose one")
    if args.resume:
        return _resume(args)
    cfg = config_from_args(args, output=args.output)
    args.resolved_output = cfg.run.output  # (for a stop's message: _stopped_before_training)
    if args.print_config:
        print(dump_yaml(cfg))
        return 0
    if args.overwrite:
        overwrite_run_dir(Path(cfg.run.output))
    return _start(cfg, resume=False, report=not args.no_report)


def _start(cfg, *, resume: bool, report: bool = True) -> int:
    """One process, ``run.nproc`` spawned here, or this rank of a torchrun-launched group."""
    from scalerl.train.torchrun_env import env_rank

    found = env_rank()
    if found is not None:  # under torchrun: every rank runs this command; rank 0 reports
        from scalerl.train.launch import run_rank

        if found[0] == 0:
            from scalerl.train.run_directory import check_output

            check_output(Path(cfg.run.output), resume)
        summary = run_rank(cfg, resume=resume, hold_directory=True)  # (rank 0's: held through its report)
        return _finish(summary, report) if summary is not None else 0
    if cfg.run.nproc > 1:
        from scalerl.train.launch import launch
        from scalerl.train.run_directory import check_output

        check_output(Path(cfg.run.output), resume)  # here, before any process starts
        return _finish(launch(cfg, resume=resume), report)
    from scalerl.train.trainer import Trainer

    return _finish(Trainer(cfg, resume=resume).run(hold_directory=True), report)


def _resume(args) -> int:
    from scalerl.errors import InputError
    from scalerl.train.run_directory import resumed_config

    if not args.output:
        raise InputError("--resume needs --output DIR: the run directory to continue")
    output = Path(args.output)
    saved = saved_config_to_resume(output, args)
    cfg = resumed_config(output, **resume_changes(args, saved))  # (what the command changes that a resume may)
    if args.print_config:  # (what the resume runs with: it printed the saved steps beside --steps 9)
        from scalerl.config import dump_yaml

        print(dump_yaml(cfg))
        return 0
    with devices_kept_on_resume(output):
        return _start(cfg, resume=True, report=not args.no_report)



def _finish(summary, report: bool = True) -> int:
    """Print the run's summary and write its report, the run directory still held (``summary.held``): let
    go before it, an ``--overwrite`` or ``--resume`` started in between deleted or rewrote the directory
    the report was being written into. Let go however this ends."""
    try:
        return _report(summary, report)
    finally:
        summary.release_directory()


def _report(summary, report: bool) -> int:
    try:
        # (The import inside: scipy and matplotlib load for a second or more, and a stop then, after a
        # complete run, said "interrupted before training went on; resume with ...".)
        from scalerl.train.report import reward_failure_lines, summary_lines, write_run_report

        print(f"run directory: {summary.output}")
        if not report:
            for k, v in reward_failure_lines(summary.evals):
                print(f"  {k}: {v}")
            print(f"report: not written (--no-report; `scalerl report {summary.output}` writes it)  "
                  f"final model: {summary.output / 'final'}")
        else:
            written = write_run_report(summary.output)
            for k, v in summary_lines(written):
                print(f"  {k}: {v}")
            print(f"report: {summary.output / 'report.html'}  final model: {summary.output / 'final'}")
    except KeyboardInterrupt as exc:  # Ctrl-C or SIGTERM: it said "interrupted" alone, on a finished run
        from scalerl.errors import RunInterrupted

        raise RunInterrupted(f"interrupted while the report was written; the run is complete (step {summary.steps}, "
                             f"{summary.output / 'final'} saved): `scalerl report {summary.output}` writes its "
                             "report", cause=exc) from None
    _check_trained(summary)
    return 0


def _check_trained(summary) -> None:
    """A run whose every step was skipped did not train: its final model is the starting one.
    Every step non-finite (a run shorter than run.max_nan_steps, which stopped nowhere) is refused
    as the max_nan_steps stop is; skipped for want of a learning signal (every group's rewards alike:
    a weak model on hard problems), a note says so -- exit status 0 alone said it trained."""
    from scalerl.train.trainer import TrainingError

    if not summary.steps or summary.skipped_steps < summary.steps:
        return
    final, log = summary.output / "final", summary.output / "runlog.jsonl"
    every = "the one step was" if summary.steps == 1 else f"all {summary.steps} steps were"
    if summary.nan_streak >= summary.steps:
        raise TrainingError(f"{every} skipped for a non-finite loss or gradient (skip_reason "
                            f"in {log}), so {final} is the starting model, untrained; check the reward function's "
                            "values, then lower recipe.optimizer.lr, and start again")
    print(f"note: {every} skipped (skip_reason in {log} says why: e.g. every group's rewards "
          f"alike, no learning signal), so {final} is the starting model, untrained", file=sys.stderr)
