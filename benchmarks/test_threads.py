"""The test suite's training tests on two pytest-xdist workers, with one torch / OpenMP thread per process
(what ``make test`` sets) against torch's default (one per core), on this machine.

    python benchmarks/test_threads.py                       # the wall time of each, one after the other
    python benchmarks/test_threads.py --tests tests/study   # another part of the suite

Two workers on two cores that each take torch's default (a thread per core), and the training subprocesses
they start as many again, fight over the cores. Figures: README, Development.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time

DEFAULT = ["tests/train/test_train_e2e.py", "tests/train/test_bad_input.py", "tests/train/test_resume_keeps_stops.py"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tests", nargs="+", default=DEFAULT)
    args = ap.parse_args()
    for threads in (1, os.cpu_count() or 1):
        start = time.perf_counter()
        out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:randomly", "-n", "2", "--dist",
                              "worksteal", *args.tests], env={**os.environ, "OMP_NUM_THREADS": str(threads)},
                             capture_output=True, text=True)
        summary = (out.stdout.strip().splitlines() or ["(no output)"])[-1]
        print(f"OMP_NUM_THREADS={threads}: {time.perf_counter() - start:.1f} s wall ({summary})")


if __name__ == "__main__":
    main()
