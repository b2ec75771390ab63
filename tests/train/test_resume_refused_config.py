"""A run whose saved config a check added since refuses (gspo with a ratio mask, accepted for a while) is told
on ``--resume`` that the saved file is what fails and how to go on -- a new run from it with ``--config`` --
where ``--resume``'s own "set X" advice went round in a circle (the flags may not differ from the saved run)."""

from __future__ import annotations

from scalerl.cli import main


def _err(argv, capsys):
    """The command's return code (SystemExit's too) and its stderr."""
    try:
        rc = main(argv)
    except SystemExit as exc:
        rc = exc.code
    return rc, capsys.readouterr().err


def test_resuming_a_run_saved_with_gspo_and_a_band_says_what_can_be_done(tmp_path, capsys):
    # A run started before 870b715 (gspo + a band passed validation then) and stopped: its config.yaml.
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig

    run = tmp_path / "run"
    run.mkdir()
    cfg = TrainConfig()
    cfg.recipe.loss.name = "gspo"
    cfg.recipe.loss.ratio_mask = (0.8, 1.25)
    cfg.run.output = str(run)
    save_yaml(cfg, run / "config.yaml")
    (run / "runlog.jsonl").write_text("")

    rc, err = _err(["train", "--output", str(run), "--resume"], capsys)
    assert rc != 0 and "loss.ratio_mask does not apply to gspo" in err
    # Following the advice with --resume is refused: the flags may not differ from the saved run.
    rc2, err2 = _err(["train", "--output", str(run), "--resume", "--set", "recipe.loss.ratio_mask=null"], capsys)
    assert rc2 != 0 and "the flags differ from the saved run" in err2
    # The refusal says it is the saved run's config that no longer validates, and the way on that works.
    assert f"in the saved run's {run / 'config.yaml'}, which this scalerl no longer accepts" in err, err
    assert f"scalerl train --config {run / 'config.yaml'} --set KEY=VALUE --output NEW_DIR" in err
    new = tmp_path / "new"
    assert main(["train", "--config", str(run / "config.yaml"), "--set", "recipe.loss.ratio_mask=null", "--model",
                 "tiny", "--steps", "1", "--output", str(new), "--no-progress", "--no-report"]) == 0
