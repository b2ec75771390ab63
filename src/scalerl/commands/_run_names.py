"""Names that tell apart runs of one name read from several logs, the same in ``backtest`` and ``calibrate``."""

from __future__ import annotations

from dataclasses import replace


def named_apart(read: list) -> list:
    """The curves of ``read`` (``(path, curve)`` pairs, in order), renamed where two share a name: each
    then ``PATH:NAME`` -- the log it came from, so that a run the output lists (skipped, not scored) can
    be found -- and, for one log given again for another metric (a table with a column per run, ``--y
    14b 8b``: each read named after the file), ``PATH:NAME:METRIC``. Runs of distinct names keep them.

    A ``--y`` glob's curve, ``"<run> | <metric>"``, keeps its metric after the label: the path marks the
    run (calibrate holds a run's curves out together by what comes before ``" | "``). calibrate had named
    the second of two JSON-lines logs named after their directory ``jl#2``, which names no file."""
    curves = [c for _, c in read]
    names = [c.name for c in curves]
    if len(set(names)) == len(names):
        return curves
    labels = [f"{path}:{c.name}" for path, c in read]
    if len(set(labels)) < len(labels):
        labels = [f"{label}:{c.y_name}" for label, (_, c) in zip(labels, read)]
    return [replace(c, name=label) for label, (_, c) in zip(labels, read)]
