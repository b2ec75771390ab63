"""Close a run's parts in turn, every one of them, whichever fails.

A run holds several things to close at its end -- reward worker processes, generator threads,
processes or Ray actors, files, metric sinks, torch's process-wide settings. Closed one after
the other in plain code, the first close that raised (a user task's ``close``, a sink whose
server went away, a second Ctrl-C) skipped the rest: generator processes left running, a W&B run
left open for the next run of a study, torch's thread count left changed.
"""

from __future__ import annotations

import sys
from typing import Callable, Iterable


def close_each(steps: Iterable[Callable[[], object]], *, failing: bool) -> None:
    """Call every step, in order, even after one has raised.

    ``failing``: the run is already on its way out with an error of its own. That error is the
    one the user must see, so a step's error is then only a note on stderr. Otherwise the first
    step's error is raised once every step has run (the later ones' are notes): a run that
    trained well but could not close cleanly must not look as if it had."""
    first: BaseException | None = None
    for step in steps:
        try:
            step()
        except BaseException as exc:  # a Ctrl-C during one close: the others still run
            if failing or first is not None:
                print(f"note: closing the run: {_name(step)} failed too: {type(exc).__name__}: {exc}",
                      file=sys.stderr)
            else:
                first = exc
    if first is not None:
        raise first


def _name(step: Callable[[], object]) -> str:
    return getattr(step, "__qualname__", None) or repr(step)
