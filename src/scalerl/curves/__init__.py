"""Forecast: sigmoidal compute-performance curves for RL runs.

    from scalerl.curves import read_curve, forecast
    fc = forecast(read_curve("runlog.jsonl", x="gpu_hours", y="val/pass_rate"))
    fc.fit.A, fc.intervals()["A"], fc.predict([10, 100]), fc.stability.text()

Imports numpy, scipy and (for plots, lazily) matplotlib -- never torch.
"""

from scalerl.curves.backtest import Backtest, Summary, backtest, summarize
from scalerl.curves.bands import Bands, Calibration, default_calibration
from scalerl.curves.compare import Classification, CompareResult, classify, compare
from scalerl.curves.data import Curve
from scalerl.curves.ensemble import DEFAULT_MEMBERS, MEMBERS, Ensemble, fit_ensemble
from scalerl.curves.forecast import Forecast, Prediction, Verdict, forecast
from scalerl.curves.io import read_curve, read_curves
from scalerl.curves.laws import PowerLaw, Sigmoid
from scalerl.curves.power_law_fit import PowerLawFit, fit_power_law
from scalerl.curves.sigmoid_fit import SigmoidFit, fit_sigmoid
from scalerl.curves.solver import SIGMOID_METHODS, PaperGrid
from scalerl.curves.stability import Stability, check_stability
from scalerl.curves.uncertainty import Bootstrap, SeedFit, bootstrap, fit_seeds, pool_curves
from scalerl.curves.window import select_fit_from

__all__ = [
    "Backtest", "Bands", "Bootstrap", "Calibration", "Classification", "CompareResult", "Curve", "DEFAULT_MEMBERS",
    "Ensemble", "Forecast", "MEMBERS", "PaperGrid", "PowerLaw", "PowerLawFit", "Prediction", "SIGMOID_METHODS",
    "SeedFit", "Sigmoid", "SigmoidFit", "Stability", "Summary", "Verdict", "backtest", "bootstrap",
    "check_stability", "classify", "compare", "default_calibration", "fit_ensemble", "fit_power_law", "fit_seeds",
    "fit_sigmoid", "forecast", "pool_curves", "read_curve", "read_curves", "select_fit_from", "summarize",
]
