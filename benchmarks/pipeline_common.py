"""Shared by the pipeline benchmarks: run ``scalerl train`` in a fresh process, read its run log.

Each run is its own interpreter (``python -m scalerl.cli train``), so torch's thread pool,
Ray and the generator processes of one configuration never leak into the next.
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any


def train(overrides: list[str], *, steps: int, eval_every: int, seed: int, threads: int | None = 1,
          extra: list[str] | None = None, keep: Path | None = None) -> dict[str, Any]:
    """One run of the tiny model; returns its eval rows, train rows, wall seconds and CPU seconds
    (user + system of the run's process and its children). ``threads=None``: no --threads flag
    (the trainer's own default)."""
    out = keep or Path(tempfile.mkdtemp(prefix="scalerl-bench-")) / "run"
    cmd = [sys.executable, "-m", "scalerl.cli", "train", "--model", "tiny", "--output", str(out), "--no-progress",
           "--steps", str(steps), "--eval-every", str(eval_every), "--seed", str(seed),
           "--set", "forecast.enabled=false", *(extra or [])]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    for o in overrides:
        cmd += ["--set", o]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ))
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise RuntimeError(f"run failed ({' '.join(cmd)}):\n{proc.stderr[-3000:]}")
    rows = [json.loads(line) for line in (out / "runlog.jsonl").read_text().splitlines()[1:]]
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"evals": [r for r in rows if r.get("type") == "eval"], "trains": [r for r in rows if r.get("type") == "train"],
            "wall": wall, "cpu": cpu}


def spread(values: list[float], fmt: str = "{:.3f}") -> str:
    """median [min-max] of repeated measurements."""
    if not values:
        return "-"
    if len(values) == 1:
        return fmt.format(values[0])
    return f"{fmt.format(statistics.median(values))} [{fmt.format(min(values))}-{fmt.format(max(values))}]"


def interpolate(xs: list[float], ys: list[float], x: float) -> float:
    """y at x on the piecewise-linear curve through (xs, ys) (xs increasing)."""
    if x <= xs[0]:
        return ys[0]
    for (x0, y0), (x1, y1) in zip(zip(xs, ys), zip(xs[1:], ys[1:])):
        if x <= x1:
            return y0 + (y1 - y0) * (x - x0) / max(x1 - x0, 1e-12)
    return ys[-1]


def table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    line = lambda r: "  ".join(str(c).ljust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([line(header), line(["-" * w for w in widths]), *(line(r) for r in rows)])
