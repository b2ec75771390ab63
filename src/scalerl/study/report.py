"""A study's report, from its run logs alone: ``report.md``, ``report.html``, ``analysis.json``
and the figures, in the study directory.

Figures:
  ``curves.png``    every run on one log-x axis, each variant's pooled sigmoid and band;
  ``intervals.png`` A, B, C_mid and the extrapolated pass rate per variant with 95% intervals,
                    the base's value as a vertical line;
  ``loo_view.png``  the paper's leave-one-out view: every variant refitted with one common A and
                    plotted as ln 1/F(R) = ln((R-R0)/(A-R)) against ln C -- straight lines of slope B.

``scalerl report STUDY_DIR`` regenerates all of it (also while the study is still running:
unfinished runs are listed and left out).
"""

from __future__ import annotations

import html
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from scalerl.atomic_files import replaced_atomically, write_text_atomically
from scalerl.curves.compare import UNSTABLE
from scalerl.report_text import html_page, html_table, inline_md, md_table, md_text
from scalerl.study.analysis import StudyAnalysis, VariantResult, analyse_study, linearise
from scalerl.study.run_state import progress_records

FIGURES = ("curves.png", "intervals.png", "loo_view.png")


@dataclass
class StudyReport:
    analysis: StudyAnalysis
    files: list[Path] = field(default_factory=list)
    wall_seconds: float | None = None
    cpu_seconds: float | None = None


# ----------------------------------------------------------------------------- formatting


def _f(v: Any, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "-"
    if isinstance(v, float):
        return f"{v:.{digits}f}" if 1e-3 <= abs(v) < 1e4 or v == 0 else f"{v:.3g}"
    return str(v)


def _iv(v: tuple[float, float] | list[float] | None, digits: int = 3, signed: bool = False) -> str:
    if v is None:
        return ""
    lo, hi = v
    if signed:
        return f"[{lo:+.{digits}f}, {hi:+.{digits}f}]"
    return f"[{_f(float(lo), digits)}, {_f(float(hi), digits)}]"


def _moved(v: VariantResult) -> str:
    if v.is_base:
        return "(base)"
    if v.fit_error:
        return "not fitted"
    c = v.classification
    if c is None:
        # (the reason -- often a solver's whole error -- is in the notes: in the cell it widened every row: review cc)
        return "not classified (see the notes)" if v.not_classified else "-"
    if c["kind"] == "ceiling":
        return "ceiling " + ("raised" if c["better"] else "lowered")
    if c["kind"] == "efficiency":
        return "efficiency " + ("better" if c["better"] else "worse")
    if c["kind"] == UNSTABLE:
        return "not classified (unstable run)"
    return "no clear effect"


def what_moved_rows(a: StudyAnalysis) -> list[list[str]]:
    """Header + one row per non-base variant: what it changed, what moved, the paper's view."""
    # dB and ln C_mid ratio are two tests of one verdict, each at 97.5% (Bonferroni: the pair errs 5%); headed
    # "[95%]" they read narrower than they are (review cc).
    rows = [["variant", "changes", "moved", "dA [95%]", "B run / base (shared A)", "dB [97.5%]",
             "ln C_mid ratio [97.5%]", "paper", "agreement"]]
    for v in a.variants:
        if v.is_base:
            continue
        c = v.classification or {}
        B = c.get("B")
        # An unstable run's dA is the gap between the ceilings of a falling curve's fit and the base's: no
        # measure of the change (and no interval was computed); the notes say which run falls.
        shown = bool(c) and c["kind"] != UNSTABLE
        rows.append([
            v.label, ", ".join(v.components) or "-", _moved(v),
            f"{c['dA']:+.3f} {_iv(c.get('dA_interval'), signed=True)}".strip() if shown else "-",
            f"{B[0]:.2f} / {B[1]:.2f}" if B else "-",
            _iv(c.get("dB_interval"), 2, signed=True) or "-",
            _iv(c.get("log_cmid_ratio_interval"), 2, signed=True) or "-",
            v.expected, v.agreement if c else "-",
        ])
    return rows


def fit_rows(a: StudyAnalysis) -> list[list[str]]:
    k = a.spec.extrapolate
    rows = [["variant", "seeds", "R0", "final", "A [95%]", "B [95%]", "C_mid [95%]",
             f"R at {k:g}x budget [{a.band_level}]"]]
    for v in a.variants:
        seeds = ",".join(map(str, v.seeds)) or "-"
        if v.pending:
            seeds += f" (pending: {'; '.join(v.pending)})"
        if v.left_out and v.seeds:  # (with no seed used, the fit column gives the reasons)
            seeds += f" (left out: {'; '.join(v.left_out)})"
        if v.A is None:
            # (the reason, often a long one, is in the notes: in the cell it widened every row's column)
            rows.append([v.label + (" (base)" if v.is_base else ""), seeds, _f(v.R0), _f(v.final),
                         "not fitted (see the notes)", "", "", ""])
            continue
        rows.append([
            v.label + (" (base)" if v.is_base else ""), seeds, _f(v.R0), _f(v.final),
            f"{v.A:.3f} {_iv(v.A_interval)}" + (" (unstable run)" if v.unstable else ""),
            f"{v.B:.2f} {_iv(v.B_interval, 2)}",
            f"{_f(v.C_mid)} {_iv(v.C_mid_interval)}",
            "unstable: no forecast" if v.unstable else
            f"{_f(v.extrapolated)} {_iv(v.extrapolated_interval)}" + ("" if v.extrapolated_calibrated else " *"),
        ])
    return rows


def common_A_rows(a: StudyAnalysis) -> list[list[str]]:
    rows = [["variant", "B with the common A [95%]", "C_mid with the common A"]]
    for v in a.variants:
        if v.common_B is not None:
            rows.append([v.label + (" (base)" if v.is_base else ""), f"{v.common_B:.2f} {_iv(v.common_B_interval, 2)}",
                         _f(v.common_C_mid)])
    return rows


# ----------------------------------------------------------------------------- figures


def _plot_intervals(a: StudyAnalysis, path: Path) -> Path:
    from scalerl.curves.plot import _plt

    plt = _plt()
    # Every variant has a row: one whose fit failed says so (it was left out without a word).
    vs = list(a.variants)
    k = a.spec.extrapolate
    # B and C_mid on log axes: a curve that never bends has a B interval running to its bound (50).
    panels = [("A (ceiling)", "A", "A_interval", False), ("B (efficiency exponent)", "B", "B_interval", True),
              (f"C_mid ({a.x})", "C_mid", "C_mid_interval", True),
              (f"pass rate at {k:g}x the budget", "extrapolated", "extrapolated_interval", False)]
    fig, axes = plt.subplots(1, 4, figsize=(13, 0.45 * len(vs) + 1.6), dpi=110, sharey=True)
    ys = np.arange(len(vs))[::-1]
    base = next((v for v in vs if v.is_base), None)
    for ax, (title, key, ikey, log) in zip(axes, panels):
        for yy, v in zip(ys, vs):
            val, iv = getattr(v, key), getattr(v, ikey)
            if val is None:  # an unstable variant has no extrapolation, a failed fit nothing
                continue
            color = "black" if v.is_base else "C0"
            if iv is not None:
                ax.plot(iv, [yy, yy], color=color, lw=2, alpha=0.7)
            ax.plot([val], [yy], "o", color=color, ms=5)
        if base is not None and getattr(base, key) is not None:
            ax.axvline(getattr(base, key), color="gray", ls="--", lw=0.8)
        if log:
            from matplotlib.ticker import FormatStrFormatter, MaxNLocator, NullFormatter

            ax.set_xscale("log")
            ax.xaxis.set_minor_formatter(NullFormatter())  # minor labels of a narrow log range overlap
            shown = [u for v in vs for u in (getattr(v, key), *(getattr(v, ikey) or ())) if u is not None and u > 0]
            if shown and max(shown) < 10 * min(shown):  # under a decade: no power of ten, no label at all
                ax.xaxis.set_major_locator(MaxNLocator(4))
                ax.xaxis.set_major_formatter(FormatStrFormatter("%.3g"))
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3, axis="x")
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels([v.label + (" (base)" if v.is_base else "") + (" (not fitted)" if v.A is None else "")
                             for v in vs], fontsize=8)
    # (the pass rate's band is the calibrated one, which holds less than 95% where the calibration's run-cuts are
    # few: review cu)
    band = "" if a.band_level == "95%" else f", the pass rate's band {a.band_level}"
    fig.suptitle(f"{a.spec.family} study of {a.spec.base}: fitted parameters with 95% intervals{band} "
                 f"(seeds pooled; dashed: the base)", fontsize=10)
    fig.tight_layout()
    with replaced_atomically(path) as tmp:  # a kill mid-save leaves the old figure, not a cut one
        fig.savefig(tmp)
    plt.close(fig)
    return path


def _plot_loo_view(a: StudyAnalysis, path: Path) -> Path:
    from scalerl.curves.plot import _plt

    plt = _plt()
    fig, ax = plt.subplots(figsize=(8, 5), dpi=120)
    A = a.common_A
    dropped = 0
    for i, v in enumerate(a.variants):
        if v.label not in a.loo_points:
            continue
        x, y, R0 = a.loo_points[v.label]
        u, t = linearise(x, y, A, R0)
        dropped += len(x) - len(u)
        color = "black" if v.is_base else f"C{i % 10}"
        ax.scatter(u, t, s=10, color=color, alpha=0.6)
        grid = np.linspace(np.log(x.min()), np.log(x.max()), 50)
        line = v.common_B * (grid - math.log(v.common_C_mid))
        ax.plot(grid, line, color=color, lw=2.4 if v.is_base else 1.4,
                label=f"{v.label}: B={v.common_B:.2f}")
    ax.axhline(0, color="gray", lw=0.6)
    ax.set_xlabel(f"ln C  (C = {a.x})")
    ax.set_ylabel("ln 1/F(R) = ln((R - R0) / (A - R))")
    note = f"\n({dropped} point(s) with R <= R0 or R >= A have no transform and are not shown)" if dropped else ""
    ax.set_title(f"leave-one-out view: common A = {A:.3f}, slope = B, zero crossing at C_mid{note}", fontsize=9)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    with replaced_atomically(path) as tmp:  # a kill mid-save leaves the old figure, not a cut one
        fig.savefig(tmp)
    plt.close(fig)
    return path


# ----------------------------------------------------------------------------- the report


def _run_seconds(directory: Path, key: str = "seconds") -> float | None:
    """Sum over runs of ``key`` (seconds: wall; cpu_seconds: CPU) of their trained/resumed records."""
    latest: dict[tuple[str, int], float] = {}
    for o in progress_records(directory):
        if o.get("status") not in ("trained", "resumed"):
            continue
        try:
            seconds = float(o.get(key) or 0.0)
        except (TypeError, ValueError):
            continue
        run = (o["label"], o.get("seed"))
        latest[run] = latest.get(run, 0.0) + seconds
    return sum(latest.values()) if latest else None


def _facts(a: StudyAnalysis, wall: float | None, cpu: float | None = None) -> list[tuple[str, str]]:
    s = a.spec
    budget = f"{s.compute:g} {s.x} per run (runs extended to reach it)" if s.compute else f"{s.steps} steps per run"
    capped = sum(len(v.capped) for v in a.variants)
    if capped:  # (a run max_steps stopped short of it counts as finished: the budget alone read as met by all)
        budget += f"; {capped} run(s) stopped by max_steps {s.max_steps} short of it (see the notes)"
    n_runs = sum(len(v.seeds) for v in a.variants)
    facts = [
        ("family", f"{s.family} (base: {a.base})"),
        ("model / task / overrides", f"{s.model} / {s.task} / {', '.join(s.overrides) or 'none'}"),
        ("budget", f"{budget}; evaluation every {s.eval_every} steps"),
        ("seeds per variant", str(s.seeds)),
        ("curves", f"{a.y} against {a.x}; {n_runs} finished run(s) of {len(a.variants) * s.seeds}"),
        ("classification", f"rule {s.rule}, {a.bootstrap} bootstrap resamples, 95% intervals"),
    ]
    if wall is not None:
        facts.append(("training wall time (sum over runs)", f"{wall / 60:.1f} min"))
    if cpu:  # studies run before CPU time was recorded have none
        facts.append(("training CPU time (sum over runs)", f"{cpu / 60:.1f} min"))
    if a.common_A is not None:
        facts.append(("common A (leave-one-out view)", f"{a.common_A:.3f}"))
    if a.extrapolate_at is not None:
        facts.append(("extrapolation compute", f"{a.extrapolate_at:.3g} {a.x} ({s.extrapolate:g}x the median final compute)"))
    return facts


def write_study_report(directory: str | Path, *, n_boot: int | None = None) -> StudyReport:
    """Analyse the study in ``directory`` and write its report files there."""
    from scalerl.curves.plot import plot_compare

    a = analyse_study(directory, n_boot=n_boot)
    d = a.directory
    rep = StudyReport(a, wall_seconds=_run_seconds(d), cpu_seconds=_run_seconds(d, "cpu_seconds"))
    if a.compare is not None:
        failed = [v.label for v in a.variants if v.A is None]
        missing = f" (not fitted, not drawn: {', '.join(failed)})" if failed else ""
        rep.files.append(plot_compare(a.compare, d / "curves.png",
                                      title=f"{a.spec.family} study: every run, each variant's pooled fit and "
                                            f"{a.band_level} band"
                                            + missing))
        rep.files.append(_plot_intervals(a, d / "intervals.png"))
        if a.common_A is not None:
            rep.files.append(_plot_loo_view(a, d / "loo_view.png"))
    write_text_atomically(d / "analysis.json", json.dumps(a.as_dict(), indent=1, default=_json_default) + "\n")
    rep.files.append(d / "analysis.json")
    rep.files += _write_text(rep)
    return rep


def _json_default(o: Any) -> Any:
    if isinstance(o, (np.floating, np.integer)):
        return o.item()
    if isinstance(o, np.ndarray):
        return o.tolist()
    if isinstance(o, Path):
        return str(o)
    raise TypeError(type(o).__name__)


_HOW_TO_READ = [
    "**moved**: the forecaster's classification against the base (`scalerl.curves.compare`). *ceiling*: "
    "the 95% interval of dA = A_variant - A_base excludes 0. Otherwise both are refitted with one shared A; "
    "*efficiency*: the interval of dB or of ln(C_mid ratio) excludes 0 (better = reaches half its gain with "
    "less compute, or steeper when C_mid did not move). *no clear effect*: neither -- at this noise and budget "
    "the data cannot tell the variant from the base.",
    "**paper**: what the paper found the changed component moves (ceiling movers: model size, "
    "generation length, batch size, loss type, FP32 logits; efficiency shapers: aggregation, advantage "
    "normalisation, curriculum, off-policy pipeline). **agreement**: *agrees* (same kind, and the expected "
    "direction where one is expected), *disagrees* (the other kind), *inconclusive* (no clear effect, or an "
    "efficiency verdict whose ceiling is not pinned -- dA's interval wider than the margin -- where the paper "
    "expects the ceiling: a change of A would read so too), "
    "*n/a* (the paper does not classify the component).",
    "**leave-one-out view**: every stable variant refitted with one common A (least squares over all of them; "
    "an unstable one is left out, and a note says so; B's interval a bootstrap of that shared fit), "
    "then plotted as ln 1/F(R) against ln C, with F(R) = (A - R0)/(R - R0) - 1 = (C_mid/C)^B, so "
    "ln 1/F(R) = ln((R - R0)/(A - R)) = B ln C - B ln C_mid: a line of slope B crossing 0 at C_mid. "
    "The paper uses it for variants whose A agree; a variant whose ceiling moved has its B distorted "
    "by the shared A (its curve is not a straight line in this view).",
    "**A at 1.000** (the bound) with a wide interval means the runs stopped long before they "
    "saturated: the data do not identify the ceiling -- raise the budget so the curves pass C_mid.",
]


def _write_text(rep: StudyReport) -> list[Path]:
    a = rep.analysis
    facts = _facts(a, rep.wall_seconds, rep.cpu_seconds)
    title = f"scalerl study report: {a.directory.name}"
    moved, fits, common = what_moved_rows(a), fit_rows(a), common_A_rows(a)
    explanations = [(v.label, v.classification["explanation"]) for v in a.variants if v.classification]
    md = [f"# scalerl study report: {md_text(a.directory.name)}", "", *md_table([["", ""], *facts]), ""]
    md += ["## What each choice moved", "", *md_table(moved), ""]
    md += ["## Fits (seeds pooled)", "", *md_table(fits), ""]
    if a.compare is not None:
        md += ["![every run and its fit](curves.png)", "", "![parameters with intervals](intervals.png)", ""]
    if len(common) > 1:
        md += ["## The leave-one-out view (common A)", "", *md_table(common), "", "![leave-one-out view](loo_view.png)", ""]
    if explanations:
        md += ["## Classifications in words", "", *[f"- **{md_text(k)}**: {e}" for k, e in explanations], ""]
    md += ["## How to read this", "", *[f"- {t}" for t in _HOW_TO_READ], ""]
    if a.notes:
        # (a failed run's error is the user's text: raw HTML in it rendered as HTML -- review di; the notes' own
        # `code` spans stay code)
        md += ["## Notes", "", *[f"- {n}".replace("<", "\\<") for n in a.notes], ""]
    md_path = a.directory / "report.md"
    write_text_atomically(md_path, "\n".join(md))

    imgs = ""
    if a.compare is not None:
        imgs = '<img src="curves.png" alt="every run and its fit"><img src="intervals.png" alt="parameters with intervals">'
    loo = ""
    if len(common) > 1:
        loo = f'<h2>The leave-one-out view (common A)</h2>{html_table(common)}<img src="loo_view.png" alt="leave-one-out view">'
    words = "".join(f"<li><b>{html.escape(k)}</b>: {html.escape(e)}</li>" for k, e in explanations)
    notes = "".join(f"<li>{html.escape(n)}</li>" for n in a.notes)
    body = f"""{html_table([["", ""], *[[k, v] for k, v in facts]])}
<h2>What each choice moved</h2>{html_table(moved)}
<h2>Fits (seeds pooled)</h2>{html_table(fits)}{imgs}{loo}
{f"<h2>Classifications in words</h2><ul>{words}</ul>" if words else ""}
<h2>How to read this</h2><ul>{"".join(f"<li>{inline_md(t)}</li>" for t in _HOW_TO_READ)}</ul>
{f"<h2>Notes</h2><ul>{notes}</ul>" if notes else ""}"""
    page = html_page(title, body)
    html_path = a.directory / "report.html"
    write_text_atomically(html_path, page)
    return [md_path, html_path]


def print_summary(rep: StudyReport) -> None:
    """The report's two main tables as plain text on stdout."""
    a = rep.analysis
    for k, v in _facts(a, rep.wall_seconds, rep.cpu_seconds):
        print(f"{k}: {v}")
    for title, rows in (("what each choice moved", what_moved_rows(a)), ("fits", fit_rows(a))):
        print(f"\n{title}:")
        widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
        for r in rows:
            print("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip())
    for n in a.notes:
        print(f"note: {n}")
    print("\nreport: " + ", ".join(str(p) for p in rep.files))
