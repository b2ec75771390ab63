"""Write the verl file-logger fixtures of tests/curves/test_framework_logs.py with verl's own
``FileLogger`` (``verl/utils/tracking.py`` of the verl wheel, loaded on its own: the package's
__init__ needs GPU libraries), fed the run of ``examples/data/real_rl_curves.csv``
(verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538: its validation scores at their steps,
and per-step seconds spread evenly between two validations, as ``timing_s/step``):

    python make_verl_file_logs.py TRACKING_PY OUT_DIR     # verl 0.9.1's tracking.py (orjson)

* ``verl_file_logger.jsonl`` -- the whole run: step 0 holds the evaluation before training (as
  verl logs it), steps 1-... a training metric each (``timing_s/step``, ``actor/pg_loss``, a NaN
  ``actor/grad_norm`` at step 5, which orjson writes as null) and, every 10th, the validation score;
* ``verl_file_logger_resumed.jsonl`` -- the file of the same run resumed from its step-199
  checkpoint: verl opens the file anew (``"wb"``), so it begins with the checkpoint's evaluation at
  step 199, then steps 200-...
"""

import csv
import importlib.util
import math
import os
import sys
from pathlib import Path

RUN = "verl-data__Qwen2.5-0.5B-bsz256_2-prompt512-resp256-0.538"
VAL = "val-core/openai/gsm8k/reward/mean@1"
ROOT = Path(__file__).resolve().parents[3]


def tracking(path: str):
    spec = importlib.util.spec_from_file_location("verl_tracking", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def points() -> list[tuple[int, float, float]]:
    with open(ROOT / "examples" / "data" / "real_rl_curves.csv") as f:
        rows = [r for r in csv.DictReader(f) if r["run"] == RUN]
    return [(max(int(r["step"]), 0), float(r["cum_wall_hours"]), float(r["val_score"])) for r in rows]


def write(logger_cls, out: Path, name: str, start: int) -> None:
    os.environ["VERL_FILE_LOGGER_PATH"] = str(out / name)
    logger = logger_cls("gsm8k", name)
    pts = points()
    val = {s: v for s, _, v in pts}
    if start in val:
        logger.log({VAL: val[start]}, step=start)  # the evaluation before (resumed) training
    for (s0, h0, _), (s1, h1, _) in zip(pts, pts[1:]):
        per_step = 3600.0 * (h1 - h0) / (s1 - s0)
        for step in range(s0 + 1, s1 + 1):
            if step <= start:
                continue
            data = {"timing_s/step": round(per_step, 3), "actor/pg_loss": round(0.01 * math.sin(step), 5),
                    "actor/grad_norm": float("nan") if step == 5 else 0.5}
            if step == s1:
                data[VAL] = val[s1]
            logger.log(data, step=step)
    logger.finish()


if __name__ == "__main__":
    module = tracking(sys.argv[1])
    out = Path(sys.argv[2])
    write(module.FileLogger, out, "verl_file_logger.jsonl", 0)
    write(module.FileLogger, out, "verl_file_logger_resumed.jsonl", 199)
