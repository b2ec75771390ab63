"""A TensorBoard directory of several runs where one run does not log the --x tag: the others are read, the run
without it is left out with its reason, and --run names the chosen run (review dm)."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("tensorboard")


def _two_tb_runs(base):
    """Two runs side by side, as a sweep's TensorBoard directory holds them: runA logs a token counter
    beside its evaluation, runB (another configuration) does not."""
    from torch.utils.tensorboard import SummaryWriter

    w = SummaryWriter(str(base / "runA"))
    for s in range(0, 11):
        w.add_scalar("train/num_tokens", 1000.0 * s, s)
        if s % 2 == 0:
            w.add_scalar("val/acc", 0.1 + 0.05 * s, s)
    w.close()
    w = SummaryWriter(str(base / "runB"))
    for s in range(0, 11):
        if s % 2 == 0:
            w.add_scalar("val/acc", 0.1 + 0.04 * s, s)
    w.close()


def test_tensorboard_run_chosen_reads_its_own_x(tmp_path):
    from scalerl.curves.io import read_curve

    _two_tb_runs(tmp_path)
    curve = read_curve(tmp_path, x="train/num_tokens", y="val/acc", run="runA")
    assert curve.name == "runA"
    assert list(curve.x) == [0.0, 2000.0, 4000.0, 6000.0, 8000.0, 10000.0]


def test_tensorboard_run_without_x_does_not_sink_the_others(tmp_path):
    from scalerl.curves.io import read_curves

    _two_tb_runs(tmp_path)
    curves = read_curves(tmp_path, x="train/num_tokens", y="val/acc")
    by_name = {c.name: c for c in curves}
    assert "runA" in by_name
    assert list(by_name["runA"].x) == [0.0, 2000.0, 4000.0, 6000.0, 8000.0, 10000.0]
