"""The ``scalerl`` command.

Subcommands live in their own modules and are imported only when called, so
``scalerl fit`` never imports torch and answers fast. Each module named in
:data:`COMMANDS` exposes ``add_arguments(parser)`` and ``run(args) -> int``.

    scalerl fit examples/data/real_rl_curves.csv --x cum_wall_hours --y val_score --run NAME
    scalerl --help
"""

from __future__ import annotations

import argparse
import importlib
import sys
import warnings

from scalerl.errors import Note, ScaleRLError, interrupt_status
from scalerl.stop_signals import forget_caught_interrupt, sigterm_stops_like_ctrl_c

#: A missing package -> the extra that installs it (``pip install 'scalerl[EXTRA]'``).
EXTRAS: dict[str, str] = {
    "torch": "train", "transformers": "train", "tokenizers": "train", "safetensors": "train",
    "math_verify": "train", "datasets": "train", "pyarrow": "logs",
    "peft": "lora", "ray": "ray", "vllm": "vllm", "tensorboard": "tensorboard", "wandb": "wandb",
}

#: name -> (module implementing it, one-line help). Add a command by adding a line.
COMMANDS: dict[str, tuple[str, str]] = {
    "demo": ("scalerl.commands.demo", "train the tiny model on a CPU with the ScaleRL recipe and report"),
    "train": ("scalerl.commands.train", "train a Hugging Face causal LM with a recipe; writes a run log"),
    "eval": ("scalerl.commands.evaluate", "evaluate a model (mean@k pass rate) on a task"),
    "fit": ("scalerl.commands.fit", "fit a sigmoidal compute-performance curve to a run log"),
    "backtest": ("scalerl.commands.backtest", "fit on a prefix of a run log, score the rest (sigmoid vs power law)"),
    "compare": ("scalerl.commands.compare", "compare runs: ceiling (A) or efficiency (B, C_mid)"),
    "calibrate": ("scalerl.commands.calibrate", "calibrate the forecast's bands on your own runs (for --calibration)"),
    "recipes": ("scalerl.commands.recipes", "list recipe presets and leave-one-out variants; show one as YAML"),
    "study": ("scalerl.commands.study", "run and classify leave-one-out / recipe / sweep studies"),
    "report": ("scalerl.commands.report", "regenerate a run's or a study's report from its logs"),
}


def _top_parser() -> argparse.ArgumentParser:
    lines = "\n".join(f"  {name:<10} {help_}" for name, (_, help_) in COMMANDS.items())
    return argparse.ArgumentParser(
        prog="scalerl",
        description="Predictable RL post-training for LLMs.",
        epilog=f"commands:\n{lines}\n\nRun 'scalerl COMMAND --help' for a command's options.",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )


def _notes_on_one_line(command: str) -> None:
    """:class:`~scalerl.errors.Note` warnings as ``scalerl CMD: warning: ...`` (other warnings as Python shows them)."""
    shown = warnings.showwarning
    shown = getattr(shown, "underneath", shown)  # (wrapped once: main() runs many times in one test process)

    def show(message, category, filename, lineno, file=None, line=None):
        if issubclass(category, Note):
            print(f"scalerl {command}: warning: {message}", file=file or sys.stderr)
        else:
            shown(message, category, filename, lineno, file, line)
    show.underneath = shown
    warnings.showwarning = show


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    top = _top_parser()
    if not argv or argv[0] in ("-h", "--help"):
        top.print_help()
        return 0
    if argv[0] == "--version":
        print(f"scalerl {_version()}")
        return 0
    name, rest = argv[0], argv[1:]
    if name not in COMMANDS:
        known = ", ".join(COMMANDS)
        print(f"scalerl: error: unknown command {name!r}; known commands: {known}", file=sys.stderr)
        return 2
    module_name, help_ = COMMANDS[name]
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if _missing_extra(name, exc):
            return 2
        raise
    # A command may turn off argparse's prefix matching: compare and calibrate have no --run, and
    # took `--run b` for --run-column b (a confusing "no run column 'b'").
    parser = argparse.ArgumentParser(prog=f"scalerl {name}", description=help_,
                                     allow_abbrev=getattr(module, "ALLOW_ABBREV", True))
    module.add_arguments(parser)
    args = parser.parse_args(rest)
    _notes_on_one_line(name)
    try:
        with sigterm_stops_like_ctrl_c():
            return int(module.run(args) or 0)
    except ScaleRLError as exc:
        # One line: a message that spans lines (a wrapped library error) is joined.
        print(f"scalerl {name}: error: {' '.join(str(exc).split())}", file=sys.stderr)
        return 2
    except ModuleNotFoundError as exc:  # commands import their heavy dependencies when run
        if _missing_extra(name, exc):
            return 2
        raise
    except KeyboardInterrupt as exc:  # a run says where it stopped and how to resume
        forget_caught_interrupt()  # else CPython may end the process by SIGINT (-2), not with this status
        print(f"scalerl {name}: {str(exc) or 'interrupted'}", file=sys.stderr)
        return interrupt_status(exc)  # 130 for Ctrl-C, 143 for SIGTERM
    except BrokenPipeError:  # output piped into `head` and closed: not an error of ours
        sys.stderr.close()
        return 0


def _missing_extra(command: str, exc: ModuleNotFoundError) -> bool:
    """Say which extra installs a missing optional dependency (True), or False for anything else."""
    top = (exc.name or "").split(".")[0]
    if not top or top == "scalerl":
        return False  # a bug of ours, not an install problem
    extra = EXTRAS.get(top, "train")
    print(f"scalerl {command}: error: needs the package {top!r}, which is not installed; "
          f"install it with: pip install 'scalerl[{extra}]'", file=sys.stderr)
    return True


def _version() -> str:
    from scalerl import __version__

    return __version__


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
