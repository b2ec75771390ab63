"""``scalerl report DIR``: regenerate a run's or a study's report from its logs alone.

    scalerl report runs/demo          # a run directory (runlog.jsonl)
    scalerl report runs/study-loo     # a study directory (study.yaml): fits, classifications, figures
"""

from __future__ import annotations

import shlex
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from scalerl.errors import InputError


def add_arguments(p) -> None:
    p.add_argument("directory", metavar="DIR", help="a run directory (holds runlog.jsonl) or a study directory "
                                                    "(holds study.yaml)")
    p.add_argument("--x", metavar="COL", help="run directories: compute column (default: the run's forecast.x)")
    p.add_argument("--bootstrap", type=int, metavar="N", help="study directories: bootstrap resamples "
                                                               "(default: the study's)")
    p.add_argument("--calibration", metavar="FILE",
                   help="run directories: the bands' factors from a file `scalerl calibrate` wrote (default: the "
                        "run's forecast.calibration, else the shipped ones)")


def run(args) -> int:
    from scalerl.study.spec import SPEC_FILE

    directory = Path(args.directory)
    if (directory / SPEC_FILE).exists():
        return _study(args, directory)
    if not (directory / "runlog.jsonl").exists():
        raise InputError(not_a_report_directory(directory, SPEC_FILE))
    if args.bootstrap is not None:  # it was ignored: the run's report has no bootstrap to set
        raise InputError("--bootstrap is for a study directory (study.yaml); drop it for a run directory")
    from scalerl.train.report import summary_lines, write_run_report

    with report_files(directory):
        rep = write_run_report(directory, x=args.x, calibration=args.calibration)
    for k, v in summary_lines(rep):
        print(f"{k}: {v}")
    print("wrote: " + ", ".join(str(p) for p in rep.files))
    return 0


def not_a_report_directory(path: Path, spec_file: str) -> str:
    """What is wrong with ``path`` as ``scalerl report``'s DIR, and what to give instead."""
    if not path.exists():
        return f"{path} does not exist; give a run directory (holds runlog.jsonl) or a study directory ({spec_file})"
    if path.is_file() and path.name in ("runlog.jsonl", spec_file):  # the file, not its directory
        return f"{path} is a file; give the directory that holds it: scalerl report {shlex.quote(str(path.parent))}"
    run = next((d for d in path.resolve().parents if (d / "runlog.jsonl").is_file()), None)
    if run is not None:  # a checkpoint, final/ or another folder inside a run
        return f"{path} is inside the run directory {run}: scalerl report {shlex.quote(str(run))}"
    return f"{path}: neither a run directory (runlog.jsonl) nor a study directory ({spec_file})"


def _study(args, directory: Path) -> int:
    from scalerl.study.report import print_summary, write_study_report

    if args.x:
        raise InputError("--x is fixed by the study's spec (its x field); drop --x for a study directory")
    if args.calibration:
        raise InputError("--calibration is for a run directory; a study takes it in its spec "
                         "(calibration: FILE, or scalerl study --calibration FILE)")
    from scalerl.study.spec import MIN_BOOTSTRAP

    # As the spec's own field: -1 gave a traceback, 3 left every variant "not fitted", 0 was ignored.
    if args.bootstrap is not None and args.bootstrap < MIN_BOOTSTRAP:
        raise InputError(f"--bootstrap must be >= {MIN_BOOTSTRAP}, got {args.bootstrap}; "
                         "drop it to use the study's own (its bootstrap field)")
    with report_files(directory):
        rep = write_study_report(directory, n_boot=args.bootstrap)
    print_summary(rep)
    return 0


@contextmanager
def report_files(directory: Path) -> Iterator[None]:
    """An OS error while a report reads the logs or writes its files (a read-only directory, a
    directory where report.md should be, a full disk) as one line that says which file, not a traceback."""
    try:
        yield
    except OSError as exc:
        where = exc.filename or directory
        raise InputError(f"{where}: {exc.strerror or exc} -- the report reads the run logs and writes its files "
                         f"into {directory}; fix the permissions or move what is in the way, then run "
                         f"scalerl report {shlex.quote(str(directory))}") from None
