"""Write the SwanLab fixtures of tests/curves/test_swanlab_log.py with the real swanlab package, offline
(no account, no network):

    python make_swanlab_runs.py OUT_DIR     # OUT_DIR/swanlog-<swanlab version>/run-<date>-<id>/...

Run with swanlab 0.6.12 (its run file ``backup.swanlab`` holds JSON records: format version 1, as
swanlab before 0.8 wrote), 0.9.8 and 0.10.3 (``run-<id>.swanlab``, protobuf records: version 2).
``swanlab_runs.tar.gz`` keeps only the run files.

Two runs: ``grpo-a``, 24 steps of ``train/loss`` and ``train/global_step`` and, every 4th step,
``val/acc`` (a NaN at step 8); ``grpo-b``, ``val/acc`` alone every 4th step, with another ceiling.
SwanLab's system monitor logs ``__swanlab__.*`` besides, on a step counter of its own.
"""

import math
import sys
import time
from pathlib import Path

import swanlab


def level(step: int, ceiling: float) -> float:
    return round(0.3 + (ceiling - 0.3) * (1 - math.exp(-step / 8)), 4)


def main(out: Path) -> None:
    logdir = out / f"swanlog-{swanlab.__version__}"
    swanlab.init(project="scalerl-fixture", experiment_name="grpo-a", mode="offline", logdir=str(logdir))
    for step in range(1, 25):
        metrics = {"train/loss": 1.0 / step, "train/global_step": step}
        if step % 4 == 0:
            metrics["val/acc"] = math.nan if step == 8 else level(step, 0.6)
        swanlab.log(metrics, step=step)
    swanlab.finish()
    time.sleep(1.5)  # run directories are named by the second they start
    swanlab.init(project="scalerl-fixture", experiment_name="grpo-b", mode="offline", logdir=str(logdir))
    for step in range(4, 25, 4):
        swanlab.log({"val/acc": level(step, 0.7)}, step=step)
    swanlab.finish()


if __name__ == "__main__":
    main(Path(sys.argv[1]))
