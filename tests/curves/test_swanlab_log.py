"""SwanLab's local run files (verl's ``trainer.logger=['swanlab']``), as the real swanlab package
writes them: tests/curves/data/swanlab_runs.tar.gz, made by make_swanlab_runs.py with swanlab 0.6.12
(JSON records, format version 1), 0.9.8 and 0.10.3 (protobuf records, version 2)."""

import json
import subprocess
import sys
import tarfile
from pathlib import Path

import numpy as np
import pytest

from scalerl.curves import read_curve, read_curves
from scalerl.curves.io import detect_format
from scalerl.errors import InputError

DATA = Path(__file__).parent / "data"
VERSIONS = ["0.6.12", "0.9.8", "0.10.3"]


def _level(step, ceiling):  # make_swanlab_runs.py's curve
    return round(0.3 + (ceiling - 0.3) * (1 - np.exp(-step / 8)), 4)


@pytest.fixture
def swanlogs(tmp_path):
    with tarfile.open(DATA / "swanlab_runs.tar.gz") as tar:
        tar.extractall(tmp_path, filter="data")
    return tmp_path


@pytest.mark.parametrize("version", VERSIONS)
def test_swanlab_run_files_of_each_format_version(swanlogs, version):
    """A swanlog directory, one run's directory and its file read alike; the NaN dropped and counted;
    SwanLab's system monitor (its own step counter) is no run data."""
    if version != "0.6.12":
        pytest.importorskip("swanlab", reason="swanlab >= 0.8's run files need the swanlab package (the dev extra has it)")
    swanlog = swanlogs / f"swanlog-{version}"
    assert detect_format(swanlog) == "swanlab"
    curves = {c.name: c for c in read_curves(swanlog, "step", "val/acc")}
    assert sorted(curves) == ["grpo-a", "grpo-b"]
    a, b = curves["grpo-a"], curves["grpo-b"]
    assert list(a.x) == [4, 12, 16, 20, 24] and a.dropped == 1
    assert np.allclose(a.y, [_level(s, 0.6) for s in a.x])
    assert list(b.x) == list(range(4, 25, 4)) and np.allclose(b.y, [_level(s, 0.7) for s in b.x])
    assert not any("resumed" in n for n in a.notes + b.notes)
    run_dir = min(swanlog.iterdir())  # grpo-a started first
    for path in (run_dir, next(run_dir.glob("*.swanlab"))):
        assert detect_format(path) == "swanlab"
        assert np.allclose(read_curve(path, "train/global_step", "val/acc").y, a.y)
    assert np.all(np.diff(read_curve(swanlog, "wall_time", "val/acc", run="grpo-a").x) >= 0)
    with pytest.raises(InputError, match="no y column 'val/nope'.*'train/loss'"):
        read_curve(swanlog, "step", "val/nope", run="grpo-a")


def test_a_swanlab_run_resumed_in_a_new_directory(swanlogs):
    """A run id in two directories (a resume): joined in the order they started; the steps the first
    logged from the resumed attempt's first step on are dropped."""
    swanlog = swanlogs / "swanlog-0.6.12"

    def from_13_higher(record):  # the same run (same id) again from step 13 on, the score 0.01 higher
        data = record["data"]
        if data["step"] < 13:
            return False
        if data["key"] == "val/acc":
            data["metric"]["data"] += 0.01
        return True

    _resumed_directory(swanlog, from_13_higher)
    c = read_curve(swanlog, "train/global_step", "val/acc", run="grpo-a")
    assert list(c.x) == [4, 12, 16, 20, 24]
    assert np.allclose(c.y, [_level(4, 0.6), _level(12, 0.6)] + [_level(s, 0.6) + 0.01 for s in (16, 20, 24)])
    assert any("'grpo-a' resumed from a checkpoint 1 time(s) (train/global_step goes back)" in n for n in c.notes)


def _resumed_directory(swanlog: Path, keep) -> Path:
    """A second directory of the first run (same id, a later start: a resume), holding the first's Scalar
    records that ``keep(record)`` takes -- edited in place -- as swanlab 0.6.12 writes them."""
    first = min(swanlog.iterdir())
    data = (first / "backup.swanlab").read_bytes()
    resumed = swanlog / (first.name[:4] + "29991231_235959" + first.name[19:])
    resumed.mkdir()
    from scalerl.curves.leveldb_log import BLOCK, CHUNK_HEADER, FILE_HEADER, FULL, records
    import zlib

    out = bytearray(data[:FILE_HEADER.size])
    for raw in records(data, "x", []):
        record = json.loads(raw)
        if record["model_type"] == "Scalar" and not keep(record):
            continue
        raw = json.dumps(record).encode()
        if BLOCK - len(out) % BLOCK < CHUNK_HEADER.size + len(raw):
            out += bytes(BLOCK - len(out) % BLOCK)
        out += CHUNK_HEADER.pack(zlib.crc32(raw, zlib.crc32(bytes([FULL]))), len(raw), FULL) + raw
    (resumed / "backup.swanlab").write_bytes(bytes(out))
    return resumed


def test_a_swanlab_run_resumed_at_the_step_it_logged_last(swanlogs):
    """Killed right after saving the checkpoint of its last logged step, resumed from it in a new
    directory: the resumed attempt evaluates that checkpoint again at that step, which does not go
    back. The new directory marks the attempt: one evaluation there, the later (both were kept)."""
    swanlog = swanlogs / "swanlog-0.6.12"
    whole = read_curve(swanlog, "train/global_step", "val/acc", run="grpo-a")
    last = int(whole.x[-1])

    def again(record):  # the evaluation at the last step, 0.01 higher, and train/global_step with it
        data = record["data"]  # (this fixture's SwanLab step is its train/global_step)
        if data["step"] != last or data["key"] not in ("val/acc", "train/global_step"):
            return False
        if data["key"] == "val/acc":
            data["metric"]["data"] += 0.01
        return True

    _resumed_directory(swanlog, again)
    c = read_curve(swanlog, "train/global_step", "val/acc", run="grpo-a")
    assert list(c.x) == list(whole.x)  # (got the last step twice)
    assert c.y[-1] == pytest.approx(whole.y[-1] + 0.01) and np.allclose(c.y[:-1], whole.y[:-1])
    assert any("'grpo-a' resumed from a checkpoint 1 time(s) (a later attempt starts at the train/global_step "
               "the earlier ended on)" in n for n in c.notes)


def test_swanlab_bad_input(swanlogs, tmp_path):
    f = next((swanlogs / "swanlog-0.6.12").glob("*/backup.swanlab"))
    data = f.read_bytes()
    torn = tmp_path / "torn.swanlab"
    torn.write_bytes(data[:-7])
    c = read_curve(torn, "step", "val/acc")
    assert any("torn last record" in n for n in c.notes) and len(c) >= 4
    newer = tmp_path / "newer.swanlab"
    newer.write_bytes(data[:6] + bytes([9]) + data[7:])
    with pytest.raises(InputError, match="SwanLab run file version 9; this reader knows versions 1, 2"):
        read_curve(newer, "step", "val/acc")


def test_swanlab_cli(swanlogs):
    out = subprocess.run([sys.executable, "-m", "scalerl.cli", "backtest", str(swanlogs / "swanlog-0.6.12"),
                          "--x", "step", "--y", "val/acc", "--all-runs", "--json"],
                         capture_output=True, text=True, timeout=120)
    report = json.loads(out.stdout)
    assert out.returncode == (0 if report["runs"] else 2), out.stderr  # (2: every run skipped, said why)
    assert sorted([r["run"] for r in report["runs"]] + [s["run"] for s in report["skipped"]]) == ["grpo-a", "grpo-b"]


def test_verl_resumed_into_the_same_swanlab_run_keeps_the_checkpoint_steps_training(swanlogs):
    """verl killed after step 12 and resumed from its step-10 checkpoint into the same SwanLab run
    (make_swanlab_runs.py's ``resumed``, written by swanlab 0.10.3): the resumed attempt logs its
    evaluation of the checkpoint at step 10 and nothing else there. That evaluation replaces the
    abandoned attempt's, whose step-10 training metrics stay under it: ``cum:timing_s/step`` counts
    step 10 once (dropping the whole abandoned row left it a step short from there on)."""
    pytest.importorskip("swanlab", reason="swanlab >= 0.8's run files need the swanlab package (the dev extra has it)")
    swanlog = swanlogs / "swanlog-0.10.3-resumed"
    val = "val-core/openai/gsm8k/reward/mean@1"
    c = read_curve(swanlog, "step", val)
    assert c.name == "verl-resumed" and list(c.x) == [0, 5, 10, 15]
    assert np.allclose(c.y, [_level(0, 0.6), _level(5, 0.6), _level(10, 0.6) + 0.001, _level(15, 0.6) + 0.001])
    cum = read_curve(swanlog, "cum:timing_s/step", val)
    assert list(cum.x) == [0, sum(10 + s for s in range(1, 6)), sum(10 + s for s in range(1, 11)),
                           sum(10 + s for s in range(1, 16))]
    assert list(read_curve(swanlog, "step", "actor/pg_loss").x) == list(range(1, 16))
    assert any("resumed from a checkpoint 1 time(s) (step goes back): 3 row(s)" in n
               and "1 at the step it resumed at merged under the resumed attempt's row" in n for n in c.notes)
