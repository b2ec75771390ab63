"""Run logs a user edited or another tool saved: a first line left blank, a byte-order mark, a header whose
sections hold null or a count written as text -- read by report, fit and eval --run as scalerl wrote them."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from scalerl.cli import main


def _run_dir(d: Path, *, prefix: bytes = b"", header: dict | None = None) -> Path:
    """A finished scalerl run directory: a run log of 21 evaluations (a clean sigmoid on flops), config.yaml, final/."""
    (d / "final").mkdir(parents=True)
    (d / "final" / "config.json").write_text("{}")
    (d / "final" / "scalerl_final.json").write_text(json.dumps({"step": 200}))
    (d / "config.yaml").write_text("run:\n  steps: 200\n")
    head = {"type": "header", "run": d.name, "recipe": "scalerl", "model": "tiny", "task": "arithmetic", "params": 1,
            "device": "cuda:0", "config": {"forecast": {"x": "flops"}, "eval": {"sets": ["val"]}}}
    head.update(header or {})
    rows = [head]
    for i in range(21):
        x = max(i * 10.0, 1.0)
        rows.append({"type": "eval", "step": 10 * i, "gpu_hours": i * 1e-3, "flops": i * 1e10, "samples": i * 160,
                     "val/pass_rate": 0.2 + 0.5 / (1 + (60 / x) ** 1.5)})
    (d / "runlog.jsonl").write_bytes(prefix + "".join(json.dumps(r) + "\n" for r in rows).encode("utf-8"))
    return d


@pytest.mark.parametrize("header", [
    {"config": None},
    {"config": {"forecast": None, "eval": {"sets": ["val"]}}},
    {"config": {"forecast": {"x": "flops"}, "recipe": {"optimizer": None}}},
    {"params": "1.1M"},
], ids=["config-null", "forecast-null", "optimizer-null", "params-text"])
def test_report_of_a_hand_edited_header_is_no_traceback(tmp_path, capsys, header):
    d = _run_dir(tmp_path / "run", header=header)
    try:
        rc = main(["report", str(d)])
    except Exception as exc:  # noqa: BLE001 -- what the user sees as a traceback
        pytest.fail(f"scalerl report ended in a traceback: {type(exc).__name__}: {exc}")
    err = capsys.readouterr().err
    assert rc == 0 or (rc != 0 and err.count("\n") <= 2 and "error" in err), err


def test_read_header_finds_the_header_read_runlog_finds(tmp_path):
    from scalerl.commands.evaluate import _run_device
    from scalerl.runlog import read_header, read_runlog

    d = _run_dir(tmp_path / "run", prefix=b"\n")
    log = d / "runlog.jsonl"
    header, rows, _ = read_runlog(log)
    assert header["device"] == "cuda:0" and len(rows) == 21  # (what report reads)
    assert read_header(log) == header
    assert _run_device(d) == "cuda:0", "eval --run loses the run's device (and its 'evaluated on cuda' note)"


def test_fit_of_a_run_whose_log_starts_with_a_blank_line_reads_its_own_axes(tmp_path, capsys):
    d = _run_dir(tmp_path / "run", prefix=b"\n")
    rc = main(["fit", str(d)])
    err = capsys.readouterr().err
    assert rc == 0, err[:300]
    assert "--x flops --y val/pass_rate" in err


@pytest.mark.parametrize("target", ["directory", "log"])
def test_fit_of_a_run_whose_log_has_a_byte_order_mark_reads_it_with_its_own_axes(tmp_path, capsys, target):
    d = _run_dir(tmp_path / "run", prefix=b"\xef\xbb\xbf")
    rc = main(["fit", str(d if target == "directory" else d / "runlog.jsonl")])
    err = capsys.readouterr().err
    assert rc == 0, err[:300]
    assert "--x flops --y val/pass_rate" in err
