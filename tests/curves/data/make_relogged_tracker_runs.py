"""Write the tracker runs of tests/curves/test_tracker_relogs.py with the real packages: a training that
logs a same-step repeat inside one attempt, as ``transformers``' W&B and SwanLab callbacks log (no step
passed: the tracker counts its calls; the trainer's step as ``train/global_step``).

    python make_relogged_tracker_runs.py OUT   # wandb 0.31.0, swanlab 0.10.3

Steps 1-12, a training row each (``train/loss``, ``train/step_time``), an evaluation row (``eval/acc``)
at every 4th step beside it, and at step 8 the evaluation logged twice (a second evaluation set under
the same name, or a loop re-evaluating the checkpoint): ``relogged_step.wandb`` (the W&B run file, offline)
and ``relogged_step.swanlab`` (the SwanLab run file, offline).
"""

import shutil
import sys
from pathlib import Path


def rows():
    for step in range(1, 13):
        yield {"train/global_step": step, "train/loss": round(1.0 / step, 6), "train/step_time": 2.0}
        if step % 4 == 0:
            yield {"train/global_step": step, "eval/acc": round(0.1 * step / 4, 6)}
        if step == 8:
            yield {"train/global_step": step, "eval/acc": 0.25}


def main(out: Path) -> None:
    import swanlab
    import wandb

    work = out / "work"
    run = wandb.init(project="relog", name="relogged-step", mode="offline", dir=str(work),
                     settings=wandb.Settings(silent=True))
    for row in rows():
        wandb.log(row)
    run.finish()
    wandb.teardown()  # (W&B's service writes the file's end as it closes the run's stream)
    shutil.copy(next(work.glob("wandb/offline-run-*/run-*.wandb")), out / "relogged_step.wandb")
    swanlab.init(project="relog", experiment_name="relogged-step", mode="offline", logdir=str(work / "swanlog"))
    for row in rows():
        swanlab.log(row)
    swanlab.finish()
    shutil.copy(next(work.glob("swanlog/run-*/run-*.swanlab")), out / "relogged_step.swanlab")
    shutil.rmtree(work)


if __name__ == "__main__":
    main(Path(sys.argv[1]))
