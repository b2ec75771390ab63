"""Compute-performance laws: the sigmoid of the ScaleRL paper and the power law it replaces,
and the naive "no further change" forecast the two are measured against.

    Sigmoid:   R(C) = R0 + (A - R0) / (1 + (C_mid / C) ** B)
    Power law: R(C) = A - D / C ** B
    Level:     R(C) = L   (the recent level, held)

Both are small immutable objects: evaluate with ``law(C)``, invert with ``compute_for``,
read the parameters with ``params()``. The sigmoid is a logistic in ln C, which is why the
fitting code works in ln C and ln C_mid.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np

ArrayLike = "float | np.ndarray"


@dataclass(frozen=True)
class Sigmoid:
    """``R(C) = R0 + (A - R0) / (1 + (C_mid / C) ** B)``.

    A is the ceiling (asymptotic pass rate), B the scaling exponent (efficiency: larger is
    steeper), C_mid the compute at which half of the gain ``A - R0`` is reached, R0 the
    pass rate before RL.
    """

    A: float
    B: float
    C_mid: float
    R0: float = 0.0

    name = "sigmoid"

    def __call__(self, C):
        C = np.asarray(C, dtype=float)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            # Written as a logistic in ln C: stable for huge/small ratios, exact R0 at C=0.
            t = self.B * (np.log(self.C_mid) - np.log(np.where(C > 0, C, np.nan)))
            frac = np.where(C > 0, 1.0 / (1.0 + np.exp(np.clip(t, -700, 700))), 0.0)
        out = self.R0 + (self.A - self.R0) * frac
        return float(out) if out.ndim == 0 else out

    def gain_fraction(self, C):
        """Fraction of the gain ``A - R0`` reached at compute C (0 at C=0, 1 at infinity)."""
        return (np.asarray(self(C)) - self.R0) / (self.A - self.R0)

    def compute_for_fraction(self, f: float) -> float:
        """Compute to reach a fraction ``f`` of the gain: ``C_mid * (f / (1 - f)) ** (1 / B)``."""
        if not 0.0 < f < 1.0:
            raise ValueError(f"fraction of the gain must be in (0, 1), got {f}")
        return float(self.C_mid * (f / (1.0 - f)) ** (1.0 / self.B))

    def compute_for(self, R: float) -> float:
        """Compute at which the curve reaches pass rate ``R`` (inf if R is at or beyond A)."""
        lo, hi = sorted((self.R0, self.A))
        if R == self.R0:
            return 0.0
        if not lo < R < hi:
            return math.inf
        return self.compute_for_fraction((R - self.R0) / (self.A - self.R0))

    def slope(self, C):
        """dR/dC: the marginal pass rate per extra unit of compute at C."""
        C = np.asarray(C, dtype=float)
        g = np.asarray(self.gain_fraction(C))
        with np.errstate(divide="ignore", invalid="ignore"):
            out = (self.A - self.R0) * self.B * g * (1.0 - g) / C
        return float(out) if out.ndim == 0 else out

    def params(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class PowerLaw:
    """``R(C) = A - D * (C / C_ref) ** -B`` -- the law the paper shows to overshoot when fitted early.

    ``C_ref`` is the unit compute is measured in for ``D`` (1: the classic ``A - D / C^B``); a fit
    takes a compute of its data, so that D -- the gap below A there -- does not over- or underflow
    when compute is counted in FLOPs (1e22) rather than steps, and the fit does not change with the
    unit."""

    A: float
    D: float
    B: float
    C_ref: float = 1.0

    name = "power_law"

    def __call__(self, C):
        C = np.asarray(C, dtype=float)
        with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
            out = np.where(C > 0, self.A - self.D * np.power(np.where(C > 0, C, 1.0) / self.C_ref, -self.B), -np.inf)
        return float(out) if out.ndim == 0 else out

    def compute_for(self, R: float) -> float:
        """Compute at which the curve reaches ``R`` (inf at or beyond A)."""
        if R >= self.A or self.D <= 0:
            return math.inf
        return float(self.C_ref * (self.D / (self.A - R)) ** (1.0 / self.B))

    def slope(self, C):
        C = np.asarray(C, dtype=float)
        out = self.D * self.B / self.C_ref * np.power(C / self.C_ref, -self.B - 1.0)
        return float(out) if out.ndim == 0 else out

    def params(self) -> dict[str, float]:
        return asdict(self)


@dataclass(frozen=True)
class Level:
    """The naive forecast: from ``x_end`` on the run stays at ``level``.

    The benchmark every forecaster of a time series is held to (the "no-change" forecast of
    the forecasting competitions); in the ensemble it is the member that says the gain is over,
    beside the sigmoid (it slows) and the power law (it keeps rising). Before ``x_end`` (inside
    the fit window) it follows ``shape`` -- a law fitted to the window -- shifted to meet the
    level at ``x_end``, so that the combined curve stays a description of the data there too;
    without a shape it is flat everywhere."""

    level: float
    x_end: float = math.inf
    shape: object = None
    """A law (callable on compute) for C < x_end, or None."""

    name = "level"

    def __call__(self, C):
        C = np.asarray(C, dtype=float)
        if self.shape is None or not math.isfinite(self.x_end):
            out = np.full(C.shape, self.level)
        else:
            before = np.asarray(self.shape(np.minimum(C, self.x_end)), dtype=float)
            out = before - float(self.shape(self.x_end)) + self.level
        return float(out) if out.ndim == 0 else out

    def compute_for(self, R: float) -> float:
        """Compute from which the held level is at least ``R``: 0 at or below it, else never."""
        return 0.0 if R <= self.level else math.inf

    def slope(self, C):
        out = np.zeros(np.shape(C))
        return float(out) if out.ndim == 0 else out

    def params(self) -> dict[str, float]:
        return {"level": self.level, "x_end": self.x_end}
