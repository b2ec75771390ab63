"""Logs of many rows (review bq): a value at every step of a long run, a sparse evaluation among per-step values."""

from __future__ import annotations

import csv
import json
import math
import os
import resource
import subprocess
import sys
from pathlib import Path

from scalerl.cli import main
from scalerl.curves.io import log_column_rows, read_curves

SRC = Path(__file__).resolve().parents[2] / "src"


def _sigmoid(step: int, n: int) -> float:
    c_mid = 0.25 * n
    return 0.30 + 0.32 / (1.0 + (c_mid / step) ** 1.4) if step else 0.30


def _write_csv(path: Path, n: int, eval_every: int) -> None:
    """A trainer's CSV: a row per step, a per-step reward on every row, the evaluation every
    ``eval_every`` steps (an empty cell on the other rows: not logged there)."""
    with open(path, "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["step", "flops", "reward", "eval/accuracy"])
        for s in range(n + 1):
            noise = 0.01 * math.sin(7.3 * s)  # deterministic "noise"
            acc = f"{_sigmoid(s, n) + noise:.4f}" if s % eval_every == 0 else ""
            w.writerow([s, s * 2.4e10, f"{0.1 * math.cos(s):.4f}", acc])


def test_csv_listing_counts_rows_of_each_metric_like_jsonl(tmp_path, capsys):
    """docs/forecasting.md ("Choosing a run, naming a column"): "Where the log's rows tell it (CSV, JSON
    lines, the consoles) and its metrics are not all logged as often, each metric is listed with the
    number of rows that log it". The JSON-lines reader does (``'reward' (1000)``, ``'eval/accuracy' (11)``);
    the same table as a CSV lists the names alone -- a 100k-row CSV of per-step values with an
    evaluation every 100 steps gives the user nothing to tell the evaluation by."""
    log = tmp_path / "train.csv"
    _write_csv(log, 1000, 100)
    code = main(["fit", str(log)])
    err = capsys.readouterr().err
    assert code == 2, err
    assert "'eval/accuracy' (11)" in err and "'reward' (1001)" in err, err


_LIMIT = 1_500_000_000  # bytes of address space: a small container / a busy shared machine


def _limit_memory() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (_LIMIT, _LIMIT))


def test_fit_of_a_10k_point_log_fits_in_1_5_gb(tmp_path):
    """``scalerl fit`` on a log with a value at every one of 10,000 steps (a per-step reward or pass
    rate, as LLaMA-Factory's and DeepSpeed-Chat's logs are read in the docs) peaks at ~1.9 GB RSS;
    100,000 steps at ~18 GB (measured with /usr/bin/time -v): ``refine_many`` (solver.py) refits all
    1,000 replicates at once on (1000, n) arrays. Under a 1.5 GB address-space limit the 10k-row log
    (300 KB on disk) stops with ``numpy._core._exceptions._ArrayMemoryError`` and a traceback; the
    user expects the fit (or at most a one-line error)."""
    log = tmp_path / "every_step.csv"
    _write_csv(log, 10_000, 1)
    env = {**os.environ, "PYTHONPATH": str(SRC), "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1"}
    proc = subprocess.run([sys.executable, "-m", "scalerl", "fit", str(log), "--x", "flops", "--y", "eval/accuracy"],
                          capture_output=True, text=True, env=env, preexec_fn=_limit_memory, timeout=120)
    assert "Traceback" not in proc.stderr, proc.stderr[-600:]
    assert proc.returncode == 0, proc.stderr[-600:]


# Review bt
def test_csv_listing_does_not_count_nan_cells_as_logged(tmp_path):
    """cells.py: a value counts as logged only where it is one -- not 'nan', as ``csv.writer`` of full rows
    writes what a row did not log. The JSON-lines listing of the same log counts 10."""
    p = tmp_path / "log.csv"
    with open(p, "w") as f:
        f.write("step,reward,val/acc\n")
        for s in range(1, 101):
            f.write(f"{s},{s / 100:.3f},{0.5 + s / 1000 if s % 10 == 0 else 'nan'}\n")
    rows = log_column_rows(p)
    assert rows["reward"] == 100
    assert rows["val/acc"] == 10, rows


# Review bv
def test_the_json_lines_listing_counts_only_logged_values_as_the_csv_one_does(tmp_path):
    csv_log, jsonl_log = tmp_path / "log.csv", tmp_path / "log.jsonl"
    rows = [{"step": s, "reward": s / 100, "val/acc": 0.5 + s / 1000 if s % 10 == 0 else "nan"}
            for s in range(1, 101)]
    csv_log.write_text("step,reward,val/acc\n" + "".join(f"{r['step']},{r['reward']},{r['val/acc']}\n" for r in rows))
    jsonl_log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert log_column_rows(csv_log)["val/acc"] == 10
    assert len(read_curves(jsonl_log, "step", "val/acc")[0].x) == 10  # the read takes 10 evaluations
    assert log_column_rows(jsonl_log)["val/acc"] == 10, log_column_rows(jsonl_log)
