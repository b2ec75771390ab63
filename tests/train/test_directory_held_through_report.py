"""A run directory stays locked until its report is written, and a file system that cannot lock says so.

Before: ``Trainer.run`` let the directory go as it closed its files, and ``scalerl train`` / ``demo`` then
wrote the report -- an ``--overwrite`` started in that window deleted the directory the report was being
written into. And where ``flock`` fails (NFS: an exclusive flock needs a descriptor opened for writing,
which a directory never is), the lock silently held nothing.
"""

import errno

import pytest

from scalerl.cli import main
from scalerl.errors import InputError
from scalerl.train.run_directory import RunDirectoryLock

from .conftest import small_args

SYNC = ("--set", "pipeline=sync", "--threads", "1", "--steps", "1", "--eval-every", "1")


def _probe_during_report(monkeypatch, seen):
    """The real report, after a second command's attempt on the directory (what ``--overwrite`` tries first)."""
    import scalerl.train.report as report

    real = report.write_run_report

    def write_run_report(output, **kw):
        try:
            RunDirectoryLock(output).release()
            seen.append("free")
        except InputError as exc:
            seen.append(str(exc))
        return real(output, **kw)

    monkeypatch.setattr(report, "write_run_report", write_run_report)


@pytest.mark.slow
@pytest.mark.parametrize("command", ["train", "demo", pytest.param("train --nproc 2", marks=pytest.mark.extended)])
def test_the_directory_is_held_until_the_report_is_written(tmp_path, monkeypatch, capsys, command):
    # --nproc 2: the launcher holds the directory from before its ranks start through its report (it was
    # rank 0's lock, dropped as that process exited, before the launcher wrote the report).
    out = tmp_path / "run"
    seen = []
    _probe_during_report(monkeypatch, seen)
    args = small_args(out, *SYNC, *command.split()[1:])
    args[0] = command.split()[0]
    assert main(args) == 0, capsys.readouterr().err
    assert len(seen) == 1 and "a run is training in it now" in seen[0], seen
    assert (out / "report.html").exists()
    RunDirectoryLock(out).release()  # once the report is written the directory is free


@pytest.mark.slow
def test_a_stop_during_the_report_lets_the_directory_go(tmp_path, monkeypatch, capsys):
    import scalerl.train.report as report

    def stopped(output, **kw):
        raise KeyboardInterrupt

    monkeypatch.setattr(report, "write_run_report", stopped)
    out = tmp_path / "run"
    assert main(small_args(out, *SYNC)) == 130
    assert "interrupted while the report was written; the run is complete" in capsys.readouterr().err
    RunDirectoryLock(out).release()


@pytest.mark.parametrize("code", [errno.EBADF, errno.ENOLCK, errno.EOPNOTSUPP])
def test_a_file_system_without_flock_is_said_in_one_warning(tmp_path, monkeypatch, capsys, code):
    # flock(2), "NFS details": NFS emulates flock with byte-range locks, and an exclusive one needs a descriptor
    # opened for writing (a directory's never is: EBADF); no lock daemon: ENOLCK; some FUSE mounts: EOPNOTSUPP.
    # (The os-level call made to fail: no file system here lacks flock.)
    import fcntl

    def no_flock(fd, op):
        raise OSError(code, __import__("os").strerror(code))

    import scalerl.train.run_directory as run_directory

    monkeypatch.setattr(fcntl, "flock", no_flock)
    monkeypatch.setattr(run_directory, "_UNLOCKED_WARNED", set())  # (a fresh process)
    out = tmp_path / f"run{code}"
    out.mkdir()
    RunDirectoryLock(out).release()
    RunDirectoryLock(out).release()  # (--overwrite's check, then the run it starts: one line)
    # (review o) A study locks its directory, then each run's, all on one file system: still one line.
    (tmp_path / "study" / "runs" / "a").mkdir(parents=True)
    RunDirectoryLock(tmp_path / "study").release()
    RunDirectoryLock(tmp_path / "study" / "runs" / "a").release()
    err = capsys.readouterr().err
    assert err.count("warning:") == 1 and err.count("\n") == 1, err
    assert "cannot lock directories" in err and "not protected" in err and str(out) in err


@pytest.mark.skipif(__import__("torch").cuda.is_available(), reason="needs a machine without CUDA: run.device=cuda is refused there")
def test_a_refused_nproc_run_creates_no_output_directory(tmp_path, capsys):
    """(review p) The launcher made and locked --output before its device check: a refused run left an empty
    directory (and its parents) behind; it is checked first, as one process is."""
    out = tmp_path / "new" / "run"
    assert main(["train", "--model", "tiny", "--nproc", "2", "--set", "run.device=cuda", "--no-progress",
                 "--steps", "1", "--output", str(out)]) != 0
    assert "CUDA is not available" in capsys.readouterr().err
    assert not (tmp_path / "new").exists()


def test_demo_and_study_refuse_several_trainer_processes(tmp_path, capsys):
    """(review p) The demo and a study's runs train in one Trainer: --nproc 2 was ignored, unsaid, saved in
    config.yaml, and the demo's own `train --resume` was then refused ("written by 1 trainer process(es)")."""
    out = tmp_path / "demo"
    assert main(["demo", "--nproc", "2", "--output", str(out), "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "the demo trains in one process; --nproc 2 is for scalerl train" in err, err
    assert "scalerl train --model tiny-m --task arithmetic-mix --steps 300 --eval-every 20 --nproc 2" in err
    assert not out.exists()
    assert main(["study", "--set", "run.nproc=2", "--output", str(tmp_path / "study"), "--dry-run"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "a study trains each run in one process" in err, err
