"""Write the Trackio fixtures of tests/curves/test_trackio_log.py with the real trackio package
(``trackio_runs.tar.gz`` holds these two databases and the TRL run of make_trl_logged_run.py in
``trackio/``, and in ``trackio-parquet/`` the Parquet export of ``grpo-demo.db`` and ``trl-grpo.db``
that a Trackio Space keeps in its dataset, written by trackio 0.43.0's own exporter:
``SQLiteStorage._flatten_and_write_parquet(db, "metrics", "metrics", parquet)``, with pyarrow 26).

    TRACKIO_DIR=OUT python make_trackio_runs.py new   # trackio 0.43.0 (pip install trackio==0.43.0)
    TRACKIO_DIR=OUT python make_trackio_runs.py old   # trackio 0.20.0: the schema before run ids (< 0.24)

Project ``grpo-demo`` (new): ``run-a`` logs steps 0-29 (eval/reward every 5 steps, a NaN training
loss at step 7, a NaN reward at step 15, a nested dict), then is resumed (``resume="allow"``) and
logs steps 25-39 again with other values; ``run-b`` logs 10 rows without a step (trackio counts);
``run-c`` logs only training metrics. Project ``old-project`` (old): ``old-run``, steps 0-19.
"""

import math
import sys

import trackio


def reward(step: int, shift: float = 0.0) -> float:
    return round(0.2 + 0.4 / (1 + math.exp(-(step - 15) / 5)) + shift, 6)


def new() -> None:
    trackio.init(project="grpo-demo", name="run-a", config={"lr": 1e-6})
    for step in range(30):
        m = {"train/loss": 1.0 / (step + 1), "train/num_tokens": 1000 * (step + 1)}
        if step % 5 == 0:
            m["eval/reward"] = float("nan") if step == 15 else reward(step)
            m["eval/nested"] = {"acc": reward(step) / 2}
        if step == 7:
            m["train/loss"] = float("nan")
        trackio.log(m, step=step)
    trackio.finish()
    # Resumed from a checkpoint at step 25: steps 25-29 logged again (other values), then on to 39.
    trackio.init(project="grpo-demo", name="run-a", resume="allow")
    for step in range(25, 40):
        m = {"train/loss": 1.0 / (step + 1), "train/num_tokens": 1000 * (step + 1)}
        if step % 5 == 0:
            m["eval/reward"] = reward(step, shift=0.01)
        trackio.log(m, step=step)
    trackio.finish()
    trackio.init(project="grpo-demo", name="run-b")
    for i in range(10):
        trackio.log({"eval/reward": round(0.1 + 0.03 * i, 6), "train/num_tokens": 500 * (i + 1)})
    trackio.finish()
    trackio.init(project="grpo-demo", name="run-c")
    for i in range(5):
        trackio.log({"train/loss": 1.0 / (i + 1)}, step=i)
    trackio.finish()


def old() -> None:
    trackio.init(project="old-project", name="old-run")
    for step in range(20):
        trackio.log({"eval/reward": reward(step), "train/num_tokens": 800 * (step + 1)}, step=step)
    trackio.finish()


if __name__ == "__main__":
    {"new": new, "old": old}[sys.argv[1]]()
