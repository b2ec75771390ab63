"""TensorBoard event files: a file, or a directory in which each sub-directory with event files is a run.

Scalars are read whether written as simple values (PyTorch's ``SummaryWriter``, tensorboardX) or as
scalar tensors (TF2's ``tf.summary.scalar``, JAX / Flax writers). A step logged more than once (a run resumed from a checkpoint appends a new event file to its
directory and logs the steps after the checkpoint again) keeps its later value, said in the notes.
"""

from __future__ import annotations

import importlib.util
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


class _Scalars:
    """A directory's scalar series by tag: TensorBoard's simple values (PyTorch's SummaryWriter,
    tensorboardX, TF1) and scalar tensors (TF2's ``tf.summary.scalar``, and the JAX / Flax writers
    built on it), each ``(wall_time, step, value)`` in file order, read when asked for."""

    def __init__(self, directory: Path) -> None:
        from tensorboard.backend.event_processing import event_accumulator as ea

        self.acc = ea.EventAccumulator(str(directory), size_guidance={ea.SCALARS: 0, ea.TENSORS: 0})
        self.acc.Reload()
        tags = self.acc.Tags()
        self.simple = set(tags.get("scalars", []))
        self.tensors = {t for t in tags.get("tensors", [])
                        if self.acc.SummaryMetadata(t).plugin_data.plugin_name == "scalars"}
        self.tags = sorted(self.simple | self.tensors)

    def series(self, tag: str) -> list[tuple[float, int, float]]:
        if tag in self.simple:
            return [(e.wall_time, e.step, e.value) for e in self.acc.Scalars(tag)]
        from tensorboard.util import tensor_util

        return [(e.wall_time, e.step, float(tensor_util.make_ndarray(e.tensor_proto).item()))
                for e in self.acc.Tensors(tag)]


def read_tensorboard(path, x: str, y: str, *, y_scale: float = 1.0, bounded: bool = True) -> list[Curve]:
    """``x`` may be ``step``, ``wall_time`` (hours since the first event) or another scalar tag
    (joined on step, e.g. a logged compute counter)."""
    if importlib.util.find_spec("tensorboard") is None:
        raise InputError("reading TensorBoard logs needs the tensorboard package: pip install 'scalerl[tensorboard]'")
    path = Path(path)
    curves, without = [], []
    for d in _event_dirs(path):
        scalars = _Scalars(d)
        if y not in scalars.tags:  # a run that has not logged it (yet): left out, unless none has
            without.append((d, scalars.tags))
            continue
        # A run resumed from a checkpoint writes a new event file in the same directory and logs the
        # steps after the checkpoint again: the later value of a step wins, as in the other readers.
        logged = scalars.series(y)  # in file order: the later file's events come later
        latest = {step: (t, step, v) for t, step, v in logged}
        relogged = len(logged) - len(latest)
        events = [latest[step] for step in sorted(latest)]
        notes = (f"{relogged} step(s) of {y!r} logged again (a resumed run?): the later values kept",) if relogged else ()
        if x == "step":
            xs = [float(step) for _, step, _ in events]
        elif x == "wall_time":
            t0 = min(t for t, _, _ in events)
            xs = [(t - t0) / 3600.0 for t, _, _ in events]
        else:
            if x not in scalars.tags:
                raise unknown_column(d, "x", x, ["step", "wall_time", *scalars.tags])
            by_step = {step: v for _, step, v in scalars.series(x)}
            xs = [float(by_step.get(step, math.nan)) for _, step, _ in events]
        ys = [v * y_scale for _, _, v in events]
        name = d.name if d != path else (path.name or "run")
        curves.append((name, xs, ys, str(d), notes))
    if not curves:
        d, tags = without[0]
        raise unknown_column(d, "y", y, tags)
    left_out = (f"{len(without)} event director{'y' if len(without) == 1 else 'ies'} without {y!r} left out: "
                f"{', '.join(d.name for d, _ in without)}",) if without else ()
    return [Curve.from_arrays(xs, ys, name=name, x_name=x, y_name=y, source=source, bounded=bounded,
                              notes=notes + left_out)
            for name, xs, ys, source, notes in curves]
