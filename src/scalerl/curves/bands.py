"""Two bands around a forecast, calibrated on real runs.

* the **confidence band** -- where the *expected* curve (the level of the run, its
  evaluation noise averaged out) will be at compute C;
* the **prediction band** -- where one more *observed evaluation* at C will land.

Both are ``forecast(C) +- q * s(C)``. The scale ``s(C)`` is built from the run alone::

    s(C)^2 = max(sigma, v)^2 + boot(C)^2 + stability(C)^2 + spread(C)^2

sigma the noise of the window's evaluations; v the ensemble's rolling-origin validation
error inside the window (how far off its forecasts have been so far -- noise, drift and
misspecification together, at shorter horizons); boot(C) the bootstrap standard deviation
of the sigmoid's mean curve (parameter uncertainty: large while the data do not pin the
curve); stability(C) how much the ensemble's forecast at C moved across its rolling origins
(a forecast that keeps changing as evaluations arrive is not settled); spread(C) how much
the ensemble's laws disagree at C (misspecification). The last three grow with the horizon
``h = ln(C / C_end)`` on their own. The prediction band adds sigma^2 once more (the new
evaluation's own noise). A window too short for rolling-origin validation has no v: its
bands use sigma and are marked uncalibrated.

The factors q are split-conformal quantiles: on real runs cut at 30%, 50% and 70% of their
compute, the scores ``|observed end level - forecast| / s`` (confidence) and ``|observed
evaluation - forecast| / sqrt(s^2 + sigma^2)`` (prediction; every run weighted equally)
were collected, and q at level L is their L-quantile (with the finite-sample correction).
``benchmarks/forecast_corpus.py`` computes them with leave-one-source-out (the quoted
coverage figures) and writes the all-source values to ``calibration.json``, with their
provenance. The calibration covers horizons up to ``h_max`` (the longest seen in
calibration); beyond it q grows in proportion to h, and the output says the band is
extrapolated.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from scalerl.errors import InputError

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")


@dataclass(frozen=True)
class Calibration:
    """Conformal factors of the two bands, and the ensemble temperature, from real runs."""

    levels: tuple[float, ...]
    q_confidence: tuple[float, ...]
    q_prediction: tuple[float, ...]
    h_max: float
    """Longest horizon ln(C / C_end) among the calibration scores."""
    temperature: float
    """Ensemble temperature (see :mod:`scalerl.curves.ensemble`)."""
    provenance: str = ""

    def q(self, level: float, kind: str) -> float:
        """The factor at ``level`` for ``kind`` 'confidence' or 'prediction' (interpolated)."""
        if not self.levels[0] <= level <= self.levels[-1]:
            raise InputError(f"band level must be in [{self.levels[0]}, {self.levels[-1]}], got {level}")
        table = self.q_confidence if kind == "confidence" else self.q_prediction
        return float(np.interp(level, self.levels, table))

    def as_dict(self) -> dict:
        return {"levels": list(self.levels), "q_confidence": list(self.q_confidence),
                "q_prediction": list(self.q_prediction), "h_max": self.h_max,
                "temperature": self.temperature, "provenance": self.provenance}

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        return cls(tuple(d["levels"]), tuple(d["q_confidence"]), tuple(d["q_prediction"]), float(d["h_max"]),
                   float(d["temperature"]), str(d.get("provenance", "")))


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The shipped calibration (``calibration.json`` next to this module)."""
    return Calibration.from_dict(json.loads(CALIBRATION_FILE.read_text()))


def conformal_quantile(scores, level: float, weights=None, n_units: int | None = None) -> float:
    """Split-conformal quantile of nonnegative scores: the smallest q with at least a share
    ``level`` of the (weighted) calibration mass at or below it, the level raised by the
    finite-sample correction ``(n + 1) / n``. ``n_units`` is the number of exchangeable units
    (runs, when each run's points share one unit of weight); default: the number of scores."""
    s = np.asarray(scores, dtype=float)
    if s.size == 0:
        raise InputError("no calibration scores")
    w = np.ones_like(s) if weights is None else np.asarray(weights, dtype=float)
    n = n_units or s.size
    target = min(1.0, level * (n + 1.0) / n)
    order = np.argsort(s)
    cum = np.cumsum(w[order]) / w.sum()
    i = int(np.searchsorted(cum, target - 1e-12))
    return float(s[order][min(i, s.size - 1)])


@dataclass
class Bands:
    """The band model of one forecast: the scale's parts and the calibration."""

    sigma: float
    x_end: float
    calibration: Calibration
    level: float
    validated: bool = True
    """False when the window was too short for rolling-origin validation (bands uncalibrated)."""
    bounds: tuple[float, float] = (0.0, 1.0)
    """Where the metric lives (a pass rate: [0, 1]); bands are clipped to it."""

    def horizon(self, C) -> np.ndarray:
        """``ln(C / C_end)``: 0 at the end of the fit window, negative inside it."""
        C = np.atleast_1d(np.asarray(C, dtype=float))
        with np.errstate(divide="ignore"):
            return np.log(np.where(C > 0, C, np.nan) / self.x_end)

    def stretch(self, C) -> np.ndarray:
        """Factor on q beyond the calibrated horizon (1 inside it, h / h_max past it)."""
        h = np.nan_to_num(self.horizon(C), nan=0.0)
        return np.maximum(1.0, h / self.calibration.h_max)

    def calibrated(self, C) -> np.ndarray:
        return (self.stretch(C) <= 1.0) & self.validated

    def half_widths(self, scale: np.ndarray, C) -> tuple[np.ndarray, np.ndarray]:
        """(confidence, prediction) half-widths for the scale s(C) at compute C."""
        k = self.stretch(C)
        conf = self.calibration.q(self.level, "confidence") * scale * k
        pred = self.calibration.q(self.level, "prediction") * np.sqrt(scale**2 + self.sigma**2) * k
        return conf, pred


def band_scale(sigma: float, validation: float | None, boot_sd, stability, spread) -> np.ndarray:
    """``s(C) = sqrt(max(sigma, v)^2 + boot^2 + stability^2 + spread^2)`` (module docstring)."""
    base = max(sigma, validation or 0.0)
    return np.sqrt(base**2 + np.asarray(boot_sd) ** 2 + np.asarray(stability) ** 2 + np.asarray(spread) ** 2)
