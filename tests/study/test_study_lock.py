"""A study holds its directory while it runs: a second `scalerl study --resume` beside it took each run the
first was training for a failure, and the first then took the second's -- both exited 1 (review l)."""

import pytest

from scalerl.cli import main
from scalerl.errors import InputError
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
    assert "per run, backend" not in err  # the refusal alone: no announcement ("scalerl study: loo of ...")
    assert err.strip().count("\n") == 0, err


@pytest.mark.slow
def test_the_study_directory_is_held_until_the_report_is_written(tmp_path, capsys, study_cache, monkeypatch):
    """Before: run_study let the directory go as its runs ended, and `scalerl study` then wrote the report --
    a second study let in by then rewrote the directory under it."""
    import scalerl.study.report as report

    out, seen, real = tmp_path / "study", [], report.write_study_report

    def write_study_report(directory, *a, **kw):
        try:
            RunDirectoryLock(directory).release()  # what a second study (hold_study_directory) tries first
            seen.append("free")
        except InputError as exc:
            seen.append(str(exc))
        return real(directory, *a, **kw)

    monkeypatch.setattr(report, "write_study_report", write_study_report)
    assert main(micro_args(out, "--family", "loo", "--only", "loo-loss-dapo", "--threads", "1")) == 0, \
        capsys.readouterr().err
    assert len(seen) == 1 and "another process holds it" in seen[0], seen
    RunDirectoryLock(out).release()  # and let go once it is written
