"""A study holds its directory while it runs: a second `scalerl study --resume` beside it took each run the
first was training for a failure, and the first then took the second's -- both exited 1 (review l)."""

from scalerl.cli import main
from scalerl.train.run_directory import RunDirectoryLock

from .conftest import micro_args


def test_a_second_study_in_a_running_studys_directory_is_refused(tmp_path, capsys, study_cache):
    out = tmp_path / "study"
    out.mkdir()
    running = RunDirectoryLock(out)  # what the first study's process holds while it runs
    try:
        status = main(micro_args(out, "--family", "loo", "--only", "loo-loss-dapo", "--threads", "1"))
    finally:
        running.release()
    err = capsys.readouterr().err
    assert status == 2 and "a study is running in it now" in err
    assert not (out / "runs").exists()  # nothing of it was touched
