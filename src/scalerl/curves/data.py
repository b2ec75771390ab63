"""A curve: one run's metric against compute, checked once so every fit can trust it."""

from __future__ import annotations

import sys
from collections.abc import ItemsView, KeysView, Mapping, Set
from dataclasses import dataclass, field, replace

import numpy as np

from scalerl.errors import InputError


#: How many compute values, and what share of them, must each hold several different evaluations
#: before :func:`shared_x_note` speaks: one or two are a resumed run's repeated evaluation.
SHARED_X_MIN, SHARED_X_SHARE = 3, 0.25


def shared_x_note(x: np.ndarray, y: np.ndarray, x_name: str, carried: np.ndarray | None = None) -> str:
    """A note when many compute values each hold two or more different evaluations: a long-format
    log with several tasks, evaluation sets or runs in one column, read as one run, is fitted as one
    curve jumping between them -- a wrong answer with narrow intervals. Equal evaluations at one
    value (a logger that wrote a row twice) and a resumed run's repeated step or two are not it.
    ``carried`` (a mask over the points): the evaluations that took x from the latest row before them,
    not logging it themselves. Where every value held several times holds such evaluations, x is logged
    less often than the run evaluates: that is said instead, with the remedy for it (not --run-column)."""
    values, first, counts = np.unique(x, return_index=True, return_counts=True)
    held = [i for i, (at, n) in enumerate(zip(first, counts)) if n > 1 and np.ptp(y[at:at + n]) > 0]
    if len(held) < SHARED_X_MIN or len(held) < SHARED_X_SHARE * len(values):
        return ""
    at, n = first[held[0]], counts[held[0]]
    seen = ", ".join(f"{v:.4g}" for v in y[at:at + min(n, 3)]) + (", ..." if n > 3 else "")
    stacked = f"{len(held)} of {len(values)} {x_name} values hold several different evaluations (at {values[held[0]]:g}: {seen})"
    # (np.unique sorts: a value's points are consecutive in x, which is non-decreasing here)
    if carried is not None and all(carried[first[i]:first[i] + counts[i]].any() for i in held):
        return (f"{stacked} -- the evaluations do not log {x_name!r} and each took the latest row's: {x_name!r} is "
                "logged less often than the run evaluates, and they are fitted at one compute; an x every evaluation "
                "logs places each at its own (--x step)")
    return (f"{stacked} -- several tasks, sets or runs in one column? They are fitted as one curve; read one of them "
            "(--run; a column that names them: --run-column COL)")


def _sequence(values):
    """``values`` as something numpy reads as the numbers it holds, in order: a masked array's masked values
    missing (they were read as the numbers under the mask), a torch tensor detached in float64 (one that
    requires grad raised numpy's RuntimeError; bf16 was refused), any other iterable (a generator,
    ``dict.values()``) as its list (review ax: refused as "not numeric"). A mapping, a set (no order) or bytes
    are refused (review ba: a dict was read as its keys, bytes as their character codes)."""
    # (A dict's keys and items are ordered: the keys read, the items refused as a table of two columns.)
    if isinstance(values, (Mapping, Set, bytes, bytearray, str)) and not isinstance(values, (KeysView, ItemsView)):
        what = {Mapping: "a mapping (give its values in order: list(d.values()))", Set: "a set (it has no order)"}
        raise TypeError(next((w for t, w in what.items() if isinstance(values, t)), f"{type(values).__name__} "
                             "(give the numbers as a list or an array)"))
    if np.ma.isMaskedArray(values):
        return np.ma.filled(values.astype(float), np.nan)
    if hasattr(values, "detach"):
        values = values.detach().cpu()
        if values.is_complex():  # (.double() drops the imaginary part, with only torch's warning: review bb)
            raise TypeError("complex values: give real numbers")
        return values.double()
    if not hasattr(values, "__array__") and not isinstance(values, (list, tuple)) and hasattr(values, "__iter__"):
        return list(values)
    return values


def _floats(values) -> np.ndarray:
    """``values`` (:func:`_sequence`) as a flat float array; a missing value pandas writes as ``pd.NA`` (a nullable
    column's ``tolist()``: numpy cannot convert it) is NaN, dropped as the other missing values are (review al: it
    was refused as 'not numeric'). pandas is only asked where the user's data already imported it. A complex
    value (numpy drops its imaginary part with a warning) and a table of several columns (it was flattened
    row by row: two runs interleaved into one) are refused."""
    values = _sequence(values)
    try:
        shape = np.shape(values)
    except ValueError:  # ragged: refused as not numeric below
        shape = ()
    if sum(n > 1 for n in shape) > 1:
        raise TypeError(f"a {' x '.join(map(str, shape))} table, not one run's values: give a 1-D sequence "
                        "(a table with a column per run: a Curve per column)")
    if np.iscomplexobj(values):
        raise TypeError("complex values: give real numbers")
    try:
        return np.asarray(values, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        pd = sys.modules.get("pandas")
        if pd is None:
            raise
        cells = list(np.asarray(values, dtype=object).reshape(-1))
        return pd.array(cells, dtype="Float64").to_numpy(dtype=float, na_value=np.nan)


def check_curve(curve, what: str) -> None:
    """A :class:`Curve`, or an InputError saying how to make one (arrays gave an AttributeError)."""
    if not isinstance(curve, Curve):
        raise InputError(f"{what} takes a Curve, got {type(curve).__name__}; build one with "
                         "Curve.from_arrays(x, y) or read_curve(PATH, x=COL, y=COL)")


def dropped_note(curve: "Curve") -> str:
    """What a run's evaluations without a finite x or y came to ("" where none were dropped): the one
    wording fit, backtest (its table of every run too) and their JSON give it."""
    return f"{curve.dropped} row(s) with missing, NaN or infinite values were dropped" if curve.dropped else ""


@dataclass(frozen=True)
class Curve:
    """Validation metric ``y`` (e.g. pass rate) against training compute ``x`` for one run.

    Build it with :meth:`from_arrays`, which drops non-finite rows (counting them in
    ``dropped``) and refuses what cannot be a compute-performance curve.
    """

    x: np.ndarray
    """Training compute at each evaluation, non-decreasing, >= 0 (0 = before training)."""
    y: np.ndarray
    """Metric at each evaluation (a pass rate in [0, 1] unless ``bounded`` is False)."""
    name: str = "run"
    """Run label (file name, ``run`` column value, TensorBoard directory, ...)."""
    x_name: str = "compute"
    y_name: str = "pass_rate"
    dropped: int = 0
    """Rows dropped because x or y was missing, NaN or infinite."""
    source: str = ""
    """Where the curve was read from, for messages."""
    notes: tuple[str, ...] = field(default=())
    """Things the reader noticed and the user should see (skipped lines, ...)."""
    run_id: str = ""
    """The tracker's id of the run where it has one (W&B, MLflow, Trackio, SwanLab): ``--run`` takes it too."""
    left_out: tuple[tuple[str, str], ...] = field(default=())
    """Runs of the same log that logged the metric but could not be read as curves (in percent, no
    finite x), as ``(run, reason)``: every curve of the log carries them, so that a command over the
    whole log (``backtest --all-runs``) counts them with the runs it skipped."""
    column_run: bool = False
    """A column of a table with a column per run (a CSV or Parquet table without a run column) read by a
    ``--y`` glob, named ``"<file> | <column>"``: a run of its own. Else such a name is one of the file's
    run's evaluation sets, which ``scalerl calibrate`` holds out with the run's others."""
    bounded: bool = True
    """A pass rate in [0, 1] (the fits cap A at 1 and the floor at 0), or -- read with ``bounded=False``
    (``--unbounded``) -- a metric without bounds (a mean reward, a score): the fits then take none."""

    @classmethod
    def from_arrays(
        cls,
        x,
        y,
        *,
        name: str = "run",
        x_name: str = "compute",
        y_name: str = "pass_rate",
        source: str = "",
        bounded: bool = True,
        dropped: int = 0,
        notes: tuple[str, ...] = (),
        carried=None,
    ) -> "Curve":
        """``carried``: optional mask of the points whose x a reader took from an earlier row (the
        evaluation did not log it), for what the notes say of several evaluations at one x."""
        where = f" in {source}" if source else ""
        try:
            x, y = _floats(x), _floats(y)
        except (TypeError, ValueError) as exc:
            raise InputError(f"run {name!r}{where}: values are not numeric ({exc})") from None
        if x.shape != y.shape:
            raise InputError(f"run {name!r}{where}: {x.size} compute values but {y.size} metric values")
        ok = np.isfinite(x) & np.isfinite(y)
        dropped = int(dropped + (~ok).sum())
        x, y = x[ok], y[ok]
        carried = None if carried is None else np.asarray(carried, dtype=bool).reshape(-1)[ok]
        if x.size == 0:
            raise InputError(
                f"run {name!r}{where}: no rows with finite {x_name!r} and {y_name!r} values"
                + (f" ({dropped} rows dropped as NaN/inf/missing)" if dropped else "")
            )
        if (x < 0).any():
            i = int(np.argmax(x < 0))
            raise InputError(
                f"run {name!r}{where}: compute {x_name!r} is negative ({x[i]:g} at point {i + 1}); "
                "compute must be >= 0 -- check the column"
            )
        if (np.diff(x) < 0).any():
            i = int(np.argmax(np.diff(x) < 0)) + 1
            if x[i] <= x[0]:  # back to where the log began: not a resume, which a reader would have split
                raise InputError(
                    f"run {name!r}{where}: compute {x_name!r} decreases at point {i + 1} ({x[i - 1]:g} -> "
                    f"{x[i]:g}), back to where the log began; compute must be cumulative and non-decreasing -- is "
                    "it a clock or counter that restarts when a training resumes from a checkpoint or a new epoch "
                    "begins (choose one that goes on: a global step, such as the global_step a reader gives, or "
                    "cum: of a per-step time), are several runs mixed (use --run; a CSV/JSONL whose run column is "
                    "not called 'run' needs --run-column COL; without a run column, give each run its own file or "
                    "add a column naming it), or was a training started anew in the same log (delete the first "
                    "attempt's rows)?"
                )
            raise InputError(
                f"run {name!r}{where}: compute {x_name!r} decreases at point {i + 1} "
                f"({x[i - 1]:g} -> {x[i]:g}); compute must be cumulative and non-decreasing -- "
                "is this the right column, are several runs mixed (use --run; a CSV/JSONL whose run column is not "
                "called 'run' needs --run-column COL), or was a training resumed from a checkpoint appended to the "
                "same log (a CSV/JSONL of one run, without a run column, is split there by its step column; else "
                "delete the abandoned attempt's rows from the checkpoint's step on)?"
            )
        if bounded and ((y < 0).any() or (y > 1).any()):
            bad = y[(y < 0) | (y > 1)][0]
            raise InputError(
                f"run {name!r}{where}: {y_name!r} has values outside [0, 1] (e.g. {bad:g}); "
                "a pass rate must be a fraction -- for percentages pass --y-scale 0.01; a metric that is not a pass "
                "rate (a mean reward of +1 / -1, a score) fits with --unbounded (A then is not capped at 1); from "
                "Python: read_curve(..., y_scale=0.01) or y / 100, or bounded=False (its fits then cap nothing)"
            )
        shared = shared_x_note(x, y, x_name, carried)
        notes = (*notes, shared) if shared else tuple(notes)
        return cls(x=x, y=y, name=name, x_name=x_name, y_name=y_name, dropped=dropped, source=source, notes=notes,
                   bounded=bounded)

    def __len__(self) -> int:
        return int(self.x.size)

    def window(self, fit_from: float | None = None, fit_until: float | None = None) -> "Curve":
        """The points with ``fit_from <= x <= fit_until`` (either bound optional)."""
        keep = np.ones_like(self.x, dtype=bool)
        if fit_from is not None:
            keep &= self.x >= fit_from
        if fit_until is not None:
            keep &= self.x <= fit_until
        return replace(self, x=self.x[keep], y=self.y[keep])

    def scaled(self, y_scale: float) -> "Curve":
        return replace(self, y=self.y * y_scale)

    @property
    def zero_compute(self) -> np.ndarray:
        """Mask of the points measured before any training (the R0 measurement)."""
        return self.x == 0


def fit_limits(curve: Curve, A_max: float | None = None, y_floor: float | None = None) -> tuple[float, float]:
    """The bounds a fit of ``curve`` takes: those given, else the curve's own -- 1 and 0 for a pass rate,
    none (``inf``, ``-inf``) for a curve read with ``bounded=False`` (a fit of a score up to 10 capped at
    1 was a wrong answer with only a warning)."""
    if A_max is None:
        A_max = 1.0 if curve.bounded else float("inf")
    if y_floor is None:
        y_floor = 0.0 if curve.bounded else float("-inf")
    return A_max, y_floor
