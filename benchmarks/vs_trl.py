"""scalerl's trainer against TRL's ``GRPOTrainer``, side by side, on the identical tiny CPU setup.

    .venv/bin/python benchmarks/vs_trl.py                      # 40 steps x 3 sides x 2 repeats: ~5 min (2 cores)
    .venv/bin/python benchmarks/vs_trl.py --repeats 5 --sides trl ours-grpo ours-scalerl ours-scalerl-sync
    .venv/bin/python benchmarks/vs_trl.py --steps 200 --repeats 3 --json runs/vs_trl.json
    .venv/bin/python benchmarks/vs_trl.py --steps 20 --repeats 3 --sides trl ours-grpo --concurrent

``--concurrent`` runs a repeat's sides at the same time, each pinned to a core of its own (one
torch thread each): on a machine whose speed drifts by minutes (a shared host: one side's repeat
ran 20% slower than the next with the machine otherwise idle), the sides of a pair then see the
same machine, where one after the other they do not. Each side has the other as its neighbour
(shared caches and memory bandwidth), the same for both.

Sides (each repeat runs every side once, in a rotated order, each in a fresh subprocess):

``trl``                TRL ``GRPOTrainer`` (``loss_type="dapo"``, ``scale_rewards="group"``, beta 0).
``ours-grpo``          scalerl's ``Trainer`` set to the *same algorithm*: DAPO clipped surrogate
                       (0.2 / 0.28), token aggregation, group-std advantages, no zero-variance filter,
                       plain epochs, plain truncation, no FP32-head swap, synchronous (k = 1).
``ours-scalerl``       scalerl's ``Trainer`` with the ``scalerl`` preset (CISPO, prompt aggregation,
                       batch-std advantages, forced interruptions, zero-variance filter,
                       no-positive-resampling, FP32 head, PipelineRL-8).
``ours-scalerl-sync``  (not run by default) the same preset, synchronous: separates what the
                       pipeline's overlap does from what the recipe does.

Identical on every side: the model (the cached tiny Qwen2, ~1.08M parameters, warm-started 200
steps, copied afresh for every run so no side sees another's weights), the task (2-digit
addition, the same training pool, the same reward ``ArithmeticTask.reward``: +1 / -1), the batch
(16 prompts x 8 generations = 128 completions per optimizer step, micro-batches of 64: TRL
``per_device_train_batch_size=64``, ``gradient_accumulation_steps=2``, ``generation_batch_size=128``,
``num_generations=8``), at most 48 completion tokens, temperature 1, top-p 1, top-k off, fp32 on the
CPU, the same number of optimizer steps (so the same number of samples), the same seed, and the same
optimizer: TRL is handed the very AdamW + warm-up scheduler scalerl builds
(``scalerl.train.update.build_optimizer``: lr 1e-4, betas 0.9/0.999, eps 1e-8, weight decay 0.01 on
every parameter, linear warm-up over 5 steps), with gradient clipping at 1.0. ``ours-grpo`` and
``trl`` also see the *same prompts in the same order*: TRL's dataset is the sequence scalerl's
prompt sampler draws for that seed (``shuffle_dataset=False``).

What TRL cannot match exactly (and how each was settled):

* TRL has no forced interruption, zero-variance filter, no-positive-resampling, batch-std with a
  filter, prompt-level aggregation or asynchronous generation on one machine, hence ``ours-grpo``
  (the algorithm TRL has) beside ``ours-scalerl`` (ours as shipped).
* Advantages: TRL divides by ``std + 1e-4``; scalerl divides by ``std`` (a std <= 1e-6 leaves the
  advantages unscaled). The same up to ~1e-4 relative.
* Importance ratio: TRL skips the old-log-prob pass when generation and optimisation are aligned and
  uses ``pi_theta / sg(pi_theta)`` (exactly 1); scalerl uses the sampler's recorded fp32 log-probs
  (1 up to float noise). Same gradient on-policy.
* TRL computes per-token entropies in its training forward (a logging metric; it cannot be switched
  off), shuffles the 128 completions before splitting them into micro-batches and runs all of
  them; scalerl leaves out the ones without gradient (zero advantage) and sorts the rest by length.
  Same gradient, less work: that is part of what is measured.
* TRL defaults changed for fairness: ``gradient_checkpointing=False`` (its default ``True`` would
  add a forward pass to every backward), ``bf16=False`` (its default on), no checkpoints, no reports.
* Sampling RNGs differ (each side draws its own completions), so the curves agree in distribution,
  not bit for bit; repeats with different seeds show the spread.

Measured per run: samples (completions) per second = steps x 128 / seconds of ``Trainer.run()`` /
``GRPOTrainer.train()`` -- everything after construction (model load, tokenizer, optimizer and
dataset set-up excluded on both sides; scalerl's run includes its built-in evaluations, shrunk to 1
problem x 1 sample, its two checkpoints and its final save; TRL's save is outside). Twice: per wall
second (what a user waits) and per CPU second of the process (``time.process_time``: the work done,
which other jobs on a shared machine barely disturb, while they can halve the wall-clock rate of
either side from one run to the next). The ratios are ours / TRL within the same repeat. Where the
time goes, per optimizer step, in CPU seconds of the calling thread (wall in brackets):
``generate`` (the sampling call), ``rollout`` (generate + decode + reward + advantages; for
PipelineRL the trainer's *wait* for a batch, since generation runs in a background thread),
``forward`` and ``backward`` of the policy update, and ``rest`` (optimizer step, clipping, logging,
checkpoints). Also the share of sequences scalerl leaves out of the update's passes because they
have no gradient (``scalerl.train.update.policy_update``: zero advantage under a built-in loss, or
filtered); TRL runs every sequence through both.

Pass rate after the same number of samples: each final model is saved, reloaded, and evaluated
the same way (``scalerl.train.evaluate.evaluate``, held-out ``val`` problems, mean@k at
temperature 1 and greedy, 48 tokens, plain truncation, one fixed seed), next to the start model.

Threads: ``--threads 1`` by default. These machines have 2 vCPUs shared with other jobs; with 2
intra-op threads a step stalls whenever the other vCPU is taken (OpenMP threads wait for each
other), and single steps of *either* trainer were measured at 10-50x their median. One thread per
run keeps both sides comparable; ``--threads 2`` is there for a quiet machine. The same sharing
is why PipelineRL (a generator thread beside the trainer) gains little here: two processes doing
nothing but matmuls each ran at half speed, i.e. the machine gave us about one core's throughput.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

SIDES: dict[str, str] = {
    "trl": "TRL GRPOTrainer, loss_type=dapo, sync",
    "ours-grpo": "scalerl Trainer, same algorithm, sync",
    "ours-scalerl": "scalerl Trainer, scalerl preset, PipelineRL-8",
    "ours-scalerl-sync": "scalerl Trainer, scalerl preset, sync",
}
DEFAULT_SIDES = ["trl", "ours-grpo", "ours-scalerl"]

#: scalerl overrides that make its trainer run TRL's algorithm (on top of the cpu-tiny profile).
MATCHED = [
    "loss.name=dapo",  # clipped surrogate 0.2 / 0.28 = TRL epsilon / epsilon_high
    "aggregation=token",  # = TRL loss_type="dapo": sum over all tokens of the step / their number
    "advantages.normalization=prompt",  # = TRL scale_rewards="group"
    "filtering.zero_variance=false",
    "sampler.no_positive_resampling=false",
    "length.mode=truncate",
    "fp32_lm_head=false",
    "pipeline=sync",
    "k=1",
]
OVERRIDES: dict[str, list[str]] = {
    "ours-grpo": MATCHED,
    "ours-scalerl": [],
    "ours-scalerl-sync": ["pipeline=sync", "k=1"],
}
EVAL_SEED = 12345
WARM_START_STEPS = 200


# ----------------------------------------------------------------------------- shared helpers


def tiny_dir() -> Path:
    from scalerl.models.tiny import TinySpec, tiny_model_dir

    return tiny_model_dir(TinySpec(warm_start_steps=WARM_START_STEPS))


def base_config(model_dir: str, output: str, steps: int, seed: int, threads: int, overrides: list[str]):
    """The resolved scalerl config of one side (``MATCHED`` is also what the TRL side reads its numbers from)."""
    from scalerl.train.config import TrainConfig, resolve

    cfg = TrainConfig()
    cfg.model.name_or_path = model_dir
    cfg.profile = "cpu-tiny"
    cfg.run.output = output
    cfg.run.steps = steps
    cfg.run.seed = seed
    cfg.run.threads = threads
    cfg.run.device = "cpu"
    cfg.log.progress = False
    cfg.forecast.enabled = False
    # The trainer always evaluates before the first and after the last step; keep those tiny: the
    # benchmark evaluates every final model itself, the same way, outside the timed part.
    cfg.eval.every = steps
    cfg.eval.problems = 1
    cfg.eval.samples_per_problem = 1
    return resolve(cfg, overrides)


class Timers:
    """Seconds spent inside wrapped callables, by key (re-entrant calls counted once): wall seconds in
    ``seconds``, CPU seconds of the calling thread in ``cpu`` (what other jobs on the machine do not
    inflate: a thread waiting for a CPU accrues wall time, not CPU time)."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}
        self.cpu: dict[str, float] = {}
        self._depth: dict[str, int] = {}

    def wrap(self, fn: Callable, key: str) -> Callable:
        def timed(*args, **kwargs):
            if self._depth.get(key, 0):
                return fn(*args, **kwargs)
            self._depth[key] = 1
            t, c = time.perf_counter(), time.thread_time()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds[key] = self.seconds.get(key, 0.0) + time.perf_counter() - t
                self.cpu[key] = self.cpu.get(key, 0.0) + time.thread_time() - c
                self._depth[key] = 0

        return timed

    def patch(self, obj: Any, name: str, key: str) -> None:
        setattr(obj, name, self.wrap(getattr(obj, name), key))

    def hide(self, obj: Any, name: str, key: str) -> None:
        """Calls of ``obj.name`` do not count towards ``key`` (e.g. evaluations inside a timed loop)."""
        fn = getattr(obj, name)

        def hidden(*args, **kwargs):
            depth = self._depth.get(key, 0)
            self._depth[key] = 1
            try:
                return fn(*args, **kwargs)
            finally:
                self._depth[key] = depth

        setattr(obj, name, hidden)


def cpu_pressure() -> float | None:
    """Share of the last 10 s some runnable task waited for a CPU (Linux PSI), or None."""
    try:
        line = Path("/proc/pressure/cpu").read_text().splitlines()[0]
        return float(line.split()[1].split("=")[1])
    except (OSError, IndexError, ValueError):
        return None


def evaluate_dir(model_dir: str, problems: int, k: int) -> dict[str, float]:
    """mean@k (temperature 1) and greedy pass rate on the first ``problems`` val problems."""
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.loading import load_model
    from scalerl.tasks.arithmetic import ArithmeticTask
    from scalerl.train.evaluate import evaluate

    model, tok = load_model(model_dir, dtype="float32")
    task = ArithmeticTask()
    val = list(task.eval_sets()["val"])[:problems]
    gen = HFGenerator(model, tok, seed=EVAL_SEED)
    sampled = evaluate(gen, tok, task, val, k, SamplingParams(max_new_tokens=48, temperature=1.0, seed=EVAL_SEED),
                       batch_size=512)
    greedy = evaluate(gen, tok, task, val, 1, SamplingParams(max_new_tokens=48, temperature=0.0, seed=EVAL_SEED))
    return {"pass_rate": sampled["pass_rate"], "greedy": greedy["pass_rate"], "eval_mean_len": sampled["mean_len"]}


# ----------------------------------------------------------------------------- the workers


def run_ours(side: str, a: argparse.Namespace, work: Path) -> dict[str, Any]:
    import torch

    import scalerl.train.update as update_module
    from scalerl.runlog import read_runlog
    from scalerl.train.trainer import Trainer

    model_dir = work / "model"
    shutil.copytree(tiny_dir(), model_dir)
    cfg = base_config(str(model_dir), str(work / "run"), a.steps, a.seed, a.threads, OVERRIDES[side])
    trainer = Trainer(cfg)

    timers = Timers()
    timers.patch(trainer.source, "next_batch", "rollout")
    for gen in getattr(trainer.source, "generators", None) or [trainer.generator]:
        timers.patch(gen, "generate", "generate")
    timers.hide(trainer, "evaluate", "generate")  # its built-in (tiny) evaluations are not rollouts
    update_module.completion_logprobs = timers.wrap(update_module.completion_logprobs, "forward")
    update_module.shared_prompt_logprobs = timers.wrap(update_module.shared_prompt_logprobs, "forward")
    torch.autograd.backward = timers.wrap(torch.autograd.backward, "backward")

    pressure = cpu_pressure()
    t, c = time.perf_counter(), time.process_time()
    trainer.run()
    wall, cpu = time.perf_counter() - t, time.process_time() - c

    _, rows, _ = read_runlog(work / "run" / "runlog.jsonl")
    train = [r for r in rows if r.get("type") == "train"]
    return {
        "wall": wall,
        "cpu": cpu,
        "samples": len(train) * cfg.recipe.batch.prompts_per_step * cfg.recipe.batch.generations_per_prompt,
        "timers": timers.seconds,
        "timers_cpu": timers.cpu,
        "final_dir": str(work / "run" / "final"),
        "train_pass": [r["train_pass_rate"] for r in train],
        "mean_len": [r["mean_len"] for r in train],
        "lr": [r["lr"] for r in train],
        "grad_norm": [r.get("grad_norm") for r in train],
        "no_grad_frac": [r.get("no_grad_frac", 0.0) for r in train],
        "pressure": [pressure, cpu_pressure()],
    }


def run_trl(a: argparse.Namespace, work: Path) -> dict[str, Any]:
    import torch
    from datasets import Dataset
    from transformers import AutoModelForCausalLM, AutoTokenizer
    from transformers.utils import logging as hf_logging
    from trl import GRPOConfig, GRPOTrainer

    from scalerl.rl.sampler import PromptSampler
    from scalerl.tasks.arithmetic import ArithmeticTask
    from scalerl.train.update import build_optimizer

    hf_logging.set_verbosity_error()
    if a.threads:
        torch.set_num_threads(a.threads)
    model_dir = work / "model"
    shutil.copytree(tiny_dir(), model_dir)
    # The numbers TRL gets are read from the very config ours-grpo runs with.
    cfg = base_config(str(model_dir), str(work / "unused"), a.steps, a.seed, a.threads, MATCHED)
    r = cfg.recipe
    prompts, gens = r.batch.prompts_per_step, r.batch.generations_per_prompt
    per_step = prompts * gens
    micro = cfg.run.micro_batch_size
    if per_step % micro:
        raise SystemExit(f"{per_step} completions per step do not split into micro-batches of {micro}")

    task = ArithmeticTask()
    problems = list(task.train_problems())
    by_id = {p.id: p for p in problems}
    sampler = PromptSampler.from_config([p.id for p in problems], r.sampler, seed=cfg.run.seed)
    order = [pid for _ in range(a.steps) for pid in sampler.sample(prompts)]  # = ours-grpo's prompts
    dataset = Dataset.from_dict({"prompt": [by_id[i].prompt for i in order], "pid": order})

    def arithmetic(prompts, completions, pid, **_):
        return [float(task.reward(by_id[i], c)) for i, c in zip(pid, completions)]

    torch.manual_seed(cfg.run.seed)
    model = AutoModelForCausalLM.from_pretrained(model_dir, dtype=torch.float32)
    tok = AutoTokenizer.from_pretrained(model_dir)
    optimizer, scheduler = build_optimizer(model, r)
    args = GRPOConfig(
        output_dir=str(work / "trl"),
        max_steps=a.steps,
        seed=cfg.run.seed,
        use_cpu=True,
        bf16=False,
        fp16=False,
        gradient_checkpointing=False,
        per_device_train_batch_size=micro,
        gradient_accumulation_steps=per_step // micro,
        generation_batch_size=per_step,
        num_generations=gens,
        max_completion_length=r.length.max_new_tokens,
        temperature=cfg.sampling.temperature,
        top_p=cfg.sampling.top_p,
        top_k=0,
        beta=0.0,
        num_iterations=1,
        loss_type="dapo",
        epsilon=r.loss.dapo.eps_low,
        epsilon_high=r.loss.dapo.eps_high,
        scale_rewards="group",
        mask_truncated_completions=r.length.mask_truncated,
        learning_rate=r.optimizer.lr,  # informational: the optimizer below is used as given
        max_grad_norm=r.optimizer.grad_clip,
        shuffle_dataset=False,
        save_strategy="no",
        report_to="none",
        logging_steps=1,
        disable_tqdm=True,
        dataloader_num_workers=0,
    )
    trainer = GRPOTrainer(model=model, reward_funcs=arithmetic, args=args, train_dataset=dataset,
                          processing_class=tok, optimizers=(optimizer, scheduler))

    timers = Timers()
    timers.patch(trainer, "_generate_and_score_completions", "rollout")
    timers.patch(trainer, "_generate", "generate")
    timers.patch(trainer, "_get_per_token_logps_and_entropies", "forward")
    torch.autograd.backward = timers.wrap(torch.autograd.backward, "backward")

    pressure = cpu_pressure()
    t, c = time.perf_counter(), time.process_time()
    trainer.train()
    wall, cpu = time.perf_counter() - t, time.process_time() - c

    final = work / "final"
    trainer.save_model(str(final))
    tok.save_pretrained(final)
    logs = [row for row in trainer.state.log_history if "reward" in row]
    return {
        "wall": wall,
        "cpu": cpu,
        "samples": trainer.state.global_step * per_step,
        "timers": timers.seconds,
        "timers_cpu": timers.cpu,
        "final_dir": str(final),
        "train_pass": [(row["reward"] + 1) / 2 for row in logs],  # rewards are +1 / -1
        "mean_len": [row["completions/mean_length"] for row in logs],
        "lr": [row["learning_rate"] for row in logs],
        "grad_norm": [row.get("grad_norm") for row in logs],
        "no_grad_frac": [0.0 for _ in logs],  # TRL runs every sequence through both passes
        "pressure": [pressure, cpu_pressure()],
    }


def worker(a: argparse.Namespace) -> None:
    import warnings

    warnings.filterwarnings("ignore")
    work = Path(tempfile.mkdtemp(prefix=f"vs_trl-{a.worker}-"))
    try:
        if a.worker == "start":
            import torch
            import transformers
            import trl

            result = evaluate_dir(str(tiny_dir()), a.eval_problems, a.eval_k)
            result["versions"] = {"torch": torch.__version__, "transformers": transformers.__version__,
                                  "trl": trl.__version__}
        else:
            result = run_trl(a, work) if a.worker == "trl" else run_ours(a.worker, a, work)
            result.update(evaluate_dir(result.pop("final_dir"), a.eval_problems, a.eval_k))
            import torch

            result["threads"] = torch.get_num_threads()
        Path(a.result).write_text(json.dumps(result))
    finally:
        shutil.rmtree(work, ignore_errors=True)


# ----------------------------------------------------------------------------- the driver


def start_side(side: str, a: argparse.Namespace, seed: int, core: int | None = None):
    """Start one side's run in a fresh subprocess (pinned to ``core`` where given)."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as f:
        out = f.name
    cmd = [sys.executable, __file__, "--worker", side, "--result", out, "--steps", str(a.steps), "--seed", str(seed),
           "--threads", str(a.threads), "--eval-problems", str(a.eval_problems), "--eval-k", str(a.eval_k)]
    if core is not None:
        cmd += ["--core", str(core)]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return side, seed, proc, out, time.perf_counter()


def finish_side(started) -> dict[str, Any]:
    side, seed, proc, out, t = started
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        sys.stderr.write(stdout[-4000:] + stderr[-8000:])
        raise SystemExit(f"{side} (seed {seed}) failed with status {proc.returncode}")
    result = json.loads(Path(out).read_text())
    os.unlink(out)
    result["process_seconds"] = time.perf_counter() - t
    return result


def spawn(side: str, a: argparse.Namespace, seed: int) -> dict[str, Any]:
    return finish_side(start_side(side, a, seed))


def _spread(values: list[float], fmt: str) -> str:
    if not values:
        return "-"
    if len(values) == 1:
        return format(values[0], fmt)
    return f"{format(statistics.median(values), fmt)} [{format(min(values), fmt)}-{format(max(values), fmt)}]"


def summarize(results: dict[str, list[dict[str, Any]]], start: dict[str, float], a: argparse.Namespace) -> str:
    samples = a.steps * 128
    trl = results.get("trl", [])

    def rate(r: dict[str, Any], clock: str) -> float:
        return r["samples"] / r[clock]

    def ratio(runs: list[dict[str, Any]], side: str, clock: str) -> str:
        if side == "trl":
            return "1"
        if not trl:
            return "-"
        return _spread([rate(o, clock) / rate(t, clock) for o, t in zip(runs, trl)], ".2f") + "x"

    lines = [
        f"torch {start['versions']['torch']}, transformers {start['versions']['transformers']}, "
        f"trl {start['versions']['trl']}; "
        f"{a.steps} optimizer steps x 128 completions (16 prompts x 8) = {samples} samples per run; {a.repeats} "
        f"repeat(s) per side, {'at the same time, a core each' if a.concurrent else 'interleaved'}; "
        f"{a.threads or 'default'} torch thread(s). median [min-max] over repeats; "
        "ratios are paired within a repeat.",
        "",
        f"| side | what | samples/s (wall) | ours / TRL | samples per CPU-second | ours / TRL | val mean@{a.eval_k} "
        f"after {samples} samples | val greedy | train pass, last 10 steps |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for side, runs in results.items():
        tail = [statistics.fmean(r["train_pass"][-10:]) for r in runs if r["train_pass"]]
        lines.append(
            f"| `{side}` | {SIDES[side]} | {_spread([rate(r, 'wall') for r in runs], '.0f')} | {ratio(runs, side, 'wall')} "
            f"| {_spread([rate(r, 'cpu') for r in runs], '.0f')} | {ratio(runs, side, 'cpu')} "
            f"| {_spread([r['pass_rate'] for r in runs], '.3f')} | {_spread([r['greedy'] for r in runs], '.3f')} "
            f"| {_spread(tail, '.3f')} |"
        )
    lines.append(f"| start model | warm-started {WARM_START_STEPS} steps, before RL | | | | | {start['pass_rate']:.3f} "
                 f"| {start['greedy']:.3f} | |")
    lines += [
        "",
        "Where the time goes: CPU seconds per optimizer step (median over repeats; wall seconds in brackets).",
        "",
        "| side | total | generate | rollout | forward | backward | rest | sequences without gradient, skipped "
        "| mean completion tokens | CPU pressure |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for side, runs in results.items():
        def per(key: str, clock: str = "cpu") -> float:
            field = "timers_cpu" if clock == "cpu" else "timers"
            return statistics.median(r[field].get(key, 0.0) / a.steps for r in runs)

        def rest(clock: str) -> float:
            # CPU: the generation thread's CPU counts wherever it ran; wall: the trainer's own timeline.
            field = "timers_cpu" if clock == "cpu" else "timers"
            gen = (lambda r: max(r[field].get("rollout", 0.0), r[field].get("generate", 0.0))) if clock == "cpu" \
                else (lambda r: r[field].get("rollout", 0.0))
            return statistics.median(
                (r[clock] - gen(r) - r[field].get("forward", 0.0) - r[field].get("backward", 0.0)) / a.steps
                for r in runs
            )

        total = statistics.median(r["cpu"] / a.steps for r in runs)
        wall = statistics.median(r["wall"] / a.steps for r in runs)
        cells = [f"{total:.3f} ({wall:.3f})"]
        cells += [f"{per(k):.3f} ({per(k, 'wall'):.3f})" for k in ("generate", "rollout", "forward", "backward")]
        cells.append(f"{rest('cpu'):.3f} ({rest('wall'):.3f})")
        skipped = statistics.median(statistics.fmean(r["no_grad_frac"]) for r in runs) if runs[0]["no_grad_frac"] else 0.0
        lens = statistics.median(statistics.fmean(r["mean_len"]) for r in runs)
        press = [p for r in runs for p in r["pressure"] if p is not None]
        lines.append(f"| `{side}` | " + " | ".join(cells) + f" | {skipped:.0%} | {lens:.1f} | {_spread(press, '.0f')}% |")
    lines += [
        "",
        "generate: the sampling call; rollout: generate + decode + reward + advantages (for PipelineRL, the trainer's "
        "wait for a batch: generation runs in a background thread, whose CPU is in `generate` and `total`); forward / "
        "backward: the policy update's passes; rest: total minus those (optimizer, clipping, logging, checkpoints). "
        "CPU pressure: share of time some task on the machine waited for a CPU (other jobs included), at start and end.",
    ]
    return "\n".join(lines)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--steps", type=int, default=40, help="optimizer steps per run (x128 samples)")
    p.add_argument("--repeats", type=int, default=2, help="runs per side (seeds seed, seed+1, ...), interleaved")
    p.add_argument("--sides", nargs="+", default=DEFAULT_SIDES, choices=list(SIDES))
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads per run (0: torch's default)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--eval-problems", type=int, default=200, help="held-out val problems in the final evaluation")
    p.add_argument("--eval-k", type=int, default=8, help="samples per problem (mean@k) in the final evaluation")
    p.add_argument("--json", help="also write every run's measurements here")
    p.add_argument("--concurrent", action="store_true",
                   help="run a repeat's sides at the same time, each pinned to a core of its own (one thread each)")
    p.add_argument("--core", type=int, help=argparse.SUPPRESS)
    p.add_argument("--worker", help=argparse.SUPPRESS)
    p.add_argument("--result", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.worker:
        if a.core is not None:  # --concurrent: this side alone on its core
            os.sched_setaffinity(0, {sorted(os.sched_getaffinity(0))[a.core]})
        worker(a)
        return
    if a.concurrent:
        cores = len(os.sched_getaffinity(0))
        if a.threads != 1 or len(a.sides) > cores:
            p.error(f"--concurrent runs each side on a core of its own with one thread: give --threads 1 and at most "
                    f"{cores} sides (this machine's cores)")

    tiny_dir()  # build the cached tiny model once, before any timing
    t0 = time.perf_counter()
    start = spawn("start", a, a.seed)
    results: dict[str, list[dict[str, Any]]] = {s: [] for s in a.sides}
    for rep in range(a.repeats):
        order = a.sides[rep % len(a.sides):] + a.sides[: rep % len(a.sides)]  # rotate: no side always first
        if a.concurrent:
            started = [start_side(side, a, a.seed + rep, core=i) for i, side in enumerate(order)]
            done = [(st[0], finish_side(st)) for st in started]
        else:
            done = [(side, spawn(side, a, a.seed + rep)) for side in order]
        for side, r in done:
            results[side].append(r)
            print(f"[{time.perf_counter() - t0:6.0f}s] repeat {rep + 1}/{a.repeats} {side:<18} "
                  f"{r['samples'] / r['wall']:6.0f} samples/s  val mean@{a.eval_k} {r['pass_rate']:.3f}  "
                  f"greedy {r['greedy']:.3f}", file=sys.stderr, flush=True)
    table = summarize(results, start, a)
    print(table)
    if a.json:
        Path(a.json).parent.mkdir(parents=True, exist_ok=True)
        Path(a.json).write_text(json.dumps({"args": vars(a), "start": start, "results": results}, indent=1))


if __name__ == "__main__":
    main()
