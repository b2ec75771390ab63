"""Make ``wandb_runs.tar.gz``: a real ``wandb`` directory, as W&B leaves it on the training machine,
and ``wandb_0_17_9_run.wandb`` (``--single``, with an older wandb), read by
``tests/curves/test_framework_logs.py``.

Run it with wandb installed (made with wandb 0.31.0, offline mode: no account, no network):

    python tests/curves/data/make_wandb_runs.py tests/curves/data

The directory holds three run directories (only their ``run-<id>.wandb`` files are kept; W&B's
debug logs and copies of the environment are left out) and W&B's link ``latest-run`` to the last:

* ``grpo-a`` (id ``grpoa001``): 40 steps; each logs ``timing_s/step`` and ``train/reward``; every
  4th step the validation score ``val-core/gsm8k/acc/mean@1`` and, nested, ``eval`` ``{"acc": ...}``
  (W&B's key ``eval.acc``); a NaN score at step 20, a histogram at step 8, and at step 12 another
  1,500 metrics (``extra/m0000``...), a record longer than the file format's 32 KiB block;
* ``grpo-b`` (id ``grpob001``), the same with another ceiling, killed after step 24 and resumed in
  a second directory (same id) from step 21: steps 21-24 logged again (the step-24 score 0.6000,
  where the first attempt logged its curve's value), then up to step 40.
"""

import math
import shutil
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import wandb

VAL = "val-core/gsm8k/acc/mean@1"


def level(step: int, ceiling: float) -> float:
    return round(0.3 + (ceiling - 0.3) * (1 - math.exp(-step / 12)), 4)


def log_steps(run, steps, ceiling: float, resumed: bool = False) -> None:
    for step in steps:
        metrics = {"timing_s/step": 30.0 + step % 3, "train/reward": level(step, ceiling) - 0.05}
        if step % 4 == 0:
            metrics[VAL] = level(step, ceiling)
            metrics["eval"] = {"acc": level(step, ceiling)}
            if step == 20 and ceiling == 0.6:
                metrics[VAL] = math.nan
            if step == 8:
                metrics["val/lengths"] = wandb.Histogram([10, 12, 12, 15, 20])
            if step == 12 and not resumed:  # one record longer than a 32 KiB block: split across blocks
                metrics.update({f"extra/m{k:04d}": k / 1500 for k in range(1500)})
            if resumed and step == 24:
                metrics[VAL] = 0.6
        run.log(metrics, step=step)


def main(out: Path) -> None:
    work = Path(tempfile.mkdtemp())
    try:
        settings = dict(project="scalerl-fixture", mode="offline", dir=str(work))
        run = wandb.init(name="grpo-a", id="grpoa001", **settings)
        log_steps(run, range(1, 41), 0.6)
        run.finish()
        wandb.teardown()  # W&B's service writes the file's end as it closes, after finish() returns
        run = wandb.init(name="grpo-b", id="grpob001", **settings)
        log_steps(run, range(1, 25), 0.7)
        run.finish()
        wandb.teardown()  # W&B's service writes the file's end as it closes, after finish() returns
        time.sleep(1.5)  # run directories are named by the second they start
        run = wandb.init(name="grpo-b", id="grpob001", resume="allow", **settings)
        log_steps(run, range(21, 41), 0.7, resumed=True)
        run.finish()
        wandb.teardown()  # W&B's service writes the file's end as it closes, after finish() returns
        with tarfile.open(out / "wandb_runs.tar.gz", "w:gz") as tar:
            for f in sorted((work / "wandb").glob("*/*.wandb")):
                if f.parent.name != "latest-run":
                    tar.add(f, arcname=f"wandb/{f.parent.name}/{f.name}")
            tar.add(work / "wandb" / "latest-run", arcname="wandb/latest-run")  # W&B's link to the last run
    finally:
        shutil.rmtree(work, ignore_errors=True)


def single(out: Path) -> None:
    """One run (``old-run``: 40 steps, the score every 4th) as ``wandb_<version>_run.wandb``: a file
    written by an older wandb (0.17.9, whose history records carry the step as ``_step`` only)."""
    work = Path(tempfile.mkdtemp())
    try:
        run = wandb.init(project="scalerl-fixture", name="old-run", mode="offline", dir=str(work))
        for step in range(1, 41):
            metrics = {"train/loss": 1.0 / step, "timing_s/step": 30.0}
            if step % 4 == 0:
                metrics["val/acc"] = level(step, 0.6)
                metrics["eval"] = {"acc": level(step, 0.6)}
            run.log(metrics, step=step)
        run.finish()
        wandb.teardown()  # W&B's service writes the file's end as it closes, after finish() returns
        f, = (work / "wandb").glob("offline-run-*/*.wandb")
        shutil.copy(f, out / f"wandb_{wandb.__version__.replace('.', '_')}_run.wandb")
    finally:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    # python make_wandb_runs.py DIR            -- wandb_runs.tar.gz (made with wandb 0.31.0)
    # python make_wandb_runs.py DIR --single   -- wandb_<version>_run.wandb (made with wandb 0.17.9)
    (single if "--single" in sys.argv else main)(Path(sys.argv[1] if len(sys.argv) > 1 else "."))
