"""Write the ClearML fixture of tests/curves/test_clearml_log.py with ClearML's own SDK in offline
mode (``Task.set_offline(True)``, as ``CLEARML_OFFLINE_MODE=1`` does for verl's
``trainer.logger=['clearml']``), reporting as verl's ClearML logger does: each metric key split at its
first ``/`` into the title and the series (``val-core`` / ``openai/gsm8k/reward/mean@1``), at the
iteration of the training step.

It is fed the run of ``examples/data/real_rl_curves.csv``
(verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538): its evaluation before training at step 0,
the others at their steps, and ``actor/pg_loss`` and ``timing_s/step`` at every step.

    pip install --target /tmp/clearml_pkg clearml
    PYTHONPATH=/tmp/clearml_pkg python make_clearml_sessions.py OUT_DIR

Writes ``OUT_DIR/clearml_offline.tar.gz``: an ``offline`` directory (what ClearML keeps under
``$CLEARML_CACHE_DIR/offline``) with three sessions, each a directory and its ``.zip``:

* task ``verl_grpo/qwen-gsm8k``: the whole run (steps 0-430);
* task ``verl_grpo/qwen-gsm8k-resumed``, two sessions: the first killed after step 105, the second
  resumed from the step-99 checkpoint (it evaluates that checkpoint first, at step 99, as verl's
  ``val_before_train`` does) and training steps 100-200.
"""

import csv
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
ROOT = Path(__file__).resolve().parents[3]


def scores() -> dict[int, float]:
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv", newline="") as f:
        return {max(int(r["step"]), 0): float(r["val_score"]) for r in csv.DictReader(f) if r["run"] == RUN}


def session(project: str, name: str, steps: range, evals: dict[int, float], first_eval: int | None = None) -> None:
    from clearml import Task

    task = Task.init(project_name=project, task_name=name, output_uri=False, auto_connect_frameworks=False,
                     auto_resource_monitoring=False, auto_connect_streams=False, reuse_last_task_id=False)
    logger = task.get_logger()

    def log(data: dict, step: int) -> None:  # verl's ClearML logger: title / series from the key's first '/'
        for key, value in data.items():
            title, series = key.split("/", 1)
            logger.report_scalar(title=title, series=series, value=value, iteration=step)

    if first_eval is not None:
        log({"val-core/openai/gsm8k/reward/mean@1": evals[first_eval]}, first_eval)
    for step in steps:
        data = {"actor/pg_loss": round(0.05 / (1 + step), 6), "timing_s/step": 41.5}
        if step in evals:
            data["val-core/openai/gsm8k/reward/mean@1"] = evals[step]
        log(data, step)
    task.close()


def main(out: str) -> None:
    cache = Path(tempfile.mkdtemp(prefix="clearml-"))
    os.environ["CLEARML_CACHE_DIR"] = str(cache)
    from clearml import Task

    Task.set_offline(offline_mode=True)
    evals = scores()
    last = max(evals)
    session("verl_grpo", "qwen-gsm8k", range(0, last + 1), evals)
    session("verl_grpo", "qwen-gsm8k-resumed", range(0, 106), evals)
    session("verl_grpo", "qwen-gsm8k-resumed", range(100, 201), evals, first_eval=99)
    Path(out).mkdir(parents=True, exist_ok=True)
    with tarfile.open(Path(out) / "clearml_offline.tar.gz", "w:gz") as tar:
        tar.add(cache / "offline", arcname="offline")
    shutil.rmtree(cache)


if __name__ == "__main__":
    main(sys.argv[1])
