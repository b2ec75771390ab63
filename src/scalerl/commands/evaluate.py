"""``scalerl eval``: mean@k pass rate of a model on a task's evaluation sets.

    scalerl eval --model runs/demo/final --sets val hard --k 8
    scalerl eval --run runs/demo                 # the run's final model, evaluated as the run did

``--run DIR`` takes everything from the run's ``config.yaml`` -- task, evaluation sets, k,
problems, temperature, token budget and the recipe's length control (forced interruptions) --
and, unless ``--seed`` is given, the run's own evaluation seeds: the last evaluation row of a
finished run is reproduced exactly when ``final/`` is stored in fp32 (a bf16 or fp16 ``final/`` --
the starting checkpoint's dtype -- holds the run's fp32 master weights rounded, and a note says
its pass rates can differ), computed as the run computed its evaluations (``precision.compute=bf16``:
under autocast, or a trainer group's cast copy) -- but for what one process cannot repeat, said in a note
(a run that sampled on its ranks' shards, a LoRA run in bf16). Any flag given overrides the run's setting.
``--model RUN/final`` -- a run's final model, named as a model -- is evaluated as ``--run RUN``
(a note says so): with eval's own defaults it was scored on the arithmetic task, the run's math data
unread, and other sets, seeds and length control than the run's.
Without a run the defaults are plain sampling (no interruptions) on the arithmetic task.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shlex
import sys
from pathlib import Path

from scalerl.generate.base import BELOW_MIN_TEMPERATURE, MIN_TEMPERATURE, SamplingParams

#: Defaults when neither a flag nor a run's config says otherwise. The token budget is not
#: here: it is the one ``scalerl train`` would give the model (:func:`train_budget`).
DEFAULTS = {"model": "tiny", "task": "arithmetic", "k": 4, "problems": 200, "temperature": 1.0, "seed": 0}


def train_budget(model: str) -> int:
    """``length.max_new_tokens`` of a training run of ``model`` with default flags: the scale
    profile's (48 for tiny, 256 for another model on a CPU, 4,096 on a small GPU, ...)."""
    from scalerl.train.config import TrainConfig, resolve

    cfg = TrainConfig()
    cfg.model.name_or_path = model
    return resolve(cfg).recipe.length.max_new_tokens


def add_arguments(p) -> None:
    p.add_argument("--run", metavar="DIR", help="a run directory: its final model and its evaluation settings")
    p.add_argument("--model", metavar="PATH|HUB_ID|tiny", help="model to evaluate (default: the run's final model, or tiny)")
    p.add_argument("--task", help="task (default: the run's, or arithmetic)")
    p.add_argument("--data", metavar="FILE", help="math task: the file to evaluate, every row of it (the set val)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="task.settings={KEY: VALUE}",
                   help="task settings, as train takes them (e.g. 'task.settings={prompt_field: question, "
                        "answer_field: solution}'), and the reward function's task.reward_timeout=SECONDS and "
                        "task.reward_load_timeout=SECONDS; repeatable")
    p.add_argument("--reward", metavar="MODULE:FUNCTION", help="your own reward function")
    p.add_argument("--reward-workers", type=int, metavar="N",
                   help="worker processes the reward function runs in, scoring N completions at a time (a slow "
                        "judge; default: the run's task.reward_workers, or 1)")
    p.add_argument("--sets", nargs="+", action="extend", metavar="NAME", help="evaluation sets (default: the run's, or all of the task's)")
    p.add_argument("--k", type=int, help="samples per problem, mean@k (default: the run's, or 4)")
    p.add_argument("--problems", type=int, help="problems per set (default: the run's, or 200; the val of --data FILE: every row)")
    p.add_argument("--temperature", type=float, help="sampling temperature (default: the run's, or 1.0)")
    p.add_argument("--max-new-tokens", type=int,
                   help="token budget (default: the run's, or what scalerl train gives this model: 48 for tiny)")
    p.add_argument("--seed", type=int, help="sampling seed (default: the run's own evaluation seeds, or 0)")
    p.add_argument("--no-progress", action="store_true", help="no progress bar (stderr)")
    p.add_argument("--json", action="store_true",
                   help="print one JSON object: model, task, k, temperature, and per set pass_rate (mean@k), "
                        "pass_rate_se (its standard error over problems; null for one problem), pass_at_k, "
                        "mean_reward, mean_len (tokens), frac_interrupted, frac_truncated, tokens, samples, "
                        "problems, k; with --reward: reward_calls, reward_errors, reward_timeouts")


#: How eval takes each of the reward function's task fields (the registry's refusal names train's --set).
EVAL_REWARD_FLAGS = {"reward": "--reward MODULE:FUNCTION", "reward_workers": "--reward-workers N",
                     "reward_timeout": "--set task.reward_timeout=SECONDS",
                     "reward_load_timeout": "--set task.reward_load_timeout=SECONDS"}
#: The reward function's time limits ``--set`` takes in eval, as train does (a refusal of a slow-loading
#: reward module advises ``--set task.reward_load_timeout=SECONDS``): the fields above given by ``--set``.
EVAL_REWARD_LIMITS = tuple(f"task.{key}" for key, flag in EVAL_REWARD_FLAGS.items() if flag.startswith("--set"))


def _refuse_reward_fields(settings: dict) -> None:
    from scalerl.errors import InputError

    for key, flag in EVAL_REWARD_FLAGS.items():
        if key in settings:
            raise InputError(f"task.settings {key!r} is not a task setting but the reward function's task.{key}: "
                             f"eval takes it as {flag}")


def _task_overrides(overrides: list[str]) -> tuple[dict, dict]:
    """``(task settings, reward time limits)`` that ``--set`` gives: ``task.settings={...}`` (merged in
    order) and :data:`EVAL_REWARD_LIMITS`, parsed and checked as train's ``--set``; any other key is
    refused: the model, sets and sampling have flags of their own here."""
    from scalerl.config import apply_overrides
    from scalerl.errors import InputError
    from scalerl.train.config import TrainConfig

    settings: dict = {}
    limits: dict = {}
    for item in overrides:
        key, sep, _ = item.partition("=")
        key = key.strip()
        if key not in ("task.settings", *EVAL_REWARD_LIMITS) or not sep:
            raise InputError(f"--set {item!r}: eval takes task.settings={{KEY: VALUE, ...}}, "
                             f"{', '.join(k + '=SECONDS' for k in EVAL_REWARD_LIMITS)} only (the model, sets, k and "
                             "sampling have flags: scalerl eval --help)")
        cfg = apply_overrides(TrainConfig(), [item])
        if key == "task.settings":
            _refuse_reward_fields(cfg.task.settings)
            settings.update(cfg.task.settings)
        else:
            cfg.validate()  # the range train checks
            field = key.removeprefix("task.")
            limits[field] = getattr(cfg.task, field)
    return settings, limits


def _run_settings(run_dir: str):
    """(settings from the run's config.yaml, its length controller factory) for ``--run``."""
    from scalerl.config import load_yaml
    from scalerl.errors import InputError
    from scalerl.train.config import TrainConfig
    from scalerl.train.run_directory import STUDY_SPEC
    from scalerl.train.trainer import eval_seed

    cfg_path = Path(run_dir) / "config.yaml"
    if not cfg_path.is_file() and (Path(run_dir) / STUDY_SPEC).is_file():
        runs = sorted(p.parent for p in Path(run_dir).glob("runs/*/*/config.yaml"))
        example = runs[0] if runs else Path(run_dir) / "runs" / "LABEL" / "seed0"
        raise InputError(f"--run {run_dir} is a study directory ({STUDY_SPEC}); give one of its runs, e.g. --run {example}")
    if not cfg_path.is_file():
        raise InputError(f"--run {run_dir}: no config.yaml there; give a run directory written by scalerl train/demo")
    cfg = load_yaml(TrainConfig, cfg_path)
    final = Path(run_dir) / "final"
    settings = {
        "model": str(final) if final.is_dir() else None,
        "task": cfg.task.name, "data": cfg.task.data, "reward": cfg.task.reward, "task_settings": dict(cfg.task.settings),
        "reward_timeout": cfg.task.reward_timeout,  # (a slow judge the run allowed 60 s would time out at 10)
        "reward_workers": cfg.task.reward_workers, "reward_load_timeout": cfg.task.reward_load_timeout,
        "sets": list(cfg.eval.sets), "k": cfg.eval.samples_per_problem, "problems": cfg.eval.problems,
        "temperature": cfg.eval.temperature, "max_new_tokens": cfg.recipe.length.max_new_tokens,
        "length": cfg.recipe.length, "batch_size": cfg.eval.batch_size,
        # The trainer's seed for evaluation set i (Trainer.evaluate), so that --run reproduces it.
        "set_seeds": {name: eval_seed(cfg.run.seed, i) for i, name in enumerate(cfg.eval.sets)},
        # How the run's evaluations computed (_generator_as_the_run).
        "precision": cfg.precision.compute, "fp32_lm_head": cfg.recipe.fp32_lm_head,
        "grouped": cfg.run.nproc > 1 and not cfg.run.generate_on_shards,
        "on_shards": cfg.run.nproc if cfg.run.nproc > 1 and cfg.run.generate_on_shards else 0,
        "lora": cfg.model.lora.rank > 0, "device": _run_device(Path(run_dir)),
    }
    return settings


def _run_device(run_dir: Path) -> str:
    """The device the run trained on, from its run log's header ('' where it cannot be read)."""
    from scalerl.runlog import RUNLOG, read_header

    return str((read_header(run_dir / RUNLOG) or {}).get("device", ""))


def other_sampling_note(base: dict, temperature: float, draws_budgets: bool = False) -> str | None:
    """A note where this command cannot sample as the run's evaluations did, so its pass rates can differ from the
    run's last evaluation row though ``final/`` is fp32 (review bu: both differed without a word): a run on a GPU
    (this command samples on the CPU), on its ranks' shards (greedy too where the length control draws each
    sequence's thinking budget: ``draws_budgets``, each rank from a seed of its own -- review db), or with LoRA in
    bf16."""
    from scalerl.train.precision import Precision

    if base.get("device", "").startswith("cuda"):  # (review bx: auto precision, bf16 there, sampled in fp32 here)
        auto = " (precision.compute=auto: bf16 or fp16 there)" if base.get("precision") == "auto" else ""
        return (f"note: the run evaluated on {base['device']}{auto}; sampled here on the CPU, so these pass rates can "
                "differ from the run's last evaluation row")
    if base.get("on_shards") and (temperature > 0 or draws_budgets):
        drawn = " and thinking budgets" if draws_budgets else ""
        agree = "" if draws_budgets else " (greedy ones, --temperature 0, agree)"
        return (f"note: the run sampled its evaluations on its {base['on_shards']} ranks' shards (run.generate_on_shards), "
                f"each rank its share of the rows with a seed of its own; sampled{drawn} here in one process, so these "
                f"pass rates can differ from the run's last evaluation row{agree}")
    if base.get("lora") and Precision.create(base.get("precision", "fp32"), "cpu").mixed:
        return (f"note: the run computed in {base['precision']} with its LoRA adapters beside the base weights; "
                "sampled here with them merged, so these pass rates can differ from the run's last evaluation row")
    return None


def _generator_as_the_run(model, tokenizer, base: dict, seed: int):
    """A generator that computes as the run's evaluations did, on this command's CPU: in a run of
    ``precision.compute=bf16`` (or fp16), one process sampled its fp32 weights under autocast with the FP32
    LM head, a trainer group a copy cast to that dtype (review bs: sampled in fp32 here, ``eval --run`` drew
    other completions than the run's last evaluation, 0.125 against its 0.375, without a word). Plain fp32
    where the run computed in fp32, or without a run."""
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.lora import generator_copy
    from scalerl.rl.fp32_head import enable_fp32_lm_head
    from scalerl.train.precision import Precision

    precision = Precision.create(base.get("precision", "fp32"), "cpu")
    if not precision.mixed:
        return HFGenerator(model, tokenizer, seed=seed)
    if base.get("fp32_lm_head"):
        enable_fp32_lm_head(model)
    if base.get("grouped"):
        return HFGenerator(generator_copy(model, precision.compute_dtype), tokenizer, seed=seed)
    return HFGenerator(model, tokenizer, seed=seed, autocast_dtype=precision.compute_dtype)


def _run_of_final(model: str | None) -> str | None:
    """The run directory whose ``final/`` ``model`` is (it holds the run's ``config.yaml``), else None."""
    if model is None:
        return None
    path = Path(model)
    if path.name == "final" and path.is_dir() and (path.parent / "config.yaml").is_file():
        return str(path.parent)
    return None


def _no_final(run_dir: str) -> str:
    """The error for ``--run`` of a run without ``final/``: one stopped or still training (its
    checkpoints are training state for ``--resume``, not a model eval reads), or one that reached
    its last step and whose ``final/`` was moved or deleted."""
    from scalerl.config import load_yaml
    from scalerl.errors import InputError
    from scalerl.runlog import RUNLOG, object_lines
    from scalerl.train.checkpoint import latest_checkpoint
    from scalerl.train.config import TrainConfig

    steps = load_yaml(TrainConfig, Path(run_dir) / "config.yaml").run.steps
    try:
        rows, _torn = object_lines(Path(run_dir) / RUNLOG)  # (a torn last line of a killed run is passed over)
    except (OSError, InputError):  # no log, or a damaged one: nothing to tell the two cases apart by
        rows = []
    last = max((r["step"] for _, r in rows if isinstance(r.get("step"), int)), default=0)
    if last >= steps:
        return (f"--run {run_dir}: final/ is missing, though the run logged its last step ({steps}): moved or "
                f"deleted? Pass --model PATH (where it is now)")
    ckpt = latest_checkpoint(Path(run_dir) / "checkpoints")
    if ckpt is None:
        return f"--run {run_dir}: no final/ model yet (the run did not finish); pass --model PATH"
    return (f"--run {run_dir}: no final/ model yet: the run is still training or stopped (it logged step {last} of {steps}); "
            f"its checkpoint {ckpt} is training state for --resume, not a model to evaluate. Let it finish "
            f"(a stopped run: scalerl train --output {shlex.quote(str(run_dir))} --resume), or pass --model PATH")


def earlier_end_note(run_dir: str) -> str | None:
    """A note when the run's ``final/`` is an earlier end's model: the run was extended (``--resume --steps N``)
    and stopped before its new end, so its newest checkpoint is later than final/. ``eval --run`` evaluated
    that final/ without a word of which step it is (final/scalerl_final.json says; a final/ saved before it
    was kept says nothing, and the run's end in config.yaml tells whether the run stopped short of it)."""
    from scalerl.runlog import final_model_step
    from scalerl.train.checkpoint import checkpoint_step, latest_checkpoint
    from scalerl.train.run_directory import CHECKPOINTS, planned_steps

    final_step, planned = final_model_step(run_dir), planned_steps(run_dir)
    ckpt = latest_checkpoint(Path(run_dir) / CHECKPOINTS)
    newest = checkpoint_step(ckpt) if ckpt is not None else None
    of = f" of {planned}" if planned is not None else ""
    go_on = (f"training state for --resume, not a model eval reads; to evaluate the later model, go on with: "
             f"scalerl train --output {run_dir} --resume, then evaluate its new final/")
    if final_step is not None:
        if newest is None or newest <= final_step:
            return None
        return (f"note: {run_dir}: final/ is the model of step {final_step} (final/scalerl_final.json), an earlier end: "
                f"the run was extended since (stopped, or still training) and its newest checkpoint is {ckpt} (step {newest}{of}), "
                f"{go_on}")
    if newest is None or planned is None or newest == planned:
        return None
    # That scalerl kept the first --steps in config.yaml through --resume --steps: a newest checkpoint short
    # of it (or past it) is a run shortened (extended) and finished there, or an extension stopped part-way.
    return (f"note: {run_dir}: final/ does not record its step (saved by an older scalerl), and the run's newest "
            f"checkpoint, {ckpt} (step {newest}), is not config.yaml's end ({planned}), which that scalerl did not update "
            f"on --resume --steps: final/ is the model of step {newest} if the run was shortened or extended to it and "
            f"finished, or the model the run was extended from if an extension stopped part-way; the checkpoint is {go_on}")


def rounded_final_note(final: str) -> str | None:
    """A note when a run's ``final/`` is stored in a narrower dtype than the fp32 master weights
    the run trained and evaluated (``model.dtype``: the starting checkpoint's, e.g. bf16): the
    rounded weights can sample other tokens, so ``--run`` need not repeat the run's last row."""
    from scalerl.models.loading import adapter_base, stored_dtype

    if adapter_base(final) is not None:  # fp32 adapter weights over the unchanged base: nothing was rounded
        return None
    dtype = stored_dtype(final)
    if dtype == "float32":
        return None
    return (f"note: {final} is stored in {dtype} (the run's model.dtype) but the run evaluated its fp32 master weights; "
            "rounded, they can sample other tokens, so these pass rates can differ from the run's last evaluation row "
            "(a run with --set model.dtype=float32 saves final/ unrounded)")


def run(args) -> int:
    from scalerl.models.loading import load_model
    from scalerl.rl.length import budget_problems, length_controller
    from scalerl.tasks.base import reference_notes
    from scalerl.tasks.failure_tally import counting_failures
    from scalerl.train.evaluate import one_decode_is_all

    pick, base, run_dir = _chosen_settings(args)
    # On the CPU this command runs on, in fp32 like the trainer there (precision auto): a bf16 final/
    # is upcast (bf16 matmuls are slower on most CPUs, and the run's own evaluations computed in fp32).
    if run_dir and (args.model is None or not args.run):
        for note in (earlier_end_note(run_dir), rounded_final_note(pick["model"])):
            if note:
                print(note, file=sys.stderr)
    # (a tiny model built here: minutes, with a bar unless --no-progress -- it was shown under it: review da)
    model, tokenizer = load_model(pick["model"], dtype="float32", progress=not args.no_progress)
    task = _eval_task(args, pick, base)
    for note in reference_notes(task):  # (answers the reward cannot read: every completion scores -1 there)
        print(f"warning: {note}", file=sys.stderr)
    problems = _eval_problems(task, pick, args)
    # The run's length control with the budget asked for (review db: --max-new-tokens 20 on a run of 8 checked 20
    # positions and decoded 8, the run's controller ending every row there).
    length_cfg = dataclasses.replace(base["length"], max_new_tokens=pick["max_new_tokens"]) if "length" in base else None
    _check_positions(model, tokenizer, problems, length_cfg, pick["max_new_tokens"])
    length = length_controller(length_cfg, tokenizer) if length_cfg is not None else None
    if run_dir and (args.model is None or not args.run):
        note = other_sampling_note(base, pick["temperature"], length is not None and length.draws_budgets)
        if note:
            print(note, file=sys.stderr)
    if args.max_new_tokens is not None and length_cfg is not None and budget_problems(length_cfg, tokenizer):
        print(f"note: --max-new-tokens {pick['max_new_tokens']} is less than an interrupted sequence needs under the "
              "run's length control (its thinking budget, the interruption phrase and its answer budget): such answers "
              "are cut short", file=sys.stderr)
    if pick["k"] > 1 and one_decode_is_all(SamplingParams(temperature=pick["temperature"]), length):
        print(f"note: temperature 0 is greedy decoding: each problem is decoded once and counted {pick['k']} "
              f"times, so mean@{pick['k']} = pass@{pick['k']} = the greedy pass rate", file=sys.stderr)
    gen = _generator_as_the_run(model, tokenizer, base, pick["seed"])
    with counting_failures() as failures:  # (the task's own checker's too: math-verify's timeouts -- review da)
        results = _evaluate_sets(problems, pick, base, args, gen, tokenizer, task, length)
    # After every set, as train checks its evaluation (review cb: checked after each, one set the function cannot
    # score stopped eval before the next, as "failed on all calls of this evaluation").
    rewards = _reward_counts(task, pick["reward"], failures.as_dict())
    if args.json:
        print(json.dumps({"model": pick["model"], "task": pick["task"], "k": pick["k"],
                          "temperature": pick["temperature"], "sets": results, **rewards}, allow_nan=False))
        return 0
    _print_results(pick, results, rewards, length is not None)
    return 0


def _evaluate_sets(problems: dict, pick: dict, base: dict, args, gen, tokenizer, task, length) -> dict[str, dict]:
    """Each set's metrics (``problems``: set -> its problems), with the run's seed of that set unless --seed is
    given."""
    from scalerl.train.evaluate import eval_bar, evaluate

    set_seeds = base.get("set_seeds", {}) if args.seed is None else {}
    results = {}
    for s in problems:
        seed = set_seeds.get(s, pick["seed"])
        params = SamplingParams(max_new_tokens=pick["max_new_tokens"], temperature=pick["temperature"], seed=seed)
        # A bar per set on stderr, as training's evaluations have (a large --k was minutes without a word).
        with eval_bar(not args.no_progress, s, len(problems[s]) * pick["k"]) as bar:
            results[s] = evaluate(gen, tokenizer, task, problems[s], pick["k"], params, length,
                                  batch_size=base.get("batch_size", 512), progress=bar.update)
    return results


def _chosen_settings(args) -> tuple[dict, dict, str | None]:
    """What to evaluate and how: a flag wins over the run's setting (``--run``, or ``--model RUN/final``),
    which wins over the plain default; each checked. Returns (the settings, the run's, the run directory)."""
    from scalerl.errors import InputError
    from scalerl.tasks.rewards import MAX_WORKERS

    run_dir = args.run or _run_of_final(args.model)
    if run_dir and not args.run:
        print(f"note: {args.model} is the final model of the run {run_dir}: evaluated with the run's settings (task, "
              f"data, sets, k, problems, temperature, token budget, length control, seeds), as --run {run_dir} does; "
              "flags override them", file=sys.stderr)
    base = _run_settings(run_dir) if run_dir else {}
    pick = {key: getattr(args, key) if getattr(args, key) is not None else base.get(key, DEFAULTS.get(key))
            for key in ("model", "task", "data", "reward", "sets", "k", "problems", "temperature", "max_new_tokens", "seed")}
    if args.temperature is None and pick["temperature"] < 0:  # (the run's eval.temperature <= 0 is greedy: review db)
        pick["temperature"] = 0.0
    if pick["task"] != base.get("task"):
        if args.data is None:
            pick["data"] = None  # the run's data file is its task's (--task arithmetic on a math run: "--data is for ...")
        if args.sets is None:  # the run's set names are its task's (review da: another task refused the run's 'hard')
            pick["sets"] = None
    if pick["model"] is None:  # (checked here: --model may stand in for it)
        raise InputError(_no_final(args.run))
    if not 0 <= pick["seed"] < 2**63:  # torch's generator takes 64 bits: a larger one was a traceback
        raise InputError(f"--seed must be in [0, 2**63), got {pick['seed']}")
    if pick["max_new_tokens"] is None:
        pick["max_new_tokens"] = train_budget(pick["model"])
    if pick["max_new_tokens"] < 1 or not (math.isfinite(pick["temperature"]) and pick["temperature"] >= 0):
        # (nan passed `< 0` and sampled as if it were 1; inf sampled uniformly: pass rates of nothing)
        raise InputError(f"--max-new-tokens must be >= 1 and --temperature a finite number >= 0 (0: greedy), got "
                         f"{pick['max_new_tokens']} and {pick['temperature']}")
    if 0 < pick["temperature"] < MIN_TEMPERATURE:  # (a tiny one overflowed logits / T, the NaN blamed on the weights)
        raise InputError(f"--temperature {pick['temperature']:g} is below {MIN_TEMPERATURE:g}, where {BELOW_MIN_TEMPERATURE}: "
                         "use 0 for greedy decoding, or a temperature of at least that")
    if pick["k"] < 1 or pick["problems"] < 1:
        raise InputError("--k and --problems must be >= 1")
    if args.reward_workers is not None and not 1 <= args.reward_workers <= MAX_WORKERS:
        raise InputError(f"--reward-workers must be in [1, {MAX_WORKERS}] (worker processes of the reward function), "
                         f"got {args.reward_workers}")
    return pick, base, run_dir


def _eval_task(args, pick: dict, base: dict):
    """The task to evaluate on: the run's settings where it is the run's task, the flags' on top."""
    from scalerl.tasks.registry import get_task
    from scalerl.train.config import TaskConfig

    task_settings = dict(base.get("task_settings", {})) if pick["task"] == base.get("task") else {}
    settings, limits = _task_overrides(args.overrides)
    task_settings.update(settings)
    if pick["data"]:
        task_settings["data"] = pick["data"]
    if args.data and pick["task"] == "math":  # the file given is the one to evaluate, not a training file's held-out share
        task_settings["evaluate_only"] = True
        _note_other_splits(args.data, task_settings)
    # --set's, else the run's, else train's default.
    timeout = limits.get("reward_timeout", base.get("reward_timeout", TaskConfig.reward_timeout))
    load = limits.get("reward_load_timeout", base.get("reward_load_timeout", TaskConfig.reward_load_timeout))
    workers = args.reward_workers if args.reward_workers is not None else base.get("reward_workers",
                                                                                   TaskConfig.reward_workers)
    return get_task(pick["task"], reward=pick["reward"], reward_timeout=timeout, reward_workers=workers,
                    reward_load_timeout=load, settings=task_settings)


def _note_other_splits(data: str, task_settings: dict) -> None:
    """A dataset directory is read at its ``train`` split unless told otherwise (train's default, the
    hub's first split): evaluating, a user more likely meant its test split -- said where it has one."""
    import sys

    from scalerl.tasks.data_files import local_splits
    from scalerl.tasks.datasets import flow_mapping, settings_flag

    split = str(task_settings.get("split", "train"))
    splits = local_splits(data)
    others = [s for s in splits if s != split]
    # (Where the default split is not there, the reading's own error names the ones that are.)
    if others and split in splits and "split" not in task_settings:
        # (the run's evaluation sets kept at their split, which `split` moves too where eval_split is unset: GB)
        keep = ({"eval_split": split} if task_settings.get("eval_data") and task_settings.get("eval_split") is None
                else {})
        flag = settings_flag(flow_mapping({"split": others[0], **keep}))
        print(f"note: {data} holds the splits {', '.join([split, *others])}; evaluating {split!r} (the default) -- "
              f"{flag} evaluates another", file=sys.stderr)


def _eval_problems(task, pick: dict, args) -> dict[str, list]:
    """The problems of each evaluation set chosen (``pick["sets"]``, default every set), at most
    ``pick["problems"]`` each -- but every row of ``--data FILE`` (val) unless ``--problems`` is given (it
    stopped at the default 200, unsaid); a set holding fewer than ``--problems`` is said."""
    from scalerl.errors import InputError

    asked = args.problems
    whole = ("val",) if args.data and asked is None else ()
    sets = task.eval_sets()
    names = list(dict.fromkeys(pick["sets"] or sets))  # (a set named twice was evaluated twice, shown once)
    unknown = [s for s in names if s not in sets]
    if unknown:
        raise InputError(f"task {pick['task']!r} has no evaluation set {unknown[0]!r}; it has: {', '.join(sets)}")
    if asked is not None:
        for s in names:
            if len(sets[s]) < asked:
                print(f"note: set {s} has {len(sets[s])} problems, fewer than --problems {asked}: "
                      f"all {len(sets[s])} are evaluated", file=sys.stderr)
    return {s: list(sets[s])[: None if s in whole else pick["problems"]] for s in names}


def _print_results(pick: dict, results: dict, rewards: dict, length_control: bool) -> None:
    how = "the run's length control" if length_control else "plain sampling"
    greedy = " (greedy)" if pick["temperature"] == 0 else ""
    print(f"model {pick['model']}, task {pick['task']}, mean@{pick['k']} at temperature {pick['temperature']}{greedy}, "
          f"{how}; ± is the standard error over problems")
    for s, m in results.items():
        se = f" ± {m['pass_rate_se']:.3f}" if m["pass_rate_se"] is not None else ""
        print(f"  {s:<8} pass rate {m['pass_rate']:.3f}{se}  pass@{pick['k']} {m['pass_at_k']:.3f}  "
              f"mean length {m['mean_len']:.1f}  ({int(m['problems'])} problems)")
    if rewards:
        failed = rewards['reward_errors'] + rewards['reward_timeouts']
        # ("(each scored -1)" after "0 errors and 0 timeouts" read as if every call had scored -1.)
        # (-1, or the judge's own lower score for a wrong answer, which may have come later: reviews cf, cg)
        from scalerl.tasks.rewards import SCORED_AS_WRONG

        scored = f" ({SCORED_AS_WRONG})" if failed else ""
        if pick["reward"] is None:  # the task's own checker (math-verify)
            print(f"  the {pick['task']} task's answer check: {rewards['reward_errors']} errors and "
                  f"{rewards['reward_timeouts']} timeouts (each scored -1, as a wrong answer)")
        else:
            print(f"  reward function {pick['reward']}: {rewards['reward_errors']} errors and "
                  f"{rewards['reward_timeouts']} timeouts in {rewards['reward_calls']} calls{scored}")


def _check_positions(model, tokenizer, problems: dict, length, max_new_tokens: int) -> None:
    """Refuse in one line, as ``scalerl train`` does, prompts + budget that exceed the model's
    positions: past them a learned-position model raises deep in generation, and a RoPE model
    runs on into positions it never saw (a pass rate that measures nothing). ``length``: the
    run's length control (``--run``) with this budget, else plain sampling."""
    from scalerl.rl.recipe import LengthConfig
    from scalerl.train.preflight import check_positions

    budget = length if length is not None else LengthConfig(mode="truncate", max_new_tokens=max_new_tokens)
    note = check_positions(model, tokenizer, [p for rows in problems.values() for p in rows], budget,
                           lambda room: f"lower --max-new-tokens to at most {room}")
    if note is not None:
        print(f"warning: {note}", file=sys.stderr)


def _reward_counts(task, spec: str | None, failures: dict[str, int]) -> dict[str, int]:
    """A user reward function's failed calls so far, for the report; without ``--reward``, the task's own
    checker's failed calls (``failures``: math-verify's timeouts) where there were any, else nothing.

    Stops, as ``scalerl train`` does, when every call failed: a broken reward function (a missing
    import, a wrong return type, a hung judge) would otherwise read as a model that scores 0."""
    from scalerl.tasks.rewards import check_reward_works

    if spec is None:  # (not a function the user gave: said only where its checker failed, each scored -1)
        return ({"reward_errors": failures.get("errors", 0), "reward_timeouts": failures.get("timeouts", 0)}
                if any(failures.values()) else {})
    stats = task.reward_stats()
    check_reward_works(spec, stats, "of this evaluation")
    return {"reward_calls": stats["calls"], "reward_errors": stats["errors"], "reward_timeouts": stats["timeouts"]}
