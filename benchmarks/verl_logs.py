"""Read public verl console logs with the ``verl`` reader and check them against the shipped CSV.

    python benchmarks/verl_logs.py DIR        # every *.log in DIR (verl stdout), e.g. fetched from
                                              # github.com/eric-haibin-lin/verl-data (branch experiments,
                                              # gsm8k/) and github.com/yushengsu-thu/verl_training_log (gsm8k/)

The logs are not shipped (their repositories carry no licence file). Per log: runs, points and
notes the reader gives for ``--y val/test_score/openai/gsm8k``. For the two logs
``examples/data/real_rl_curves.csv`` was hand-parsed from, the scores and cumulative hours are
compared with the CSV (x = ``cum:timing/*`` for older verl, ``cum:timing_s/step`` for newer).
"""

from __future__ import annotations

import argparse
import csv
import sys
from pathlib import Path

import numpy as np

from scalerl.curves import read_curves

ROOT = Path(__file__).resolve().parents[1]
Y = "val/test_score/openai/gsm8k"
#: log stem -> the run name it has in real_rl_curves.csv
SHIPPED = {"Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538": "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538",
           "grpo_run_deepseek7b_llm": "verl_training_log__grpo_run_deepseek7b_llm"}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("directory", type=Path)
    a = p.parse_args(argv)
    ref: dict[str, list[tuple[float, float]]] = {}
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv") as f:
        for r in csv.DictReader(f):
            ref.setdefault(r["run"], []).append((float(r["cum_wall_hours"]), float(r["val_score"])))
    logs = sorted(a.directory.glob("*.log"))
    if not logs:
        print(f"no *.log in {a.directory}", file=sys.stderr)
        return 2
    for log in logs:
        steps = read_curves(log, "step", Y)
        print(f"{log.name}: {len(steps)} run(s), {[len(c) for c in steps]} points; notes: {list(steps[0].notes)}")
        if log.stem in SHIPPED:
            x = "cum:timing_s/step" if "deepseek" in log.stem else "cum:timing/*"
            c = read_curves(log, x, Y)[0]
            hours, scores = np.array(ref[SHIPPED[log.stem]]).T
            same = len(c) == len(scores) and np.array_equal(c.y, scores)
            gap = np.max(np.abs(c.x / 3600 - hours)) if len(c) == len(hours) else float("nan")
            print(f"  vs real_rl_curves.csv ({x}): {len(c)} / {len(scores)} points, scores equal: {same}, "
                  f"largest |hours - CSV| {gap:.1e}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
