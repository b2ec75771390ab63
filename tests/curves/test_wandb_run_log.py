"""The W&B run-file reader's joins of a run's attempts (its reads of real run files: test_framework_logs.py, test_io.py)."""


def test_a_resume_that_relogs_part_of_its_first_step_keeps_the_rest_of_it():
    """verl resumed from the step-N checkpoint logs its validation at N, not step N's training (the
    checkpoint holds it): the earlier attempt's row N was dropped whole at the resume, and with it step N's
    timing (cum:timing_s/step one step short) and score. The rows merge, the resumed attempt's values win."""
    from scalerl.curves.wandb_run_log import _Run

    run = _Run("a", "a")
    run.add([(99, {"score": "0.3", "timing_s/step": "10"}), (100, {"score": "0.31", "timing_s/step": "10", "val": "0.5"})])
    run.add([(100, {"val": "0.6"}), (101, {"score": "0.32", "timing_s/step": "10"})])
    assert run.rows == [(99, {"score": "0.3", "timing_s/step": "10"}),
                        (100, {"score": "0.31", "timing_s/step": "10", "val": "0.6"}),
                        (101, {"score": "0.32", "timing_s/step": "10"})]


def test_a_run_file_has_an_exit_code_only_once_its_end_is_on_disk(tmp_path):
    """What WandbSink.close waits for: W&B's service writes the run file's end after ``finish()`` returns."""
    from pathlib import Path

    from scalerl.curves.wandb_run_log import exit_code

    data = (Path(__file__).parent / "data" / "wandb_0_17_9_run.wandb").read_bytes()
    cut = tmp_path / "run-abc.wandb"
    for written, code in [(data, 0), (data[:len(data) // 2], None), (data[:7], None), (b"", None)]:
        cut.write_bytes(written)  # the whole file; half of it; the header only; created, nothing written
        assert exit_code(cut) == code, len(written)


def test_an_attempt_started_in_the_same_second_as_the_earlier_one_joins_after_it(tmp_path):
    """W&B names a run's directory by the second it starts; a second attempt of the same run in that
    second gets ``<id>-1`` (seen in CI: a two-step run and its resume within one second). Sorted by the
    path, ``<id>-1/`` came first (``-`` sorts before ``/``) and the resumed attempt joined as the
    earlier one; the attempts now go by W&B's number after the start time."""
    from scalerl.curves.wandb_run_log import run_files

    wandb_dir = tmp_path / "wandb"
    names = ["offline-run-20261205_093718-3c3459cf", "offline-run-20261205_093718-3c3459cf-1",
             "offline-run-20261205_093718-3c3459cf-2", "offline-run-20261205_093719-3c3459cf"]
    for name in reversed(names):
        (wandb_dir / name).mkdir(parents=True)
        (wandb_dir / name / "run-3c3459cf.wandb").write_bytes(b"")
    assert [f.parent.name for f in run_files(wandb_dir)] == names


def test_a_wandb_directorys_runs_without_a_run_file_are_named_in_the_notes(tmp_path):
    """A ``wandb`` directory copied with some runs' ``.wandb`` files missing (only ``files/output.log``: review en,
    four of six real runs) is read from the runs that have one, and the notes name the others -- they were left out
    without a word."""
    import shutil
    from pathlib import Path

    from scalerl.curves import read_curves

    wandb_dir = tmp_path / "wandb"
    kept = wandb_dir / "run-20240101_000000-abc"
    kept.mkdir(parents=True)
    shutil.copy(Path(__file__).parent / "data" / "wandb_0_17_9_run.wandb", kept / "run-abc.wandb")
    for name in ("run-20240102_000000-def", "offline-run-20240103_000000-ghi"):
        (wandb_dir / name / "files").mkdir(parents=True)
        (wandb_dir / name / "files" / "output.log").write_text("step:1 - acc:0.5\n")
    (wandb_dir / "debug.log").write_text("")
    curves = read_curves(wandb_dir, "_step", "*")
    assert curves
    notes = " ".join(curves[0].notes)
    assert "2 run directories without a .wandb file" in notes and "run-20240102_000000-def" in notes, notes
