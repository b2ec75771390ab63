"""Two bands around a forecast, calibrated on real runs; and the interval of a gain.

* the **confidence band** -- where the *expected* curve (the level of the run, its
  evaluation noise averaged out) will be at compute C;
* the **prediction band** -- where one more *observed evaluation* at C will land;
* the **gain interval** of a verdict -- where the gain ``R(TO) - R(FROM)`` will lie.

The bands are ``forecast(C) +- q * f * s(C)``. The scale ``s(C)`` is built from the run alone::

    s(C)^2 = max(sigma, v)^2 + boot(C)^2 + stability(C)^2 + spread(C)^2

sigma the noise of the window's evaluations; v the rolling-origin validation error of the
forecast inside the window (how far off it has been so far -- noise, drift and
misspecification together, at shorter horizons); boot(C) the bootstrap standard deviation
of the sigmoid's mean curve (parameter uncertainty: large while the data do not pin the
curve); stability(C) how much the ensemble's forecast at C moved across its rolling origins
(a forecast that keeps changing as evaluations arrive is not settled); spread(C) how much
the ensemble's members disagree at C, weighted as they are in the forecast
(misspecification). The last three grow with the horizon ``h = ln(C / C_end)`` on their
own. The prediction band uses ``sqrt(s^2 + sigma^2)`` (the new evaluation's own noise); the
gain interval ``sqrt(s(FROM)^2 + s(TO)^2)``, shrunk for spans shorter than the calibrated
one (:func:`gain_scale`).

``f`` is the **small-sample factor** ``t_df(0.975) / z(0.975)`` with df the number of
evaluations in the fit window (compute > 0): the scale is estimated from the window's few
residuals, and an error divided by a scale estimated from df residuals has Student-t tails,
not normal ones -- a 7-point window gets f = 1.20, a 20-point one 1.06, a 300-point one
1.00. One factor q then serves windows of 7 and of 300 evaluations alike.

The factors q are split-conformal quantiles: on real runs cut at 30%, 50% and 70% of their
compute, the scores ``|observed end level - forecast| / (f s)`` (confidence), ``|observed
evaluation - forecast| / (f sqrt(s^2 + sigma^2))`` (prediction) and ``|observed gain -
forecast gain| / (f gain_scale)`` (gain: from the first to the last quarter of the held-out
evaluations) were collected, **every source weighted equally** (a source with 22 runs says
no more about an unseen source than one with 2; weighting run-cuts equally let the
hardest, largest source set everyone's factor), and q at level L is their weighted
L-quantile with the finite-sample correction. ``benchmarks/forecast_corpus.py`` computes
them with leave-one-source-out (the quoted coverage figures, and those of the designs that
lost) and writes the all-source values to ``calibration.json``, with their provenance. The
calibration covers horizons up to ``h_max`` (the longest seen in calibration); beyond it q
grows in proportion to h, and the output says the band is extrapolated.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
from scipy.special import ndtri, stdtrit

from scalerl.atomic_files import write_text_atomically
from scalerl.curves.ensemble import MEMBERS
from scalerl.errors import InputError

CALIBRATION_FILE = Path(__file__).with_name("calibration.json")
#: The band level a forecast is made at unless told otherwise (the live forecast, run and study reports).
DEFAULT_LEVEL = 0.95


def level_text(level: float) -> str:
    """A band level as labels print it: 0.95 -> "95%", 0.857 -> "85.7%"."""
    return f"{100 * level:.3g}%"


@dataclass(frozen=True)
class Calibration:
    """Conformal factors of the bands and the gain, and the ensemble's make-up, from real runs."""

    levels: tuple[float, ...]
    q_confidence: tuple[float, ...]
    q_prediction: tuple[float, ...]
    q_gain: tuple[float, ...]
    h_max: float
    """Longest horizon ln(C / C_end) among the calibration scores."""
    temperature: float | None
    """Ensemble temperature (see :mod:`scalerl.curves.ensemble`); None: equal weights."""
    members: tuple[str, ...]
    """The ensemble members the default forecast combines."""
    gain_span: float = 1.0
    """Median ln(TO / FROM) of the gains the gain factor was calibrated on (see :func:`gain_scale`)."""
    provenance: str = ""
    run_cuts: int | None = None
    """How many run-cuts ``scalerl calibrate`` made the factors from (None: not recorded, as in the
    shipped file): above the level ``n / (n + 1)`` a factor is the largest error seen (:meth:`supports`)."""

    def supports(self, level: float) -> bool:
        """Whether the factors at ``level`` are quantiles of the scores rather than their largest: with n
        run-cuts a new run exceeds the largest about 1 time in n + 1, whatever level the band is called."""
        return self.run_cuts is None or level <= self.run_cuts / (self.run_cuts + 1)

    def band_level(self, level: float) -> float:
        """The level a band called ``level`` holds: ``level`` where the factors support it, else
        ``n / (n + 1)`` -- the chance that a new run's error is below the largest of n."""
        return level if self.supports(level) else self.run_cuts / (self.run_cuts + 1)

    def level_text(self, level: float) -> str:
        """The level a band called ``level`` holds, for labels: "95%", or "85.7%" where the run-cuts are too few
        (tables and legends said 95% above the note that said 85.7%: reviews cs, ct)."""
        return level_text(self.band_level(level))

    def level_note(self, level: float) -> str | None:
        """What a band called ``level`` is worth where these factors cannot give it (None where they can):
        the sentence fit and backtest print with the bands and put in their JSON."""
        if self.supports(level):
            return None
        n = self.run_cuts
        return (f"from {n} run-cuts the factor at {level:g} is the largest error seen, which a new run exceeds "
                f"about 1 time in {n + 1}: a {100 * self.band_level(level):.1f}% band, not {100 * level:g}% -- "
                "calibrate on more runs")

    def as_json(self, path, level: float) -> dict:
        """Which factors the bands have and what they are worth at ``level``, for a command's JSON: the file
        (None: the shipped ones), its provenance and run-cuts, the level the band holds and the note where
        that is not ``level`` -- the JSON had said "level": 0.99 of a band that holds about 92%."""
        return {"file": None if path is None else str(path), "provenance": self.provenance,
                "run_cuts": self.run_cuts, "band_level": self.band_level(level), "note": self.level_note(level)}

    def q(self, level: float, kind: str) -> float:
        """The factor at ``level`` for ``kind`` 'confidence', 'prediction' or 'gain' (interpolated)."""
        if not self.levels[0] <= level <= self.levels[-1]:
            raise InputError(f"band level must be in [{self.levels[0]}, {self.levels[-1]}], got {level}")
        table = {"confidence": self.q_confidence, "prediction": self.q_prediction, "gain": self.q_gain}[kind]
        return float(np.interp(level, self.levels, table))

    def as_dict(self) -> dict:
        return {"levels": list(self.levels), "q_confidence": list(self.q_confidence),
                "q_prediction": list(self.q_prediction), "q_gain": list(self.q_gain), "h_max": self.h_max,
                "temperature": self.temperature, "members": list(self.members), "gain_span": self.gain_span,
                "provenance": self.provenance, **({} if self.run_cuts is None else {"run_cuts": self.run_cuts})}

    @classmethod
    def from_dict(cls, d: dict) -> "Calibration":
        t = d.get("temperature")
        return cls(tuple(d["levels"]), tuple(d["q_confidence"]), tuple(d["q_prediction"]), tuple(d["q_gain"]),
                   float(d["h_max"]), None if t is None else float(t), tuple(d["members"]),
                   float(d["gain_span"]), str(d.get("provenance") or ""),
                   None if d.get("run_cuts") is None else int(d["run_cuts"]))


@lru_cache(maxsize=1)
def default_calibration() -> Calibration:
    """The shipped calibration (``calibration.json`` next to this module)."""
    return Calibration.from_dict(json.loads(CALIBRATION_FILE.read_text()))


def write_calibration(calibration: Calibration, path) -> Path:
    """Write ``calibration`` as the JSON file :func:`read_calibration` (``--calibration FILE``,
    ``forecast.calibration``) reads -- what ``scalerl calibrate --output FILE`` writes; atomically,
    so a kill mid-write leaves the previous file. From Python it was ``json.dumps(cal.as_dict())``
    by hand, and a file written so was not atomic."""
    path = Path(path)
    if path.is_dir():
        raise InputError(f"{path} is a directory; give a file name (e.g. {path / 'calibration.json'})")
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomically(path, json.dumps(calibration.as_dict(), indent=2) + "\n")
    return path


#: The provenance ``scalerl calibrate`` writes ("scalerl calibrate: 6 runs, 18 run-cuts at ..."): the run-cuts of
#: a file from before it wrote ``run_cuts``.
_CALIBRATE_PROVENANCE = re.compile(r"scalerl calibrate: \d+ runs, (\d+) run-cuts\b")


def read_calibration(path, *, level: float | None = None) -> Calibration:
    """A calibration file written by ``scalerl calibrate`` (or the shipped one), checked: a file
    that is not one is refused in one line rather than giving bands of the wrong width. ``level``:
    the band level it will be used at, refused when the file has no factors there (a hand-edited
    file with levels 0.8 and 0.9 passed a training's config check, and then every live forecast
    of the run was "no fit yet: band level must be in [0.8, 0.9]")."""
    path = Path(path)
    how = "write one with `scalerl calibrate LOG --x COL --y COL --output FILE`"
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise InputError(f"no calibration file {path}; {how}") from None
    except IsADirectoryError:
        raise InputError(f"calibration {path} is a directory, not a calibration file; {how}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise InputError(f"{path} is not a calibration file (not JSON: {exc}); {how}") from None
    if not isinstance(d, dict):  # (a list, a number: from_dict's AttributeError read "bad field 'list' object ...")
        raise InputError(f"{path} is not a scalerl calibration (a JSON {type(d).__name__}, not an object with "
                         f"levels and factors); {how}")
    try:
        cal = Calibration.from_dict(d)
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as exc:
        raise InputError(f"{path} is not a scalerl calibration (bad or missing field {exc}); {how}") from None
    unknown = sorted(set(d) - {f.name for f in dataclasses.fields(Calibration)})
    if unknown:  # a newer scalerl's field (read as if absent, it could mean other bands), or a typo
        raise InputError(f"{path} has field(s) this scalerl does not know: {', '.join(map(repr, unknown))} -- written "
                         f"by a newer scalerl (upgrade), or edited by hand (remove them); {how}")
    if "temperature" not in d:  # (from_dict reads a missing one as null: equal weights, a different forecast)
        raise InputError(f"{path} is not a scalerl calibration (missing field 'temperature': a number, or null for "
                         f"equal weights); {how}")
    n = len(cal.levels)
    problems = []

    def numbers(values) -> bool:
        try:  # an integer too large for a float overflows in isfinite
            return all(isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) for v in values)
        except OverflowError:
            return False

    if n < 2 or not numbers(cal.levels) or any(not 0 < lv < 1 for lv in cal.levels) \
            or list(cal.levels) != sorted(set(cal.levels)):
        problems.append("its levels must be increasing values in (0, 1)")
    for name in ("q_confidence", "q_prediction", "q_gain"):
        q = getattr(cal, name)
        if len(q) != n or not numbers(q) or not all(v > 0 for v in q):
            problems.append(f"{name} must hold {n} positive numbers, one per level")
        elif any(b < a for a, b in zip(q, q[1:])):
            # Quantiles do not fall as the level rises: a 95% band narrower than the 90% one is a wrong file.
            problems.append(f"{name} must not decrease from one level to the next (a higher level's band is no "
                            f"narrower); got {list(q)}")
    if not (math.isfinite(cal.h_max) and cal.h_max > 0) or not (math.isfinite(cal.gain_span) and cal.gain_span > 0):
        problems.append("h_max and gain_span must be positive")
    if cal.run_cuts is not None and (cal.run_cuts < 1 or d["run_cuts"] != cal.run_cuts):
        problems.append(f"run_cuts must be a whole number >= 1 (or absent), got {d['run_cuts']!r}")
    if cal.temperature is not None and not (math.isfinite(cal.temperature) and cal.temperature > 0):
        problems.append("temperature must be positive or null (equal weights)")
    unknown = [m for m in cal.members if not isinstance(m, str) or m not in MEMBERS]
    if not cal.members or unknown:
        problems.append(f"members must name forecast members ({', '.join(MEMBERS)}); got {list(cal.members)}")
    if problems:
        raise InputError(f"{path} is not a valid calibration: {'; '.join(problems)}")
    if cal.run_cuts is None and (m := _CALIBRATE_PROVENANCE.match(cal.provenance)):
        # Written by `scalerl calibrate` before it wrote run_cuts: its provenance says how many, and read as "not
        # recorded" (the shipped file) its few-run-cut bands were labelled 95% or 99% (review du).
        cal = dataclasses.replace(cal, run_cuts=int(m.group(1)))
    if level is not None and not cal.levels[0] <= level <= cal.levels[-1]:
        raise InputError(f"{path} has factors for band levels {cal.levels[0]:g} to {cal.levels[-1]:g}, not {level:g}: "
                         f"give a level in that range, or write the file again with `scalerl calibrate` (factors at "
                         "every level from 0.5 to 0.99)")
    return cal


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


def small_sample_factor(df: float) -> float:
    """``t_df(0.975) / z(0.975)``: how much heavier than normal the tails of an error divided by
    a scale estimated from ``df`` residuals are (1.20 at df 7, 1.06 at df 20, 1.00 at df 1000)."""
    return float(stdtrit(max(float(df), 1.0), 0.975) / ndtri(0.975))


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
    df: float = math.inf
    """Evaluations the scale was estimated from (the fit window's, compute > 0)."""

    @property
    def small_sample(self) -> float:
        """The factor f on the scale (:func:`small_sample_factor`; 1 for an unlimited df)."""
        return 1.0 if math.isinf(self.df) else small_sample_factor(self.df)

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
        k = self.stretch(C) * self.small_sample
        conf = self.calibration.q(self.level, "confidence") * scale * k
        pred = self.calibration.q(self.level, "prediction") * np.sqrt(scale**2 + self.sigma**2) * k
        # An evaluation is the expected curve plus its own noise: its band holds the curve's. The two
        # factors are calibrated apart (end levels, single evaluations), and where the confidence one
        # came out the larger -- the shipped file at 99%, a user's few runs -- the prediction band was
        # the narrower of the two.
        return conf, np.maximum(pred, conf)

    def edges(self, R: np.ndarray, scale: np.ndarray, C) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        """``(lo, hi, obs_lo, obs_hi)``: the confidence and prediction bands around the curve ``R`` at compute C
        (scale s(C) there), clipped to :attr:`bounds` -- a pass rate's band stays in [0, 1]. What a forecast draws
        and what calibrate's check scores (:class:`scalerl.curves.calibrate.Drawn`)."""
        conf, pred = self.half_widths(scale, C)
        lo_b, hi_b = self.bounds
        return (np.clip(R - conf, lo_b, hi_b), np.clip(R + conf, lo_b, hi_b), np.clip(R - pred, lo_b, hi_b),
                np.clip(R + pred, lo_b, hi_b))

    def gain_half_width(self, gscale: float, C_to: float) -> float:
        """Half-width of the gain interval for the gain scale (:func:`gain_scale`) up to C_to."""
        k = float(self.stretch([C_to])[0]) * self.small_sample
        return self.calibration.q(self.level, "gain") * gscale * k


def band_scale(sigma: float, validation: float | None, boot_sd, stability, spread) -> np.ndarray:
    """``s(C) = sqrt(max(sigma, v)^2 + boot^2 + stability^2 + spread^2)`` (module docstring)."""
    base = max(sigma, validation or 0.0)
    return np.sqrt(base**2 + np.asarray(boot_sd) ** 2 + np.asarray(stability) ** 2 + np.asarray(spread) ** 2)


def gain_scale(scale_from: float, scale_to: float, span: float, span_ref: float) -> float:
    """The scale of a gain ``R(TO) - R(FROM)``: ``sqrt(s(FROM)^2 + s(TO)^2)`` -- the level scales
    at both ends, as if their errors were independent -- times ``sqrt(min(1, span / span_ref))``.

    The errors at the two ends are not independent: a bias shared by both cancels in the gain,
    and the closer the two budgets the more they share. Two corrections: the gain's own
    conformal factor, calibrated on gains observed in real runs over spans ``ln(TO / FROM)``
    of typically ``span_ref``, takes back the overstatement at those spans; for shorter spans
    the scale shrinks like the increment of a random walk in ln C (its spread grows as the
    square root of the span), so that the gain between two nearly equal budgets is known to
    be nearly zero. Spans longer than ``span_ref`` keep the full scale."""
    shrink = math.sqrt(min(1.0, max(float(span), 0.0) / span_ref)) if span_ref > 0 else 1.0
    return math.hypot(float(scale_from), float(scale_to)) * shrink
