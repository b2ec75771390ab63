"""Logs read through their wrapping: compressed, tar archives, UTF-16 text; binary files refused."""

import bz2
import codecs
import gzip
import io
import json
import lzma
import shutil
import tarfile
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import read_curves
from scalerl.errors import InputError

DATA = Path(__file__).parent / "data"
ROOT = Path(__file__).resolve().parents[2]
CSV = ROOT / "examples" / "data" / "real_rl_curves.csv"


def _same(a, b):
    assert [c.name for c in a] == [c.name for c in b]
    for ca, cb in zip(a, b):
        np.testing.assert_array_equal(ca.x, cb.x)
        np.testing.assert_array_equal(ca.y, cb.y)
        assert ca.notes == cb.notes


@pytest.mark.parametrize("opener,suffix", [(gzip.open, ".gz"), (bz2.open, ".bz2"), (lzma.open, ".xz")])
def test_a_compressed_log_reads_as_the_log_it_holds(tmp_path, opener, suffix):
    plain = read_curves(CSV, "cum_wall_hours", "val_score")
    packed = tmp_path / f"real_rl_curves.csv{suffix}"
    with opener(packed, "wb") as f:
        f.write(CSV.read_bytes())
    curves = read_curves(packed, "cum_wall_hours", "val_score")
    _same(curves, plain)
    assert all(c.source == str(packed) for c in curves)
    # told by its bytes, not its name
    renamed = tmp_path / "metrics"  # no extension: the bytes say compressed, the first line CSV
    shutil.copy(packed, renamed)
    _same(read_curves(renamed, "cum_wall_hours", "val_score"), plain)


def test_a_console_log_written_as_utf16_by_powershell(tmp_path):
    text = gzip.decompress((DATA / "skyrl_console.log.gz").read_bytes()).decode()
    plain, wide = tmp_path / "plain.log", tmp_path / "wide" / "plain.log"
    wide.parent.mkdir()
    plain.write_text(text)
    wide.write_text(text.replace("\n", "\r\n"), encoding="utf-16")  # PowerShell: BOM, CRLF
    _same(read_curves(wide, "step", "eval/all/avg_score"), read_curves(plain, "step", "eval/all/avg_score"))


def test_a_compressed_or_piped_json_lines_log_keeps_its_run_name(tmp_path, monkeypatch):
    """A JSON-lines log's run is named after its directory: unpacked or copied into a temporary one, it
    was named after that (``scalerl-log-igz6qmvr``), anew at each read."""
    rows = "".join(json.dumps({"step": s, "acc": 0.1 + s / 1000}) + "\n" for s in range(0, 100, 10))
    plain = tmp_path / "myrun" / "metrics.jsonl"
    plain.parent.mkdir()
    plain.write_text(rows)
    packed = plain.with_name("metrics.jsonl.gz")
    packed.write_bytes(gzip.compress(rows.encode()))
    assert [c.name for c in read_curves(packed, "step", "acc")] == ["myrun"]
    monkeypatch.setattr("sys.stdin", io.TextIOWrapper(io.BytesIO(rows.encode())))
    assert [c.name for c in read_curves("-", "step", "acc")] == ["stdin"]


def test_json_lines_behind_a_utf8_byte_order_mark(tmp_path):
    """Notepad's or PowerShell 5's UTF-8: the first line, mark and all, was "not a JSON object"."""
    rows = "".join(json.dumps({"step": s, "acc": 0.1 + s / 1000}) + "\n" for s in range(0, 100, 10))
    plain = tmp_path / "run" / "log.jsonl"
    plain.parent.mkdir()
    plain.write_text(rows)
    for marked in (tmp_path / "marked" / "run" / "log.jsonl", tmp_path / "txt" / "run" / "log"):  # log: no extension
        marked.parent.mkdir(parents=True)
        marked.write_bytes(codecs.BOM_UTF8 + rows.encode())
        _same(read_curves(marked, "step", "acc"), read_curves(plain, "step", "acc"))


def test_a_tar_archive_of_a_run_directory(tmp_path):
    # How a TensorBoard / W&B directory travels: the archive reads as the directory it holds.
    with tarfile.open(DATA / "trl_tensorboard_resumed.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    _same(read_curves(DATA / "trl_tensorboard_resumed.tar.gz", "step", "eval/reward"),
          read_curves(tmp_path / "runs", "step", "eval/reward"))


def test_a_zip_archive_of_a_run_directory(tmp_path):
    import zipfile

    with tarfile.open(DATA / "trl_tensorboard_resumed.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    archive = tmp_path / "runs.zip"
    with zipfile.ZipFile(archive, "w") as z:
        for f in (tmp_path / "runs").rglob("*"):
            z.write(f, f.relative_to(tmp_path))
    _same(read_curves(archive, "step", "eval/reward"), read_curves(tmp_path / "runs", "step", "eval/reward"))
    broken = tmp_path / "broken.zip"
    broken.write_bytes(archive.read_bytes()[:200])
    with pytest.raises(InputError, match="a damaged zip file"):
        read_curves(broken, "step", "eval/reward")


def test_an_error_names_the_users_file_and_what_the_archive_holds(tmp_path):
    packed = tmp_path / "train.csv.gz"
    packed.write_bytes(gzip.compress(CSV.read_bytes()))
    with pytest.raises(InputError, match=r"train\.csv\.gz: no y column 'reward'") as exc:
        read_curves(packed, "step", "reward")
    assert "scalerl-log-" not in str(exc.value)
    with pytest.raises(InputError, match="holds 2 entries at its top: trackio, trackio-parquet; unpack it"):
        read_curves(DATA / "trackio_runs.tar.gz", "step", "eval/reward")


def test_a_log_piped_in_on_standard_input(tmp_path):
    import subprocess
    import sys

    cli = [sys.executable, "-m", "scalerl.cli", "fit", "-", "--x", "cum_wall_hours", "--y", "val_score", "--json"]
    packed = gzip.compress(CSV.read_bytes())  # kubectl logs ... | gzip | scalerl fit - : told by its bytes
    done = subprocess.run(cli + ["--run", "verl_training_log__grpo_run_deepseek7b_llm"], input=packed,
                          capture_output=True, check=True)
    assert b'"run": "verl_training_log__grpo_run_deepseek7b_llm"' in done.stdout
    bad = subprocess.run(cli[:-1] + ["--run", "nope"], input=CSV.read_bytes(), capture_output=True)
    assert bad.returncode != 0 and b"<stdin>: no run named 'nope'" in bad.stderr and b"scalerl-" not in bad.stderr


def test_damaged_and_hostile_archives_and_binary_files(tmp_path):
    cut = tmp_path / "train.log.gz"
    cut.write_bytes(gzip.compress(CSV.read_bytes())[:300])  # the copy broke off
    with pytest.raises(InputError, match="a damaged gzip file"):
        read_curves(cut, "step", "val_score")

    hostile = tmp_path / "runs.tar"
    with tarfile.open(hostile, "w") as tar:
        data = CSV.read_bytes()
        member = tarfile.TarInfo("../escaped.csv")
        member.size = len(data)
        tar.addfile(member, io.BytesIO(data))
    with pytest.raises(InputError, match="a damaged tar file"):
        read_curves(hostile, "step", "val_score")
    assert not (tmp_path.parent / "escaped.csv").exists()

    binary = tmp_path / "model.log"
    binary.write_bytes(b"\x00\x01PK" * 100)
    with pytest.raises(InputError, match="a binary file, not a log of a format read here"):
        read_curves(binary, "step", "val_score")


def test_a_pipe_is_read_once_like_standard_input(tmp_path):
    """`scalerl fit <(zcat log.gz)`: the format probes consumed the pipe, and the log was "empty"."""
    import os
    import threading

    fifo = tmp_path / "piped"
    os.mkfifo(fifo)
    text = "step,score\n" + "".join(f"{s},{0.2 + s / 1000}\n" for s in range(0, 100, 10))
    writer = threading.Thread(target=fifo.write_text, args=(text,))
    writer.start()
    try:
        [c] = read_curves(fifo, "step", "score")
    finally:
        writer.join(timeout=10)
    assert len(c) == 10 and c.name == "piped"


def test_a_plain_file_named_as_compressed_says_so_when_it_cannot_be_read(tmp_path):
    """'not gzip' in fake.csv.gz said only "the file has a header but no rows"."""
    fake = tmp_path / "fake.csv.gz"
    fake.write_text("not gzip\n")
    with pytest.raises(InputError, match=r"header but no rows \(the name ends in .gz, but the file is not gzip-compressed"):
        read_curves(fake, "step", "score")


def _zstd_frame(data: bytes) -> bytes:
    """``data`` as a zstd frame of raw (stored) blocks -- what ``zstd`` writes of data it cannot shrink, and
    readable by every zstd decoder; built here, so the test needs no zstd encoder. The frame header: the
    magic number, a descriptor with no content size, checksum nor dictionary, a 128 KiB window."""
    out = bytearray(b"\x28\xb5\x2f\xfd\x00\x38")
    chunks = [data[i:i + 65536] for i in range(0, len(data), 65536)] or [b""]
    for i, chunk in enumerate(chunks):
        out += ((len(chunk) << 3) | (i == len(chunks) - 1)).to_bytes(3, "little") + chunk  # raw block, last-block bit
    return bytes(out)


def test_a_zstd_compressed_log_reads_as_the_log_it_holds(tmp_path):
    """A ``.zst`` log (logrotate's ``compresscmd zstd``, ``tar --zstd``) was "a binary file ... export the metrics
    as CSV/JSONL", though the .gz, .bz2 and .xz beside it were read."""
    packed = tmp_path / "real_rl_curves.csv.zst"
    packed.write_bytes(_zstd_frame(CSV.read_bytes()))
    _same(read_curves(packed, "cum_wall_hours", "val_score"), read_curves(CSV, "cum_wall_hours", "val_score"))
    cut = tmp_path / "train.log.zst"
    cut.write_bytes(_zstd_frame(CSV.read_bytes())[:300])
    with pytest.raises(InputError, match="a damaged zstd file"):
        read_curves(cut, "step", "val_score")


def test_notes_and_runs_left_out_name_the_users_file_not_the_unpacked_copy(tmp_path):
    # Errors named the user's file; the notes of a --y glob and the reasons for runs left out named the
    # temporary copy the log was unpacked into (/tmp/scalerl-log-.../copy/...), gone once read.
    rows = ["run,step,val/acc,val/score"]
    rows += [f"a,{s},{0.1 + 0.05 * s},{s}" for s in range(1, 9)]  # val/score: no pass rate (values > 1)
    rows += [f"pct,{s},{10 + 5 * s},{s}" for s in range(1, 9)]  # a run logged in percent: left out
    packed = tmp_path / "train.csv.gz"
    packed.write_bytes(gzip.compress(("\n".join(rows) + "\n").encode()))
    curves = read_curves(packed, "step", "val/*")
    assert [c.name for c in curves] == ["a | val/acc"]
    said = [*curves[0].notes, *(why for _, why in curves[0].left_out)]
    assert any("val/score" in n for n in said) and any("'pct'" in n for n in said)
    for text in said:
        assert "scalerl-log-" not in text, text
        assert str(packed) in text, text
    (curve,) = read_curves(packed, "step", "val/acc")
    assert curve.left_out and all(str(packed) in why and "scalerl-log-" not in why for _, why in curve.left_out)
