"""The tracker readers (ClearML, Trackio, MLflow) on stores laid out as the real tools write them (the
framework file that shows the format is named in each test; review dt)."""

import json
import sqlite3

import numpy as np

from scalerl.curves.io import read_curves
from scalerl.errors import InputError

# --------------------------------------------------------------------------------------------- ClearML

HF_TASK = "HuggingFace Transformers/Trainer"


def _clearml_hf_session(root, task_id, steps, t0_ms):
    """An offline session as transformers' ClearMLCallback leaves it (``CLEARML_OFFLINE_MODE=1``):
    ``metrics.jsonl`` holds one JSON array of events per flush
    (clearml/backend_interface/metrics/interface.py, ``f.write(json.dumps(requests)+'\\n')``), each
    scalar ``{"timestamp", "type": "training_stats_scalar", "task", "iter", "metric", "variant",
    "value"}``. The callback reports ``train/*`` and ``eval/*`` at ``state.global_step`` and the
    Trainer's ``epoch`` with ``report_single_value`` (transformers/integrations/integration_utils.py,
    ``single_value_scalars``), which is ``report_scalar(title="Summary", ..., iteration=-(2**31))``
    (clearml/logger.py)."""
    d = root / task_id
    d.mkdir(parents=True)
    t = [t0_ms]

    def ev(it, title, series, value):
        t[0] += 1000
        return {"timestamp": t[0], "type": "training_stats_scalar", "task": task_id, "iter": it,
                "metric": title, "variant": series, "value": value, "method": "get"}

    lines = []
    for step in steps:
        lines.append([ev(step, "train", "loss", 1.0 / step), ev(-(2 ** 31), "Summary", "epoch", step / 80)])
        if step % 20 == 0:
            lines.append([ev(step, "eval", "accuracy", 0.3 + step / 200),
                          ev(-(2 ** 31), "Summary", "epoch", step / 80)])
    (d / "metrics.jsonl").write_text("".join(json.dumps(batch) + "\n" for batch in lines))
    (d / "task.json").write_text(json.dumps({"id": task_id, "name": "Trainer",
                                             "project_name": "HuggingFace Transformers", "status": "closed"}))
    return d


def test_clearml_hf_trainer_session_resumed_from_a_checkpoint_is_joined(tmp_path):
    offline = tmp_path / "offline"
    # Trained steps 10-50, killed; resumed from checkpoint-30 in a new offline session: steps 40-80.
    _clearml_hf_session(offline, "offline-aaaa", range(10, 60, 10), 1796177086000)
    _clearml_hf_session(offline, "offline-bbbb", range(40, 90, 10), 1796177086000 + 10 ** 6)
    curves = read_curves(offline, "step", "eval/accuracy")
    # As a verl session resumed the same way is read (test_clearml_log.py): one run, joined.
    assert [c.name for c in curves] == [HF_TASK]
    assert curves[0].x.tolist() == [20, 40, 60, 80]


def test_clearml_single_values_are_not_said_to_be_resumes(tmp_path):
    session = _clearml_hf_session(tmp_path / "offline", "offline-cccc", range(10, 90, 10), 1796177086000)
    curve, = read_curves(session, "step", "eval/accuracy")
    assert curve.x.tolist() == [20, 40, 60, 80]
    # One training, never resumed: the notes must not say "resumed from a checkpoint 15 time(s)".
    assert not [n for n in curve.notes if "resumed" in n], curve.notes


# ---------------------------------------------------------------------------------------------- Trackio


def test_trackio_space_dataset_traces_sidecar_is_not_a_project(tmp_path):
    """A Trackio Space's dataset: ``export_to_parquet`` writes ``<project>.parquet`` (the metrics) and
    the sidecars ``<project>_system.parquet``, ``<project>_configs.parquet`` and
    ``<project>_traces.parquet`` (the ``traces`` table: id, run_id, timestamp, run_name, step, key,
    trace_index, messages, ...), all committed (trackio/sqlite_storage.py, ``export_to_parquet`` and
    ``get_scheduler``'s allow_patterns); trackio's own ``import_from_parquet`` skips the sidecars."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    rid = "9997a1e0f70a48d681a8df043fadf805"
    metrics = [{"id": i, "run_id": rid, "timestamp": f"2026-05-01T10:{i:02d}:00+00:00", "run_name": "grpo",
                "step": i, "log_id": f"log{i}", "space_id": None, "train/reward": 0.05 * i,
                "train/global_step": 10 * i} for i in range(1, 11)]
    traces = [{"id": f"{rid}:log{i}:completions:0", "run_id": rid, "timestamp": f"2026-05-01T10:{i:02d}:00+00:00",
               "run_name": "grpo", "step": i, "key": "completions", "trace_index": 0,
               "messages": '[{"role": "user", "content": "2+2?"}]', "metadata": "{}", "search_text": "2+2?",
               "log_id": f"log{i}", "space_id": None} for i in (1, 6)]
    system = [{"id": 1, "run_id": rid, "timestamp": "2026-05-01T10:01:00+00:00", "run_name": "grpo",
               "gpu/0/utilization": 90.0, "log_id": "s1", "space_id": None}]
    pq.write_table(pa.Table.from_pylist(metrics), tmp_path / "proj.parquet")
    pq.write_table(pa.Table.from_pylist(traces), tmp_path / "proj_traces.parquet")
    pq.write_table(pa.Table.from_pylist(system), tmp_path / "proj_system.parquet")

    alone, = read_curves(tmp_path / "proj.parquet", "train/global_step", "train/reward")
    curves = read_curves(tmp_path, "train/global_step", "train/reward")
    assert [c.name for c in curves] == [alone.name] == ["grpo"]
    assert curves[0].left_out == ()


def test_trackio_run_resumed_after_upgrading_trackio_reads(tmp_path):
    """trackio < 0.17 wrote metric timestamps as ``datetime.now().isoformat()`` (naive, local time),
    0.17 on ``datetime.now(timezone.utc).isoformat()`` (trackio/sqlite_storage.py, ``bulk_log``, at
    the tags trackio@0.16.0 and trackio@0.17.0); a pre-0.24 database keeps its schema (no run_id
    column: ``init_db`` only adds log_id / space_id), so a run resumed (``resume="allow"``) after
    upgrading trackio holds both kinds in one run."""
    db = sqlite3.connect(tmp_path / "proj.db")
    db.execute("CREATE TABLE metrics (id INTEGER PRIMARY KEY AUTOINCREMENT, timestamp TEXT NOT NULL, "
               "run_name TEXT NOT NULL, step INTEGER NOT NULL, metrics TEXT NOT NULL, log_id TEXT, space_id TEXT)")
    db.execute("CREATE TABLE configs (id INTEGER PRIMARY KEY AUTOINCREMENT, run_name TEXT NOT NULL, "
               "config TEXT NOT NULL, created_at TEXT NOT NULL, UNIQUE(run_name))")
    for s in range(20):
        stamp = f"2026-01-05T10:{s:02d}:00.000001" if s < 10 else f"2026-01-06T09:{s:02d}:00.000001+00:00"
        db.execute("INSERT INTO metrics (timestamp, run_name, step, metrics) VALUES (?, ?, ?, ?)",
                   (stamp, "run-a", s, json.dumps({"eval/reward": round(0.1 + 0.02 * s, 4)})))
    db.commit()
    db.close()
    try:
        curve, = read_curves(tmp_path / "proj.db", "step", "eval/reward")
    except InputError:
        return  # a one-line error saying what is wrong would do too; a traceback does not
    assert curve.x.tolist() == list(range(20))


# ----------------------------------------------------------------------------------------------- MLflow

MLFLOW_SCHEMA = """
CREATE TABLE runs (run_uuid VARCHAR(32) NOT NULL PRIMARY KEY, name VARCHAR(250), source_type VARCHAR(20),
    source_name VARCHAR(500), entry_point_name VARCHAR(50), user_id VARCHAR(256), status VARCHAR(9),
    start_time BIGINT, end_time BIGINT, source_version VARCHAR(50), lifecycle_stage VARCHAR(20),
    artifact_uri VARCHAR(200), experiment_id INTEGER, deleted_time BIGINT);
CREATE TABLE metrics ("key" VARCHAR(250) NOT NULL, value FLOAT NOT NULL, timestamp BIGINT NOT NULL,
    run_uuid VARCHAR(32) NOT NULL, step BIGINT DEFAULT '0' NOT NULL, is_nan BOOLEAN DEFAULT '0' NOT NULL,
    CONSTRAINT metric_pk PRIMARY KEY ("key", timestamp, step, run_uuid, value, is_nan));
CREATE TABLE tags ("key" VARCHAR(250) NOT NULL, value VARCHAR(8000), run_uuid VARCHAR(32) NOT NULL,
    CONSTRAINT tag_pk PRIMARY KEY ("key", run_uuid));
"""
#: What MLflow's SQL store writes for +inf (mlflow/store/tracking/sqlalchemy_store.py,
#: ``sanitize_metric_value``: "Sql can not represent Infs => We replace +/- Inf with max/min 64b float").
MLFLOW_INF = 1.7976931348623157e308
T0 = 1796139689000


def _mlflow_db(path):
    db = sqlite3.connect(path)
    db.executescript(MLFLOW_SCHEMA)
    return db


def _mlflow_run(db, rid, name, start):
    db.execute("INSERT INTO runs VALUES (?, ?, 'LOCAL', '', '', 'u', 'FINISHED', ?, NULL, '', 'active', '', 1, NULL)",
               (rid, name, start))


def _metric(db, rid, key, value, ts, step):
    db.execute("INSERT INTO metrics VALUES (?, ?, ?, ?, ?, 0)", (key, value, ts, rid, step))


def _system_metrics(db, rid, start, samples):
    """MLflow's system metrics monitor (``MLFLOW_ENABLE_SYSTEM_METRICS_LOGGING=true``): every 10 s, at a
    step counter of its own that starts at 0 for a new run (mlflow/system_metrics/
    system_metrics_monitor.py: ``self._logging_step = ... else 0``, ``record_metrics(metrics,
    self._logging_step)``)."""
    for k in range(samples):
        _metric(db, rid, "system/cpu_utilization_percentage", 50.0, start + k * 10_000, k)


def test_mlflow_sqlite_infinity_is_dropped_like_nan(tmp_path):
    db = _mlflow_db(tmp_path / "mlruns.db")
    rid = "a" * 32
    _mlflow_run(db, rid, "grpo", T0)
    for s in range(1, 11):
        _metric(db, rid, "val/acc", MLFLOW_INF if s == 5 else round(0.3 + 0.03 * s, 4), T0 + s * 60_000, s)
    db.commit()
    db.close()
    curve, = read_curves(tmp_path / "mlruns.db", "step", "val/acc")
    assert curve.x.tolist() == [1, 2, 3, 4, 6, 7, 8, 9, 10]
    assert curve.dropped == 1


def test_mlflow_resumed_run_with_system_metrics_is_joined(tmp_path):
    db = _mlflow_db(tmp_path / "mlruns.db")
    a, b = "a" * 32, "b" * 32
    # 'grpo' evaluated at steps 10-30, killed; resumed from its step-30 checkpoint into a new run 'grpo'
    # (a Trainer's resume), steps 30-60; both with system metrics on.
    _mlflow_run(db, a, "grpo", T0)
    for s in (10, 20, 30):
        _metric(db, a, "eval/accuracy", round(0.3 + 0.01 * s, 4), T0 + s * 60_000, s)
    _system_metrics(db, a, T0, 200)
    later = T0 + 40 * 60_000
    _mlflow_run(db, b, "grpo", later)
    for s in (30, 40, 50, 60):
        _metric(db, b, "eval/accuracy", round(0.3 + 0.01 * s, 4), later + s * 60_000, s)
    _system_metrics(db, b, later, 240)
    db.commit()
    db.close()
    curves = read_curves(tmp_path / "mlruns.db", "step", "eval/accuracy")
    # Without the system metrics this store reads as one joined run 'grpo' (steps 10-60).
    assert [c.name for c in curves] == ["grpo"]
    assert curves[0].x.tolist() == [10, 20, 30, 40, 50, 60]


def test_mlflow_wall_time_is_not_taken_from_system_metrics_steps(tmp_path):
    db = _mlflow_db(tmp_path / "mlruns.db")
    rid = "c" * 32
    _mlflow_run(db, rid, "sft", T0)
    for s in range(0, 101, 10):  # a step every 2 s, evaluated every 10 steps
        _metric(db, rid, "eval/accuracy", round(0.3 + 0.003 * s, 4), T0 + s * 2_000, s)
    _system_metrics(db, rid, T0, 25)  # 240 s of system metrics, at steps 0-24
    db.commit()
    db.close()
    curve, = read_curves(tmp_path / "mlruns.db", "wall_time", "eval/accuracy")
    assert np.allclose(curve.x, [s * 2 / 3600 for s in range(0, 101, 10)])


def test_mlflow_hf_epoch_logged_with_train_and_eval_is_not_called_a_resume(tmp_path):
    """transformers' MLflowCallback.on_log logs every number of the Trainer's log dict at
    ``step=state.global_step`` (transformers/integrations/integration_utils.py); the Trainer puts
    ``epoch`` in its training log and in its evaluation log of the same step, with the same value."""
    db = _mlflow_db(tmp_path / "mlruns.db")
    rid = "d" * 32
    _mlflow_run(db, rid, "trainer_output", T0)
    for s in range(10, 110, 10):
        t = T0 + s * 6_000
        _metric(db, rid, "loss", 1 / s, t, s)
        _metric(db, rid, "epoch", s / 100, t, s)
        if s % 20 == 0:
            _metric(db, rid, "eval_accuracy", 0.3 + s / 500, t + 3_000, s)
            _metric(db, rid, "epoch", s / 100, t + 3_000, s)
    db.commit()
    db.close()
    curve, = read_curves(tmp_path / "mlruns.db", "wall_time", "eval_accuracy")
    assert len(curve.x) == 5
    assert not [n for n in curve.notes if "resumed" in n], curve.notes
