"""Where the default test run's time goes: each test's wall time against the CPU time of its process and the
children it waited for (``getrusage``), summed per test file, and the tests that wait most (Ray actors, timeouts,
sleeps -- time the two workers are not computing).

Runs ``make test``'s pytest command with this file loaded as a plugin in every xdist worker, then prints the
totals, the most idle tests and the heaviest files:

    python benchmarks/suite_cpu_time.py                          # the whole default run (~11 min on 2 cores)
    python benchmarks/suite_cpu_time.py -- tests/test_math_task.py   # a part of it (pytest's arguments after --)
"""

from __future__ import annotations

import collections
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

REPORT_ENV = "SCALERL_SUITE_CPU_REPORT"


def _cpu() -> float:
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item, nextitem):  # (a plugin hook: active only where pytest loads this file with -p)
    wall, cpu = time.perf_counter(), _cpu()
    yield
    with open(os.environ[REPORT_ENV], "a") as f:
        f.write(json.dumps({"id": item.nodeid, "wall": time.perf_counter() - wall, "cpu": _cpu() - cpu}) + "\n")


def main() -> None:
    args = sys.argv[1:]
    extra = args[args.index("--") + 1:] if "--" in args else []
    root = Path(__file__).resolve().parents[1]
    with tempfile.TemporaryDirectory() as tmp:
        report = Path(tmp) / "tests.jsonl"
        env = {**os.environ, REPORT_ENV: str(report), "OMP_NUM_THREADS": "1",
               "PYTHONPATH": os.pathsep.join(filter(None, [str(root / "benchmarks"), os.environ.get("PYTHONPATH")]))}
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "pytest", "-q", "-n", "2", "--dist", "worksteal", "-p", "suite_cpu_time",
                        "-p", "no:randomly", *extra], cwd=root, env=env, check=False)
        elapsed = time.perf_counter() - t0
        rows = [json.loads(line) for line in report.read_text().splitlines()] if report.exists() else []
    if not rows:
        sys.exit("no test reported its time (did pytest collect any?)")
    wall, cpu = sum(r["wall"] for r in rows), sum(r["cpu"] for r in rows)
    print(f"\n{len(rows)} tests in {elapsed:.0f} s: {wall:.0f} s of test wall time over two workers "
          f"({100 * wall / (2 * elapsed):.0f}% of their time), {cpu:.0f} s of it on the CPU")
    print("most idle (wall - cpu, s):")
    for r in sorted(rows, key=lambda r: r["cpu"] - r["wall"])[:15]:
        print(f"  {r['wall'] - r['cpu']:6.1f}  wall {r['wall']:6.1f}  {r['id']}")
    files: dict[str, list[float]] = collections.defaultdict(lambda: [0.0, 0.0, 0])
    for r in rows:
        f = files[r["id"].split("::")[0]]
        f[0], f[1], f[2] = f[0] + r["wall"], f[1] + r["cpu"], f[2] + 1
    print("heaviest files (wall s, cpu s, tests):")
    for name, (w, c, n) in sorted(files.items(), key=lambda kv: -kv[1][0])[:20]:
        print(f"  {w:6.1f} {c:6.1f} {n:5d}  {name}")


if __name__ == "__main__":
    main()
