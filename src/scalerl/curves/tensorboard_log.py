"""TensorBoard event files: a file, or a directory in which each sub-directory with event files is a run.

A step logged more than once (a run resumed from a checkpoint appends a new event file to its
directory and logs the steps after the checkpoint again) keeps its later value, said in the notes.
"""

from __future__ import annotations

import math
from pathlib import Path

from scalerl.curves.data import Curve
from scalerl.curves.rows import unknown_column
from scalerl.errors import InputError


def _event_dirs(path: Path) -> list[Path]:
    if path.is_file():
        return [path]
    dirs = sorted({p.parent for p in path.rglob("*tfevents*")})
    if not dirs:
        raise InputError(f"{path}: no TensorBoard event files (*tfevents*) found")
    return dirs


def read_tensorboard(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """``x`` may be ``step``, ``wall_time`` (hours since the first event) or another scalar tag
    (joined on step, e.g. a logged compute counter)."""
    try:
        from tensorboard.backend.event_processing import event_accumulator
    except ImportError:
        raise InputError("reading TensorBoard logs needs the tensorboard package: pip install 'scalerl[tensorboard]'") from None
    path = Path(path)
    curves = []
    for d in _event_dirs(path):
        acc = event_accumulator.EventAccumulator(str(d), size_guidance={event_accumulator.SCALARS: 0})
        acc.Reload()
        tags = acc.Tags().get("scalars", [])
        if y not in tags:
            raise unknown_column(d, "y", y, tags)
        # A run resumed from a checkpoint writes a new event file in the same directory and logs the
        # steps after the checkpoint again: the later value of a step wins, as in the other readers.
        latest = {}
        for e in acc.Scalars(y):  # in file order: the later file's events come later
            latest[e.step] = e
        relogged = len(acc.Scalars(y)) - len(latest)
        events = [latest[step] for step in sorted(latest)]
        notes = (f"{relogged} step(s) of {y!r} logged again (a resumed run?): the later values kept",) if relogged else ()
        if x == "step":
            xs = [float(e.step) for e in events]
        elif x == "wall_time":
            t0 = min(e.wall_time for e in events)
            xs = [(e.wall_time - t0) / 3600.0 for e in events]
        else:
            if x not in tags:
                raise unknown_column(d, "x", x, ["step", "wall_time", *tags])
            by_step = {e.step: e.value for e in acc.Scalars(x)}
            xs = [float(by_step.get(e.step, math.nan)) for e in events]
        ys = [e.value * y_scale for e in events]
        name = d.name if d != path else (path.name or "run")
        curves.append(Curve.from_arrays(xs, ys, name=name, x_name=x, y_name=y, source=str(d), bounded=bounded,
                                        notes=notes))
    return curves
