"""A run directory: what a run writes into it, and the checks before one is started or resumed.

    check_output(Path("runs/a"), resume=False)   # refuses another run's directory, a study's, a user's files
    cfg = resumed_config("runs/a", steps=400)     # the saved config, to go on (and extend)

No torch here: the commands check a directory before they import the trainer.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

from scalerl.config import leaf_fields, load_yaml, read_yaml_mapping, save_yaml
from scalerl.errors import CannotResume, ConfigError, InputError
from scalerl.runlog import COPIED_FROM, FINAL, RESUME, RUNLOG, final_model_step, has_final_model, read_runlog
from scalerl.train.config import CALIBRATION_COPY, TrainConfig
from scalerl.train.loggers import WandbSink
from scalerl.train.preflight import check_writable
from scalerl.train.report_files import REPORT_FILES

#: The resolved config a run saves (``--resume`` reads it back) and its checkpoints' directory.
CONFIG, CHECKPOINTS = "config.yaml", "checkpoints"
#: A few completions per evaluation (prompt, completion, reward), append-only like the run log.
SAMPLES = "samples.jsonl"

#: The file that marks a study directory (scalerl.study.spec.SPEC_FILE; named here because train
#: sits below the study layer and may not import it).
STUDY_SPEC = "study.yaml"


def make_run_directory(output: Path) -> None:
    """Create the run directory (and its parents), or refuse in one line."""
    try:
        output.mkdir(parents=True, exist_ok=True)
    except OSError as exc:  # e.g. a path under /proc, or a read-only file system
        raise InputError(f"--output {output}: cannot create the run directory: {exc.strerror}") from None


class RunDirectoryLock:
    """An exclusive lock on a run directory, held by the process that trains in it: ``flock`` on the
    directory itself (no file of its own in it), which the kernel drops when the process dies, a kill -9
    too. Without it, ``--overwrite`` deleted the directory of a run still training (which went on writing
    into deleted files, its run log lost) and a second ``--resume`` trained beside the first, both ending
    "successfully" with one's rows and the other's checkpoints. Where ``fcntl`` is missing (Windows) it
    holds nothing; where ``flock`` fails (a file system that cannot lock: NFS) it holds nothing and says so
    in a warning."""

    def __init__(self, output: Path, what: str = "a run is training in it now, or writing its report (another process "
                 "holds it); wait for that run to end, or stop it (Ctrl-C), before --resume or --overwrite") -> None:
        self.output = output
        self._fd: int | None = None
        try:
            import fcntl
        except ImportError:
            return
        fd = os.open(output, os.O_RDONLY)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            raise InputError(f"{output}: {what}") from None
        except OSError as exc:  # a file system whose flock fails: the directory is not protected, and said so
            os.close(fd)
            _warn_unlocked(output, exc)
            return
        self._fd = fd

    def release(self) -> None:
        """Let the directory go (again: a no-op)."""
        if self._fd is not None:
            os.close(self._fd)  # (closing the descriptor drops the lock)
            self._fd = None

    def __del__(self) -> None:  # a Trainer built and never run or closed still lets the directory go
        self.release()


class HeldByLauncher:
    """The lock of a run directory that the process which spawned this rank holds (``--nproc N``: the
    launcher locks the directory before its ranks start and lets it go after its report, so no window is
    left between rank 0's exit and the report). Rank 0 treats the directory as its own; nothing to let go."""

    def __init__(self, output: Path) -> None:
        self.output = output

    def release(self) -> None:
        """Nothing: the launcher lets the directory go."""


#: The file systems (device ids) this process warned about (:func:`_warn_unlocked`): ``--overwrite``'s check and the
#: run it starts both try the lock, a study locks its directory and each run's, and one line says it.
_UNLOCKED_WARNED: set[int | str] = set()


def _warn_unlocked(output: Path, exc: OSError) -> None:
    """One line on stderr, once per file system, when ``flock`` fails. It fails where the file system cannot
    lock: NFS emulates flock with byte-range locks, and an exclusive one needs a descriptor opened for
    writing, which a directory never is (flock(2), "NFS details": EBADF); a server without a lock daemon
    gives ENOLCK; some FUSE file systems give EOPNOTSUPP or ENOSYS. Silent, the lock protected nothing
    while the docs said a second command is refused. (An NFS mount with ``local_lock=flock`` or ``nolock``
    succeeds and locks on this machine only: that cannot be told from here.)"""
    try:  # once per file system: a study's directory and each of its runs' are on one (a line each was repeated)
        key = os.stat(output).st_dev
    except OSError:
        key = str(Path(output).resolve())
    if key in _UNLOCKED_WARNED:
        return
    _UNLOCKED_WARNED.add(key)
    why = exc.strerror or type(exc).__name__
    print(f"warning: {output}: this file system cannot lock directories (flock: {why}; e.g. NFS), so run directories "
          "on it are not protected: a second scalerl command on one (--resume, --overwrite) is not refused while this "
          "one runs -- start no other there until this one ends", file=sys.stderr)


def check_output(output: Path, resume: bool) -> None:
    """Refuse to write into a directory that holds another run, unless resuming it, or one that
    cannot be written."""
    check_writable(output)
    if (output / STUDY_SPEC).exists():  # a run's files beside study.yaml would mix into the study's own
        raise InputError(f"{output} holds a study ({STUDY_SPEC}); its runs live in {output / 'runs'} -- "
                         "choose another --output for this run")
    holds_run = (output / RUNLOG).exists() or (output / CHECKPOINTS).exists()
    if resume and not (output / CONFIG).exists():
        raise InputError(f"--resume: {output} holds no run to resume (no {CONFIG}); drop --resume to start one")
    if holds_run and not resume:
        raise InputError(
            f"{output} already holds a run; pass --resume to continue it, --overwrite to delete it and start over, "
            "or choose another --output"
        )
    if not resume:
        refuse_foreign_files(output)


#: What a run writes at its start (one of them: the directory holds a run, perhaps a crashed one).
RUN_FILES = (CONFIG, RUNLOG, SAMPLES, CHECKPOINTS, FINAL)
#: What else a run writes into its directory -- its trackers' files, which a start that failed
#: leaves (W&B not logged in: its run id), and the report -- or scalerl beside it (a shared copy's
#: mark, ``runlog.mark_copied``): never the user's files.
RUN_EXTRAS = (CALIBRATION_COPY, WandbSink.ID_FILE, "wandb", "tensorboard", *REPORT_FILES, COPIED_FROM)


def foreign_files(output: Path) -> str | None:
    """The files in run directory ``output`` that no run writes (the first three named, then a
    count), else None. Hidden files (``.gitkeep``) do not count; nor does what a killed run left of
    its final model's swap (``final.tmp-PID`` / ``final.old-PID``)."""
    if not output.is_dir():
        return None
    mine = (*RUN_FILES, *RUN_EXTRAS)
    foreign = sorted(p.name for p in output.iterdir() if not p.name.startswith(".") and p.name not in mine
                     and not p.name.startswith((f"{FINAL}.tmp-", f"{FINAL}.old-")))
    if not foreign:
        return None
    return ", ".join(foreign[:3]) + (f" and {len(foreign) - 3} more" if len(foreign) > 3 else "")


def refuse_foreign_files(output: Path) -> None:
    """Refuse to start a run in a directory that holds files and no run. The run's files went in
    beside them, the directory then held a run, and ``--overwrite`` -- which deletes a run
    directory whole -- deleted the user's files with it."""
    if not output.is_dir() or any((output / name).exists() for name in RUN_FILES):
        return
    shown = foreign_files(output)
    if shown:
        raise InputError(f"--output {output} holds files that are not a scalerl run ({shown}); a run writes its "
                         "files there and --overwrite deletes a run directory whole: choose a new or empty --output")


def refuse_lost_history(runlog: Path) -> None:
    """With no checkpoint to resume from, a run starts over -- right after a kill before the first
    checkpoint, which is written right after the step-0 evaluation. A logged step past 0 means
    checkpoints existed and were removed (or never kept): starting over would delete that history
    and overwrite ``final/``, so refuse instead."""
    if not runlog.exists() or not runlog.stat().st_size:
        return
    _, rows, _ = read_runlog(runlog)  # a damaged log is an error here too: it holds data
    steps = [r["step"] for r in rows if isinstance(r.get("step"), int)]
    if steps and max(steps) > 0:
        raise CannotResume(
            f"{runlog.parent} has {max(steps)} logged steps but no checkpoint to resume from "
            f"({runlog.parent / CHECKPOINTS} is missing or empty); resuming would start over and overwrite "
            "them", ". Start a new run with another --output (or --overwrite to discard this one)")


def record_steps(output: Path, steps: int) -> None:
    """Save an extended (or shortened) run's new ``run.steps`` in its ``config.yaml``, nothing else of it: a
    resume with ``--steps`` more that was stopped again said "resume with: scalerl train --output DIR
    --resume", which read the old steps back, "trained" nothing and saved final/ at the stop."""
    path = output / CONFIG
    cfg = load_yaml(TrainConfig, path)
    if cfg.run.steps != steps:
        cfg.run.steps = steps
        save_run_config(output, cfg)


def planned_steps(output: str | os.PathLike) -> int | None:
    """The run's end as its ``config.yaml`` says (``run.steps``: an extension, ``--resume --steps N``, saves its
    N there as it starts, :func:`record_steps`), or None where there is no readable one. Read as plain YAML: a
    config an older scalerl saved need not load as today's :class:`TrainConfig`."""
    try:
        steps = read_yaml_mapping(Path(output) / CONFIG).get("run", {}).get("steps")
    except (ConfigError, AttributeError):
        return None
    return steps if isinstance(steps, int) and not isinstance(steps, bool) else None


def save_run_config(output: Path, cfg: TrainConfig) -> None:
    """The run's resolved config, as ``--resume`` and ``--config RUN/config.yaml`` read it back."""
    save_yaml(cfg, output / CONFIG, header=f"scalerl run {output.name} (resolved config)")


#: Fields a resumed run may change: they do not change what is computed.
RESUME_FREE = ("run.steps", "run.threads", "run.nproc", "run.output", "log.progress")


def config_leaves(data: dict) -> dict[str, Any]:
    """A config's mapping (:func:`scalerl.config.to_dict`) by the dotted paths of :class:`TrainConfig`'s leaf fields
    -- a mapping-valued field (``recipe.loss.extra``, ``task.settings``) whole --, those it lacks left out (a
    config.yaml or checkpoint written before a field was added)."""
    out = {}
    for path in leaf_fields(TrainConfig):
        node: Any = data
        for part in path.split("."):
            if not isinstance(node, dict) or part not in node:
                break
            node = node[part]
        else:
            out[path] = node
    return out


#: Fields of ``config.yaml`` a resume takes as edited there, beyond :data:`RESUME_FREE`: where the run writes and
#: logs, and where its Ray cluster is (``backend.ray_address``: the cluster moved) -- not what is computed.
EDITABLE_ON_RESUME = ("backend.ray_address", "run.keep_checkpoints", "run.checkpoint_every", "log.tensorboard",
                      "log.wandb_project", "log.train_every")


def config_changes(checkpointed: dict | None, now: dict) -> list[str]:
    """The fields (``key: checkpoint X, now Y``) in which a resumed run's config differs from the one its checkpoint
    was written under -- apart from :data:`RESUME_FREE`, :data:`EDITABLE_ON_RESUME` and fields the checkpoint lacks
    (one of an older scalerl: a field added since; none at all: nothing to compare). Field by field, a mapping-valued
    field (``recipe.loss.extra``, ``task.settings``) whole: a key added to one or dropped was not compared when the
    mappings were flattened (review ee)."""
    if not checkpointed:
        return []
    old, new = config_leaves(checkpointed), config_leaves(now)
    return [f"{k}: checkpoint {v!r}, now {repr(new[k]) if k in new else '(none)'}" for k, v in sorted(old.items())
            if k not in RESUME_FREE and k not in EDITABLE_ON_RESUME and (k not in new or new[k] != v)]


def resumed_config(output: str | Path, *, steps: int | None = None, progress: bool | None = None,
                   nproc: int | None = None, threads: int | None = None) -> TrainConfig:
    """The saved config of the run in ``output``, to continue it. Only the number of steps (to
    extend it), the progress bar, the CPU threads and the number of trainer processes may change
    (checkpoints hold the full, gathered state, whatever ``run.nproc`` wrote them)."""
    output = Path(output)
    check_output(output, True)
    cfg = load_yaml(TrainConfig, output / CONFIG)
    cfg.run.output = str(output)
    if cfg.forecast.enabled and 0 < cfg.forecast.bootstrap < 10:
        # Refused for a new run since; the saved run's live forecast never fitted with it ("no fit yet: ... at least
        # 10 resamples"): resumed as 0, no intervals, said (refusing lost the run: review bf).
        print(f"note: the saved forecast.bootstrap {cfg.forecast.bootstrap} is read as 0 (no intervals): a bootstrap "
              "needs at least 10 resamples, and the run's live forecast could not fit with it", file=sys.stderr)
        cfg.forecast.bootstrap = 0
    try:
        cfg.validate()
    except ConfigError as exc:
        # A check added since the run was saved (gspo with a ratio mask): --resume may not change the saved
        # settings, so the usual "set X" advice went round in a circle; a new run from the file is the way on.
        raise ConfigError(f"{exc} -- in the saved run's {output / CONFIG}, which this scalerl no longer accepts, so "
                          f"the run cannot be resumed as it is; start a new run from it with that setting changed: "
                          f"scalerl train --config {output / CONFIG} --set KEY=VALUE --output NEW_DIR") from None
    changes = {"run.steps": steps, "log.progress": progress, "run.nproc": nproc, "run.threads": threads}
    changes = {path: value for path, value in changes.items() if value is not None}
    for path, value in changes.items():
        section, leaf = path.split(".")
        setattr(getattr(cfg, section), leaf, value)
    try:
        return cfg.validate()
    except ConfigError as exc:  # (review df: a resume's own --nproc 2 was blamed on the saved config)
        given = ", ".join(f"{path}={value}" for path, value in changes.items())
        raise ConfigError(f"{exc} -- with this resume's {given}; drop what the message names to resume the run as "
                          "saved") from None


def trained_steps(rows: list[dict[str, Any]], last_eval: int) -> int:
    """The last step the run trained (``rows``: its log's rows): a run stopped between evaluations trained past
    its last one. A resume starts again from its checkpoint's step (the abandoned attempt's later rows are not
    this run's)."""
    step = last_eval
    for r in rows:
        if r.get("type") == RESUME and isinstance(r.get("from_step"), int):
            step = r["from_step"]
        elif r.get("type") in ("train", "eval") and isinstance(r.get("step"), (int, float)):
            step = int(r["step"])  # (steps rise within an attempt)
    return max(step, last_eval)


def finished_with_final(has_final: bool, final_step: int | None, trained: int, planned: int | None) -> bool | None:
    """Whether the run reached its end with final/ saved there; None where that cannot be told. final/ of an
    earlier end (an extension stopped part-way, even before its first new step: final/'s step is then the
    log's last) does not make the run finished: the log must reach config.yaml's ``run.steps`` too.

    A final/ saved before it recorded its step (``scalerl_final.json``) was saved by a scalerl that also kept
    the first ``--steps`` in config.yaml through a later ``--resume --steps``: a log that ends at that end is
    finished, but one that ends short of it (a run shortened to where it stopped, or an extension stopped
    part-way) or past it (an extension, finished or stopped) cannot be told apart; nor can anything with no
    config.yaml."""
    if not has_final:
        return False
    if final_step is not None:
        return final_step >= trained and (planned is None or trained >= planned)
    return True if planned is not None and trained == planned else None


def run_finished(output: str | os.PathLike, rows: list[dict[str, Any]]) -> bool | None:
    """:func:`finished_with_final` of the run in ``output`` whose log's rows are ``rows`` (evaluation rows alone
    will do: the last one's step is then taken as the step trained). The run's report says "unfinished ...
    final/ holds the model of step N" by the same rule, and a study resumes such a run (to save final/ again)."""
    evals = [r for r in rows if r.get("type") == "eval" and isinstance(r.get("step"), (int, float))]
    has_final = has_final_model(output)
    return finished_with_final(has_final, final_model_step(output) if has_final else None,
                               trained_steps(rows, int(evals[-1]["step"]) if evals else 0), planned_steps(output))
