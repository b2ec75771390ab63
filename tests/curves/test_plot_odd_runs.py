"""The figures on odd runs tell the truth and stay readable: an unstable run gets no band (its
extrapolation is no forecast), long titles and legends stay inside the figure, evaluations a
log axis cannot show are said, and the too-early figure names its axes. Checked on the
matplotlib objects, not on pixels."""

import numpy as np
import pytest
from matplotlib.collections import PolyCollection

from scalerl.curves import Curve, backtest, compare, forecast
from scalerl.curves.plot import plot_backtests, plot_compare, plot_curves, plot_forecast

XS = np.geomspace(100, 3e4, 24)


def _sig(x, A=0.8):
    return 0.1 + (A - 0.1) / (1 + (3e3 / np.maximum(x, 1)) ** 1.2)


def _curve(y, x=XS, name="run"):
    return Curve.from_arrays(x, y, name=name, x_name="step", y_name="score")


def _collapsing():
    y = _sig(XS)
    y[14:] = y[14] - np.linspace(0, 0.5, 10)
    return _curve(np.clip(y, 0, 1), name="collapse")


def _bands(ax):
    return [c for c in ax.collections if isinstance(c, PolyCollection)]


def _labels(fig):
    return [t.get_text() for legend in fig.legends for t in legend.get_texts()]


def _inside_figure(fig, artist):
    renderer = fig.canvas.get_renderer()
    box, page = artist.get_window_extent(renderer), fig.bbox
    return box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1


def test_an_unstable_run_is_drawn_without_a_forecast_band(tmp_path, figures):
    fc = forecast(_collapsing(), n_boot=20)
    assert fc.unstable
    plot_forecast(fc, tmp_path / "f.png")
    fig = figures[-1]
    assert not [b for b in _bands(fig.axes[0]) if "band" in (b.get_label() or "")]
    labels = _labels(fig)
    assert not [t for t in labels if "band" in t], labels
    assert any("not a forecast" in t for t in labels)


def test_a_stable_run_keeps_its_bands(tmp_path, figures):
    plot_forecast(forecast(_curve(_sig(XS)), n_boot=20), tmp_path / "f.png")
    labels = _labels(figures[-1])
    assert any("confidence band" in t for t in labels) and any("prediction band" in t for t in labels)


def test_an_unstable_backtest_panel_has_no_band_and_the_legend_still_names_the_bands(tmp_path, figures):
    unstable = backtest(_collapsing(), cut_fraction=0.7, n_boot=0)
    assert unstable.unstable
    stable = backtest(_curve(_sig(XS), name="fine"), cut_fraction=0.5, n_boot=0)
    plot_backtests([unstable, stable], tmp_path / "all.png")
    fig = figures[-1]
    assert not _bands(fig.axes[0])
    assert _bands(fig.axes[1])
    labels = _labels(fig)  # the first panel's run drew no band: the legend took its entries from it alone
    assert "confidence band" in labels and "prediction band" in labels


@pytest.mark.parametrize("name", ["x" * 150, "a-run-with-a-name-that-is-quite-long " * 4])
def test_a_long_title_is_wrapped_inside_the_figure(tmp_path, figures, name):
    fc = forecast(_collapsing(), n_boot=0)
    plot_forecast(fc, tmp_path / "f.png", title=name)
    fig = figures[-1]
    assert _inside_figure(fig, fig.axes[0].title)


def test_the_compare_legend_of_many_long_run_names_stays_inside_the_figure(tmp_path, figures):
    runs = {f"qwen2.5-7b-instruct-grpo-lr{i}e-6-kl0.001-batch512-very-long-experiment-name-{i}":
            [_curve(_sig(XS, 0.5 + 0.02 * i))] for i in range(12)}
    plot_compare(compare(runs, n_boot=10, forecasts=False), tmp_path / "c.png")
    fig = figures[-1]
    (legend,) = fig.legends
    assert _inside_figure(fig, legend)
    assert _inside_figure(fig, fig.axes[0].title)


def test_evaluations_at_zero_compute_are_said_not_drawn(tmp_path, figures):
    x = np.r_[0.0, 0.0, 0.0, XS[3:]]
    y = _sig(x) + np.r_[0.0, 0.01, 0.02, np.zeros(21)]
    plot_forecast(forecast(_curve(y, x), n_boot=0), tmp_path / "f.png")
    assert "3 evaluations at step <= 0 not drawn (log axis)" in _labels(figures[-1])
    plot_curves([_curve(y, x)], tmp_path / "c.png")
    assert "3 evaluations at step <= 0 not drawn (log axis)" in _labels(figures[-1])


def test_the_figure_of_a_run_too_short_to_fit_names_its_axes(tmp_path, figures):
    plot_curves([_curve(_sig(XS[:3]), XS[:3])], tmp_path / "c.png", title="too few")
    ax = figures[-1].axes[0]
    assert ax.get_xlabel() == "step" and ax.get_ylabel() == "score"


def test_the_forecast_is_drawn_from_the_fit_windows_start(tmp_path, figures):
    """With the opening evaluations left out of the fit (``fit_from``), the forecast line, its bands
    and the laws were drawn from the first evaluation -- left of the window the sigmoid dived below
    R0, a curve nothing was fitted on."""
    fc = forecast(_curve(_sig(XS)), fit_from=1000.0, n_boot=20)
    plot_forecast(fc, tmp_path / "f.png")
    ax = figures[-1].axes[0]
    drawn = [line for line in ax.get_lines() if line.get_label() in ("forecast",) or
             line.get_label().startswith(("sigmoid A=", "power law A="))]
    assert drawn and all(np.min(line.get_xdata()) >= 1000.0 * (1 - 1e-9) for line in drawn)


def test_a_backtest_panel_marks_the_opening_plateau_left_out_not_fitted(tmp_path, figures):
    """The backtest panels drew the evaluations before ``fit_from`` filled, as "fitted"."""
    y = _sig(XS)
    y[:6] = 0.1
    bt = backtest(_curve(y), cut_fraction=0.7, n_boot=20)
    assert bt.forecast.fit.fit_from is not None
    plot_backtests([bt], tmp_path / "b.png")
    ax = figures[-1].axes[0]
    by_label = {c.get_label(): c for c in ax.collections}
    early = by_label["left out of the sigmoid (opening plateau)"].get_offsets()
    fitted = by_label["fitted"].get_offsets()
    assert len(early) and np.all(early[:, 0] < bt.forecast.fit.fit_from)
    assert np.all(fitted[:, 0] >= bt.forecast.fit.fit_from)


def test_more_than_ten_compared_runs_each_get_their_own_colour(tmp_path, figures):
    """The colour cycle has 10: with 12 runs, run 1 and run 11 were drawn alike."""
    import matplotlib.colors as mcolors

    runs = {f"run{i:02d}": [_curve(_sig(XS, 0.5 + 0.02 * i))] for i in range(12)}
    plot_compare(compare(runs, n_boot=10, forecasts=False), tmp_path / "c.png")
    ax = figures[-1].axes[0]
    scatters = [c for c in ax.collections if not isinstance(c, PolyCollection)]
    colours = {mcolors.to_hex(c.get_facecolor()[0], keep_alpha=False) for c in scatters}
    assert len(colours) == 12


def test_many_compared_runs_shade_only_the_baselines_band(tmp_path, figures):
    """24 runs stacked 24 translucent bands into one grey mass over the curves: above BANDS_UP_TO
    runs only the baseline is shaded, and the legend says so; a few runs keep a band each."""
    from scalerl.curves.plot import BANDS_UP_TO

    many = {f"run{i:02d}": [_curve(_sig(XS, 0.5 + 0.01 * i))] for i in range(BANDS_UP_TO + 2)}
    plot_compare(compare(many, n_boot=10, forecasts=False), tmp_path / "c.png")
    ax = figures[-1].axes[0]
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 1
    assert any(f"the baseline's only: {BANDS_UP_TO + 2} runs" in label for label in _labels(figures[-1]))
    few = {f"run{i}": [_curve(_sig(XS, 0.5 + 0.05 * i))] for i in range(3)}
    plot_compare(compare(few, n_boot=10, forecasts=False), tmp_path / "d.png")
    ax = figures[-1].axes[0]
    assert len([c for c in ax.collections if isinstance(c, PolyCollection)]) == 3
    assert not any("baseline's only" in label for label in _labels(figures[-1]))
