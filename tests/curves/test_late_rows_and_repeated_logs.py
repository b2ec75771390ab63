"""Regressions of the log readers' fixes (review dp): a step's second late evaluation is no resume; DeepSpeed-Chat's
", ema reward score" line; backtest reads equal runs of other names apart and a run given by a directory and
its run once, in either order; add_scalars directories are no runs; a left-out run is always named."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from .test_cli_curves import run_cli


def _write_jsonl(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


# --- split_attempts: a late evaluation of a step that already has an evaluation row ------------------------------

Y = "eval/avg@1"


def _steps_with_late_rows(tmp_path: Path, at: dict[int, list[dict]]) -> Path:
    """Thirty training steps a row each, with ``at[s]``'s evaluation rows written right after step s's."""
    rows = []
    for s in range(1, 31):
        rows.append({"step": s, "time": 60.0 * s, "reward/mean": 0.25})
        rows += [{"time": 60.0 * s + 1 + k, **r} for k, r in enumerate(at.get(s, []))]
    return _write_jsonl(tmp_path / "metrics.jsonl", rows)


def test_late_second_evaluation_of_a_step_is_no_resume(tmp_path):
    from scalerl.curves import read_curve

    # step 10 evaluated on time, and again written after step 22; training goes on at 23 (no resume: no 11, 12, ...)
    path = _steps_with_late_rows(tmp_path, {10: [{"step": 10, Y: 0.4}], 22: [{"step": 10, Y: 0.41}]})
    c = read_curve(path, "step", "reward/mean")
    assert c.x.tolist() == list(range(1, 31)), c.notes
    assert not any("resumes" in n for n in c.notes)


def test_burst_of_two_late_rows_of_one_step_is_no_resume(tmp_path):
    from scalerl.curves import read_curve

    path = _steps_with_late_rows(tmp_path, {22: [{"step": 10, Y: 0.4, "env": "gsm8k"},
                                                 {"step": 10, Y: 0.3, "env": "math"}]})
    c = read_curve(path, "step", "reward/mean")
    assert c.x.tolist() == list(range(1, 31)), c.notes
    assert not any("resumes" in n for n in c.notes)


# --- DeepSpeed-Chat: the reward line with a comma before the EMA ----------------------------------------------


def test_deepspeed_chat_reward_line_with_comma_ema(tmp_path):
    from scalerl.curves.io import detect_format, read_curves

    lines = []
    for s in range(6):
        lines += [f"epoch: 0|step: {s}|ppo_ep: 1|act_loss: 0.1|cri_loss: 0.2|unsuper_loss: 0.0",
                  f"average reward score: {0.1 * s}, ema reward score: {0.05 * s}", "-" * 85]
    log = tmp_path / "step3.log"
    log.write_text("\n".join(lines) + "\n")
    assert detect_format(log) == "deepspeed-chat"
    (curve,) = read_curves(log, "global_step", "average_reward_score", bounded=False)
    assert list(curve.x) == list(range(6))
    assert list(curve.y) == pytest.approx([0.1 * s for s in range(6)])


# --- backtest _read_once -----------------------------------------------------------------------------------------


def _csv(path: Path, run: str) -> Path:
    path.write_text("run,step,acc\n" + "".join(
        f"{run},{10 * s},{0.2 + 0.5 * (1 - math.exp(-s / 12)) + 0.004 * (s % 3):.6f}\n" for s in range(1, 41)))
    return path


def test_backtest_two_runs_with_equal_values_are_both_backtested(tmp_path, capsys):
    a, b = _csv(tmp_path / "a.csv", "seedA"), _csv(tmp_path / "b.csv", "seedB")
    code, out, err = run_cli(capsys, *["backtest", str(a), str(b), "--x", "step", "--y", "acc", "--all-runs", "--json",
                                   "--bootstrap", "20", "--no-progress"])
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert len(runs) == 2, [r.get("run") for r in runs]


def _tb_runs(base: Path, names: list[str], scalars: bool = False) -> None:
    from torch.utils.tensorboard import SummaryWriter

    for k, name in enumerate(names):
        w = SummaryWriter(str(base / name))
        for s in range(0, 41):
            w.add_scalar("train/loss", 1.0 / (s + 1), s)
            w.add_scalar("val/acc", 0.1 + 0.6 * (1 - math.exp(-s / 12)) + 0.04 * k + 0.004 * (s % 3), s)
            if scalars:
                w.add_scalars("lr", {"actor": 1e-6, "critic": 1e-5}, s)
        w.close()


def test_backtest_run_dir_then_parent_dir_reads_the_run_once(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    _tb_runs(tmp_path / "tb", ["runA", "runB"])
    code, out, err = run_cli(capsys, *["backtest", str(tmp_path / "tb" / "runA"), str(tmp_path / "tb"), "--x", "step",
                                   "--y", "val/acc", "--all-runs", "--json", "--bootstrap", "20", "--no-progress"])
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert len(runs) == 2, [r.get("run") for r in runs]  # runA and runB, each once (as with the order reversed)


# --- TensorBoard: add_scalars' directories are no runs -------------------------------------------------------------


def test_tensorboard_add_scalars_directories_are_not_left_out_runs(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from scalerl.curves.io import read_curves

    _tb_runs(tmp_path, ["runA", "runB"], scalars=True)
    curves = read_curves(tmp_path, x="step", y="val/acc")
    assert sorted(c.name for c in curves) == ["runA", "runB"]
    assert all(not c.left_out for c in curves), curves[0].left_out
    assert not any("run(s) left out" in n for c in curves for n in c.notes)


# --- left_out_note / _pick_runs: a run whose name is in its reason ----------------------------------------------


def test_left_out_run_is_named_even_when_its_name_is_in_the_reason(tmp_path):
    from scalerl.curves.io import read_curve, read_curves

    log = tmp_path / "runs.csv"
    log.write_text("run,step,acc,loss\nmain,1,0.2,1\nmain,2,0.3,1\nmain,3,0.4,1\nc,1,,1\nc,2,,1\n")
    (curve,) = read_curves(log, "step", "acc")
    assert curve.left_out and curve.left_out[0][0] == "c"
    note = next(n for n in curve.notes if "left out" in n)
    assert "'c'" in note or "c:" in note, note
    with pytest.raises(Exception) as err:
        read_curve(log, "step", "acc", run="c")
    assert str(log) in str(err.value) and "'c'" in str(err.value), str(err.value)
