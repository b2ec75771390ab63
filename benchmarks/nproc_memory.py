"""Peak memory of each trainer rank under ``scalerl train --nproc N`` (CPU, gloo, FSDP2).

    python benchmarks/nproc_memory.py [--hidden 1536] [--layers 12] [--nproc 1 2] [--steps 2]
    python benchmarks/nproc_memory.py --nproc 2 --generate-on-shards   # no generator copy on rank 0

Builds a random Llama checkpoint locally (``examples/user_model.py``, bf16 storage like a hub
model; ``--hidden`` x ``--layers`` sets its size), trains it for ``--steps`` steps through the
real command line (synchronous, a small batch: the point is the model's state, not the
activations), and reads every trainer process's peak resident set (``VmHWM`` in
``/proc/PID/status``) just before it exits. Ranks are the launcher's spawned children in start
order (rank 0 first); ``--nproc 1`` is the one process itself. Printed: the model's size in fp32
(the master weights: 4 bytes a parameter; AdamW adds 8 more, its gradients 4), and per rank
the peak in GB.

What to look for: a rank's peak should be what its shard needs (model + gradients + AdamW
state / N) plus the process's fixed cost (torch, transformers: ~0.5 GB here), not the full
model; rank 0 also holds the generators' copy (in the compute dtype) -- unless
``--generate-on-shards`` (``run.generate_on_shards``: the ranks generate on their shards) -- and
gathers ``final/``. Linux only (``/proc``).
"""

from __future__ import annotations

import argparse
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _children(pid: int) -> list[int]:
    try:
        with open(f"/proc/{pid}/task/{pid}/children") as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


def status_gb(pid: int | str, field: str) -> float | None:
    """A memory field of ``/proc/PID/status`` (``VmHWM``: the peak resident set, ``VmRSS``: the
    resident set now) in GB; None once the process is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(field + ":"):
                    return int(line.split()[1]) / 1024**2  # kB -> GB
    except OSError:
        return None
    return None


def _is_rank(pid: int) -> bool:
    """A spawned trainer rank, not multiprocessing's resource tracker."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return b"resource_tracker" not in f.read()
    except OSError:
        return False


#: A reward that passes about half of the random model's completions, so every step has
#: advantages and runs its backward pass and AdamW step (the math reward scores a random model 0,
#: and such steps are skipped before any gradient exists).
REWARD = "def coin(completion):\n    return len(completion) % 2 == 0\n"


def one_run(model: Path, data: Path, reward: Path, out: Path, nproc: int, steps: int,
            on_shards: bool = False) -> list[tuple[float, float]]:
    """Peak resident GB of each trainer rank (rank 0 first): up to the evaluation before the first
    step (loading, sharding, the generators' copy), and over the whole run."""
    cmd = [sys.executable, "-m", "scalerl.cli", "train", "--model", str(model), "--task", "math", "--data", str(data),
           "--reward", f"{reward}:coin",
           "--output", str(out), "--no-progress", "--no-report", "--steps", str(steps), "--eval-every", str(steps),
           "--nproc", str(nproc), "--threads", str(max(1, nproc)),
           "--set", "pipeline=sync", "--set", "recipe.batch.prompts_per_step=2",
           "--set", "recipe.batch.generations_per_prompt=2", "--set", "recipe.length.mode=truncate", "--set", "recipe.length.max_new_tokens=8", "--set", "recipe.length.overlong_max_len=8", "--set", "recipe.length.overlong_cache=4",
           "--set", "eval.problems=2", "--set", "eval.samples_per_problem=1", "--set", "forecast.enabled=false",
           "--set", f"run.generate_on_shards={str(on_shards).lower()}"]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    peaks: dict[int, float] = {}
    loaded: dict[int, float] | None = None
    runlog = out / "runlog.jsonl"
    while proc.poll() is None:  # VmHWM only grows: the last value read before a process exits is its peak
        ranks = [p for p in _children(proc.pid) if _is_rank(p)] if nproc > 1 else [proc.pid]
        for p in ranks:
            v = status_gb(p, "VmHWM")
            if v is not None:
                peaks[p] = max(peaks.get(p, 0.0), v)
        # The first run-log row is the evaluation before training: loading and sharding are over.
        if loaded is None and runlog.exists() and runlog.stat().st_size > 0:
            loaded = dict(peaks)
        time.sleep(0.05)
    output = proc.stdout.read().decode(errors="replace") if proc.stdout else ""
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{output[-3000:]}")
    loaded = loaded or {}
    return [(loaded.get(p, math.nan), peaks[p]) for p in sorted(peaks)]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--hidden", type=int, default=1536)
    p.add_argument("--layers", type=int, default=12)
    p.add_argument("--nproc", type=int, nargs="+", default=[1, 2])
    p.add_argument("--steps", type=int, default=2)
    p.add_argument("--generate-on-shards", action="store_true",
                   help="run.generate_on_shards: generation on the shards, no full copy on rank 0")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT / "examples"))
    from user_model import save_user_model, write_math_data

    with tempfile.TemporaryDirectory() as tmp:
        model = save_user_model(Path(tmp) / "model", "llama", hidden=args.hidden, layers=args.layers)
        data = write_math_data(Path(tmp) / "math.jsonl")
        reward = Path(tmp) / "coin_reward.py"
        reward.write_text(REWARD)
        from safetensors import safe_open

        params = 0
        for f in model.glob("*.safetensors"):
            with safe_open(str(f), "pt") as st:
                params += sum(math.prod(st.get_slice(k).get_shape()) for k in st.keys())
        print(f"random Llama, hidden {args.hidden}, {args.layers} layers: {params / 1e6:.0f}M parameters; "
              f"fp32 weights {params * 4 / 1024**3:.2f} GB, weights + gradients + AdamW {params * 16 / 1024**3:.2f} GB; "
              f"cores {os.cpu_count()}")
        print(f"{'nproc':>5}  peak resident GB per rank (rank 0 first): loaded and sharded / whole run")
        for nproc in args.nproc:
            peaks = one_run(model, data, reward, Path(tmp) / f"run-{nproc}", nproc, args.steps, args.generate_on_shards)
            print(f"{nproc:>5}  " + "  ".join(f"{a:.2f} / {b:.2f}" for a, b in peaks), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
