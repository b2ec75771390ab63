"""The forecast commands are a contract other tools call: keys, exit codes, one-line errors."""

import json
import subprocess
import sys

import pytest

from scalerl.cli import main

from .conftest import DEEPSEEK, QWEN, REAL_CSV

XY = ["--x", "cum_wall_hours", "--y", "val_score"]


def run_cli(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_fit_json_contract(capsys, tmp_path):
    plot = tmp_path / "fit.svg"
    code, out, err = run_cli(capsys, "fit", str(REAL_CSV), *XY, "--run", DEEPSEEK, "--bootstrap", "100",
                             "--predict", "24", "48", "--plot", str(plot), "--json")
    assert code == 0, err
    obj = json.loads(out)
    for key in ("A", "B", "C_mid", "R0", "sse", "n_points", "intervals", "predictions"):
        assert key in obj
    assert set(obj["intervals"]) >= {"A", "B", "C_mid"}
    assert [p["C"] for p in obj["predictions"]] == [24.0, 48.0]
    for p in obj["predictions"]:
        assert p["lo"] <= p["R"] <= p["hi"]
    assert plot.exists() and plot.read_text().lstrip().startswith("<?xml")


def test_fit_human_output_and_png(capsys, tmp_path):
    plot = tmp_path / "fit.png"
    code, out, _ = run_cli(capsys, "fit", str(REAL_CSV), *XY, "--run", QWEN, "--fit-until", "4.1", "--bootstrap", "100",
                           "--plot", str(plot), "--target", "0.5", "--verdict", "4", "8")
    assert code == 0
    assert "A " in out and "95% interval" in out and "Verdict:" in out and "plateau" in out
    assert plot.read_bytes()[:4] == b"\x89PNG"


def test_fit_paper_method(capsys):
    code, out, err = run_cli(capsys, "fit", str(REAL_CSV), *XY, "--run", DEEPSEEK, "--method", "paper",
                             "--paper-cmid", "0.1", "20", "--bootstrap", "0", "--json")
    assert code == 0, err
    obj = json.loads(out)
    assert obj["method"] == "paper" and 0.45 <= obj["A"] <= 0.8


def test_backtest_json_contract(capsys):
    code, out, err = run_cli(capsys, "backtest", str(REAL_CSV), *XY, "--run", QWEN, "--cut-fraction", "0.5", "--json")
    assert code == 0, err
    obj = json.loads(out)
    for law in ("sigmoid", "power_law"):
        assert {"mae", "last_error", "params"} <= set(obj[law])
    assert obj["sigmoid"]["mae"] <= 0.015


def test_compare_two_runs(capsys, tmp_path):
    code, out, err = run_cli(capsys, "compare", str(REAL_CSV), *XY, "--bootstrap", "100", "--json",
                             "--plot", str(tmp_path / "c.png"))
    assert code == 0, err
    obj = json.loads(out)
    assert obj["baseline"] == QWEN
    (c,) = obj["classifications"]
    assert c["kind"] == "ceiling" and c["better"] is True
    assert (tmp_path / "c.png").exists()


@pytest.mark.parametrize(
    "argv, needle",
    [
        (["fit", str(REAL_CSV), "--x", "gpu", "--y", "val_score", "--run", QWEN], "available columns"),
        (["fit", str(REAL_CSV), *XY], "--run"),
        (["fit", "/no/such.csv", *XY], "no such file"),
        (["fit", str(REAL_CSV), *XY, "--run", QWEN, "--r0", "maybe"], "--r0"),
        (["fit", str(REAL_CSV), *XY, "--run", QWEN, "--fit-until", "0.3"], "parameters"),
        (["fit", str(REAL_CSV), *XY, "--run", QWEN, "--plot", "x.gif"], ".png"),
        (["backtest", str(REAL_CSV), *XY, "--run", QWEN, "--cut-fraction", "1.5"], "cut-fraction"),
        (["compare", str(REAL_CSV), str(REAL_CSV), *XY, "--labels", "a"], "--labels"),
    ],
)
def test_bad_input_exits_2_with_one_line(capsys, argv, needle):
    code, out, err = run_cli(capsys, *argv)
    assert code == 2
    assert needle in err
    assert len(err.strip().splitlines()) == 1
    assert "Traceback" not in err


def test_forecast_commands_do_not_import_torch():
    code = (
        "import sys; from scalerl.cli import main; "
        f"main(['fit', {str(REAL_CSV)!r}, '--x', 'cum_wall_hours', '--y', 'val_score', '--run', {DEEPSEEK!r}, '--bootstrap', '20']); "
        "import scalerl.curves, scalerl.commands.backtest, scalerl.commands.compare, scalerl.runlog; "
        "assert 'torch' not in sys.modules, 'torch was imported'"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
