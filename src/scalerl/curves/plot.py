"""Figures: a forecast run (points used vs held out, the forecast with its confidence and
prediction bands, the sigmoid, the power law dashed, asymptote, extrapolated region), and
several runs on one axis for comparisons.

PNG or SVG, chosen by the file name. matplotlib's Agg backend: no display needed.
"""

from __future__ import annotations

import os
import textwrap
from pathlib import Path
from typing import Sequence

import numpy as np

from scalerl.atomic_files import replaced_atomically
from scalerl.curves.data import Curve, check_curve
from scalerl.errors import InputError

_FORMATS = (".png", ".svg", ".pdf")


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def check_plot_path(path) -> Path:
    """``path`` as the figure's file, its folder made: ``~`` is the home folder, as a shell would read it
    (from Python a literal ``./~/`` folder was made), and the suffix one matplotlib writes."""
    path = Path(path).expanduser()
    if path.suffix.lower() not in _FORMATS:
        raise InputError(f"plot file {path} must end in one of {', '.join(_FORMATS)}")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise InputError(f"cannot write the plot to {path}: {exc.strerror or exc}") from None
    return path


def finish(fig, ax, path: Path, *, title: str, legend_loc: str = "outside") -> Path:
    """The common ending of every figure: log-x grid, legend, title, save, close.

    ``legend_loc="outside"`` (the default) puts the legend below the axes, where it cannot cover
    a data point (inside, "best" still sat on the held-out points of a forecast); any other
    value is a matplotlib location inside the axes.
    """
    ax.set_xscale("log")
    ax.grid(alpha=0.3, which="both")
    ax.set_title(wrap_title(title, fig.get_figwidth(), 10), fontsize=10)
    if legend_loc == "outside":
        fig.set_layout_engine("constrained")
        handles, labels = ax.get_legend_handles_labels()
        if handles:
            fig.legend(handles, labels, fontsize=7, loc="outside lower center", ncol=2, frameon=False)
    else:
        ax.legend(fontsize=7, loc=legend_loc)
        fig.tight_layout()
    declutter_log_ticks(fig, ax)
    return _save(fig, path)


def _save(fig, path: Path) -> Path:
    """Write ``fig`` to ``path`` and close it."""
    try:
        with replaced_atomically(path) as tmp:  # a kill mid-save leaves the old figure, not a cut one
            fig.savefig(tmp)
    except OSError as exc:  # the commands check the path first; this is for callers of the library
        raise InputError(f"cannot write the plot to {path}: {exc.strerror or exc}") from None
    finally:
        _plt().close(fig)
    return path


def wrap_title(title: str, width_in: float, fontsize: float) -> str:
    """``title`` broken into lines that fit a figure ``width_in`` inches wide: a long run name or
    an "UNSTABLE (...): not a forecast" title ran off both edges of the figure, cut mid-word."""
    # (an average character is ~0.6 em wide; the title is centred over the axes, not the figure)
    chars = max(20, int(0.85 * width_in * 72 / (0.65 * fontsize)))
    return "\n".join(textwrap.fill(line, chars) for line in title.splitlines() or [""])


def shorten(name: str, most: int = 40) -> str:
    """``name`` cut in the middle to at most ``most`` characters: runs of a sweep share a long prefix
    and differ at the end (cut at the end, ``...-resp256-0.538`` and ``...-resp512-0.61`` looked the
    same), and a legend of long names ran off the figure."""
    return name if len(name) <= most else name[: most // 2 - 2] + "..." + name[-(most - most // 2 - 1):]


def shortened_apart(names: Sequence[str], most: int = 40) -> list[str]:
    """:func:`shorten` of each of ``names``, kept as far apart as the names are: where cutting the middle makes two
    alike (logs of one file name in different run directories, ``/work/runs/project/wandb/run-...-do7bl4gg/files/
    output.log`` and ``.../run-...-ry3hgbx5/...``: review en), the directory every name starts with is left out,
    and the rest is cut in its middle or, that failing, at its end; names no cut keeps apart stay whole."""
    wanted = len(set(names))
    common = os.path.commonprefix(list(names)).rpartition("/")[0] if len(names) > 1 else ""
    rest = [n[len(common) + 1:] if common else n for n in names]
    ends = [r if len(r) <= most else r[: most - 3] + "..." for r in rest]
    for candidate in ([shorten(n, most) for n in names], [shorten(r, most) for r in rest], ends):
        if len(set(candidate)) == wanted:
            return candidate
    return list(names)


def not_drawn_at_zero(ax, x, x_name: str) -> None:
    """A legend entry for the evaluations a log-x axis cannot show (compute <= 0, often the
    step-0 evaluation): the figure dropped them without a word."""
    n = int(np.sum(~(np.asarray(x, dtype=float) > 0)))
    if n:
        ax.plot([], [], " ", label=f"{n} evaluation{'s' if n > 1 else ''} at {x_name} <= 0 not drawn (log axis)")


def declutter_log_ticks(fig, ax, pad: float = 4.0) -> None:
    """Hide x tick labels that would overlap a neighbour: on a log axis spanning less than a
    decade or two, matplotlib labels the minor ticks too (``3x10^11 4x10^11`` ran into each
    other). Major labels are kept first; a minor label stays only where it has room."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    kept = []
    for which in ("major", "minor"):
        for label in ax.xaxis.get_ticklabels(which=which):
            if not label.get_visible() or not label.get_text():
                continue
            box = label.get_window_extent(renderer)
            if any(box.x0 < k.x1 + pad and k.x0 < box.x1 + pad for k in kept):
                label.set_visible(False)
            else:
                kept.append(box)


def _grid(xmin: float, xmax: float, extend: float) -> np.ndarray:
    lo = max(xmin, 1e-12)
    return np.geomspace(lo, xmax * extend, 300)


def plot_forecast(fc, path, *, title: str | None = None, extend: float = 3.0, x_label: str | None = None, y_label: str | None = None) -> Path:
    """One run: observed points (fitted ● vs held out ○), the forecast with its confidence band
    (dark) and prediction band (light), the paper's sigmoid, the power law, the asymptote."""
    path = check_plot_path(path)
    plt = _plt()
    curve, fit = fc.curve, fc.fit
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    pos = curve.x > 0
    xs, ys = curve.x[pos], curve.y[pos]
    hi_fit = fc.ensemble.x_end if fc.ensemble is not None else fit.x.max()
    lo_fit = fit.fit_from if fit.fit_from is not None else xs.min()
    used = xs <= hi_fit
    early = used & (xs < lo_fit)
    excursion = fc.excursions.mask(xs, ys)
    used &= ~early & ~excursion
    held = (xs > hi_fit) & ~excursion
    ax.scatter(xs[used], ys[used], s=18, color="C0", label="fitted", zorder=3)
    if held.any():
        ax.scatter(xs[held], ys[held], s=22, facecolors="none", edgecolors="C3", label="held out (after the fit window)", zorder=3)
    if early.any():
        ax.scatter(xs[early], ys[early], s=22, marker="x", color="gray", label="left out of the sigmoid (opening plateau)", zorder=3)
    if excursion.any():
        ax.scatter(xs[excursion], ys[excursion], s=26, marker="x", color="C3",
                   label="left out of the fit (one-evaluation excursion)", zorder=3)
    # From the fit window's start: left of it (an opening plateau left out) the laws describe
    # nothing they were fitted on, and the forecast dived below R0 there (as plot_backtests does).
    grid = _grid(lo_fit if fit.fit_from is not None else xs.min(), max(xs.max(), hi_fit), extend)
    b = fc.band_arrays(grid)
    pct = fc.level_text
    style = ":" if fc.unstable else "-"
    if not fc.unstable:  # an unstable run has no forecast, so no band around one
        ax.fill_between(grid, b["obs_lo"], b["obs_hi"], color="C0", alpha=0.10, lw=0, label=f"{pct} prediction band (an evaluation)")
        ax.fill_between(grid, b["lo"], b["hi"], color="C0", alpha=0.25, lw=0, label=f"{pct} confidence band (expected curve)")
    ax.plot(grid, b["R"], style, color="C0", lw=2, label="extrapolation (unstable run: not a forecast)" if fc.unstable else "forecast")
    ax.plot(grid, fit.law(grid), "-", color="C2", lw=1, label=f"sigmoid A={fit.A:.3f} B={fit.B:.2f} C_mid={fit.C_mid:.3g}")
    if fc.power_law is not None:
        ax.plot(grid, fc.power_law.law(grid), "--", color="C1", lw=1.2, label=f"power law A={fc.power_law.law.A:.3f}")
    ax.axhline(fit.A, color="C2", ls=":", lw=1, label="sigmoid asymptote A")
    ax.axhline(fit.R0, color="gray", ls=":", lw=0.8, label=f"R0={fit.R0:.3f}")
    ax.axvspan(hi_fit, grid.max(), color="gray", alpha=0.06, label="extrapolated")
    if fc.bands is not None and not fc.unstable:
        beyond = grid[~b["calibrated"] & (grid > hi_fit)]
        if beyond.size:
            ax.axvspan(beyond.min(), grid.max(), color="gray", alpha=0.08, hatch="//", lw=0,
                       label="bands beyond the calibrated horizon")
    if fit.fit_from is not None:
        ax.axvline(lo_fit, color="gray", lw=0.6)
    span = max(float(ys.max() - min(ys.min(), fit.R0)), 0.05)
    ax.set_ylim(min(ys.min(), fit.R0) - 0.1 * span, max(ys.max(), fit.A) + 0.15 * span)
    not_drawn_at_zero(ax, curve.x, x_label or curve.x_name)
    ax.set_xlabel(x_label or curve.x_name)
    ax.set_ylabel(y_label or curve.y_name)
    title = title or curve.name
    if fc.unstable:
        title += f" -- UNSTABLE ({fc.stability.kind}): not a forecast"
    return finish(fig, ax, path, title=title)


#: Most runs of a comparison drawn each with its band: beyond, only the baseline's is shaded (24 runs
#: stacked 24 translucent bands into one grey mass that hid the curves the comparison is about).
BANDS_UP_TO = 6


def plot_compare(result, path, *, title: str | None = None, extend: float = 3.0) -> Path:
    """All runs of a comparison on one log-x axis: each run's points, its pooled sigmoid (the
    fit the classification is about) and its forecast with the calibrated confidence band
    (dashed line, shaded) -- the same band ``compare`` prints at the common compute. A run
    compared without forecasts falls back to the bootstrap band of its sigmoid; an unstable
    run gets no band (its extrapolation is not a forecast). Above :data:`BANDS_UP_TO` runs only
    the baseline's band is shaded (the legend says so); every run keeps its curves."""
    path = check_plot_path(path)
    plt = _plt()
    # Taller with many runs: their legend (below the axes) squeezed the axes to a strip.
    fig, ax = plt.subplots(figsize=(8, 5 + 0.1 * max(0, len(result.runs) - 6)), dpi=120)
    xmin = min(float(c.x[c.x > 0].min()) for r in result.runs for c in r.curves)
    xmax = max(float(c.x.max()) for r in result.runs for c in r.curves)
    grid = _grid(xmin, xmax, extend)
    pct = None
    # Up to 10 runs: the default colour cycle; more: tab20's 20 (with 10, run 1, 11 and 21 shared a colour).
    colors = [f"C{i}" for i in range(10)] if len(result.runs) <= 10 else list(plt.get_cmap("tab20").colors)
    for i, rf in enumerate(result.runs):
        color = colors[i % len(colors)]
        for j, (c, fitted) in enumerate(zip(rf.evaluations, rf.curves)):  # every evaluation; those left out crossed
            pos = c.x > 0
            ax.scatter(c.x[pos], c.y[pos], s=10, color=color, alpha=0.55, marker="os^vD"[j % 5])
            left = pos & ~np.isin(c.x, fitted.x)
            if left.any():
                ax.scatter(c.x[left], c.y[left], s=40, color="red", marker="x", zorder=5)
        f = rf.fit
        lw = 2.5 if rf.label == result.baseline else 1.6
        unstable = rf.stability.unstable or (rf.forecast is not None and rf.forecast.unstable)
        note = " (unstable: no forecast)" if unstable else ""
        ax.plot(grid, f.law(grid), color=color, lw=lw, ls=":" if unstable else "-",
                label=f"{shorten(rf.label)}: A={f.A:.3f} B={f.B:.2f}{note}")
        if unstable:
            continue
        shade = len(result.runs) <= BANDS_UP_TO or rf.label == result.baseline
        if rf.forecast is not None and rf.forecast.bands is not None:
            b = rf.forecast.band_arrays(grid)
            pct = rf.forecast.level_text
            ax.plot(grid, b["R"], "--", color=color, lw=1.0)
            if shade:
                ax.fill_between(grid, b["lo"], b["hi"], color=color, alpha=0.12, lw=0)
        elif rf.seeds.boot is not None and shade:
            lo, hi = rf.seeds.boot.predict_interval(grid)
            ax.fill_between(grid, lo, hi, color=color, alpha=0.12, lw=0)
    ax.axvspan(xmax, grid.max(), color="gray", alpha=0.07)
    only = f" (the baseline's only: {len(result.runs)} runs)" if len(result.runs) > BANDS_UP_TO else ""
    if pct is not None:  # one legend entry for what the dashed lines and shading are
        ax.plot([], [], "--", color="gray", lw=1.0, label=f"forecast, {pct} confidence band (calibrated){only}")
    elif only:
        ax.plot([], [], color="gray", lw=0, label=f"bands{only}")
    c0 = result.runs[0].curves[0]
    ax.set_xlabel(c0.x_name)
    ax.set_ylabel(c0.y_name)
    return finish(fig, ax, path, title=title or f"compare (baseline: {result.baseline})")


def plot_backtest(bt, path, **kwargs) -> Path:
    """A backtest is a forecast whose held-out points are the ones after the cut."""
    return plot_forecast(bt.forecast, path, title=kwargs.pop("title", None) or f"{bt.forecast.curve.name}: backtest cut at {bt.cut:.4g}", **kwargs)


#: Most panels in one small-multiples figure: beyond it the panels are too small to read.
MAX_PANELS = 48


def plot_backtests(results: Sequence, path, *, title: str = "", cut_labels: Sequence[str] | None = None) -> Path:
    """Small multiples of many backtests (``backtest --all-runs``): a panel per run (and cut) with
    the points fitted (filled) and held out (open), the forecast, its confidence band (dark) and
    prediction band (light), the cut, and the observed end level (mean of the last quarter of the
    held-out evaluations) as a bar over them -- red where the band missed it. At most
    :data:`MAX_PANELS` panels (the first ones)."""
    path = check_plot_path(path)
    plt = _plt()
    shown = list(results)[:MAX_PANELS]
    if not shown:
        raise InputError("no backtest to plot")
    ncols = min(6, int(np.ceil(np.sqrt(len(shown)))))
    nrows = int(np.ceil(len(shown) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(2.7 * ncols, 2.2 * nrows + 0.9), dpi=110, squeeze=False)
    for i, ax in enumerate(axes.flat):
        if i >= len(shown):
            ax.set_visible(False)
            continue
        _backtest_panel(ax, shown[i], f" @{cut_labels[i]}" if cut_labels else "")
    fig.set_layout_engine("constrained")
    handles, labels = _legend_entries(axes.flat[: len(shown)])
    fig.legend(handles, labels, fontsize=7, loc="outside lower center", ncol=6, frameon=False)
    more = len(results) - len(shown)
    heading = title + (f" (the first {len(shown)} of {len(results)})" if more > 0 else "")
    if heading:
        fig.suptitle(heading, fontsize=9)
    return _save(fig, path)


def _backtest_panel(ax, bt, cut: str) -> None:
    """One backtest's panel of :func:`plot_backtests`; ``cut`` ends its title (`` @0.5``, or "")."""
    fc = bt.forecast
    xs, ys = fc.curve.x, fc.curve.y
    pos = xs > 0
    excursion = fc.excursions.mask(xs, ys)
    # From the fit window's start: left of an opening plateau the law is no forecast of anything.
    start = fc.fit.fit_from if fc.fit.fit_from is not None else xs[pos].min()
    early = pos & (xs < start) & (xs <= bt.cut) & ~excursion  # left out of the sigmoid, not fitted
    fitted = pos & (xs <= bt.cut) & ~excursion & ~early
    grid = np.geomspace(start, xs.max(), 120)
    b = fc.band_arrays(grid)
    if not bt.unstable:  # no forecast, so no band around one
        ax.fill_between(grid, b["obs_lo"], b["obs_hi"], color="C0", alpha=0.10, lw=0, label="prediction band")
        ax.fill_between(grid, b["lo"], b["hi"], color="C0", alpha=0.25, lw=0, label="confidence band")
    ax.plot(grid, b["R"], ":" if bt.unstable else "-", color="C0", lw=1.3, label="forecast")
    ax.scatter(xs[fitted], ys[fitted], s=7, color="C0", zorder=3, label="fitted")
    if early.any():
        ax.scatter(xs[early], ys[early], s=9, marker="x", color="gray", lw=0.7, zorder=3,
                   label="left out of the sigmoid (opening plateau)")
    ax.scatter(bt.test_x, bt.test_y, s=9, facecolors="none", edgecolors="C3", lw=0.7, zorder=3, label="held out")
    if excursion.any():
        ax.scatter(xs[excursion], ys[excursion], s=12, marker="x", color="C3", lw=0.8, zorder=3,
                   label="left out (one-evaluation excursion)")
    ax.axvline(bt.cut, color="gray", lw=0.6)
    _end_level_bar(ax, bt)
    _panel_axes(ax, ys[pos])
    state = ("UNSTABLE: no forecast" if bt.unstable else f"{bt.unscored}: not scored" if not bt.scored
             else f"MAE {bt.default.mae:.3f}, end {bt.default.end_error:+.3f}")
    ax.set_title(f"{shorten(bt.run, 34)}{cut}\n{state}", fontsize=6.5,
                 color="C3" if bt.scored and not bt.bands.end_covered else "black")


def _end_level_bar(ax, bt) -> None:
    """The observed end level over the last quarter of the held-out evaluations: red where the band missed it."""
    if not bt.test_x:
        return
    end = bt.test_x[len(bt.test_x) - max(1, len(bt.test_x) // 4):]
    missed = bt.scored and not bt.bands.end_covered
    ax.hlines(bt.end_level, end[0], end[-1], color="C3" if missed else "k", lw=2.2, zorder=4,
              label="end level (band missed it: red)")


def _panel_axes(ax, ys) -> None:
    """A small panel's axes: log x with few ticks, y over the data's range ``ys``."""
    from matplotlib import ticker

    # The data's range: a law extrapolated left of its fit window (an opening plateau left out)
    # can dive far below it and would flatten every point.
    lo, hi = float(ys.min()), float(ys.max())
    span = max(hi - lo, 0.05)
    ax.set_ylim(lo - 0.12 * span, hi + 0.12 * span)
    ax.set_xscale("log")
    ax.tick_params(labelsize=6)
    ax.xaxis.set_major_locator(ticker.LogLocator(numticks=3))
    ax.xaxis.set_minor_formatter(ticker.NullFormatter())
    ax.grid(alpha=0.25, which="major")


def _legend_entries(axes) -> tuple[list, list[str]]:
    """Every panel's entries, once each: the first panel alone lacked the bands when its run was unstable."""
    entries: dict = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels()):
            entries.setdefault(label, handle)
    return list(entries.values()), list(entries)


def plot_curves(curves: Sequence, path, *, fits=None, title: str = "") -> Path:
    """Raw curves (no fit) on one log-x axis -- used by reports. One :class:`Curve` is a list of one."""
    path = check_plot_path(path)
    if isinstance(curves, Curve):  # (it failed as "'Curve' object is not iterable")
        curves = [curves]
    curves = list(curves)
    if not curves:  # (it wrote an empty figure)
        raise InputError("plot_curves needs at least one Curve")
    for c in curves:
        check_curve(c, "plot_curves")
    plt = _plt()
    fig, ax = plt.subplots(figsize=(7.5, 4.8), dpi=120)
    for i, c in enumerate(curves):
        pos = c.x > 0
        ax.plot(c.x[pos], c.y[pos], "o-", ms=3, lw=1, color=f"C{i % 10}", label=shorten(c.name, 60))
        if fits is not None and fits[i] is not None:
            g = _grid(c.x[pos].min(), c.x.max(), 3.0)
            ax.plot(g, fits[i].law(g), "--", color=f"C{i % 10}", lw=1)
    ax.set_xlabel(curves[0].x_name)
    ax.set_ylabel(curves[0].y_name if len({c.y_name for c in curves}) == 1 else "metric")
    if len(curves) == 1:
        not_drawn_at_zero(ax, curves[0].x, curves[0].x_name)
    return finish(fig, ax, path, title=title)
