"""Files written whole or not at all: a kill mid-write leaves the old file (or none), never a cut one."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from scalerl.atomic_files import remove_dead_temporaries, temporary_for, write_text_atomically


class _Killed(KeyboardInterrupt):
    """A kill simulated in the middle of a write."""


@pytest.fixture
def writes_cut_halfway(monkeypatch):
    """Every ``Path.write_text`` writes half its text, then is killed."""
    real = Path.write_text

    def cut(self, data, *args, **kwargs):
        real(self, data[: len(data) // 2], *args, **kwargs)
        raise _Killed

    monkeypatch.setattr(Path, "write_text", cut)


def _dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


def test_a_write_killed_midway_leaves_the_old_file_and_no_temporary(tmp_path, writes_cut_halfway):
    path = tmp_path / "report.md"
    path.write_bytes(b"old report\n")
    with pytest.raises(_Killed):
        write_text_atomically(path, "new report " * 100)
    assert path.read_bytes() == b"old report\n"
    assert [p.name for p in tmp_path.iterdir()] == ["report.md"]


def test_the_temporary_is_hidden_keeps_the_suffix_and_names_the_process(tmp_path):
    tmp = temporary_for(tmp_path / "curve.png")
    assert tmp.parent == tmp_path and tmp.name.startswith(".curve.png.tmp-") and tmp.suffix == ".png"
    assert f".tmp-{os.getpid()}-" in tmp.name


def test_a_killed_writers_temporaries_are_cleared_a_live_ones_kept(tmp_path):
    """``kill -9`` gives no chance to remove a temporary: the next write of the same file removes
    those of writers no longer running, and leaves a live writer's alone."""
    path = tmp_path / "config.yaml"
    dead_new = tmp_path / f".config.yaml.tmp-{_dead_pid()}-1.yaml"
    dead_old = tmp_path / f".config.yaml.tmp-{_dead_pid()}"  # the name before threads were named
    live = tmp_path / f".config.yaml.tmp-{os.getppid()}-1.yaml"
    other_file = tmp_path / f".report.md.tmp-{_dead_pid()}-1.md"  # another file's: not this write's business
    for p in (dead_new, dead_old, live, other_file):
        p.write_text("part")
    write_text_atomically(path, "run: {}\n")
    assert path.read_text() == "run: {}\n"
    assert not dead_new.exists() and not dead_old.exists() and live.exists() and other_file.exists()
    assert remove_dead_temporaries(tmp_path / "report.md") == [other_file]


def test_a_calibration_copy_cut_by_a_kill_does_not_block_every_later_resume(tmp_path, monkeypatch):
    """The run's copy of its ``forecast.calibration`` file was written in place: a kill mid-write
    left a cut copy, which every later resume read first and refused. Now the copy is whole or absent
    (and then made again from the configured file)."""
    from scalerl.curves.bands import default_calibration
    from scalerl.train.config import CALIBRATION_COPY
    from scalerl.train.live_forecast import run_calibration

    configured = tmp_path / "mine.json"
    configured.write_text(json.dumps(default_calibration().as_dict(), indent=2) + "\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    real = Path.write_text

    def cut(self, data, *args, **kwargs):
        real(self, data[: len(data) // 2], *args, **kwargs)
        raise _Killed

    monkeypatch.setattr(Path, "write_text", cut)
    with pytest.raises(_Killed):
        run_calibration(str(configured), run_dir)
    monkeypatch.setattr(Path, "write_text", real)
    assert not (run_dir / CALIBRATION_COPY).exists()
    assert run_calibration(str(configured), run_dir) == default_calibration()  # the resume
    assert json.loads((run_dir / CALIBRATION_COPY).read_text()) == default_calibration().as_dict()


def test_an_os_error_names_the_file_asked_for_not_the_temporary(tmp_path):
    """A directory where the file goes, or a directory that cannot be written: the error is about
    ``report.md``, which the user can act on, not the hidden temporary."""
    (tmp_path / "report.md").mkdir()
    with pytest.raises(IsADirectoryError) as caught:
        write_text_atomically(tmp_path / "report.md", "x")
    assert caught.value.filename == str(tmp_path / "report.md")
    with pytest.raises(FileNotFoundError) as caught:
        write_text_atomically(tmp_path / "missing" / "report.md", "x")
    assert caught.value.filename == str(tmp_path / "missing" / "report.md")
