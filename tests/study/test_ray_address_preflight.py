"""The Ray address a study is given is checked before its models are prepared, and only where a run is left to
train (review dv: a resumed study whose runs were done was refused for a cluster that had gone)."""

from __future__ import annotations

import socket

from .synthetic import write_study


# --- 4. study: the Ray address preflight refuses to resume a study that has nothing left to train ----------------


def test_resuming_a_finished_ray_study_needs_no_cluster(tmp_path, monkeypatch):
    from scalerl.study.runner import run_study
    from scalerl.study.spec import StudySpec
    from scalerl.train.report_files import REPORT_FILES

    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()  # nothing listens there now: the cluster the study ran on is gone
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=10, bootstrap=50,
                     backend="ray", ray_address=f"127.0.0.1:{port}")
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.6, 1.5, 1e11)}, points=5)
    for p in plans:  # every run finished, its report written
        for name in REPORT_FILES:
            (p.directory / name).write_text("its report\n")
    result = run_study(spec, tmp_path, echo=lambda line: None)
    assert [o.status for o in result.outcomes] == ["skipped", "skipped"]
