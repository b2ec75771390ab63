"""How long reading a large log takes, per format: the time to a forecast's input.

    python benchmarks/log_readers.py                 # default sizes
    python benchmarks/log_readers.py --runs 20 --steps 1000 --metrics 100

Each log is synthetic but shaped like the real thing: ``--runs`` runs of ``--steps`` steps, each
step logging ``--metrics`` training metrics and ``timing_s/step``, every 10th step the validation
score (verl's ``val-core/openai/gsm8k/reward/mean@1``). Formats: a long CSV (one row per step, a
``run`` column), a JSONL log, verl console logs (one file per run, Ray prefixes), printed-dict
console logs (one per run), SkyRL console logs (one per run, Ray prefixes), an MLflow SQLite database (the schema of the real store in
``tests/curves/data/mlflow_sqlite.db.gz``, filled with ``INSERT``s) and a ``wandb`` directory of W&B
run files (records made with wandb's own protobuf schema, framed as W&B frames them; needs wandb) and
a Trackio project database (its real schema, one JSON row per step); NeMo-RL console logs (one per
run: its fixed step block, ~25 lines, the validation's accuracy every 10th step; read with
``cum:timing/train/total_step_time`` and ``validation/accuracy``); and verl's and NeMo-RL's validation
dumps (``--dump-*``: a file of samples per validation). Printed per format: its size,
the seconds ``read_curves(path, "cum:timing_s/step", y)`` took (median of ``--repeats``), and the
curves read. For MLflow also the seconds to read every metric of the store (what the reader did
before it asked the store for the needed ones only).
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import shutil
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
import zlib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
Y = "val-core/openai/gsm8k/reward/mean@1"
X = "cum:timing_s/step"


def _score(run: int, step: int) -> float:
    return round(0.3 + (0.3 + 0.01 * run) * (1 - math.exp(-step / 300)), 4)


def _metrics(step: int, n: int) -> dict[str, float]:
    return {f"actor/m{k}": round((step * 7 + k) % 97 / 97, 4) for k in range(n)} | {"timing_s/step": 50.0}


def write_csv(out: Path, runs: int, steps: int, n: int) -> Path:
    path = out / "runs.csv"
    with open(path, "w") as f:
        f.write(",".join(["run", "step", *_metrics(0, n), Y]) + "\n")
        for r in range(runs):
            for s in range(1, steps + 1):
                m = _metrics(s, n)
                f.write(",".join([f"run{r}", str(s), *(str(v) for v in m.values()),
                                  str(_score(r, s)) if s % 10 == 0 else ""]) + "\n")
    return path


def write_jsonl(out: Path, runs: int, steps: int, n: int) -> Path:
    path = out / "runs.jsonl"
    with open(path, "w") as f:
        for r in range(runs):
            for s in range(1, steps + 1):
                row = {"run": f"run{r}", "step": s, **_metrics(s, n)}
                if s % 10 == 0:
                    row[Y] = _score(r, s)
                f.write(json.dumps(row) + "\n")
    return path


def write_verl(out: Path, runs: int, steps: int, n: int) -> list[Path]:
    paths = []
    for r in range(runs):
        path = out / f"verl-run{r}.log"
        with open(path, "w") as f:
            for s in range(1, steps + 1):
                m = _metrics(s, n)
                if s % 10 == 0:
                    m[Y] = _score(r, s)
                f.write(f"(TaskRunner pid=3165) step:{s} - " + " - ".join(f"{k}:{v}" for k, v in m.items()) + "\n")
        paths.append(path)
    return paths


def write_dicts(out: Path, runs: int, steps: int, n: int) -> list[Path]:
    paths = []
    for r in range(runs):
        path = out / f"trl-run{r}.log"
        with open(path, "w") as f:
            for s in range(1, steps + 1):
                f.write(str({k: f"{v:.4g}" for k, v in _metrics(s, n).items()}) + "\n")
                if s % 10 == 0:
                    f.write(str({Y: f"{_score(r, s):.4g}"}) + "\n")
        paths.append(path)
    return paths


def write_skyrl(out: Path, runs: int, steps: int, n: int) -> list[Path]:
    """SkyRL's console: a loguru ``Step N:`` line over the pprint of the metrics, floats as strings."""
    import pprint

    paths = []
    prefix = "\x1b[36m(skyrl_entrypoint pid=811)\x1b[0m "
    for r in range(runs):
        path = out / f"skyrl-run{r}.log"
        with open(path, "w") as f:
            for s in range(1, steps + 1):
                m = {k: f"{v:.4f}" for k, v in _metrics(s, n).items()}
                if s % 10 == 0:
                    m[Y] = f"{_score(r, s):.4f}"
                f.write(f"{prefix}2026-01-05 10:02:11.204 | INFO     | skyrl.train.utils.tracking:log:189 - Step {s}: \n")
                f.write("".join(f"{prefix}{line}\n" for line in pprint.pformat(m).split("\n")))
        paths.append(path)
    return paths


def write_nemo_rl(out: Path, runs: int, steps: int, n: int) -> list[Path]:
    """NeMo-RL's console: a ``Step N/M`` block per step, its sections' bullets (NeMo-RL prints a
    fixed set: ``n`` does not apply), a worker's line behind Ray's prefix, the validation every 10th."""
    paths = []
    for r in range(runs):
        path = out / f"nemo-rl-run{r}.log"
        with open(path, "w") as f:
            for s in range(1, steps + 1):
                f.write(f"\n{'=' * 25} Step {s}/{steps} {'=' * 25}\n▶ Preparing batch...\n"
                        "▶ Generating responses for batch of size 512...\n"
                        "(VllmGenerationWorker pid=4411) INFO 01-05 10:02:40 [metrics.py:481] Avg generation throughput: 8123.4 tokens/s\n"
                        "▶ Processing rewards...,\n▶ Computing advantages...\n▶ Computing logprobs...\n"
                        "▶ Preparing for training...\n▶ Training policy...\n")
                if s % 10 == 0:
                    f.write(f"▶ Starting validation at step {s}...\n\n📊 Validation Results:\n"
                            f"    • Accuracy: {_score(r, s):.4f}\n    • Average response length: 512.3 tokens\n"
                            "    • Samples processed: 1000\n\n  ⏱️  Validation Timing:\n    • Total validation time: 31.20s\n")
                f.write(f"\n📊 Training Results:\n  • Loss: 0.0123\n  • Generation KL Error: 0.0004\n"
                        f"  • Avg Reward: {_score(r, s):.4f}\n  • Mean Generation Length: 312.4000\n\n⏱️  Timing:\n"
                        "  • Total step time: 50.00s\n  • generation: 26.00s (52.0%)\n  • policy_training: 15.50s (31.0%)\n"
                        "  • logprob_inference: 6.00s (12.0%)\n\n🔍 Performance Metrics:\n  • Mean Total Tokens per Sample: 812.00\n")
        paths.append(path)
    return paths


def write_nemo_rl_dumps(out: Path, validations: int, samples: int, chars: int) -> Path:
    """NeMo-RL's ``val_data_step<N>.jsonl``: a line per sample, its message log and ``rewards``."""
    d = out / "logs" / "exp_001"
    d.mkdir(parents=True)
    text = "x" * chars
    for v in range(validations):
        with open(d / f"val_data_step{10 * v}.jsonl", "w") as f:
            for i in range(samples):
                log = [{"role": "user", "content": "What is 6 * 7?", "token_ids": "tensor([151644, 872])"},
                       {"role": "assistant", "content": text, "token_ids": "tensor([151644, 77091])"}]
                f.write(json.dumps({"content": [log], "rewards": [float((i * 7 + v) % 3 == 0)], "idx": i}) + "\n")
    return d


def write_mlflow(out: Path, runs: int, steps: int, n: int) -> Path:
    path = out / "mlruns.db"
    with gzip.open(ROOT / "tests" / "curves" / "data" / "mlflow_sqlite.db.gz", "rb") as src, open(path, "wb") as dst:
        shutil.copyfileobj(src, dst)
    key = Y.replace("@", "_at_")  # as verl's MLflow adapter logs it
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM metrics")
        db.execute("DELETE FROM runs")
        exp = db.execute("SELECT experiment_id FROM experiments LIMIT 1").fetchone()[0]
        for r in range(runs):
            rid = uuid.uuid4().hex
            db.execute("INSERT INTO runs (run_uuid, name, source_type, source_name, entry_point_name, user_id, status,"
                       " start_time, end_time, source_version, lifecycle_stage, artifact_uri, experiment_id)"
                       " VALUES (?, ?, 'LOCAL', '', '', 'u', 'FINISHED', ?, ?, '', 'active', '', ?)",
                       (rid, f"run{r}", r, r, exp))
            rows = []
            for s in range(1, steps + 1):
                rows += [(k, v, 1000 * s, rid, s, 0) for k, v in _metrics(s, n).items()]
                if s % 10 == 0:
                    rows.append((key, _score(r, s), 1000 * s, rid, s, 0))
            db.executemany("INSERT INTO metrics (key, value, timestamp, run_uuid, step, is_nan) VALUES (?, ?, ?, ?, ?, ?)",
                           rows)
    return path


def _wandb_file(records: list[bytes]) -> bytes:
    """W&B's run-file framing (the inverse of ``scalerl.curves.leveldb_log.records``)."""
    from scalerl.curves.leveldb_log import BLOCK, CHUNK_HEADER, FILE_HEADER, FIRST, FULL, LAST, MIDDLE
    from scalerl.curves.wandb_run_log import VERSION, WANDB

    out = bytearray(FILE_HEADER.pack(WANDB.ident, WANDB.magic, VERSION))
    for data in records:
        first = True
        while True:
            room = BLOCK - len(out) % BLOCK
            if room < CHUNK_HEADER.size:
                out += bytes(room)
                continue
            n = min(len(data), room - CHUNK_HEADER.size)
            piece, data = data[:n], data[n:]
            kind = (FULL if not data else FIRST) if first else (LAST if not data else MIDDLE)
            out += CHUNK_HEADER.pack(zlib.crc32(piece, zlib.crc32(bytes([kind]))), n, kind) + piece
            first = False
            if not data:
                break
    return bytes(out)


def write_wandb(out: Path, runs: int, steps: int, n: int) -> Path:
    """A ``wandb`` directory of run files, records made with wandb's own protobuf schema."""
    from wandb.proto import wandb_internal_pb2 as pb

    root = out / "wandb"
    for r in range(runs):
        rid = f"run{r:05d}"
        records = [pb.Record(run=pb.RunRecord(run_id=rid, display_name=f"run{r}")).SerializeToString()]
        for s in range(1, steps + 1):
            m = _metrics(s, n) | {"_step": s, "_runtime": 50.0 * s}
            if s % 10 == 0:
                m[Y] = _score(r, s)
            items = [pb.HistoryItem(nested_key=[k], value_json=json.dumps(v)) for k, v in m.items()]
            records.append(pb.Record(history=pb.HistoryRecord(item=items, step=pb.HistoryStep(num=s))).SerializeToString())
        run_dir = root / f"run-20261201_000000-{rid}"
        run_dir.mkdir(parents=True)
        (run_dir / f"run-{rid}.wandb").write_bytes(_wandb_file(records))
    return root


def write_trackio(out: Path, runs: int, steps: int, n: int) -> Path:
    """A Trackio project database: the real schema (trackio 0.43's, from the test fixture), one row
    per logged step (the metrics as JSON), as ``trackio.log`` writes it."""
    import tarfile

    with tarfile.open(ROOT / "tests" / "curves" / "data" / "trackio_runs.tar.gz") as tar:
        tar.extract("trackio/grpo-demo.db", out, filter="data")
    path = out / "trackio" / "grpo-demo.db"
    with sqlite3.connect(path) as db:
        db.execute("DELETE FROM metrics")
        for r in range(runs):
            rid = uuid.uuid4().hex
            rows = []
            for s in range(1, steps + 1):
                m = _metrics(s, n) | ({Y: _score(r, s)} if s % 10 == 0 else {})
                stamp = f"2026-01-01T{s // 3600:02d}:{s // 60 % 60:02d}:{s % 60:02d}+00:00"
                rows.append((rid, stamp, f"run{r}", s, json.dumps(m)))
            db.executemany("INSERT INTO metrics (run_id, timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?, ?)", rows)
    return path


def write_verl_dumps(out: Path, validations: int, samples: int, chars: int) -> Path:
    """verl's validation_data_dir: a <step>.jsonl per validation, one line per sample with its
    prompt and a completion of ``chars`` characters (what makes the files large)."""
    path = out / "val_generations"
    path.mkdir()
    text = ("Let me think step by step. " * (chars // 27 + 1))[:chars]
    for v in range(validations):
        step = 10 * v
        p = _score(0, step)
        with open(path / f"{step}.jsonl", "w") as f:
            for i in range(samples):
                ok = i < round(p * samples)
                f.write(json.dumps({"input": "Natalia sold clips to 48 of her friends ...", "output": text,
                                    "gts": "72", "score": 1.0 if ok else 0.0, "step": step, "acc": ok,
                                    "pred": "72"}) + "\n")
    return path


def timed(fn, repeats: int) -> tuple[float, object]:
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--runs", type=int, default=20)
    p.add_argument("--steps", type=int, default=1000)
    p.add_argument("--metrics", type=int, default=100, help="training metrics per step besides timing_s/step")
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--dump-validations", type=int, default=100, help="verl validation dumps: files (validations)")
    p.add_argument("--dump-samples", type=int, default=1000, help="verl validation dumps: samples per file")
    p.add_argument("--dump-chars", type=int, default=2000, help="verl validation dumps: characters per completion")
    a = p.parse_args(argv)
    sys.path.insert(0, str(ROOT / "src"))
    from scalerl.curves import read_curves
    from scalerl.curves.mlflow_log import metric_keys, read_mlflow_rows

    work = Path(tempfile.mkdtemp(prefix="scalerl-readers-"))
    print(f"{a.runs} runs x {a.steps} steps x {a.metrics + 1} metrics a step, the score every 10th step; "
          f"read_curves(path, {X!r}, y), median of {a.repeats}", flush=True)
    print(f"{'format':12s} {'files':>5s} {'MB':>7s} {'seconds':>8s} {'runs':>5s} {'points':>7s}")
    logs = {
        "csv": [write_csv(work, a.runs, a.steps, a.metrics)],
        "jsonl": [write_jsonl(work, a.runs, a.steps, a.metrics)],
        "verl": write_verl(work, a.runs, a.steps, a.metrics),
        "dict-lines": write_dicts(work, a.runs, a.steps, a.metrics),
        "skyrl": write_skyrl(work, a.runs, a.steps, a.metrics),
        "mlflow": [write_mlflow(work, a.runs, a.steps, a.metrics)],
        "wandb-run": [write_wandb(work, a.runs, a.steps, a.metrics)],
        "trackio": [write_trackio(work, a.runs, a.steps, a.metrics)],
        "nemo-rl": write_nemo_rl(work, a.runs, a.steps, a.metrics),
    }
    axes = {"nemo-rl": ("cum:timing/train/total_step_time", "validation/accuracy")}
    for fmt, paths in logs.items():
        x, y = axes.get(fmt, (X, Y))
        seconds, curves = timed(lambda: [c for path in paths for c in read_curves(path, x, y)], a.repeats)
        mb = sum(f.stat().st_size for path in paths for f in ([path] if path.is_file() else path.rglob("*.wandb"))) / 1e6
        print(f"{fmt:12s} {len(paths):>5d} {mb:>7.1f} {seconds:>8.2f} {len(curves):>5d} {sum(len(c) for c in curves):>7d}",
              flush=True)
    db = logs["mlflow"][0]
    seconds, (rows, _, _) = timed(lambda: read_mlflow_rows(db, metric_keys(db)), 1)
    print(f"mlflow, every metric of the store read (before): {seconds:.2f} s ({len(rows)} rows)")
    dumps = write_verl_dumps(work, a.dump_validations, a.dump_samples, a.dump_chars)
    seconds, (curve,) = timed(lambda: read_curves(dumps, "step", "score"), a.repeats)
    mb = sum(f.stat().st_size for f in dumps.iterdir()) / 1e6
    print(f"verl validation dumps: {a.dump_validations} files x {a.dump_samples} samples x {a.dump_chars}-character "
          f"completions, {mb:.0f} MB: {seconds:.2f} s ({len(curve)} points, x=step, y=score)")
    dumps = write_nemo_rl_dumps(work, a.dump_validations, a.dump_samples, a.dump_chars)
    seconds, (curve,) = timed(lambda: read_curves(dumps, "step", "validation/accuracy"), a.repeats)
    mb = sum(f.stat().st_size for f in dumps.iterdir()) / 1e6
    print(f"NeMo-RL validation dumps: {a.dump_validations} files x {a.dump_samples} samples x {a.dump_chars}-character "
          f"completions, {mb:.0f} MB: {seconds:.2f} s ({len(curve)} points, x=step, y=validation/accuracy)")
    shutil.rmtree(work)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
