"""The run report's figures, checked in matplotlib: the legend of curve.png does not cover the
points it is about, and no two x tick labels of a log axis overlap (sets.png once printed
``3x10^11 4x10^11`` on top of each other)."""

import numpy as np
import pytest

from scalerl.curves import Curve, backtest
from scalerl.curves.plot import plot_backtest
from scalerl.train.report import _plot_sets


def _visible_tick_boxes(fig, ax):
    renderer = fig.canvas.get_renderer()
    return sorted((label.get_window_extent(renderer) for which in ("major", "minor")
                   for label in ax.xaxis.get_ticklabels(which=which) if label.get_visible() and label.get_text()),
                  key=lambda b: b.x0)


def _points_in_display(ax):
    pts = []
    for line in ax.lines:
        if line.get_marker() not in (None, "None", "", " "):
            pts.append(ax.transData.transform(np.column_stack(line.get_data())))
    for coll in ax.collections:
        offsets = coll.get_offsets()
        if len(offsets):
            pts.append(ax.transData.transform(offsets))
    return np.vstack(pts)


def _sigmoid_curve(x):
    A, B, C_mid, R0 = 0.8, 1.2, 3e11, 0.1
    rng = np.random.default_rng(0)
    y = R0 + (A - R0) / (1 + (C_mid / x) ** B) + rng.normal(0, 0.01, x.size)
    return Curve.from_arrays(x, y, name="run", x_name="flops", y_name="val/pass_rate")


def test_the_forecast_legend_covers_no_data_point(tmp_path, figures):
    curve = _sigmoid_curve(np.geomspace(1e10, 2e12, 24))
    bt = backtest(curve, cut_fraction=0.5, n_boot=50)
    plot_backtest(bt, tmp_path / "curve.png")
    fig = figures[-1]
    ax = fig.axes[0]
    legends = [*fig.legends, *([ax.get_legend()] if ax.get_legend() else [])]
    assert legends
    renderer = fig.canvas.get_renderer()
    points = _points_in_display(ax)
    assert len(points) >= 24  # the fitted and the held-out evaluations are drawn
    for legend in legends:
        box = legend.get_window_extent(renderer)
        inside = (points[:, 0] >= box.x0) & (points[:, 0] <= box.x1) & (points[:, 1] >= box.y0) & (points[:, 1] <= box.y1)
        assert not inside.any(), f"the legend covers {inside.sum()} points"
        assert not box.overlaps(ax.get_window_extent(renderer))  # nor anything else drawn in the axes


@pytest.mark.parametrize("lo, hi", [(2.6e11, 4.6e11), (1e10, 9e10), (3e9, 8e12), (1.0, 1.4)])
def test_log_axis_tick_labels_do_not_overlap(tmp_path, figures, lo, hi):
    xs = np.geomspace(lo, hi, 12)
    evals = [{"flops": x, "val/pass_rate": 0.3 + 0.01 * i, "hard/pass_rate": 0.2 + 0.01 * i} for i, x in enumerate(xs)]
    _plot_sets(evals, ["val", "hard"], "flops", tmp_path / "sets.png")
    fig = figures[-1]
    boxes = _visible_tick_boxes(fig, fig.axes[0])
    assert len(boxes) >= 2, "the axis kept at least two labels"
    for a, b in zip(boxes, boxes[1:]):
        assert a.x1 <= b.x0, f"tick labels overlap: {a} and {b}"


def _write_run(directory, ys):
    from scalerl.runlog import RunLogWriter

    xs = np.geomspace(1e12, 3e14, len(ys))
    with RunLogWriter(directory / "runlog.jsonl", {"type": "header", "run": "r", "recipe": "scalerl", "model": "tiny",
                                                   "config": {"forecast": {"x": "flops"}}}) as log:
        for i, (x, y) in enumerate(zip(xs, ys)):
            log.append({"type": "eval", "step": 10 * (i + 1), "flops": float(x), "gpu_hours": 0.01 * (i + 1),
                        "samples": 100 * (i + 1), "val/pass_rate": float(y)})


def _caption(directory):
    md = (directory / "report.md").read_text().split("](curve.png)\n\n", 1)[1]
    return md.split("\n", 1)[0]


def test_the_caption_of_curve_png_says_what_is_drawn(tmp_path, figures):
    """The caption described points fitted and bands under every curve.png: also under an unstable
    run's (drawn without bands: no forecast) and a too-short run's (its points alone)."""
    from scalerl.train.report import write_run_report

    x = np.geomspace(1e12, 3e14, 24)
    y = 0.1 + 0.7 / (1 + (3e13 / x) ** 1.2)
    y[12:] = y[12] - np.linspace(0, 0.5, 12)
    (tmp_path / "unstable").mkdir()
    _write_run(tmp_path / "unstable", np.clip(y, 0, 1))
    assert write_run_report(tmp_path / "unstable", n_boot=20).facts["forecast_unstable"]
    caption = _caption(tmp_path / "unstable")
    assert "no forecast and no band" in caption and "Bands: 95%" not in caption
    assert "no forecast and no band" in (tmp_path / "unstable" / "report.html").read_text()
    (tmp_path / "short").mkdir()
    _write_run(tmp_path / "short", [0.1, 0.12, 0.15])
    write_run_report(tmp_path / "short", n_boot=20)
    caption = _caption(tmp_path / "short")
    assert "too few for a forecast" in caption and "Bands" not in caption


def test_names_and_completions_cannot_break_report_md(tmp_path):
    """report.md put a user's names raw into its heading and its table (a ``|`` in a model path slid
    the rest of the row one column; a run directory named ``<script>...`` became raw HTML in a viewer)
    and a completion holding ``` (the model wrote code) closed the sample's fence, the rest of the
    completion read as Markdown."""
    import json
    import re

    from scalerl.runlog import RunLogWriter
    from scalerl.train.report import write_run_report

    directory = tmp_path / "run <script>x"
    directory.mkdir()
    with RunLogWriter(directory / "runlog.jsonl", {"type": "header", "run": "r", "recipe": "scalerl",
                                                   "model": "org/a|b*c", "config": {"forecast": {"x": "flops"}}}) as log:
        for i, y in enumerate([0.1, 0.2, 0.3]):
            log.append({"type": "eval", "step": i + 1, "flops": 1e12 * (i + 1), "gpu_hours": 0.01, "samples": 100,
                        "val/pass_rate": y})
    completion = "Here:\n```python\nprint(1)\n```\n# not a heading\n````"
    (directory / "samples.jsonl").write_text(json.dumps({"step": 3, "set": "val", "problem_id": "p|1", "prompt": "q",
                                                          "completion": completion, "answer": "1", "passed": True}) + "\n")
    write_run_report(directory, n_boot=20)
    md = (directory / "report.md").read_text()
    assert md.startswith("# scalerl run report: run \\<script>x\n")
    tables = [block.splitlines() for block in re.findall(r"(?:^\|.*\n)+", md, flags=re.M)]
    assert len(tables) == 2  # the facts and the evaluations; every row of each with its header's cells
    for table in tables:
        assert all(len(re.findall(r"(?<!\\)\|", row)) == len(re.findall(r"(?<!\\)\|", table[0])) for row in table)
    assert "org/a\\|b\\*c" in md
    fence = "`" * 5  # longer than the completion's longest run of backticks (4)
    assert f"{fence}\n{completion}\n{fence}\n" in md


def test_the_report_says_it_skipped_a_torn_last_line(tmp_path, figures):
    """A kill mid-write leaves a torn last line: `scalerl fit` notes that it skipped it; the report
    skipped it without a word (review g)."""
    from scalerl.train.report import summary_lines, write_run_report

    x = np.geomspace(1e12, 3e14, 12)
    _write_run(tmp_path, 0.1 + 0.5 / (1 + (3e13 / x) ** 1.2))
    with open(tmp_path / "runlog.jsonl", "a") as f:
        f.write('{"type": "eval", "step": 130, "flo')
    lines = dict(summary_lines(write_run_report(tmp_path, n_boot=20)))
    assert "torn last line" in lines["run log"]


def test_the_report_s_sample_says_when_the_reward_function_failed_on_it():
    """A shown completion whose reward call raised or timed out is no verdict on the completion: its -1
    was read as a wrong answer."""
    from scalerl.train.report import _sample_lines

    base = {"step": 3, "set": "val", "problem_id": "p", "prompt": "q", "completion": "c", "answer": "1", "reward": -1.0}
    failed = dict(_sample_lines({**base, "reward_failed": True})[1])["reward"]
    assert "the reward function failed on this completion" in failed and "scored as a wrong answer" in failed
    assert "failed" not in dict(_sample_lines(base)[1])["reward"]  # (and a sample written before the field)


def test_the_report_says_how_fast_the_run_trained(tmp_path, figures):
    # It said the compute (FLOPs, device-seconds, samples) and not the throughput the progress bar showed.
    from scalerl.train.report import write_run_report

    _write_run(tmp_path, [0.1, 0.12, 0.15])  # the last evaluation: 300 samples in 0.03 device-hours
    write_run_report(tmp_path, n_boot=20)
    assert "108 device-seconds, 300 samples (2.8 samples per device-second)" in (tmp_path / "report.md").read_text()
