"""The analysis and the report against known truth: run logs drawn from chosen sigmoids."""

import json
import math
import re

import numpy as np
import pytest

from scalerl.cli import main
from scalerl.study.analysis import analyse_study, common_A_fit, linearise
from scalerl.study.report import FIGURES, write_study_report
from scalerl.study.spec import StudySpec

from .synthetic import sigmoid, write_study

#: Truth: DAPO lowers the ceiling, sample aggregation only slows (C_mid x2.4), the FP32 head does nothing.
LAWS = {
    "scalerl": (0.70, 1.5, 5e11),
    "loo-loss-dapo": (0.55, 1.5, 5e11),
    "loo-aggregation-sample": (0.70, 1.5, 1.2e12),
    "loo-fp32-head-off": (0.70, 1.5, 5e11),
}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    d = tmp_path_factory.mktemp("study")
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-aggregation-sample", "loo-fp32-head-off"], seeds=2,
                     steps=200, eval_every=10, bootstrap=100)
    write_study(d, spec, LAWS)
    return d, write_study_report(d)


def test_each_variant_is_classified_as_the_truth_says(study):
    _, rep = study
    a = rep.analysis
    dapo, agg, fp32 = (a.variant(v) for v in ("loo-loss-dapo", "loo-aggregation-sample", "loo-fp32-head-off"))
    assert (dapo.kind, dapo.classification["better"]) == ("ceiling", False)
    lo, hi = dapo.classification["dA_interval"]
    assert hi < 0 and lo < -0.15 + 0.05 < hi + 0.05  # dA = -0.15 in truth, inside a sensible band
    assert (agg.kind, agg.classification["better"]) == ("efficiency", False)
    assert agg.classification["log_cmid_ratio_interval"][0] > 0  # needs more compute for half the gain
    assert fp32.kind == "no clear effect"
    # Against the paper: loss type is a ceiling mover, aggregation an efficiency shaper, and a
    # ceiling mover that moved nothing is inconclusive, not a disagreement.
    assert (dapo.expected, dapo.agreement) == ("ceiling", "agrees")
    assert (agg.expected, agg.agreement) == ("efficiency", "agrees")
    assert (fp32.expected, fp32.agreement) == ("ceiling", "inconclusive")


def test_a_one_seed_study_says_its_verdicts_may_be_the_seeds(tmp_path, study):
    """Two seeds a variant (the study above): no such note. One seed: a note naming the verdicts
    that rest on it and how to add seeds to the study."""
    assert not any("one seed" in n for n in study[1].analysis.notes)
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-fp32-head-off"], seeds=1, steps=200, eval_every=10,
                     bootstrap=50)
    write_study(tmp_path, spec, LAWS)
    notes = analyse_study(tmp_path).notes
    (note,) = [n for n in notes if n.startswith("one seed")]
    # (the FP32-head variant is the base's law with another noise draw: with one seed it may be called too)
    assert "the verdict on loo-loss-dapo" in note and f"--output {tmp_path} --seeds 3" in note


def test_fits_intervals_and_extrapolation_cover_the_truth(study):
    _, rep = study
    a = rep.analysis
    for label, (A, B, C_mid) in LAWS.items():
        v = a.variant(label)
        assert v.seeds == [0, 1] and not v.pending and not v.fit_error
        assert v.A_interval[0] - 0.01 <= A <= v.A_interval[1] + 0.01, label
        truth = float(sigmoid(a.extrapolate_at, A, B, C_mid, 0.3))
        assert v.extrapolated_interval[0] - 0.01 <= truth <= v.extrapolated_interval[1] + 0.01, label
    assert a.extrapolate_at == pytest.approx(10 * 200 * 1e10)  # 10x the final compute (200 steps x 1e10)


def test_report_files_and_tables(study):
    d, rep = study
    for name in (*FIGURES, "report.md", "report.html", "analysis.json"):
        assert (d / name).stat().st_size > 0, name
    md = (d / "report.md").read_text()
    assert "| loo-loss-dapo | loss | ceiling lowered |" in md
    assert "ln 1/F(R)" in md and "![leave-one-out view](loo_view.png)" in md
    page = (d / "report.html").read_text()
    assert all(f'src="{f}"' in page for f in FIGURES)
    data = json.loads((d / "analysis.json").read_text())
    assert data["base"] == "scalerl" and len(data["variants"]) == 4
    c = next(v for v in data["variants"] if v["label"] == "loo-loss-dapo")["classification"]
    assert {"kind", "better", "dA", "dA_interval", "shared_A", "B", "C_mid", "explanation"} <= set(c)


def test_report_command_regenerates_a_study_report(study, capsys):
    d, _ = study
    (d / "report.md").unlink()
    assert main(["report", str(d), "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "what each choice moved" in out and "loo-aggregation-sample" in out
    assert (d / "report.md").exists()


def test_report_that_cannot_write_its_files_says_which_in_one_line(tmp_path, capsys):
    """A directory where report.md goes (as a read-only directory would) gave an IsADirectoryError traceback,
    for a study directory and for one of its run directories alike."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50)
    plans = write_study(tmp_path, spec, {k: LAWS[k] for k in ("scalerl", "loo-loss-dapo")})
    for directory, flags in ((tmp_path, ["--bootstrap", "50"]), (plans[0].directory, [])):
        (directory / "report.md").mkdir()
        code = main(["report", str(directory), *flags])
        err = capsys.readouterr().err.strip()
        assert code == 2 and len(err.splitlines()) == 1, err
        assert err.startswith("scalerl report: error:") and f"{directory / 'report.md'}: Is a directory" in err


def test_report_of_a_missing_path_or_of_the_log_file_itself_says_what_to_give(tmp_path, capsys):
    """`scalerl report RUN/runlog.jsonl` said the file was 'neither a run directory nor a study directory'."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50)
    plans = write_study(tmp_path, spec, {k: LAWS[k] for k in ("scalerl", "loo-loss-dapo")})
    for path, needle in [(plans[0].directory / "runlog.jsonl", f"is a file; give the directory that holds it: "
                                                                f"scalerl report {plans[0].directory}"),
                         (tmp_path / "study.yaml", f"scalerl report {tmp_path}"),
                         (tmp_path / "nope", "does not exist; give a run directory"),
                         # a checkpoint or final/ of a run: the run is named (it said "neither ... nor ...")
                         (plans[0].directory / "final", f"is inside the run directory {plans[0].directory.resolve()}: "
                                                        f"scalerl report {plans[0].directory.resolve()}")]:
        assert main(["report", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith("scalerl report: error:") and needle in err, err


def test_a_hand_edited_progress_file_does_not_cost_the_report(tmp_path, capsys):
    """A line of progress.jsonl that was JSON but not a run's record (`[1]`) gave an AttributeError traceback."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50)
    write_study(tmp_path, spec, {k: LAWS[k] for k in ("scalerl", "loo-loss-dapo")})
    (tmp_path / "progress.jsonl").write_text(
        '{"label": "scalerl", "seed": 0, "status": "trained", "seconds": 60.0, "cpu_seconds": 90.0}\n'
        '[1]\n"text"\ngarbage\n{"status": "trained"}\n{"label": "x", "status": "resumed", "seconds": "n/a"}\n')
    assert main(["report", str(tmp_path), "--bootstrap", "50"]) == 0
    out = capsys.readouterr().out
    assert "training wall time (sum over runs): 1.0 min" in out and "training CPU time (sum over runs): 1.5 min" in out


@pytest.mark.parametrize("target, flags, needle", [
    ("run", ["--x", "nope"], "no column 'nope' in every evaluation row; give --x one of: flops, step"),  # KeyError
    ("study", ["--bootstrap", "-1"], "--bootstrap must be >= 20, got -1"),  # an IndexError traceback
    ("study", ["--bootstrap", "3"], "--bootstrap must be >= 20, got 3"),  # every variant "not fitted"
    ("study", ["--bootstrap", "0"], "--bootstrap must be >= 20, got 0"),  # silently the study's own
    ("run", ["--bootstrap", "50"], "--bootstrap is for a study directory (study.yaml); drop it"),  # silently ignored
])
def test_report_flags_out_of_range_are_one_line(tmp_path, capsys, target, flags, needle):
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50)
    plans = write_study(tmp_path, spec, {k: LAWS[k] for k in ("scalerl", "loo-loss-dapo")})
    assert main(["report", str(tmp_path if target == "study" else plans[0].directory), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("scalerl report: error:") and needle in err and len(err.splitlines()) == 1, err


def test_linearising_transform_has_slope_B_and_crosses_zero_at_C_mid():
    A, B, C_mid, R0 = 0.65, 1.8, 3e3, 0.25
    C = np.geomspace(3e2, 3e4, 30)
    u, t = linearise(C, sigmoid(C, A, B, C_mid, R0), A, R0)
    slope, intercept = np.polyfit(u, t, 1)
    assert slope == pytest.approx(B, rel=1e-9)
    assert math.exp(-intercept / slope) == pytest.approx(C_mid, rel=1e-9)
    # Points at or beyond the ceiling have no transform and are left out, not turned into NaN.
    u2, t2 = linearise(np.array([1e3, 2e3]), np.array([0.70, 0.5]), A, R0)
    assert len(u2) == 1 and np.isfinite(t2).all()


def test_common_A_refit_recovers_a_shared_ceiling():
    from scalerl.curves import Curve, fit_sigmoid

    C = np.r_[0, np.geomspace(1e2, 1e4, 20)]
    fits = {}
    for i, (B, C_mid) in enumerate([(1.5, 1e3), (2.5, 3e3)]):
        y = sigmoid(C, 0.6, B, C_mid, 0.2) + np.random.default_rng(i).normal(0, 0.003, C.size)
        y[0] = 0.2
        fits[i] = fit_sigmoid(Curve.from_arrays(C, y))
    A, per = common_A_fit(fits)
    assert A == pytest.approx(0.6, abs=0.01)
    assert per[0][0] == pytest.approx(1.5, rel=0.15) and per[1][0] == pytest.approx(2.5, rel=0.15)


def test_a_variant_that_never_learned_is_reported_not_fitted_and_the_rest_still_compared(tmp_path):
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-length-penalty"], steps=200, eval_every=10,
                     bootstrap=50)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 5e11), "loo-loss-dapo": (0.6, 1.5, 5e11),
                                         "loo-length-penalty": (0.3, 1.5, 5e11)}, noise=0.0)
    a = write_study_report(tmp_path).analysis
    flat = a.variant("loo-length-penalty")
    assert flat.classification is None and "does not rise" in flat.fit_error
    assert flat.not_classified == flat.fit_error
    assert a.variant("loo-loss-dapo").kind == "ceiling" and not a.variant("loo-loss-dapo").not_classified
    assert "| loo-length-penalty | length | not fitted |" in (tmp_path / "report.md").read_text()
    # An unfinished run is listed as pending and left out of the fits.
    (plans[1].directory / "final" / "config.json").unlink()
    a = analyse_study(tmp_path, n_boot=50)
    assert a.variant("loo-loss-dapo").pending == ["seed0: step 200"]
    assert a.variant("loo-loss-dapo").fit_error == "no finished run yet"


def test_when_the_base_cannot_be_fitted_every_variant_says_why_it_is_not_classified(tmp_path):
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-length-penalty"], steps=200, eval_every=10,
                     bootstrap=50)
    write_study(tmp_path, spec, {"scalerl": (0.3, 1.5, 5e11), "loo-loss-dapo": (0.6, 1.5, 5e11),
                                 "loo-length-penalty": (0.3, 1.5, 5e11)}, noise=0.0)
    a = write_study_report(tmp_path).analysis
    assert "does not rise" in a.variant("scalerl").fit_error and not a.variant("scalerl").not_classified
    dapo, flat = a.variant("loo-loss-dapo"), a.variant("loo-length-penalty")
    assert dapo.classification is None and not dapo.fit_error  # fitted on its own, not compared
    assert dapo.not_classified.startswith("the base scalerl has no fitted curve (")
    # Its own fit is still reported (it was shown as "not fitted: " with no reason).
    assert dapo.A == pytest.approx(0.6, abs=0.03) and dapo.A_interval and dapo.extrapolated is not None
    assert flat.not_classified == flat.fit_error and "does not rise" in flat.fit_error
    report = (tmp_path / "report.md").read_text()
    assert "| loo-loss-dapo | loss | not classified (see the notes) |" in report
    assert "the base scalerl has no fitted curve (" in report  # the reason, in the notes
    assert "| loo-length-penalty | length | not fitted |" in report
    dapo_fit_row = next(line for line in report.splitlines() if line.startswith("| loo-loss-dapo | 0 |"))
    assert "not fitted" not in dapo_fit_row and "| 0.600 [" in dapo_fit_row


@pytest.mark.parametrize("damage, reason", [
    (lambda row: row.pop("flops"), "no rows with finite 'flops'"),
    (lambda row: row.update({"val/pass_rate": 2 * row["val/pass_rate"]}), "outside [0, 1]"),
])
def test_a_run_whose_curve_cannot_be_read_is_left_out_and_the_rest_still_compared(tmp_path, damage, reason):
    """A log without the x column, or with a pass rate outside [0, 1], stopped the whole study's report
    (exit 2); now that run is left out with the reason and the other variants are compared."""
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-aggregation-sample"], steps=200, eval_every=10,
                     bootstrap=50)
    plans = write_study(tmp_path, spec, {k: LAWS[k] for k in ("scalerl", "loo-loss-dapo", "loo-aggregation-sample")})
    log = next(p for p in plans if p.variant.label == "loo-aggregation-sample").directory / "runlog.jsonl"
    header, *rows = [json.loads(line) for line in log.read_text().splitlines()]
    for row in rows:
        damage(row)
    log.write_text("".join(json.dumps(r) + "\n" for r in [header, *rows]))
    a = write_study_report(tmp_path).analysis
    agg = a.variant("loo-aggregation-sample")
    assert agg.left_out and agg.left_out[0].startswith("seed0: ") and reason in agg.left_out[0]
    assert agg.fit_error.startswith("no usable run: seed0: ") and agg.classification is None
    assert a.variant("loo-loss-dapo").kind == "ceiling"
    report = (tmp_path / "report.md").read_text()
    assert "| loo-aggregation-sample | - | - | - | not fitted (see the notes) |" in report
    assert "- not fitted: loo-aggregation-sample: no usable run: seed0: " in report  # the reason, once, in the notes


def test_the_papers_rule_always_names_a_kind(tmp_path):
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-aggregation-sample"], steps=200, eval_every=10,
                     rule="paper", bootstrap=50)
    # Little noise: the rule's fixed +-0.02 margin on A is only as good as the A estimates.
    write_study(tmp_path, spec, {k: LAWS[k] for k in ("scalerl", "loo-loss-dapo", "loo-aggregation-sample")},
                noise=0.001)
    a = write_study_report(tmp_path).analysis
    dapo, agg = a.variant("loo-loss-dapo"), a.variant("loo-aggregation-sample")
    assert dapo.kind == "ceiling" and dapo.classification["dA_interval"] is None  # +-0.02 margin, no interval
    assert agg.kind == "efficiency" and agg.classification["rule"] == "paper"
    assert "| loo-aggregation-sample | aggregation | efficiency" in (tmp_path / "report.md").read_text()


def test_a_study_with_a_users_calibration_widens_its_forecast_bands_by_the_factor(tmp_path):
    """``calibration: FILE`` in the spec: the report's forecasts use its factors."""
    from scalerl.curves import default_calibration

    d = default_calibration().as_dict()
    d["q_confidence"] = [2 * q for q in d["q_confidence"]]
    cal = tmp_path / "cal.json"
    cal.write_text(json.dumps(d))
    laws = {"scalerl": LAWS["scalerl"], "loo-loss-dapo": LAWS["loo-loss-dapo"]}
    widths = []
    for name, calibration in (("plain", None), ("mine", str(cal))):
        spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50,
                         extrapolate=2.0, calibration=calibration)
        write_study(tmp_path / name, spec, laws)
        v = analyse_study(tmp_path / name).variant("scalerl")
        widths.append(v.extrapolated_interval[1] - v.extrapolated_interval[0])
    assert widths[1] == pytest.approx(2 * widths[0], rel=1e-6)


def test_a_bad_calibration_in_a_study_spec_is_refused_before_any_run(tmp_path):
    from scalerl.errors import ConfigError

    with pytest.raises(ConfigError, match="calibration: no calibration file"):
        StudySpec(calibration=str(tmp_path / "missing.json")).validate()


def test_the_figures_name_a_variant_whose_fit_failed_and_label_narrow_log_panels(tmp_path, monkeypatch):
    """intervals.png and curves.png left a variant whose fit failed out without a word (the tables
    say "not fitted"), and the B and C_mid panels of a range under a decade had no tick label."""
    from scalerl.curves.plot import _plt

    plt = _plt()
    close, kept = plt.close, []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    spec = StudySpec(family="loo", only=["loo-loss-dapo", "loo-length-penalty"], steps=200, eval_every=10,
                     bootstrap=50)
    write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 5e11), "loo-loss-dapo": (0.6, 1.6, 6e11),
                                 "loo-length-penalty": (0.3, 1.5, 5e11)}, noise=0.0)
    write_study_report(tmp_path)
    try:
        curves = next(f for f in kept if f.axes and "every run" in f.axes[0].get_title())
        assert "not fitted, not drawn: loo-length-penalty" in curves.axes[0].get_title().replace("\n", " ")
        intervals = next(f for f in kept if len(f.axes) == 4)
        assert "loo-length-penalty (not fitted)" in [t.get_text() for t in intervals.axes[0].get_yticklabels()]
        intervals.canvas.draw()
        for ax in intervals.axes[1:3]:  # B and C_mid, log axes
            lo, hi = ax.get_xlim()
            shown = [t for t in ax.get_xticklabels() if t.get_text() and lo <= t.get_position()[0] <= hi]
            assert len(shown) >= 2, ax.get_title()
    finally:
        for fig in kept:
            close(fig)


def test_each_variant_is_bootstrapped_on_its_own_stream(tmp_path):
    """Every variant was bootstrapped with the study's one seed: two variants drew the same seeds and residual
    positions in every replicate, so the bootstrap of their difference held a covariance that their data do
    not have. A variant whose logs are the base's, evaluation for evaluation, shows it: dA's interval was
    [0, 0] (every replicate of the one minus the same replicate of the other)."""
    spec = StudySpec(family="loo", only=["loo-fp32-head-off"], seeds=2, steps=200, eval_every=10, bootstrap=100)
    plans = write_study(tmp_path, spec, LAWS)
    base = {p.seed: p.directory for p in plans if p.variant.label == "scalerl"}
    for p in plans:
        if p.variant.label == "loo-fp32-head-off":
            header, *evals = (p.directory / "runlog.jsonl").read_text().splitlines(keepends=True)
            evals = (base[p.seed] / "runlog.jsonl").read_text().splitlines(keepends=True)[1:]
            (p.directory / "runlog.jsonl").write_text(header + "".join(evals))
    c = analyse_study(tmp_path).variant("loo-fp32-head-off").classification
    assert c["dA"] == 0.0
    lo, hi = c["dA_interval"]
    assert lo < -0.001 and hi > 0.001, (lo, hi)


def test_a_variant_stopped_by_max_steps_short_of_the_compute_budget_is_said(tmp_path, capsys):
    """Review z: compute 4e12 FLOPs, max_steps 200: every run stops at 200 steps = 2e12, half the budget, and
    counts as finished (Budget.reached). The report said "budget: 4e+12 flops per run (runs extended to reach
    it)", "2 finished run(s) of 2", and nothing of the cap. Each such variant is now named, with the compute
    its runs reached, in the notes, the facts, analysis.json and the text summary."""
    from scalerl.study.report import print_summary

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50, compute=4e12,
                     max_steps=200)
    write_study(tmp_path, spec, {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.70, 1.5, 5e11)})
    rep = write_study_report(tmp_path)
    (note,) = [n for n in rep.analysis.notes if "max_steps" in n]
    assert note.startswith("stopped by max_steps (200) short of the compute budget (4e+12 flops): "
                           "scalerl (seed0: 2e+12); loo-loss-dapo (seed0: 2e+12) flops reached"), note
    assert "--max-steps N" in note
    saved = json.loads((tmp_path / "analysis.json").read_text())
    assert {v["label"]: v["capped"] for v in saved["variants"]} == {"scalerl": ["seed0: 2e+12"],
                                                                     "loo-loss-dapo": ["seed0: 2e+12"]}
    print_summary(rep)
    out = capsys.readouterr().out
    assert "budget: 4e+12 flops per run (runs extended to reach it); 2 run(s) stopped by max_steps 200 short of it" in out
    assert "note: stopped by max_steps (200)" in out and "stopped by max_steps (200)" in (tmp_path / "report.md").read_text()
    # A budget the runs met says nothing of the sort.
    met = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=50, compute=2e12,
                    max_steps=200)
    write_study(tmp_path / "met", met, {"scalerl": (0.70, 1.5, 5e11), "loo-loss-dapo": (0.70, 1.5, 5e11)})
    a = write_study_report(tmp_path / "met").analysis
    assert not [n for n in a.notes if "max_steps" in n] and not any(v.capped for v in a.variants)


def test_an_unstable_variants_rows_show_no_ceiling_gap_and_name_the_fall(tmp_path):
    """Review z: an unstable variant's "moved" row showed dA (the ceiling of a falling curve's fit against the
    base's, with no interval) as if measured, and its fit row an A with nothing saying the curve falls."""
    from scalerl.study.report import fit_rows, what_moved_rows

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=40, eval_every=2, bootstrap=50)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.7, 1.5, 1e11)})
    log = next(p.directory for p in plans if p.variant.label == "loo-loss-dapo") / "runlog.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for r, fall in zip(rows[-6:], (0.6, 0.5, 0.4, 0.3, 0.25, 0.2)):  # peaked, then collapsed
        r["val/pass_rate"] = fall
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    a = analyse_study(tmp_path, n_boot=50)
    assert a.variant("loo-loss-dapo").unstable
    moved = next(r for r in what_moved_rows(a) if r[0] == "loo-loss-dapo")
    assert moved[2] == "not classified (unstable run)" and moved[3] == "-"
    fit = next(r for r in fit_rows(a) if r[0] == "loo-loss-dapo")
    assert fit[4].endswith("(unstable run)") and fit[7] == "unstable: no forecast"


#: A law whose pass rate falls from R0 = 0.3: a run that never learned (reported as not fitted).
NEVER_LEARNS = (0.20, 1.5, 5e11)

#: Truth: sample aggregation only slows (C_mid x2.4); DAPO never learns.
SLOW_AND_FLAT = {
    "scalerl": (0.70, 1.5, 5e11),
    "loo-aggregation-sample": (0.70, 1.5, 1.2e12),
    "loo-loss-dapo": NEVER_LEARNS,
}


def test_report_bootstrap_flag_is_the_count_the_report_names(tmp_path):
    from scalerl.cli import main

    spec = StudySpec(family="loo", only=["loo-aggregation-sample"], steps=200, eval_every=10, bootstrap=300)
    write_study(tmp_path, spec, SLOW_AND_FLAT)
    assert main(["report", str(tmp_path), "--bootstrap", "40"]) == 0
    md = (tmp_path / "report.md").read_text()
    facts = json.loads((tmp_path / "analysis.json").read_text())
    assert "40 bootstrap resamples" in md, re.findall(r".*bootstrap resamples.*", md)
    assert facts["spec"]["bootstrap"] == 40 or facts.get("bootstrap") == 40


def test_dB_and_cmid_columns_name_the_level_of_the_intervals_they_show(tmp_path, monkeypatch):
    import importlib

    from scalerl.study.analysis import analyse_study
    from scalerl.study.report import what_moved_rows

    compare_mod = importlib.import_module("scalerl.curves.compare")  # (scalerl.curves.compare is the function)
    quantiles = []
    real = compare_mod.critical_value

    def recording(p, dof):
        quantiles.append(p)
        return real(p, dof)

    monkeypatch.setattr(compare_mod, "critical_value", recording)
    spec = StudySpec(family="loo", only=["loo-aggregation-sample"], steps=200, eval_every=10, bootstrap=50)
    write_study(tmp_path, spec, SLOW_AND_FLAT)
    a = analyse_study(tmp_path)
    assert a.variant("loo-aggregation-sample").kind == "efficiency"
    # _classify_intervals asks for dA's quantile, then dB's, then ln C_mid's (then the +-margin check's).
    _, p_dB, p_dC, *_ = quantiles
    header = what_moved_rows(a)[0]
    (dB_head,) = [h for h in header if h.startswith("dB")]
    (dC_head,) = [h for h in header if h.startswith("ln C_mid ratio")]
    for head, p in ((dB_head, p_dB), (dC_head, p_dC)):
        stated = float(re.search(r"\[([\d.]+)%\]", head).group(1))
        assert stated == pytest.approx(100 * (2 * p - 1)), (head, p)


def test_unclassified_variant_is_not_called_unclassified_by_the_paper_in_analysis_json(tmp_path):
    from scalerl.study.report import write_study_report

    spec = StudySpec(family="loo", only=["loo-aggregation-sample", "loo-loss-dapo"], steps=200, eval_every=10,
                     bootstrap=50)
    write_study(tmp_path, spec, SLOW_AND_FLAT)
    write_study_report(tmp_path)
    variants = {v["label"]: v for v in json.loads((tmp_path / "analysis.json").read_text())["variants"]}
    dapo = variants["loo-loss-dapo"]
    assert dapo["kind"] is None and dapo["fit_error"]  # the flat curve: not fitted, as planted
    assert dapo["expected"] == "ceiling"  # the paper does classify loss type
    assert dapo["agreement"] != "n/a"


def test_moved_cell_of_an_unfitted_variant_stays_short(tmp_path):
    from scalerl.study.analysis import analyse_study
    from scalerl.study.report import what_moved_rows

    laws = {**SLOW_AND_FLAT, "scalerl": NEVER_LEARNS}  # the base never learns: nothing can be classified
    spec = StudySpec(family="loo", only=["loo-aggregation-sample"], steps=200, eval_every=10, bootstrap=50)
    write_study(tmp_path, spec, laws)
    a = analyse_study(tmp_path)
    assert a.variant("scalerl").fit_error  # as planted
    rows = what_moved_rows(a)
    moved = [r[2] for r in rows[1:]]
    assert all(len(m) <= 80 for m in moved), [len(m) for m in moved]


def test_fits_table_marks_the_base_even_when_it_is_not_fitted(tmp_path):
    from scalerl.study.analysis import analyse_study
    from scalerl.study.report import fit_rows

    laws = {"batch-16": NEVER_LEARNS, "batch-8": (0.70, 1.5, 5e11)}  # the base (16) never learns
    spec = StudySpec(family="batch-size", values=[8], steps=200, eval_every=10, bootstrap=50)
    write_study(tmp_path, spec, laws)
    a = analyse_study(tmp_path)
    assert a.variant("batch-16").is_base and a.variant("batch-16").A is None
    first = {r[0].split()[0]: r[0] for r in fit_rows(a)[1:]}
    assert "(base)" in first["batch-16"], first


def test_a_fit_error_naming_fit_options_says_they_are_scalerl_fits_and_on_which_run(tmp_path):
    # The forecaster's advice ("--fit-until", "--plot") names options study and report do not take (review cc).
    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=200, eval_every=10, bootstrap=20)
    write_study(tmp_path, spec, {"scalerl": SLOW_AND_FLAT["scalerl"], "loo-loss-dapo": NEVER_LEARNS})
    error = analyse_study(tmp_path).variant("loo-loss-dapo").fit_error
    assert "--fit-until" in error
    assert error.endswith(f"(those options are scalerl fit's: `scalerl fit {tmp_path}/runs/loo-loss-dapo/seed0`)")


def test_study_flags_the_collapse_that_fit_flags(capsys, tmp_path):
    """A variant that peaked at 0.658 and fell to 0 (a peak the excursion rule would leave out): the study says what
    `fit` says of the same run log -- unstable, not classified, no forecast (review ck)."""
    from scalerl.study.report import fit_rows, what_moved_rows

    spec = StudySpec(family="loo", only=["loo-loss-dapo"], steps=60, eval_every=10, bootstrap=30)
    plans = write_study(tmp_path, spec, {"scalerl": (0.7, 1.5, 1e11), "loo-loss-dapo": (0.7, 1.5, 1e11)}, points=7)
    log = next(p.directory for p in plans if p.variant.label == "loo-loss-dapo") / "runlog.jsonl"
    rows = [json.loads(line) for line in log.read_text().splitlines()]
    for r, v in zip([r for r in rows if r.get("type") == "eval"], [0.193, 0.413, 0.416, 0.658, 0.64, 0.0, 0.0]):
        r["val/pass_rate"] = v
    log.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert main(["fit", str(log), "--x", "flops", "--y", "val/pass_rate", "--bootstrap", "0", "--json"]) == 0
    fit = json.loads(capsys.readouterr().out)
    assert fit["status"] == "unstable"
    a = analyse_study(tmp_path, n_boot=30)
    moved = next(r for r in what_moved_rows(a) if r[0] == "loo-loss-dapo")
    row = next(r for r in fit_rows(a) if r[0] == "loo-loss-dapo")
    assert a.variant("loo-loss-dapo").unstable, (moved, row)
    assert moved[2] == "not classified (unstable run)" and row[7] == "unstable: no forecast", (moved, row)


@pytest.mark.parametrize("n_boot", [0, 5, 2.5, True])
def test_analyse_study_refuses_a_bootstrap_too_small_instead_of_using_the_studys_own(study, n_boot):
    """``analyse_study(d, n_boot=0)`` ran the study's 100 resamples unsaid (``n_boot or spec.bootstrap``)."""
    from scalerl.errors import InputError

    with pytest.raises(InputError, match=r"n_boot must be a whole number >= 20.*None: the study's own, 100"):
        analyse_study(study[0], n_boot=n_boot)
