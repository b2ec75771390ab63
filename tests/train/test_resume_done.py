"""A resume with nothing left to train starts no generator: says the run is done, saves final/ again."""

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
    capsys.readouterr()
    assert main(["train", "--output", str(out), "--resume", "--no-progress", "--no-report"]) == 0
    err = capsys.readouterr().err
    assert "is already at step 2 of --steps 2: the run is done" in err, err
    assert (out / "runlog.jsonl").read_bytes() == log  # no row added (no resume row: nothing went on)
    assert (out / "final" / "config.json").exists()
    assert not list(out.glob("final.*"))
