"""ClearML's offline sessions (verl's trainer.logger=['clearml'] with CLEARML_OFFLINE_MODE=1), written
by ClearML's own SDK (tests/curves/data/make_clearml_sessions.py) from the shipped verl run."""

import csv
import shutil
import tarfile

import numpy as np
import pytest

from scalerl.curves import read_curve, read_curves
from scalerl.curves.io import detect_format
from scalerl.errors import InputError

from .conftest import QWEN, REAL_CSV
from .test_damaged_logs import DATA

VAL = "val-core/openai/gsm8k/reward/mean@1"


@pytest.fixture(scope="module")
def offline(tmp_path_factory):
    d = tmp_path_factory.mktemp("clearml")
    with tarfile.open(DATA / "clearml_offline.tar.gz") as tar:
        tar.extractall(d, filter="data")
    return d / "offline"


def _truth() -> dict[int, float]:
    with open(REAL_CSV, newline="") as f:
        return {max(int(r["step"]), 0): float(r["val_score"]) for r in csv.DictReader(f) if r["run"] == QWEN}


def test_every_session_of_the_offline_directory_is_a_run_named_by_its_task(offline):
    assert detect_format(offline) == "clearml"
    curves = {c.name: c for c in read_curves(offline, "step", VAL)}
    assert set(curves) == {"verl_grpo/qwen-gsm8k", "verl_grpo/qwen-gsm8k-resumed"}
    whole = curves["verl_grpo/qwen-gsm8k"]
    truth = _truth()
    assert whole.x.tolist() == sorted(truth)  # verl's key rebuilt from ClearML's title and series
    assert np.allclose(whole.y, [truth[s] for s in sorted(truth)])
    assert whole.run_id.startswith("offline-")
    # the per-step metrics are columns too, and a running total works as for the other row logs
    assert read_curve(offline, "cum:timing_s/step", VAL, run="verl_grpo/qwen-gsm8k").x[-1] == pytest.approx(
        41.5 * (max(truth) + 1))  # steps 0 ... 429


def test_an_offline_training_resumed_from_a_checkpoint_is_joined_and_its_abandoned_steps_dropped(offline):
    c = read_curve(offline, "step", VAL, run="verl_grpo/qwen-gsm8k-resumed")
    truth = _truth()
    assert c.x.tolist() == [s for s in sorted(truth) if s <= 199]  # the step-99 evaluation once, no gap
    assert any("continues 'verl_grpo/qwen-gsm8k-resumed' from step 99" in n for n in c.notes)
    # Dropped: the abandoned attempt's steps 100-105; its row at the checkpoint's step 99 (trained
    # before the checkpoint) is one with the resumed attempt's evaluation of that checkpoint.
    assert any("7 row(s) the abandoned attempt(s) logged" in n and "(1 at the step it resumed at merged" in n
               for n in c.notes)
    steps = read_curve(offline, "step", "actor/pg_loss", run="verl_grpo/qwen-gsm8k-resumed").x
    assert steps.tolist() == list(range(0, 201))


def test_a_session_its_zip_and_its_metrics_file_read_the_same(offline, tmp_path):
    session = sorted(p for p in offline.iterdir() if p.is_dir())[0]
    ref = read_curve(session, "step", VAL)
    for path in (session.with_suffix(".zip"), session / "metrics.jsonl"):
        c = read_curve(path, "step", VAL)
        assert c.name == ref.name and np.array_equal(c.y, ref.y)


def test_a_torn_last_line_is_noted_and_a_damaged_one_in_the_middle_named(offline, tmp_path):
    session = tmp_path / "s"
    shutil.copytree(sorted(p for p in offline.iterdir() if p.is_dir())[0], session)
    metrics = session / "metrics.jsonl"
    lines = metrics.read_text().splitlines()
    metrics.write_text("\n".join(lines) + '\n[{"type": "training_stats_sca')
    assert any("torn last line" in n for n in read_curve(session, "step", VAL).notes)
    lines.insert(0, "not json")  # ClearML writes a batch of events a line: the session's one line here
    metrics.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match="line 1 is not a JSON array of ClearML events"):
        read_curves(session, "step", VAL)
