"""How long a log that a training resumed into many times takes to read: the resumes' cost.

    python benchmarks/resumed_logs.py                          # 200,000 rows, 40 / 400 / 4,000 resumes
    python benchmarks/resumed_logs.py --rows 100000 --resumes 100

Each log is one run's JSON lines (a per-step reward, a validation score every 10th step), written to a
temporary directory; the training resumes ``--resumes`` times, each from a checkpoint ``--back`` steps before
where it was killed, so every resume drops the abandoned attempt's last rows (a spot-instance run's log,
appended to). Printed per log: the seconds ``read_curves`` took in all (median of ``--repeats``; JSON parsing
included), and the seconds of :func:`scalerl.curves.attempts.split_attempts` alone on the parsed rows, with the
points read and the rows dropped (from the reader's note).
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import tempfile
import time
from pathlib import Path


def write_log(path: Path, rows: int, resumes: int, back: int, seed: int = 0) -> list[dict]:
    rnd = random.Random(seed)
    per = max(back + 1, rows // (resumes + 1))
    out, step = [], 0
    while len(out) < rows:
        for _ in range(min(per, rows - len(out))):
            step += 1
            row = {"step": step, "train/reward": round(rnd.random(), 6)}
            if step % 10 == 0:
                row["val/pass_rate"] = round(rnd.random(), 6)
            out.append(row)
        step -= back  # (killed; resumed from the checkpoint `back` steps earlier)
    path.write_text("".join(json.dumps(r) + "\n" for r in out))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", type=int, default=200_000)
    parser.add_argument("--resumes", type=int, nargs="+", default=[40, 400, 4000])
    parser.add_argument("--back", type=int, default=5, help="steps each resume goes back")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()

    from scalerl.curves.attempts import split_attempts
    from scalerl.curves.io import read_curves

    with tempfile.TemporaryDirectory() as tmp:
        for resumes in args.resumes:
            path = Path(tmp) / f"resumed_{resumes}.jsonl"
            rows = write_log(path, args.rows, resumes, args.back)
            reads, splits = [], []
            for _ in range(args.repeats):
                t = time.perf_counter()
                (curve,) = read_curves(path, "step", "val/pass_rate")
                reads.append(time.perf_counter() - t)
                t = time.perf_counter()
                _, notes = split_attempts([dict(r) for r in rows], "step", "run")
                splits.append(time.perf_counter() - t)
            dropped = next((n for n in notes if "resumes from a checkpoint" in n), "no resume seen")
            print(f"{len(rows):,} rows, {resumes:,} resumes: read_curves {statistics.median(reads):.2f} s, "
                  f"split_attempts {statistics.median(splits):.2f} s; {len(curve.x):,} points; {dropped[:90]}")


if __name__ == "__main__":
    main()
