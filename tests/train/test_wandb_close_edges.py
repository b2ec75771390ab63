"""The W&B sink's close waits for W&B's run file to hold the run's end: the file W&B names, wherever
the user's settings put the run's other files."""

import pytest


def test_a_wandb_sink_whose_files_dir_is_elsewhere_closes_without_waiting_out_the_timeout(tmp_path, monkeypatch,
                                                                                          capsys):
    """A user's WANDB__FILES_DIR (W&B's setting for where ``run.dir`` is) leaves the run file where
    it always is, ``<wandb dir>/offline-run-*/run-<id>.wandb``: the closed sink waits for that file,
    finds its end at once and says nothing. (The wait is shortened to 5 s so the defect costs 5 s.)"""
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    monkeypatch.setenv("WANDB__FILES_DIR", str(tmp_path / "files-elsewhere"))
    wandb.teardown()
    import scalerl.train.loggers as loggers

    monkeypatch.setattr(loggers, "RUN_FILE_WAIT_S", 5.0)
    monkeypatch.setattr(loggers.wait_for_run_file, "__defaults__", (5.0,))
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    try:
        sink = loggers.WandbSink("scalerl-test", "run", {}, run_dir, resume=False)
        for step in range(3):
            sink.log({"loss": float(step)}, step)
        sink.close()
    finally:
        wandb.teardown()
    from scalerl.curves.wandb_run_log import exit_code

    run_file, = (run_dir / "wandb").glob(f"offline-run-*-{sink.run_id}/run-{sink.run_id}.wandb")
    assert exit_code(run_file) == 0
    assert "did not hold the run's end" not in capsys.readouterr().err
