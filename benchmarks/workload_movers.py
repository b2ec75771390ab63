"""The arithmetic-mix workload's ceiling movers, piloted: model size, generation length, batch size.

Each variant is an ordinary ``scalerl train`` run (a subprocess, ``nice``, one torch thread)
of the default recipe on ``--task arithmetic-mix`` with its change on top; ``--pipeline sync``
by default (fast and reproducible; the default recipe's PipelineRL-8 with ``--pipeline
default``). Afterwards every variant is fitted with its seeds pooled (the forecaster's
``compare``: A, B, C_mid with 95% intervals, classified against ``base``), next to the
ceiling by construction of its thinking budget (``ArithmeticMixTask.ceiling``), and the cost:
CPU-seconds of the whole run (the child process's user + system time), per evaluation (one
evaluation of the final model timed separately) and per step (the rest divided by the steps).

    python benchmarks/workload_movers.py                                   # every variant, seed 0
    python benchmarks/workload_movers.py --variants base model-s model-l --seeds 0 1 2 --parallel 2
    python benchmarks/workload_movers.py --report-only --output runs/movers   # refit finished runs

"past cap": the share of the final model's evaluation samples that passed although the thinking
budget interrupted them (the policy answered from a partial scratchpad) -- how far the measured
ceiling can rise above the ceiling by construction.

Finished runs (a ``final/`` directory) are not run again: re-running the command after a kill
continues, and adding seeds adds runs.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

#: Variant -> (model, overrides on top of the cpu-tiny-mix profile). The generation-length
#: variants are the gen-length study family's 36 and 54 tokens (study/families.py
#: length_overrides: the thinking budget scales with the length, the interruption phrase's 3 tokens kept free
#: in the 36 -- [20, 26] left an interrupted answer one token short and was refused): caps 0.334 and 0.771 by
#: construction around the base's 0.614 -- all clearly below 1, so no A is pushed onto its bound
#: (an earlier long budget, [34, 42] with cap 0.930, left A on its bound of 1).
VARIANTS: dict[str, tuple[str, list[str]]] = {
    "base": ("tiny-m", []),
    "model-s": ("tiny-s", []),
    "model-l": ("tiny-l", []),
    "length-short": ("tiny-m", ["length.max_new_tokens=36", "length.think_budget=[20, 25]",
                                "length.overlong_max_len=36", "length.overlong_cache=12"]),
    "length-long": ("tiny-m", ["length.max_new_tokens=54", "length.think_budget=[29, 38]",
                               "length.overlong_max_len=54", "length.overlong_cache=18"]),
    "batch-8": ("tiny-m", ["batch.prompts_per_step=8"]),
    "batch-32": ("tiny-m", ["batch.prompts_per_step=32"]),
}


def run_dir(output: Path, variant: str, seed: int) -> Path:
    return output / variant / f"seed{seed}"


def command(args, variant: str, seed: int) -> list[str]:
    model, overrides = VARIANTS[variant]
    cmd = [sys.executable, "-m", "scalerl.cli", "train", "--model", model, "--task", "arithmetic-mix",
           "--output", str(run_dir(Path(args.output), variant, seed)), "--steps", str(args.steps),
           "--eval-every", str(args.eval_every), "--seed", str(seed), "--threads", "1", "--no-progress",
           "--set", f"eval.problems={args.eval_problems}", "--set", f"eval.samples_per_problem={args.eval_k}"]
    if args.pipeline == "sync":
        cmd += ["--set", "pipeline=sync", "--set", "k=1"]
    for o in overrides + list(args.set):
        cmd += ["--set", o]
    return cmd


def check_existing(args) -> None:
    """Refuse a run directory made for another definition of its variant (e.g. an earlier
    thinking budget): reusing it would report the old variant under the new name."""
    import yaml

    for v in args.variants:
        for s in args.seeds:
            cfg_file = run_dir(Path(args.output), v, s) / "config.yaml"
            if not cfg_file.exists():
                continue
            cfg = yaml.safe_load(cfg_file.read_text())
            length, batch = cfg["recipe"]["length"], cfg["recipe"]["batch"]
            have = {"model": cfg["model"]["name_or_path"], "length.think_budget": list(length["think_budget"]),
                    "length.max_new_tokens": length["max_new_tokens"], "batch.prompts_per_step": batch["prompts_per_step"]}
            model, overrides = VARIANTS[v]
            want = {"model": model, **{k: yaml.safe_load(val) for k, val in (o.split("=", 1) for o in overrides)}}
            bad = [k for k in want if k in have and have[k] != want[k]]
            if bad:
                raise SystemExit(f"{cfg_file.parent}: made with {bad[0]} = {have[bad[0]]}, variant {v} now has "
                                 f"{want[bad[0]]}; delete it or use another --output")


def run_all(args) -> None:
    jobs = [(v, s) for v in args.variants for s in args.seeds
            if not (run_dir(Path(args.output), v, s) / "final").is_dir()]
    running: dict[int, tuple[subprocess.Popen, str, int, float]] = {}
    while jobs or running:
        while jobs and len(running) < args.parallel:
            v, s = jobs.pop(0)
            out = run_dir(Path(args.output), v, s)
            if out.exists():  # a killed run: continue it
                cmd = [sys.executable, "-m", "scalerl.cli", "train", "--output", str(out), "--resume", "--no-progress"]
            else:
                cmd = command(args, v, s)
            out.parent.mkdir(parents=True, exist_ok=True)
            log = open(out.parent / f"seed{s}.log", "a")
            proc = subprocess.Popen(["nice", "-n", str(args.nice), *cmd], stdout=log, stderr=subprocess.STDOUT)
            running[proc.pid] = (proc, v, s, time.time())
        pid, status, usage = os.wait4(-1, 0)
        if pid not in running:
            continue
        proc, v, s, t0 = running.pop(pid)
        cpu = usage.ru_utime + usage.ru_stime
        out = run_dir(Path(args.output), v, s)
        rec = {"variant": v, "seed": s, "status": os.waitstatus_to_exitcode(status), "cpu_s": cpu,
               "wall_s": time.time() - t0}
        with open(out.parent / f"seed{s}.cost.jsonl", "a") as f:
            f.write(json.dumps(rec) + "\n")
        print(json.dumps(rec), flush=True)


def final_eval(run: Path) -> dict:
    """One evaluation of the run's final model as the run evaluated (one thread): its CPU-seconds,
    and the pass rate split by whether the thinking budget interrupted the completion -- what
    passes *after* an interruption is what the policy learned beyond the ceiling by construction."""
    import torch

    from scalerl.config import load_yaml
    from scalerl.generate.base import SamplingParams
    from scalerl.generate.hf import HFGenerator
    from scalerl.models.loading import load_model
    from scalerl.rl.length import length_controller
    from scalerl.tasks.encoding import encode_prompts
    from scalerl.tasks.registry import get_task
    from scalerl.train.config import TrainConfig

    torch.set_num_threads(1)
    cfg = load_yaml(TrainConfig, run / "config.yaml")
    model, tokenizer = load_model(str(run / "final"))
    task = get_task(cfg.task.name, **cfg.task.settings)
    problems = list(task.eval_sets()[cfg.eval.sets[0]])[: cfg.eval.problems]
    k = cfg.eval.samples_per_problem
    params = SamplingParams(max_new_tokens=cfg.recipe.length.max_new_tokens, temperature=cfg.eval.temperature, seed=0)
    gen, length = HFGenerator(model, tokenizer), length_controller(cfg.recipe.length, tokenizer)
    flat = [ids for ids in encode_prompts(tokenizer, [p.prompt for p in problems]) for _ in range(k)]
    t0 = time.process_time()
    comps = []
    for start in range(0, len(flat), cfg.eval.batch_size or len(flat)):
        comps += gen.generate(flat[start:start + (cfg.eval.batch_size or len(flat))], params, length)
    cpu = time.process_time() - t0
    passed = [task.reward(problems[i // k], c.text) > 0 for i, c in enumerate(comps)]
    cut = [c.interrupted for c in comps]
    n_cut = sum(cut)
    return {"eval_cpu_s": cpu, "pass_rate": sum(passed) / len(comps), "interrupted": n_cut / len(comps),
            "pass_after_interruption": sum(p for p, c in zip(passed, cut) if c) / len(comps),
            "pass_rate_of_interrupted": sum(p for p, c in zip(passed, cut) if c) / n_cut if n_cut else float("nan")}


def report(args) -> None:
    from scalerl.config import load_yaml
    from scalerl.curves import compare, read_curve
    from scalerl.tasks.registry import get_task
    from scalerl.train.config import TrainConfig

    output = Path(args.output)
    curves, costs, ceilings = {}, {}, {}
    for v in args.variants:
        runs = [run_dir(output, v, s) for s in args.seeds if (run_dir(output, v, s) / "final").is_dir()]
        if not runs:
            continue
        curves[v] = [read_curve(str(r / "runlog.jsonl"), x=args.x, y="val/pass_rate") for r in runs]
        cfg = load_yaml(TrainConfig, runs[0] / "config.yaml")
        ceilings[v] = get_task(cfg.task.name, **cfg.task.settings).ceiling(tuple(cfg.recipe.length.think_budget))
        cpu = []
        for r in runs:
            lines = (r.parent / f"{r.name}.cost.jsonl").read_text().splitlines() if (r.parent / f"{r.name}.cost.jsonl").exists() else []
            cpu.append(sum(json.loads(line)["cpu_s"] for line in lines))
        evals = sum(1 for line in (runs[0] / "runlog.jsonl").read_text().splitlines() if '"val/pass_rate"' in line)
        fe = final_eval(runs[0])
        run_cpu = sum(cpu) / len(cpu)
        costs[v] = {"run_cpu_s": run_cpu, "evals": evals,
                    "step_cpu_s": (run_cpu - evals * fe["eval_cpu_s"]) / cfg.run.steps if run_cpu else float("nan"),
                    "seeds": len(runs), **fe}
    if "base" not in curves:
        raise SystemExit("no finished base run to compare with")
    result = compare(curves, baseline="base", n_boot=args.bootstrap)
    kinds = {c.label: c for c in result.classifications}
    print(f"\n{'variant':<13} {'seeds':>5} {'R0':>6} {'final':>6} {'cap':>6} {'A [95%]':>22} {'B':>6} "
          f"{'dA [95%]':>24} {'moved':>18} {'past cap':>8} {'CPU-s/run':>9} {'CPU-s/step':>10} {'CPU-s/eval':>10}")
    rows = []
    for v, cs in curves.items():
        rf = result.run(v)
        lo, hi = rf.interval("A")
        final = sum(c.y[-1] for c in cs) / len(cs)
        c = kinds.get(v)
        dA = f"{c.dA:+.3f} [{c.dA_interval[0]:+.3f}, {c.dA_interval[1]:+.3f}]" if c and c.dA_interval else ""
        moved = (f"{c.kind}{'' if c.better is None else (' better' if c.better else ' worse')}" if c else "(base)")
        k = costs[v]
        print(f"{v:<13} {len(cs):>5} {rf.fit.R0:>6.3f} {final:>6.3f} {ceilings[v]:>6.3f} "
              f"{rf.fit.A:>7.3f} [{lo:.3f}, {hi:.3f}] {rf.fit.B:>6.2f} {dA:>24} {moved:>18} {k['pass_after_interruption']:>8.3f} "
              f"{k['run_cpu_s']:>9.0f} {k['step_cpu_s']:>10.2f} {k['eval_cpu_s']:>10.2f}")
        rows.append({"variant": v, "A": rf.fit.A, "A_interval": [lo, hi], "B": rf.fit.B, "C_mid": rf.fit.C_mid,
                     "R0": rf.fit.R0, "final": final, "ceiling": ceilings[v], **k,
                     **({"classification": c.as_dict()} if c else {})})
    (output / "summary.json").write_text(json.dumps(rows, indent=1) + "\n")
    print(f"\nsummary: {output / 'summary.json'}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--variants", nargs="+", default=list(VARIANTS), choices=list(VARIANTS))
    ap.add_argument("--seeds", nargs="+", type=int, default=[0])
    ap.add_argument("--steps", type=int, default=250)
    ap.add_argument("--eval-every", type=int, default=25)
    ap.add_argument("--eval-problems", type=int, default=500)
    ap.add_argument("--eval-k", type=int, default=2)
    ap.add_argument("--pipeline", choices=["sync", "default"], default="sync")
    ap.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="extra override for every run")
    ap.add_argument("--x", default="flops", help="compute column of the fits")
    ap.add_argument("--parallel", type=int, default=2, help="runs at once (each one torch thread)")
    ap.add_argument("--nice", type=int, default=5)
    ap.add_argument("--bootstrap", type=int, default=300)
    ap.add_argument("--output", default="runs/movers")
    ap.add_argument("--report-only", action="store_true")
    args = ap.parse_args()
    if "base" not in args.variants:
        args.variants.insert(0, "base")
    check_existing(args)
    if not args.report_only:
        run_all(args)
    report(args)


if __name__ == "__main__":
    main()
