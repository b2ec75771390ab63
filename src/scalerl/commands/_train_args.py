"""Turning ``scalerl train`` / ``demo`` flags into a resolved :class:`TrainConfig`."""

from __future__ import annotations

import argparse
import sys

from scalerl.config import load_yaml
from scalerl.train.config import TrainConfig, resolve, with_recipe
from scalerl.train.profiles import SUMMARY, choose_profile


def add_config_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--config", metavar="FILE", help="a training config YAML (e.g. a run's config.yaml)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="override any config field: a dotted path (recipe.loss.name=dapo) or a unique leaf "
                        "(pipeline=pipeline-rl-k, k=4, lr=1e-4); repeatable")
    p.add_argument("--recipe", metavar="NAME", help="recipe preset or leave-one-out variant (scalerl recipes lists them)")
    p.add_argument("--model", metavar="PATH|HUB_ID|tiny", help="model to train: tiny (default), tiny-s/tiny-m/tiny-l "
                   "(the arithmetic-mix ladder), a model directory or a hub id")
    p.add_argument("--task", metavar="NAME", help="task: arithmetic, arithmetic-mix (built in) or math (needs --data)")
    p.add_argument("--data", metavar="FILE", help="math task: JSONL / parquet / HF dataset dir of {prompt, answer} rows")
    p.add_argument("--reward", metavar="MODULE:FUNCTION", help="your own reward function fn(problem, completion) -> float")
    p.add_argument("--steps", type=int, help="optimizer steps")
    p.add_argument("--eval-every", type=int, metavar="N", help="evaluate every N steps")
    p.add_argument("--seed", type=int, help="random seed")
    p.add_argument("--backend", choices=["local", "ray"], help="where generators and trainer run (default: local)")
    p.add_argument("--profile", metavar="NAME",
                   help="scale profile: auto (default: by model size and device), " + ", ".join(SUMMARY))
    p.add_argument("--threads", type=int, metavar="N", help="torch CPU threads (default: torch's choice)")
    p.add_argument("--nproc", type=int, metavar="N",
                   help="trainer processes: shard the policy update over N GPUs (or CPU processes) with FSDP (default: 1)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")


def config_from_args(args, *, output: str | None = None) -> TrainConfig:
    cfg = load_yaml(TrainConfig, args.config) if args.config else TrainConfig()
    if args.recipe:
        cfg = with_recipe(cfg, args.recipe)
    flags = {
        "model.name_or_path": args.model,
        "task.name": args.task,
        "task.data": args.data,
        "task.reward": args.reward,
        "run.steps": args.steps,
        "eval.every": args.eval_every,
        "run.seed": args.seed,
        "backend.name": args.backend,
        "profile": args.profile,
        "run.threads": args.threads,
        "run.nproc": args.nproc,
        "run.output": output,
    }
    if args.no_progress:
        flags["log.progress"] = False
    for path, value in flags.items():
        if value is not None:
            section, _, leaf = path.rpartition(".")
            setattr(getattr(cfg, section) if section else cfg, leaf, value)
    # profile auto: chosen here by model size and device, and said so for a user model.
    cfg.profile, note = choose_profile(cfg)
    if note:
        print(f"note: {note}", file=sys.stderr)
    return resolve(cfg, args.overrides)
