"""Where a run's stability reaches users other than ``scalerl fit`` -- compare (a collapse whose peak an
excursion rule would leave out, an untested run, one seed of several that fell), its plot, backtest (one run and
--all-runs), the run report, the study report: each says what fit says of the same evaluations (review ck)."""

from __future__ import annotations

import json

import numpy as np

from scalerl.cli import main

#: A rise, a peak that the excursion rule would leave out, then a collapse to 0: ``scalerl fit`` calls it
#: "peaked and fell" (tests/curves/test_fit_edge_answers.py: the stability check sees every evaluation).
PEAK_THEN_ZERO = [0.193, 0.413, 0.416, 0.658, 0.64, 0.0, 0.0]
#: Five evaluations after the start that fell from 0.62 to 0.05: too few to test ("not tested for a fall").
SHORT_COLLAPSE = [0.2, 0.45, 0.6, 0.62, 0.3, 0.05]


def _csv(tmp_path, name: str, x, y) -> str:
    path = tmp_path / f"{name}.csv"
    path.write_text("step,acc\n" + "".join(f"{float(a)!r},{float(b)!r}\n" for a, b in zip(x, y)))
    return str(path)


def _healthy(seed: int, n: int = 13, noise: float = 0.01, c_mid: float = 40.0) -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(n) * 10.0
    y = 0.2 + 0.5 / (1 + (c_mid / np.maximum(x, 1e-9)) ** 2) + np.random.default_rng(seed).normal(0, noise, n)
    y[0] = 0.2
    return x, np.round(y, 4)


def _run(capsys, *argv: str) -> str:
    rc = main(list(argv))
    out = capsys.readouterr().out
    assert rc == 0, out
    return out


# ------------------------------------------------------------------------------------------------ compare


def test_compare_flags_the_collapse_that_fit_flags(capsys, tmp_path):
    base = _csv(tmp_path, "base", *_healthy(1))
    exc = _csv(tmp_path, "exc", np.arange(7) * 10, PEAK_THEN_ZERO)
    fit = json.loads(_run(capsys, "fit", exc, "--x", "step", "--y", "acc", "--bootstrap", "0", "--json"))
    assert fit["status"] == "unstable"  # what fit says of this curve
    d = json.loads(_run(capsys, "compare", base, exc, "--x", "step", "--y", "acc", "--labels", "base", "exc",
                        "--bootstrap", "30", "--json"))
    run = next(r for r in d["runs"] if r["label"] == "exc")
    (c,) = d["classifications"]
    assert run["stability"]["unstable"] and run["forecast"] is None and c["kind"] == "unstable run", \
        (run["stability"]["text"], run["forecast"], c["kind"])


def test_compare_does_not_call_an_untested_run_ok(capsys, tmp_path):
    base = _csv(tmp_path, "base", *_healthy(1))
    short = _csv(tmp_path, "short", np.arange(6) * 10, SHORT_COLLAPSE)
    out = _run(capsys, "compare", base, short, "--x", "step", "--y", "acc", "--labels", "base", "short",
               "--bootstrap", "30")
    row = next(line for line in out.splitlines() if line.startswith("short "))
    assert not row.rstrip().endswith(" ok") and "not tested" in out, out


def test_compare_says_when_a_seed_of_a_run_collapsed(capsys, tmp_path):
    paths = [_csv(tmp_path, f"a{k}", *_healthy(10 + k)) for k in range(3)]
    for k in range(3):
        x, y = _healthy(20 + k)
        if k == 1:
            y[-4:] = [0.5, 0.35, 0.25, 0.2]  # this seed collapses back to its start
            fit = json.loads(_run(capsys, "fit", _csv(tmp_path, "check", x, y), "--x", "step", "--y", "acc",
                                  "--bootstrap", "0", "--json"))
            assert fit["status"] == "unstable"
        paths.append(_csv(tmp_path, f"b{k}", x, y))
    out = _run(capsys, "compare", *paths, "--x", "step", "--y", "acc", "--labels", "a", "a", "a", "b", "b", "b",
               "--bootstrap", "30")
    assert "unstable" in out.lower() or "peaked and fell" in out, out


def test_compare_plot_draws_the_excursions_it_left_out(tmp_path, monkeypatch):
    from scalerl.curves import Curve, compare
    from scalerl.curves import plot as plot_mod

    x, y = _healthy(3, n=16, noise=0.005)
    y[8] -= 0.2  # one evaluation caught mid-oscillation
    dipped = Curve(x=x, y=y, name="dip", x_name="step", y_name="acc")
    base = Curve(x=_healthy(4, n=16)[0], y=_healthy(4, n=16)[1], name="base", x_name="step", y_name="acc")
    result = compare({"base": [base], "dip": [dipped]}, n_boot=20, forecasts=False)
    assert any("left out of the fit" in n for n in result.notes), result.notes
    drawn = []
    original = plot_mod.finish

    def spy(fig, ax, path, **kw):
        for col in ax.collections:
            drawn.extend(map(tuple, np.asarray(col.get_offsets(), dtype=float)))
        return original(fig, ax, path, **kw)

    monkeypatch.setattr(plot_mod, "finish", spy)
    plot_mod.plot_compare(result, tmp_path / "c.png")
    assert any(abs(px - x[8]) < 1e-9 and abs(py - y[8]) < 1e-9 for px, py in drawn), (x[8], y[8])


# ------------------------------------------------------------------------------------------------ backtest


def test_backtest_all_runs_does_not_say_a_fall_before_the_cut_came_later(capsys, tmp_path):
    c10 = _csv(tmp_path, "c10", np.arange(11) * 10, SHORT_COLLAPSE + [0.05, 0.04, 0.05, 0.05, 0.04])
    base = _csv(tmp_path, "base", *_healthy(1))
    out = _run(capsys, "backtest", c10, base, "--x", "step", "--y", "acc", "--cut-fraction", "0.5",
               "--bootstrap", "0", "--no-progress")
    row = next(line for line in out.splitlines() if line.startswith("c10 "))
    # The fall (0.62 -> 0.3 -> 0.05 at steps 40-50) is at or before the cut at step 50.
    assert "fell later" not in row and "1 that fell after it" not in out, out


def test_one_run_backtest_says_the_run_fell_after_the_cut(capsys, tmp_path):
    x, y = _healthy(3, n=21, noise=0.008, c_mid=50.0)
    y[-5:] = [0.55, 0.45, 0.35, 0.25, 0.2]
    path = _csv(tmp_path, "late", x, y)
    d = json.loads(_run(capsys, "backtest", path, "--x", "step", "--y", "acc", "--cut-fraction", "0.5",
                        "--bootstrap", "0", "--json"))
    assert not d["unstable"] and d["run_stability"]["unstable"]  # stable at the cut, fell after it
    out = _run(capsys, "backtest", path, "--x", "step", "--y", "acc", "--cut-fraction", "0.5", "--bootstrap", "0")
    low = out.lower()
    assert "fell" in low or "unstable" in low or "not scored" in low, out


# ------------------------------------------------------------------------------------------------ run report


def test_run_report_says_a_short_run_was_not_tested_for_a_fall(tmp_path):
    from scalerl.runlog import RunLogWriter
    from scalerl.train.report import summary_lines, write_run_report

    header = {"type": "header", "run": "r", "recipe": "scalerl", "model": "tiny", "config": {"forecast": {"x": "flops"}}}
    with RunLogWriter(tmp_path / "runlog.jsonl", header) as log:
        for i, v in enumerate(SHORT_COLLAPSE):
            log.append({"type": "eval", "step": 10 * i, "flops": 1e9 * i, "val/pass_rate": v})
    rep = write_run_report(tmp_path, n_boot=30)
    assert "fit_A" in rep.facts and rep.facts["run_stability"].startswith("not tested")
    lines = summary_lines(rep)
    assert any("not tested" in v for _, v in lines), lines
    assert "not tested" in (tmp_path / "report.md").read_text()
