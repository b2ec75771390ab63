"""Regressions of the forecast-command fixes (review dn): a log directory and its file read once; TensorBoard runs
without the x (cum:) or y tag left out, named apart and listed as skipped; rows of a run without y said once; a
hand-edited eval.sets; an explicit max_val on a pre-cap resume; torchtune step mentions mid-text."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from .test_cli_curves import run_cli


def _acc(s: float) -> float:
    return 0.2 + 0.6 * (1 - math.exp(-s / 10)) + 0.01 * ((int(s) * 7) % 3 - 1)


# --- backtest: one log given as its directory and as the file inside it --------------------------------------


def _torchtune_log_dir(base: Path) -> Path:
    d = base / "tt"
    d.mkdir()
    (d / "log_1700000000.txt").write_text(
        "".join(f"Step {s} | rewards:{_acc(s):.4f} loss:{1 / s:.4f}\n" for s in range(1, 41)))
    return d


def test_backtest_log_dir_and_its_file_is_one_run(tmp_path, capsys):
    d = _torchtune_log_dir(tmp_path)
    code, out, err = run_cli(capsys, *["backtest", str(d), str(d / "log_1700000000.txt"), "--x", "step", "--y", "rewards",
                                   "--all-runs", "--json", "--bootstrap", "20"])
    assert code == 0, err
    runs = json.loads(out)["runs"]
    assert len(runs) == 1, [r.get("run") for r in runs]


# --- TensorBoard: runs without x / y ---------------------------------------------------------------------------


def _tb_runs(base: Path, specs: dict[str, str]) -> None:
    """``specs``: run directory -> 'x' (logs the token counter and a per-step timer), 'y' (logs val/acc)."""
    from torch.utils.tensorboard import SummaryWriter

    for name, flags in specs.items():
        w = SummaryWriter(str(base / name))
        for s in range(0, 21):
            if "x" in flags:
                w.add_scalar("train/num_tokens", 1000.0 * s, s)
                w.add_scalar("timing/step", 2.0, s)
            else:
                w.add_scalar("train/loss", 1.0 / (s + 1), s)
            if s % 2 == 0 and "y" in flags:
                w.add_scalar("val/acc", 0.1 + 0.7 * (1 - math.exp(-s / 6)) + 0.005 * (s % 3), s)
        w.close()


def test_tensorboard_run_without_cum_tag_does_not_sink_the_others(tmp_path):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from scalerl.curves.io import read_curve, read_curves

    _tb_runs(tmp_path, {"runA": "xy", "runB": "y"})
    curve = read_curve(tmp_path, x="cum:timing/step", y="val/acc", run="runA")
    assert curve.name == "runA"
    curves = read_curves(tmp_path, x="cum:timing/step", y="val/acc")
    assert [c.name for c in curves] == ["runA"]
    assert [name for name, _ in curves[0].left_out] == ["runB"]


def test_tensorboard_run_without_x_named_apart_from_a_read_run(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from scalerl.curves.io import read_curves

    _tb_runs(tmp_path, {"a/run1": "xy", "b/run1": "y"})
    curves = read_curves(tmp_path, x="train/num_tokens", y="val/acc")
    read = {c.name for c in curves}
    left = {name for name, _ in curves[0].left_out}
    assert left and not read & left, (read, left)
    code, _, err = run_cli(capsys, *["fit", str(tmp_path), "--x", "train/num_tokens", "--y", "val/acc", "--run", "b/run1"])
    assert code != 0
    assert "no x tag" in err and "no run named" not in err, err


def test_tensorboard_run_without_y_is_a_skipped_run(tmp_path, capsys):
    pytest.importorskip("torch")
    pytest.importorskip("tensorboard")
    from scalerl.curves.io import read_curves

    _tb_runs(tmp_path, {"runA": "xy", "runB": "x"})
    curves = read_curves(tmp_path, x="train/num_tokens", y="val/acc")
    assert [c.name for c in curves] == ["runA"]
    assert [name for name, _ in curves[0].left_out] == ["runB"]


# --- row logs: a run without y, and the rows-without-y note ---------------------------------------------------


def test_csv_run_without_y_not_counted_again_as_rows_without_y(tmp_path):
    from scalerl.curves.io import read_curves

    path = tmp_path / "two.csv"
    lines = ["run,step,flops,acc,loss"]
    for run in ("good", "bad"):
        for s in range(0, 41, 2):
            acc = f"{_acc(s):.4f}" if run == "good" else ""
            lines.append(f"{run},{s},{s * 1e15},{acc},{1 / (s + 1)}")
    path.write_text("\n".join(lines) + "\n")
    (curve,) = read_curves(path, x="flops", y="acc")
    assert curve.name == "good"
    assert [name for name, _ in curve.left_out] == ["bad"]
    # 'good' logs acc in each of its rows: no row of the run read lacks it.
    assert not any("row(s) have no 'acc' value" in n for n in curve.notes), curve.notes


# --- report: the header's eval.sets ---------------------------------------------------------------------------


def _run_log(directory: Path, sets) -> Path:
    directory.mkdir(parents=True)
    header = {"type": "header", "run": directory.name, "recipe": "scalerl", "model": "tiny-m",
              "task": "arithmetic-mix", "params": 1077632, "device": "cpu",
              "config": {"forecast": {"x": "flops"}, "eval": {"sets": sets}}}
    rows = []
    for i in range(10):
        flops = 5e10 * i
        pr = 0.30 + 0.35 / (1 + (2e11 / flops) ** 1.2) if flops > 0 else 0.30
        rows.append({"type": "eval", "step": 2 * i, "gpu_hours": 0.0004 * i, "flops": flops, "samples": 128 * i,
                     "val/pass_rate": round(pr, 4)})
    (directory / "runlog.jsonl").write_text("\n".join(json.dumps(r) for r in [header, *rows]) + "\n")
    return directory


def test_report_hand_edited_eval_sets_entry_no_traceback(tmp_path, capsys):
    run = _run_log(tmp_path / "run", [{"name": "val"}])
    try:
        code, _, err = run_cli(capsys, *["report", str(run)])
    except TypeError as exc:  # the defect
        pytest.fail(f"traceback: {exc!r}")
    assert code in (0, 2), err


# --- resume: a run saved before the held-out cap --------------------------------------------------------------


def test_resume_of_precap_run_does_not_drop_an_explicit_max_val(tmp_path, capsys):
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig, resolve

    data = tmp_path / "train.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"{i}+1=", "answer": str(i + 1)}) + "\n" for i in range(400)))
    run = tmp_path / "run"
    run.mkdir()
    cfg = resolve(TrainConfig(), ["run.steps=2", "eval.every=1", "pipeline=sync", f"run.output={run}",
                                  "task.name=math", f"task.data={data}", "eval.problems=3"])
    settings = dict(cfg.task.settings)
    settings.pop("max_val")  # as scalerl saved it before the cap
    cfg.task.settings = settings
    save_yaml(cfg, run / "config.yaml", header="scalerl run run (resolved config)")
    code, out, err = run_cli(capsys, *["train", "--task", "math", "--data", str(data), "--output", str(run), "--resume",
                                   "--set", "eval.problems=3", "--set", "task.settings={max_val: 3}",
                                   "--print-config"])
    if code == 0:  # accepted: the run must then hold out what was asked
        import yaml

        assert (yaml.safe_load(out)["task"]["settings"] or {}).get("max_val") == 3, out[-2000:]
    else:  # or refused, naming the setting
        assert "max_val" in err, err


# --- torchtune: 'Step N |' searched mid-line ------------------------------------------------------------------


def test_torchtune_mid_text_step_mention_not_counted_torn(tmp_path):
    from scalerl.curves.torchtune_log import read_torchtune_rows

    lines = []
    for s in range(1, 9):
        lines.append(f"Step {s} | loss:{1 / s:.3f} rewards:0.{s}")
        lines.append(f"INFO:torchtune.utils._logging:Saved checkpoint of Step {s} | epoch 0 to /ckpt/step_{s}")
    path = tmp_path / "console.log"
    path.write_text("\n".join(lines) + "\n")
    rows, notes = read_torchtune_rows(path)
    assert len(rows) == 8
    assert not any("cut off" in n for n in notes), notes
