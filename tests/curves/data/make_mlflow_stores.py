"""Make ``mlflow_sqlite.db.gz`` and ``mlflow_filestore.tar.gz``: real MLflow tracking stores, as
verl's ``trainer.logger=['mlflow']`` leaves them (``sqlite:////tmp/mlruns.db`` by default), read
by ``tests/curves/test_framework_logs.py``.

Run it with MLflow installed (made with mlflow-skinny 3.17.2, sqlalchemy, alembic):

    python tests/curves/data/make_mlflow_stores.py tests/curves/data

Each store holds the experiment ``gsm8k`` with runs ``grpo-a`` and ``grpo-b`` (30 steps; each step
logs ``timing_s/step`` and the training reward; every 2nd step the validation score, whose
``@`` verl's adapter writes as ``_at_``), a deleted run ``abandoned``, a NaN at ``grpo-b``'s
step 10, and ``grpo-a`` resumed from step 24: steps 25-30 logged again (``timing_s/step`` 60; the
step-30 evaluation 0.59, where the first attempt logged 0.5851).
"""

import gzip
import math
import os
import shutil
import sys
import tarfile
import tempfile
from pathlib import Path

import mlflow

VAL = "val-core/openai/gsm8k/reward/mean_at_1"


def fill(uri: str) -> None:
    mlflow.set_tracking_uri(uri)
    exp = mlflow.set_experiment("gsm8k")
    for name, ceiling in (("grpo-a", 0.6), ("grpo-b", 0.7)):
        with mlflow.start_run(experiment_id=exp.experiment_id, run_name=name):
            for step in range(1, 31):
                level = 0.3 + (ceiling - 0.3) * (1 - math.exp(-step / 10))
                metrics = {"timing_s/step": 50.0 + step % 3, "critic/score/mean": level - 0.05}
                if step % 2 == 0:
                    metrics[VAL] = round(level, 4)
                if name == "grpo-b" and step == 10:
                    metrics[VAL] = math.nan
                mlflow.log_metrics(metrics, step=step)
            if name == "grpo-a":  # resumed from step 24's checkpoint: steps 25-30 logged again
                for step in range(25, 31):
                    again = {"timing_s/step": 60.0}
                    if step == 30:
                        again[VAL] = 0.59
                    mlflow.log_metrics(again, step=step)
    with mlflow.start_run(experiment_id=exp.experiment_id, run_name="abandoned") as run:
        mlflow.log_metrics({VAL: 0.9, "timing_s/step": 1.0}, step=1)
    mlflow.delete_run(run.info.run_id)


def main(out: Path) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        fill(f"sqlite:///{tmp / 'mlruns.db'}")
        with open(tmp / "mlruns.db", "rb") as src, gzip.open(out / "mlflow_sqlite.db.gz", "wb") as dst:
            shutil.copyfileobj(src, dst)
        os.environ["MLFLOW_ALLOW_FILE_STORE"] = "true"
        fill(f"file://{tmp / 'mlruns'}")
        with tarfile.open(out / "mlflow_filestore.tar.gz", "w:gz") as tar:
            tar.add(tmp / "mlruns", arcname="mlruns")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
