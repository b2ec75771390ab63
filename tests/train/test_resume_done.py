"""A resume with nothing left to train starts no generator: says the run is done, saves final/ again."""

import shutil
import time

import pytest

from scalerl.config import load_yaml, save_yaml
from scalerl.train.config import TrainConfig

from .conftest import small_args


def test_resuming_a_finished_ray_run_starts_no_ray_cluster(tmp_path, capsys, monkeypatch):
    """`scalerl train --backend ray ... --resume` of a run already at --steps (finished, or killed
    after its last checkpoint) started a local Ray cluster and its actors (~16 s, seen in
    kill_fuzz.py --backend ray) only to shut them down: nothing is generated. Now no pool is built
    and the run says it is done. (The run is trained on the local backend, then its saved config
    says ray, as a Ray run's does: the resume reads the backend from there.)"""
    from scalerl.cli import main
    from scalerl.pipeline.ray_backend import RayPool

    out = tmp_path / "run"
    assert main(small_args(out, "--steps", "2", "--no-report")) == 0
    cfg = load_yaml(TrainConfig, out / "config.yaml")
    cfg.backend.name = "ray"
    save_yaml(cfg, out / "config.yaml")
    log = (out / "runlog.jsonl").read_bytes()

    def no_cluster(*args, **kwargs):
        raise AssertionError("a Ray cluster was started for a run with nothing to train")

    monkeypatch.setattr(RayPool, "__init__", no_cluster)
    # (A Ray run faked by its config.yaml alone: the checkpoint's copy of the config still says local, which a
    # resume refuses as an edited config.yaml -- the fake must not be refused.)
    monkeypatch.setattr("scalerl.train.trainer.config_changes", lambda checkpointed, now: [])
    capsys.readouterr()
    assert main(["train", "--output", str(out), "--resume", "--no-progress", "--no-report"]) == 0
    err = capsys.readouterr().err
    assert "is already at step 2 of run.steps = 2: the run is done" in err, err
    assert (out / "runlog.jsonl").read_bytes() == log  # no row added (no resume row: nothing went on)
    assert (out / "final" / "config.json").exists()
    assert not list(out.glob("final.*"))


def test_resuming_a_done_run_under_offline_wandb_starts_a_wandb_attempt_only_for_rows_it_lacks(
        tmp_path, capsys, monkeypatch):
    """`--resume` of a run already at --steps, W&B offline: it started a W&B attempt that logged
    nothing -- an empty wandb/offline-run-* beside the run's, and a note that "this attempt's rows
    (from step 3)" go there. Now no W&B attempt is started where W&B's files hold every row; where a
    kill -9 at the end left them without the last rows (W&B writes its file every 15 s), the attempt
    logs those again and its note says that, not rows to come; `scalerl fit RUN/wandb` reads the run
    log's evaluations either way."""
    wandb = pytest.importorskip("wandb")
    from scalerl.cli import main
    from scalerl.curves import read_curves
    from scalerl.runlog import read_runlog
    from scalerl.train.loggers import WandbSink

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    out = tmp_path / "run"
    wandb.teardown()
    try:
        assert main(small_args(out, "--steps", "2", "--no-report", "--set", "log.wandb_project=scalerl-test")) == 0
        resume = ["train", "--output", str(out), "--resume", "--no-progress", "--no-report"]
        evals = [r for r in read_runlog(out / "runlog.jsonl")[1] if r["type"] == "eval"]

        def attempts():
            return sorted(p.name for p in (out / "wandb").glob("*run-*"))

        def curve():
            c, = read_curves(out / "wandb", "step", "val/pass_rate")  # `scalerl fit RUN/wandb`
            return list(zip(c.x, c.y))

        want = [(r["step"], pytest.approx(r["val/pass_rate"])) for r in evals]
        first = attempts()
        capsys.readouterr()
        assert main(resume) == 0
        err = capsys.readouterr().err
        assert attempts() == first and "W&B" not in err, err  # no attempt: W&B holds every row
        assert curve() == want

        # What a kill -9 at the end leaves: W&B's file without the rows after step 0's
        for path in (out / "wandb").iterdir():
            shutil.rmtree(path) if path.is_dir() and not path.is_symlink() else path.unlink()
        killed = WandbSink("scalerl-test", "run", {}, out, resume=True)
        killed.log(evals[0], 0)
        killed.close(False)
        time.sleep(1.1)  # (W&B names a run's directory by the second it started)
        assert main(resume) == 0
        err = capsys.readouterr().err
        assert len(attempts()) == 2, attempts()
        assert "row(s) of steps 1-2 the stopped attempt had not written are logged again" in err, err
        assert "this attempt's rows" not in err, err
        assert curve() == want
    finally:
        wandb.teardown()


def test_a_resume_says_its_set_replaces_its_steps_flag(tmp_path, capsys):
    """`--resume --steps 9 --set run.steps=2` ran 2 steps without the "--set replaces --steps" note a new run
    prints for the same command (review dg's noticed item); the done-run note names run.steps, not a --steps the
    command did not give."""
    from scalerl.cli import main

    out = tmp_path / "run"
    assert main(small_args(out, "--steps", "2", "--no-report")) == 0
    capsys.readouterr()
    assert main(["train", "--output", str(out), "--resume", "--steps", "9", "--set", "run.steps=2",
                 "--no-progress", "--no-report"]) == 0
    err = capsys.readouterr().err
    assert "note: --set run.steps=2 replaces --steps 9" in err, err
    assert "is already at step 2 of run.steps = 2: the run is done" in err, err
