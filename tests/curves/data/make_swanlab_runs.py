"""Write the SwanLab fixtures of tests/curves/test_swanlab_log.py with the real swanlab package, offline
(no account, no network):

    python make_swanlab_runs.py OUT_DIR     # OUT_DIR/swanlog-<swanlab version>/run-<date>-<id>/...

Run with swanlab 0.6.12 (its run file ``backup.swanlab`` holds JSON records: format version 1, as
swanlab before 0.8 wrote), 0.9.8 and 0.10.3 (``run-<id>.swanlab``, protobuf records: version 2).
``swanlab_runs.tar.gz`` keeps only the run files.

Two runs: ``grpo-a``, 24 steps of ``train/loss`` and ``train/global_step`` and, every 4th step,
``val/acc`` (a NaN at step 8); ``grpo-b``, ``val/acc`` alone every 4th step, with another ceiling.
SwanLab's system monitor logs ``__swanlab__.*`` besides, on a step counter of its own.

    python make_swanlab_runs.py OUT_DIR resumed   # OUT_DIR/swanlog-<version>-resumed/ (swanlab 0.10.3)

A verl run logged as verl's SwanLab logger does (``swanlab.log(data, step=global_steps)``), resumed
into the same run (``id=...``, ``resume="allow"``): the evaluation before training at step 0, steps
1-12 of ``timing_s/step`` (10 + the step, seconds) and ``actor/pg_loss`` with
``val-core/openai/gsm8k/reward/mean@1`` every 5th step; killed after step 12, then resumed from its
step-10 checkpoint: verl evaluates the checkpoint it loaded first, at step 10 (0.001 higher), and
trains steps 11-15.
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


VAL = "val-core/openai/gsm8k/reward/mean@1"


def resumed(out: Path) -> None:
    logdir = out / f"swanlog-{swanlab.__version__}-resumed"
    run = dict(project="scalerl-fixture", name="verl-resumed", mode="offline", log_dir=str(logdir),
               id="verlresumed0000000000", resume="allow")
    swanlab.init(**run)
    swanlab.log({VAL: level(0, 0.6)}, step=0)
    for step in range(1, 13):
        metrics = {"timing_s/step": 10.0 + step, "actor/pg_loss": 1.0 / step}
        if step % 5 == 0:
            metrics[VAL] = level(step, 0.6)
        swanlab.log(metrics, step=step)
    swanlab.finish()  # (killed after step 12)
    time.sleep(1.5)
    swanlab.init(**run)
    swanlab.log({VAL: level(10, 0.6) + 0.001}, step=10)  # verl's validation of the step-10 checkpoint
    for step in range(11, 16):
        metrics = {"timing_s/step": 10.0 + step, "actor/pg_loss": 1.0 / step}
        if step % 5 == 0:
            metrics[VAL] = level(step, 0.6) + 0.001
        swanlab.log(metrics, step=step)
    swanlab.finish()


if __name__ == "__main__":
    (resumed if sys.argv[2:] == ["resumed"] else main)(Path(sys.argv[1]))
