"""Forecast: sigmoidal compute-performance curves for RL runs.

    from scalerl.curves import read_curve, forecast
    fc = forecast(read_curve("runlog.jsonl", x="gpu_hours", y="val/pass_rate"))
    fc.fit.A, fc.intervals()["A"], fc.predict([10, 100])

Imports numpy, scipy and (for plots, lazily) matplotlib -- never torch.
"""

from scalerl.curves.compare import Classification, CompareResult, classify, compare
from scalerl.curves.data import Curve
from scalerl.curves.power_law_fit import PowerLawFit, fit_power_law
from scalerl.curves.sigmoid_fit import SigmoidFit, fit_sigmoid
from scalerl.curves.solver import SIGMOID_METHODS, PaperGrid
from scalerl.curves.window import select_fit_from
from scalerl.curves.forecast import Backtest, Forecast, Prediction, Verdict, backtest, forecast
from scalerl.curves.io import read_curve, read_curves
from scalerl.curves.laws import PowerLaw, Sigmoid
from scalerl.curves.uncertainty import Bootstrap, SeedFit, bootstrap, fit_seeds, pool_curves

__all__ = [
    "Backtest", "Bootstrap", "Classification", "CompareResult", "Curve", "Forecast", "PaperGrid",
    "PowerLaw", "PowerLawFit", "Prediction", "SIGMOID_METHODS", "SeedFit", "Sigmoid", "SigmoidFit",
    "Verdict", "backtest", "bootstrap", "classify", "compare", "fit_power_law", "fit_seeds",
    "fit_sigmoid", "forecast", "pool_curves", "read_curve", "read_curves", "select_fit_from",
]
