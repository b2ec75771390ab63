"""The run's own forecast outputs: the live forecast's columns and the run report's facts."""

import json

import numpy as np
import pytest

from scalerl.runlog import RunLogWriter
from scalerl.train.live_forecast import live_forecast
from scalerl.train.report import summary_lines, write_run_report

from scalerl.curves import Sigmoid

LAW = Sigmoid(A=0.610, B=1.92, C_mid=2542.0, R0=0.30)


def _rows(x, y):
    return [{"type": "eval", "step": 10 * i, "flops": float(a), "val/pass_rate": float(b)} for i, (a, b) in enumerate(zip(x, y))]


def synthetic(n, c_max, seed):
    x = np.r_[0.0, np.linspace(c_max / n, c_max, n)]
    return x, np.clip(LAW(x) + np.random.default_rng(seed).normal(0, 0.01, x.size), 0, 1)


def collapsing():
    x = np.r_[0.0, np.linspace(10, 300, 30)]
    base = 0.05 + 0.20 * (1 - np.exp(-x / 40))
    y = np.where(x > 150, base * np.exp(-(x - 150) / 40), base)
    return x, np.clip(y + np.random.default_rng(0).normal(0, 0.01, x.size), 0, 1)


def test_live_forecast_logs_both_bands_at_the_budget():
    rows = _rows(*synthetic(20, 4000, 1))
    out = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=400, n_boot=50)
    assert out["forecast/status"] == "ok"
    assert out["forecast/budget"] == 2 * rows[-1]["flops"]
    assert out["forecast/R_budget_obs_lo"] <= out["forecast/R_budget_lo"] <= out["forecast/R_budget"] \
        <= out["forecast/R_budget_hi"] <= out["forecast/R_budget_obs_hi"]


def test_live_forecast_of_a_falling_run_gives_no_forecast():
    out = live_forecast(_rows(*collapsing()), x="flops", y="val/pass_rate", total_steps=600, n_boot=50)
    assert out["forecast/status"].startswith("unstable:")
    assert "forecast/R_budget" not in out


def _write_synthetic_run(directory) -> None:
    """A run log (no final/ model) of 30 evaluations on a known sigmoid, x = flops."""
    with RunLogWriter(directory / "runlog.jsonl", {"type": "header", "run": "r", "recipe": "scalerl", "model": "tiny",
                                                   "config": {"forecast": {"x": "flops"}}}) as log:
        for r in _rows(*synthetic(30, 6000, 2)):
            log.append(r)


def test_run_report_gives_the_forecast_with_both_bands(tmp_path):
    _write_synthetic_run(tmp_path)
    rep = write_run_report(tmp_path, n_boot=50)
    f = rep.facts
    assert f["forecast_final_obs_lo"] <= f["forecast_final_lo"] <= f["forecast_final"] <= f["forecast_final_hi"]
    assert f["forecast_unstable"] is False and f["run_unstable"] is False
    text = dict(summary_lines(rep))
    line = text["forecast of the final val/pass_rate from the first half of the compute"]
    assert "confidence band" in line and "prediction band" in line
    # The end level: the mean of the last quarter of the held-out evaluations, forecast and observed.
    assert abs(f["forecast_end_level"] - f["final"]) < 0.05 and abs(f["forecast_end_error"]) < 0.05
    assert f"end level (mean of the last quarter of the held-out evaluations) {f['forecast_end_level']:.3f}" in line
    assert "facts (JSON)" in (tmp_path / "report.html").read_text()
    assert json.loads(json.dumps(f, default=str))["forecast_mae"] < 0.05
    assert np.isfinite(f["sigmoid_mae"])


def _double_width_calibration(path):
    """The shipped factors doubled: a user calibration whose effect is known exactly."""
    from scalerl.curves import default_calibration

    d = default_calibration().as_dict()
    for k in ("q_confidence", "q_prediction", "q_gain"):
        d[k] = [2 * v for v in d[k]]
    path.write_text(json.dumps(d))
    return path


def test_live_forecast_and_run_report_take_a_users_calibration(tmp_path):
    cal = _double_width_calibration(tmp_path / "cal.json")
    from scalerl.curves.bands import read_calibration

    rows = _rows(*synthetic(20, 4000, 1))
    plain = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=400, n_boot=50)
    mine = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=400, n_boot=50,
                         calibration=read_calibration(cal))
    assert mine["forecast/R_budget"] == plain["forecast/R_budget"]
    width = lambda o: o["forecast/R_budget_hi"] - o["forecast/R_budget_lo"]  # noqa: E731
    assert width(mine) > 1.5 * width(plain)  # doubled, less what the [0, 1] clip takes

    run = tmp_path / "run"
    run.mkdir()
    with RunLogWriter(run / "runlog.jsonl", {"type": "header", "run": "r", "recipe": "scalerl", "model": "tiny",
                                             "config": {"forecast": {"x": "flops", "calibration": str(cal)}}}) as log:
        for r in _rows(*synthetic(30, 6000, 2)):
            log.append(r)
    f_cfg = write_run_report(run, n_boot=50).facts  # the run's own forecast.calibration
    f_shipped = write_run_report(run, n_boot=50, calibration=_shipped_copy(tmp_path)).facts
    w = lambda f: f["forecast_final_hi"] - f["forecast_final_lo"]  # noqa: E731
    assert w(f_cfg) > 1.5 * w(f_shipped)


def _shipped_copy(tmp_path):
    from scalerl.curves.bands import CALIBRATION_FILE

    path = tmp_path / "shipped.json"
    path.write_text(CALIBRATION_FILE.read_text())
    return path


def test_a_bad_forecast_calibration_is_a_config_error_before_training(tmp_path):
    import pytest

    from scalerl.errors import ConfigError
    from scalerl.train.config import TrainConfig

    cfg = TrainConfig()
    cfg.forecast.calibration = str(tmp_path / "missing.json")
    with pytest.raises(ConfigError, match="forecast.calibration: no calibration file"):
        cfg.validate()


def test_a_forecast_calibration_without_the_live_forecasts_level_is_a_config_error(tmp_path, two_level_calibration):
    """Factors at 0.8 and 0.9 only passed the config check; every live forecast of the run (at 0.95)
    was then "no fit yet: band level must be in [0.8, 0.9]" -- a whole run without a forecast."""
    import pytest

    from scalerl.errors import ConfigError
    from scalerl.train.config import TrainConfig

    path = two_level_calibration
    cfg = TrainConfig()
    cfg.run.output = str(tmp_path / "run")
    cfg.forecast.calibration = str(path)
    with pytest.raises(ConfigError, match="has factors for band levels 0.8 to 0.9, not 0.95"):
        cfg.validate()


def test_a_run_calibrated_again_since_it_started_keeps_its_copy_and_says_so(tmp_path):
    """forecast.calibration written again (other factors) after the run started: the run's copy is
    what the report and a resume use, but the report named the original path (whose factors are now
    others) and the resume said nothing of it."""
    from scalerl.train.config import CALIBRATION_COPY
    from scalerl.train.live_forecast import changed_calibration_note

    run = tmp_path / "run"
    run.mkdir()
    cal = tmp_path / "cal.json"
    with RunLogWriter(run / "runlog.jsonl", {"type": "header", "run": "r", "recipe": "scalerl", "model": "tiny",
                                             "config": {"forecast": {"x": "flops", "calibration": str(cal)}}}) as log:
        for r in _rows(*synthetic(30, 6000, 2)):
            log.append(r)
    copy = run / CALIBRATION_COPY
    copy.write_text(_shipped_copy(tmp_path).read_text())  # the run started with the shipped factors ...
    cal.write_text(copy.read_text())
    assert changed_calibration_note(str(cal), run) is None
    _double_width_calibration(cal)  # ... and the file was calibrated again since
    note = changed_calibration_note(str(cal), run)
    assert note and f"{cal} has other factors than when the run started; the run keeps its copy {copy}" in note
    f = write_run_report(run, n_boot=50).facts
    assert f["calibration"] == f"{copy} (the run's copy of {cal}, made when it started)"
    f_shipped = write_run_report(run, n_boot=50, calibration=_shipped_copy(tmp_path)).facts
    w = lambda f: f["forecast_final_hi"] - f["forecast_final_lo"]  # noqa: E731
    assert w(f) == w(f_shipped)  # the copy's factors, not the file's new ones


def test_run_report_of_an_unfinished_run_says_so(tmp_path):
    """`scalerl report RUN` of a run still training read like a finished run's report."""
    _write_synthetic_run(tmp_path)
    text = dict(summary_lines(write_run_report(tmp_path, n_boot=50)))
    assert text["status"].startswith("unfinished (no final/ model yet): this covers the steps logged so far")
    (tmp_path / "final").mkdir()
    (tmp_path / "final" / "config.json").write_text("{}")
    # A final/ that does not say its step, and no config.yaml to read the run's end from: not called finished.
    assert "cannot be told" in dict(summary_lines(write_run_report(tmp_path, n_boot=50)))["status"]
    last = max(json.loads(line).get("step", 0) for line in (tmp_path / "runlog.jsonl").read_text().splitlines())
    (tmp_path / "final" / "scalerl_final.json").write_text(json.dumps({"step": last}))
    assert "status" not in dict(summary_lines(write_run_report(tmp_path, n_boot=50)))


def test_run_report_counts_the_reward_functions_failures(tmp_path):
    """A run whose reward function raised on 117 calls had a report that said nothing of it (the
    counts were only in the run log's columns); a run without failures gets no such line."""
    _write_synthetic_run(tmp_path)
    assert "reward function failures" not in dict(summary_lines(write_run_report(tmp_path, n_boot=50)))
    log = tmp_path / "runlog.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    last = max(i for i, r in enumerate(rows) if r.get("type") == "eval")
    rows[last].update(reward_errors=117, reward_timeouts=3)
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    text = dict(summary_lines(write_run_report(tmp_path, n_boot=50)))
    assert text["reward function failures"].startswith("117 errors and 3 timeouts, each scored as a wrong answer (-1, or")


def test_no_report_still_says_the_reward_functions_failures(tmp_path, capsys):
    """With --no-report the run's reward failures went unsaid (only the first one's warning)."""
    from scalerl.commands.train import _finish
    from scalerl.train.trainer import RunSummary

    evals = [{"step": 0, "reward_errors": 2}, {"step": 4, "reward_errors": 117, "reward_timeouts": 3}]
    assert _finish(RunSummary(tmp_path, 4, evals), report=False) == 0
    assert "reward function failures: 117 errors and 3 timeouts, each scored as a wrong answer" in capsys.readouterr().out
    assert _finish(RunSummary(tmp_path, 4, [{"step": 4}]), report=False) == 0
    assert "reward function failures" not in capsys.readouterr().out


def test_run_report_says_when_the_run_was_resumed(tmp_path):
    """A report read the same whether the run trained in one go or was stopped and resumed five
    times; the resumes (the run log's "resume" rows) are named, with the checkpoints they went
    on from. A run log without them (never resumed, or from before they were written) gets no line."""
    _write_synthetic_run(tmp_path)
    assert "resumed" not in dict(summary_lines(write_run_report(tmp_path, n_boot=50)))
    log = tmp_path / "runlog.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    rows.insert(8, {"type": "resume", "from_step": 60, "utc": "2026-12-03T12:00:00Z"})
    rows.insert(20, {"type": "resume", "from_step": 180, "utc": "2026-12-03T13:00:00Z"})
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = write_run_report(tmp_path, n_boot=50)
    assert rep.facts["resumed_from_steps"] == [60, 180]
    assert dict(summary_lines(rep))["resumed"] == "2 times, from the checkpoints at steps 60 and 180"
    assert "resumed" in (tmp_path / "report.md").read_text()
    # Stopped again before each next checkpoint: the same one, said once.
    rows = [r for r in rows if r.get("type") != "resume"]
    for at in (8, 9, 10):
        rows.insert(at, {"type": "resume", "from_step": 60, "utc": "2026-12-03T12:00:00Z"})
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert dict(summary_lines(write_run_report(tmp_path, n_boot=50)))["resumed"] == \
        "3 times, each from the checkpoint at step 60"


def test_run_report_leaves_out_an_evaluation_without_a_pass_rate_and_says_so(tmp_path):
    """An evaluation row whose pass rate is NaN (written by json as NaN) made the report's start read
    "nan -> 0.6..."; the fits already left it out, unsaid."""
    _write_synthetic_run(tmp_path)
    log = tmp_path / "runlog.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    first = min(i for i, r in enumerate(rows) if r.get("type") == "eval")
    rows[first]["val/pass_rate"] = float("nan")
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = write_run_report(tmp_path, n_boot=50)
    text = dict(summary_lines(rep))
    start = text["val/pass_rate: start -> final"]
    assert "nan" not in start and start.startswith(f"{rows[first + 1]['val/pass_rate']:.3f} ->")
    assert "1 evaluation without a finite val/pass_rate (at step 0)" in text["run log"]


def test_run_report_of_a_run_stopped_between_evaluations_gives_the_step_it_reached(tmp_path):
    """Stopped at step 330, its last evaluation at step 290: the report said "to step 290" as if the
    last 40 steps had not run; a resume starts again from its checkpoint's step."""
    _write_synthetic_run(tmp_path)  # evaluations at steps 0-300
    with open(tmp_path / "runlog.jsonl", "a") as f:
        for step in (310, 320, 330):
            f.write(json.dumps({"type": "train", "step": step, "reward_mean": 0.1}) + "\n")
    text = dict(summary_lines(write_run_report(tmp_path, n_boot=50)))
    assert text["steps / evaluations"] == "330 (the last evaluation at step 300) / 31"
    assert "to step 330;" in text["status"]
    with open(tmp_path / "runlog.jsonl", "a") as f:
        f.write(json.dumps({"type": "resume", "from_step": 300}) + "\n")
    text = dict(summary_lines(write_run_report(tmp_path, n_boot=50)))
    assert text["steps / evaluations"] == "300 / 31" and "to step 300;" in text["status"]


def test_run_report_of_an_evaluation_with_a_null_compute_value(tmp_path):
    """The run log writes a NaN as null; an evaluation row whose flops is null ended `scalerl report` in a
    TypeError (float(None), then a format of None in the evaluations table): it is left out of the fits and
    named."""
    _write_synthetic_run(tmp_path)
    log = tmp_path / "runlog.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    i = [k for k, r in enumerate(rows) if r.get("type") == "eval"][5]
    rows[i]["flops"] = None
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    rep = write_run_report(tmp_path, n_boot=20)
    assert f"1 evaluation without a finite flops (at step {rows[i]['step']})" in dict(summary_lines(rep))["run log"]
    assert "forecast_final" in rep.facts and (tmp_path / "report.md").exists()


def test_the_report_of_a_run_below_its_start_advises_a_command_that_takes_the_flag(tmp_path):
    """(review o) The refusal of a run whose evaluations fall below the first and rise again advised ``--r0``,
    which ``scalerl report`` does not take: it names ``scalerl fit``, which does."""
    import argparse
    import json

    from scalerl.commands.report import add_arguments
    from scalerl.train.report import summary_lines, write_run_report

    out = tmp_path / "dipped"
    out.mkdir()
    rows = [{"type": "header", "run": "dipped", "model": "tiny", "task": "arithmetic", "config": {}}]
    for i, y in enumerate([0.40, 0.22, 0.20, 0.23, 0.26, 0.29, 0.31, 0.33, 0.34, 0.35, 0.355, 0.36]):
        rows.append({"type": "eval", "step": 2 * i, "flops": 4.8e10 * i, "gpu_hours": 5e-4 * i, "samples": 256 * i,
                     "val/pass_rate": y})
    (out / "runlog.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    said = dict(summary_lines(write_run_report(out, n_boot=0))).get("half-budget forecast", "")
    assert "does not rise above where the run started" in said, said
    parser = argparse.ArgumentParser(prog="scalerl report")
    add_arguments(parser)
    with pytest.raises(SystemExit):
        parser.parse_args([str(out), "--r0", "0.2"])
    assert "scalerl fit FILE --r0 VALUE" in said, said


# Review bc: the live forecast a user watches while a run trains
def _collapsing_rows(set_name="val"):
    """Rises from 0.05 towards 0.25, then collapses (the live forecast calls it unstable)."""
    x = np.r_[0.0, np.linspace(10, 300, 30)]
    base = 0.05 + 0.20 * (1 - np.exp(-x / 40))
    y = np.clip(np.where(x > 150, base * np.exp(-(x - 150) / 40), base) + np.random.default_rng(0).normal(0, 0.01, x.size), 0, 1)
    return [{"type": "eval", "step": 10 * i, "flops": float(a), f"{set_name}/pass_rate": float(b)}
            for i, (a, b) in enumerate(zip(x, y))]


def test_the_progress_bar_says_when_the_live_forecast_finds_the_run_unstable():
    from scalerl.train.compute import ComputeMeter
    from scalerl.train.trainer import _postfix

    rows = _collapsing_rows()
    row = {**rows[-1], **live_forecast(rows, x="flops", y="val/pass_rate", total_steps=600, n_boot=50)}
    assert row["forecast/status"].startswith("unstable:")  # what the run log says
    line = _postfix(row, [row], "val", ComputeMeter(params=1000))
    assert "forecast: unstable" in line  # the bar said "val 0.0xx, 0 samples/s": the forecast just vanished


def test_a_live_forecast_bootstrap_too_small_for_intervals_is_a_config_error():
    """`--set forecast.bootstrap=5` trained a whole run whose every evaluation logged
    "no fit yet: a bootstrap needs at least 10 resamples, got 5" (as a calibration without the
    live forecast's level did before it was checked up front)."""
    from scalerl.errors import ConfigError
    from scalerl.train.config import TrainConfig

    cfg = TrainConfig()
    cfg.forecast.bootstrap = 5
    with pytest.raises(ConfigError, match="forecast.bootstrap"):
        cfg.validate()


def test_the_report_of_a_run_whose_evaluation_set_is_named_forecast(tmp_path):
    """`--task math --set 'task.settings={eval_data: {forecast: FILE}}' --set 'eval.sets=[forecast]'`
    trained, then `train` and `scalerl report` ended in an IndexError traceback: the report takes
    every `forecast/...` column for the live forecast's."""
    with RunLogWriter(tmp_path / "runlog.jsonl", {"type": "header", "run": "r", "recipe": "scalerl", "model": "tiny",
                                                  "config": {"forecast": {"x": "flops"}}}) as log:
        for r in _collapsing_rows("forecast"):
            log.append(r)
    rep = write_run_report(tmp_path, n_boot=50)
    assert rep.y == "forecast/pass_rate"


def test_a_live_forecast_that_cannot_fit_names_its_metric():
    # Review bc: "no fit yet: run 'run' ..." named no run the user has.
    rows = [{"type": "eval", "step": i, "flops": float(i), "val/pass_rate": 0.3} for i in range(6)]
    status = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=20)["forecast/status"]
    assert status.startswith("no fit yet: run 'val/pass_rate'"), status


# Review bd: forecast.bootstrap 0 is no intervals, not an error
def _sigmoid_rows():
    """Evaluations on a sigmoid in flops, as the trainer logs them."""
    rows = []
    for step in range(0, 101, 10):
        f = 1e15 * (step + 1)
        rows.append({"step": step, "flops": f, "math/pass_rate": 0.1 + 0.6 * f**1.2 / (f**1.2 + 3e16**1.2)})
    return rows


def test_bootstrap_zero_gives_a_forecast_and_is_accepted():
    from scalerl.errors import ConfigError
    from scalerl.train.config import TrainConfig

    out = live_forecast(_sigmoid_rows(), x="flops", y="math/pass_rate", total_steps=400, n_boot=0, seed=0)
    assert out["forecast/status"] == "ok" and "forecast/R_budget_lo" in out  # what 0 does: a forecast with bands
    cfg = TrainConfig()
    cfg.forecast.bootstrap = 0
    cfg.validate()
    cfg.forecast.bootstrap = 5  # (1-9: every evaluation said "no fit yet")
    with pytest.raises(ConfigError, match="forecast.bootstrap"):
        cfg.validate()


def test_bootstrap_is_not_checked_with_the_forecast_off():
    from scalerl.train.config import TrainConfig

    cfg = TrainConfig()
    cfg.forecast.enabled = False
    cfg.forecast.bootstrap = 0
    cfg.validate()


def test_a_run_saved_with_bootstrap_zero_resumes(tmp_path):
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig
    from scalerl.train.run_directory import resumed_config

    run = tmp_path / "run"
    run.mkdir()
    cfg = TrainConfig()
    cfg.forecast.bootstrap = 0  # accepted before fcc4c2b
    cfg.run.output = str(run)
    save_yaml(cfg, run / "config.yaml")
    (run / "runlog.jsonl").write_text("")
    assert resumed_config(run).forecast.bootstrap == 0


def test_a_run_saved_with_min_points_zero_or_a_small_bootstrap_resumes(tmp_path, capsys):
    """Review bf: min_points 0 (as harmless as 1) and bootstrap 1-9 (no live forecast at all) were refused when the
    saved run resumed, losing its training: min_points 0 is accepted, a small bootstrap read as 0 and said."""
    from scalerl.config import save_yaml
    from scalerl.train.config import TrainConfig
    from scalerl.train.run_directory import resumed_config

    run = tmp_path / "run"
    run.mkdir()
    cfg = TrainConfig()
    cfg.forecast.min_points, cfg.forecast.bootstrap = 0, 5
    cfg.run.output = str(run)
    save_yaml(cfg, run / "config.yaml")
    (run / "runlog.jsonl").write_text("")
    resumed = resumed_config(run)
    assert resumed.forecast.min_points == 0 and resumed.forecast.bootstrap == 0
    assert "the saved forecast.bootstrap 5 is read as 0" in capsys.readouterr().err


def test_the_progress_bar_does_not_call_a_ceiling_at_its_bound_a_ceiling():
    from scalerl.train.compute import ComputeMeter
    from scalerl.train.trainer import _postfix

    row = {"val/pass_rate": 0.61, "forecast/status": "ok", "forecast/A": 1.0, "forecast/R_budget": 0.72}
    line = _postfix(row, [row], "val", ComputeMeter(params=1000))
    assert "forecast no ceiling yet (A at its bound 1) -> 0.720 at budget" in line and "A 1.000" not in line, line
    line = _postfix({**row, "forecast/A": 0.8}, [{**row, "forecast/A": 0.8}], "val", ComputeMeter(params=1000))
    assert "forecast A 0.800 -> 0.720 at budget" in line, line


def test_refits_thin_out_as_the_evaluations_grow_and_depend_on_the_count_alone():
    from scalerl.train.live_forecast import next_refit, refit_points

    points = refit_points(10_000, min_points=5, growth=0.01)
    assert points[:196] == list(range(5, 201))  # every evaluation below 2 / growth
    gaps = np.diff(points[200:]) / np.array(points[200:-1])
    assert np.all((gaps >= 0.005) & (gaps <= 0.0101)), gaps  # then one refit per ~1% more
    assert len(points) < 700  # against 9,996 refits at every evaluation
    # A resumed run refits where the uninterrupted one did: the schedule up to n is a prefix of the longer one.
    assert refit_points(4321, min_points=5, growth=0.01) == [p for p in points if p <= 4321]
    assert next_refit(4321, min_points=5, growth=0.01) == min(p for p in points if p > 4321)
    assert refit_points(50, min_points=5, growth=0.0) == list(range(5, 51))  # 0: every evaluation


def test_the_live_forecast_between_refits_says_so_and_the_last_evaluation_refits():
    from scalerl.train.live_forecast import refit_points

    rows = _rows(*synthetic(300, 4000, 1))  # 301 points: refits at ..., 298, 300, 303 at growth 0.01
    assert [p for p in refit_points(310, min_points=5, growth=0.01) if p >= 298] == [298, 300, 303, 306, 309]
    out = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=4000, n_boot=10, refit_growth=0.01)
    assert out == {"forecast/status": "not refitted: the next refit at 303 evaluations (forecast.refit_growth 0.01)"}
    out = live_forecast(rows, x="flops", y="val/pass_rate", total_steps=4000, n_boot=10, refit_growth=0.01, last=True)
    assert out["forecast/status"] == "ok" and "forecast/R_budget" in out
    out = live_forecast(rows[:-1], x="flops", y="val/pass_rate", total_steps=4000, n_boot=10, refit_growth=0.01)
    assert out["forecast/status"] == "ok"  # 300 is a refit point


def test_the_progress_bar_keeps_the_last_refit_forecast_between_refits():
    from scalerl.train.compute import ComputeMeter
    from scalerl.train.trainer import _postfix

    fitted = {"val/pass_rate": 0.60, "forecast/status": "ok", "forecast/A": 0.8, "forecast/R_budget": 0.72}
    kept = {"val/pass_rate": 0.61, "forecast/status": "not refitted: the next refit at 301 evaluations"}
    line = _postfix(kept, [fitted, kept], "val", ComputeMeter(params=1000))
    assert line.startswith("val 0.610") and "forecast A 0.800 -> 0.720 at budget" in line, line


def test_a_refit_growth_that_is_no_fraction_is_a_config_error():
    import math

    from scalerl.errors import ConfigError
    from scalerl.train.config import TrainConfig

    for bad in (math.inf, -0.5):  # (inf passed, and the first refit past min_points was an OverflowError: review cd)
        cfg = TrainConfig()
        cfg.forecast.refit_growth = bad
        with pytest.raises(ConfigError, match="refit_growth"):
            cfg.validate()
