"""How fast is a round scored with 1, 2, 4 ... reward worker processes?

A reward runs in worker processes (a hung call can be killed there, a thread cannot). One worker
scores a round's completions one at a time; ``task.reward_workers`` (a user function) and the math
task's ``verify_workers`` score them up to N at a time. Two rewards, each on ``--calls``
completions, the batch as ``score_all`` hands it over during training:

- ``judge``: a call that waits ``--judge-ms`` (an LLM judge behind an API, a code sandbox): bound
  by waiting, so it scales with the workers, not with the cores;
- ``math-verify``: the math task's checker on ``\\boxed{}`` answers (CPU-bound: it scales up to
  the machine's cores).

The first batch starts the workers (not timed); the figure is the median of ``--repeats`` batches.
math-verify is also timed in this process (on the main thread, where a synchronous run scores it,
with math-verify's own alarm bounds): what a worker's round trip costs against that.

    python benchmarks/reward_workers.py                       # workers 1 2 4, 256 calls
    python benchmarks/reward_workers.py --workers 1 8 16 --calls 2048
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import textwrap
import time
from pathlib import Path

from scalerl.tasks.base import Problem, score_all
from scalerl.tasks.math import MathTask
from scalerl.tasks.rewards import RewardWorkers


def _pairs(n: int) -> list[tuple[Problem, str]]:
    """``n`` completions, a third of them wrong, over distinct problems."""
    return [(Problem(id=str(i), prompt=f"What is {i} + 1?", answer=str(i + 1)),
             f"<think>add one</think> The answer is \\boxed{{{i + 1 if i % 3 else i}}}") for i in range(n)]


def _rate(score, pairs, repeats: int) -> float:
    """Completions scored per second: the median over ``repeats`` batches, after one to start the workers."""
    score(pairs)
    times = []
    for _ in range(repeats):
        t = time.perf_counter()
        score(pairs)
        times.append(time.perf_counter() - t)
    return len(pairs) / statistics.median(times)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2, 4])
    ap.add_argument("--calls", type=int, default=256, help="completions a batch")
    ap.add_argument("--judge-ms", type=float, default=20.0, help="what one judge call waits")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "judge.py").write_text(textwrap.dedent(f"""
            import time
            def judge(completion, answer):
                time.sleep({args.judge_ms / 1000!r})
                return answer in completion
            """))
        sys.path.insert(0, tmp)
        os.environ["PYTHONPATH"] = os.pathsep.join([tmp, os.environ.get("PYTHONPATH", "")])
        pairs = _pairs(args.calls)
        judge_pairs = pairs[: max(args.calls // 4, 1)]  # (a judge is slow: a quarter of the calls)
        print(f"{os.cpu_count()} CPUs; {len(judge_pairs)} judge calls ({args.judge_ms:g} ms each), "
              f"{len(pairs)} math-verify calls a batch; median of {args.repeats} batches\n")
        task = MathTask(data=os.path.join(tmp, "unused.jsonl"))
        in_process = _rate(lambda p: score_all(task, p), pairs, args.repeats)  # main thread: no worker
        print(f"math-verify in this process (a synchronous run's main thread): {in_process:.1f} calls/s\n")
        print(f"{'workers':>7}  {'judge calls/s':>13}  {'x1':>5}  {'math-verify calls/s':>19}  {'x1':>5}  "
              f"{'x in-process':>12}")
        base: dict[str, float] = {}
        for n in args.workers:
            with RewardWorkers("judge:judge", timeout=60, workers=n) as judge:
                j = _rate(judge.score_many, judge_pairs, args.repeats)
            with RewardWorkers("scalerl.tasks.math_worker:math_verify_reward", timeout=60, workers=n) as verify:
                m = _rate(verify.score_many, pairs, args.repeats)
            base.setdefault("j", j)
            base.setdefault("m", m)
            print(f"{n:>7}  {j:>13.1f}  {j / base['j']:>4.2f}x  {m:>19.1f}  {m / base['m']:>4.2f}x  "
                  f"{m / in_process:>11.2f}x")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
