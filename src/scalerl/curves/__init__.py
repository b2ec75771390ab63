"""Forecast: sigmoidal compute-performance curves for RL runs.

    from scalerl.curves import read_curve, forecast
    fc = forecast(read_curve("runlog.jsonl", x="gpu_hours", y="val/pass_rate"))
    fc.fit.A, fc.intervals()["A"], fc.predict([10, 100]), fc.stability.text()

Everything a notebook needs is exported here (docs/api.md walks through it): reading logs,
fitting, forecasting, backtests, comparisons, calibrating the bands on your own runs (and the
file that holds the factors), and the figures. Imports numpy, scipy and (for plots, lazily)
matplotlib -- never torch.
"""

from scalerl.curves.backtest import Backtest, Summary, backtest, summarize
from scalerl.curves.bands import Bands, Calibration, default_calibration, read_calibration, write_calibration
from scalerl.curves.calibrate import CalibrationRun, calibrate
from scalerl.curves.compare import Classification, CompareResult, RunFit, classify, compare
from scalerl.curves.data import Curve
from scalerl.curves.ensemble import DEFAULT_MEMBERS, MEMBERS, Ensemble, fit_ensemble
from scalerl.curves.forecast import Forecast, Prediction, Verdict, forecast
from scalerl.curves.io import read_curve, read_curves
from scalerl.curves.laws import PowerLaw, Sigmoid
from scalerl.curves.plot import plot_backtest, plot_backtests, plot_compare, plot_curves, plot_forecast
from scalerl.curves.power_law_fit import PowerLawFit, fit_power_law
from scalerl.curves.sigmoid_fit import SigmoidFit, fit_sigmoid
from scalerl.curves.solver import SIGMOID_METHODS, PaperGrid
from scalerl.curves.stability import Stability, check_stability
from scalerl.curves.uncertainty import Bootstrap, SeedFit, bootstrap, fit_seeds, pool_curves
from scalerl.curves.window import select_fit_from

__all__ = [
    "Backtest", "Bands", "Bootstrap", "Calibration", "CalibrationRun", "Classification", "CompareResult", "Curve",
    "DEFAULT_MEMBERS", "Ensemble", "Forecast", "MEMBERS", "PaperGrid", "PowerLaw", "PowerLawFit", "Prediction",
    "RunFit", "SIGMOID_METHODS", "SeedFit", "Sigmoid", "SigmoidFit", "Stability", "Summary", "Verdict", "backtest",
    "bootstrap", "calibrate", "check_stability", "classify", "compare", "default_calibration", "fit_ensemble",
    "fit_power_law", "fit_seeds", "fit_sigmoid", "forecast", "plot_backtest", "plot_backtests", "plot_compare",
    "plot_curves", "plot_forecast", "pool_curves", "read_calibration", "read_curve", "read_curves", "select_fit_from",
    "summarize", "write_calibration",
]
