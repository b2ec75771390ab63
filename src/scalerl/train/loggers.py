"""Metric sinks besides the run log: TensorBoard and Weights & Biases, when asked for.

Each sink takes flat ``{name: number}`` rows with a step; non-numeric values are skipped.

A run killed and resumed from its checkpoint at step S logs steps S+1 on again: :meth:`Sink.resume`
tells each sink so before the first row, so the earlier attempt's rows for those steps do not show
beside the new ones (TensorBoard) or the user is told what the tracker keeps (W&B).
"""

from __future__ import annotations

import numbers
import shlex
import shutil
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, Sequence

from scalerl.atomic_files import write_text_atomically
from scalerl.errors import ConfigError
from scalerl.train.sink_guard import GuardedSink

if TYPE_CHECKING:  # train.config imports no loggers; only the annotation needs it
    from scalerl.train.config import LogConfig


class Sink(Protocol):
    def resume(self, first_step: int, kept: Sequence[dict[str, Any]] = ()) -> str | None:
        """A resumed run's first step (0: no checkpoint, the run starts over): an earlier attempt's
        rows from it on are stale. ``kept``: the rows the run log keeps from before it (each with
        its ``step``), which a sink that lost some -- the killed attempt had not written them yet --
        logs again. Called before the first row; returns a note for the user, if any."""
        ...

    def log(self, row: dict[str, Any], step: int) -> None: ...

    def close(self, ok: bool = True) -> None:
        """Flush and close; ``ok`` is False when the run failed or was stopped."""
        ...

    def discard(self) -> None:
        """Instead of :meth:`close`, for a new run stopped before its first checkpoint (whose own
        files :func:`~scalerl.train.preflight.discard_unstarted_run` removes): close, then remove what
        this attempt wrote, so the same command run again starts beside nothing of it -- never an
        earlier attempt's."""
        ...


def _numeric(row: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if isinstance(v, numbers.Number) and not isinstance(v, bool)}


class TensorBoardSink:
    """Event files in ``logdir``, one per attempt of the run. A resumed attempt's file starts with
    TensorBoard's purge mark (``SummaryWriter(purge_step=...)``): readers -- TensorBoard itself and
    scalerl's :mod:`scalerl.curves.tensorboard_log` -- drop the killed attempt's events from that step
    on, so the curve holds each step once, with the value the resumed attempt logged."""

    def __init__(self, logdir: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ConfigError("log.tensorboard needs the tensorboard package: pip install 'scalerl[tensorboard]'") from None
        self._summary_writer = SummaryWriter
        self.logdir = logdir
        self.purge_step: int | None = None
        self._writer = None  # opened at the first row: the purge step is known only once the run has resumed

    @property
    def writer(self):
        if self._writer is None:
            self._before = set(self.logdir.glob("*")) if self.logdir.is_dir() else set()  # (for discard)
            self._writer = self._summary_writer(str(self.logdir), purge_step=self.purge_step)
        return self._writer

    def resume(self, first_step: int, kept: Sequence[dict[str, Any]] = ()) -> str | None:
        # (every row is flushed as it is logged: a killed attempt lost none that ``kept`` holds)
        if self._writer is not None:
            raise RuntimeError("TensorBoardSink.resume after its first row: the purge mark must open the event file")
        self.purge_step = first_step
        return None

    def log(self, row: dict[str, Any], step: int) -> None:
        for k, v in _numeric(row).items():
            self.writer.add_scalar(k, v, step)
        self.writer.flush()

    def close(self, ok: bool = True) -> None:
        if self._writer is not None:
            self._writer.close()

    def discard(self) -> None:
        """This attempt's event file (one per writer): the step-0 evaluation, logged before the first
        checkpoint, stayed beside the next attempt's, which has no purge mark (a new run) -- step 0 twice."""
        if self._writer is not None:  # (one writer per run directory: what is new in it is this attempt's)
            self._writer.close()
            for path in set(self.logdir.glob("*")) - self._before:
                path.unlink(missing_ok=True)
            _remove_if_empty(self.logdir)


class WandbSink:
    """A W&B run per scalerl run: ``--resume`` continues the same W&B run (its id is kept in the run
    directory, ``wandb_run_id``), so a killed and resumed run is one curve in W&B, not two."""

    ID_FILE = "wandb_run_id"

    def __init__(self, project: str, name: str, config: dict[str, Any], directory: Path, resume: bool,
                 done: bool = False) -> None:
        """``done``: a resume with nothing left to train, started only to log again the rows W&B lacks
        (:func:`wandb_holds`): its note says so, not that the run goes on."""
        try:
            import wandb
        except ImportError:
            raise ConfigError("log.wandb_project needs the wandb package: pip install 'scalerl[wandb]'") from None
        self.directory = directory
        self.done = done
        self.new = not resume  # a new run's id is this attempt's own: so is every W&B directory named by it
        id_file = directory / self.ID_FILE
        run_id = id_file.read_text().strip() if resume and id_file.is_file() else ""
        if not run_id:
            run_id = uuid.uuid4().hex[:8]  # W&B's id alphabet: lower-case letters and digits
            write_text_atomically(id_file, run_id + "\n")  # a cut id would resume into a stranger's run
        self.run_id = run_id
        # create_new: a run of its own even where the process has another W&B run open (a user's
        # script or notebook calling scalerl; W&B's default handed that one back, and our metrics
        # went into it). The sink logs through its own run object, never the global wandb.log.
        try:
            self.run = wandb.init(project=project, name=name, config=config, dir=str(directory), id=run_id,
                                  resume="allow", reinit="create_new")
        except BaseException as exc:
            # A new run whose set-up fails is discarded (Trainer._abandon_setup), and this sink, which
            # never came to be, is not among those it discards: what W&B had written goes here. A stop
            # as W&B started (its few seconds in every such run) left wandb_run_id and an empty
            # wandb/offline-run-*, beside the next attempt's.
            if self.new:
                self.discard()
            if isinstance(exc, wandb.errors.Error):  # not logged in, no network, a bad entity: before any step
                raise ConfigError(f"log.wandb_project: W&B could not start the run: {exc} (or set WANDB_MODE=offline "
                                  "to keep the W&B run on this machine; `wandb sync` uploads it later)") from None
            raise

    def resume(self, first_step: int, kept: Sequence[dict[str, Any]] = ()) -> str | None:
        """W&B cannot drop a resumed run's stale steps here (a run's steps only go forward; its
        ``resume_from`` rewind is a server-side preview, not offline): what W&B keeps is said instead.

        What W&B lacks of ``kept`` is logged again first: W&B writes its run file every 15 s
        (``x_transaction_log_flush_interval``) and sends rows online in batches, so a ``kill -9``
        lost the rows of the attempt's last seconds -- the evaluation and the steps before the
        checkpoint the resume goes on from among them (a short run's whole history: W&B's run then
        held no row at all), which no later attempt logs."""
        last = self._last_held_step()
        missing = [row for row in kept if last < row["step"] < first_step]
        for row in missing:  # (in the run log's order: W&B's steps only go forward)
            self.log(row, row["step"])
        if self.run.offline and self.done and missing:  # (no row of its own to come: the run is done)
            return (f"W&B cannot resume a run offline: the {len(missing)} row(s) of steps {missing[0]['step']}-"
                    f"{missing[-1]['step']} the stopped attempt had not written are logged again, to a W&B run "
                    f"directory of their own beside the earlier attempt's (wandb/offline-run-*-{self.run.id}), which "
                    f"`wandb sync` does not join into one run; `scalerl fit "
                    f"{shlex.quote(str(self.directory / 'wandb'))}` reads them joined")
        if self.run.offline:  # measured with wandb 0.31: not resumed, its steps start over, a directory of its own
            return (f"W&B cannot resume a run offline: this attempt's rows (from step {first_step}) go to a W&B run "
                    f"directory of their own beside the earlier attempt's (wandb/offline-run-*-{self.run.id}), which "
                    f"`wandb sync` does not join into one run; `scalerl fit "
                    f"{shlex.quote(str(self.directory / 'wandb'))}` reads them "
                    f"joined, and the run log and TensorBoard hold each step once"
                    + (f" (the {len(missing)} row(s) of steps {missing[0]['step']}-{missing[-1]['step']} the stopped "
                       "attempt had not written are logged again)" if missing else ""))
        if last >= first_step:
            return (f"W&B's run {self.run.id} has the stopped attempt's rows up to step {last}: W&B drops this "
                    f"attempt's rows for steps {first_step}-{last} (a W&B run's steps only go forward) and keeps "
                    f"the stopped attempt's; the run log and TensorBoard hold this attempt's")
        return None

    def _last_held_step(self) -> int:
        """The last step W&B holds of this run (-1: none). Online, the server says (the run's
        ``starting_step`` is the next); offline, the earlier attempts' run files (``wandb/*run-*-<id>``
        but this attempt's own) are read as ``scalerl fit`` joins them: the latest-started file with
        a row holds the run from its first step on (a later file replaces an earlier one's rows from
        there), so its last step is the run's -- not the highest step of any file (after two kills,
        the first attempt's step 8 outlived in no joined history: steps 7-8 were never logged again)."""
        if not self.run.offline:
            return self.run.starting_step - 1
        return _last_offline_step(self.directory, self.run_id, own=self._run_file().parent)

    def _run_file(self) -> Path:
        """The run file W&B writes for this attempt: its ``settings.sync_file``, not a path derived from
        ``run.dir`` (its files directory, which a user's ``WANDB__FILES_DIR`` moves elsewhere: the sink
        then waited out its whole timeout for a file that never came, and warned untruly)."""
        sync_file = getattr(getattr(self.run, "settings", None), "sync_file", None)
        return Path(sync_file) if sync_file else Path(self.run.dir).parent / f"run-{self.run.id}.wandb"

    def log(self, row: dict[str, Any], step: int) -> None:
        self.run.log(_numeric(row), step=step)

    def close(self, ok: bool = True) -> None:
        """Finish the W&B run, then wait until its run file is on disk to its end (:func:`wait_for_run_file`):
        ``scalerl fit <output>/wandb`` run as training returns reads every row."""
        try:
            self.run.finish(exit_code=0 if ok else 1)  # W&B shows a run that failed or was stopped as failed
        except ConnectionError:
            _tear_down_wandb()
            raise  # (the guard says it: the run log has every row)
        if self.run.disabled:  # (WANDB_MODE=disabled: W&B writes no file)
            return
        if getattr(getattr(self.run, "settings", None), "x_skip_transaction_log", False):  # (online, told to write no run file)
            return
        run_file = self._run_file()
        if not wait_for_run_file(run_file):
            print(f"warning: W&B's run file {run_file} did not hold the run's end {RUN_FILE_WAIT_S:g} s after the "
                  "run finished (W&B's service process writes it): reading it now may miss the last rows; the run "
                  "log has every row (`scalerl fit` reads it)", file=sys.stderr)

    def discard(self) -> None:
        """The run finished (as failed), without W&B's footer -- "wandb sync <dir>", "Find logs at
        <dir>", naming what goes next, above the stop's "nothing kept" --; then this attempt's W&B run directories (``wandb/*run-<date>-<id>``: its id is new, so none is
        an earlier attempt's), W&B's links to them (``latest-run``, ``debug.log``), ``wandb/`` itself
        if nothing else is left in it, and the id file. Not for a resumed run (its id, and the W&B
        directories named by it, are the earlier attempts' too)."""
        if "run" in self.__dict__ and not getattr(self.run, "_is_finished", False):  # (a start that failed has none)
            try:
                self.run._settings.quiet = True  # (W&B's private settings: a later W&B may refuse, and print it)
            except Exception:  # noqa: BLE001
                pass
            self.close(False)
        if not self.new:
            return
        runs = self.directory / "wandb"
        # (W&B appends -1, -2 to an attempt's directory that started in the same second as another's.)
        for run_dir in [*runs.glob(f"*run-*-{self.run_id}"), *runs.glob(f"*run-*-{self.run_id}-[0-9]*")]:
            shutil.rmtree(run_dir, ignore_errors=True)
        if runs.is_dir():
            for link in runs.iterdir():
                if link.is_symlink() and not link.exists():  # (relative links into the runs removed)
                    link.unlink()
            _remove_if_empty(runs)
        id_file = self.directory / self.ID_FILE
        if id_file.is_file() and id_file.read_text().strip() == self.run_id:
            id_file.unlink()


#: How long :meth:`WandbSink.close` waits for W&B's service to write the run file's end: well under a
#: second on a quiet machine, seconds under load; more means the service is stuck (or gone).
RUN_FILE_WAIT_S = 60.0
#: How often it looks (each look reads the file: from a few KiB to a long run's tens of MiB).
RUN_FILE_POLL_S = 0.1


def wait_for_run_file(run_file: Path, timeout: float | None = None) -> bool:
    """Wait until W&B's run file holds its exit record, which W&B writes after every row (False: not
    within ``timeout`` seconds). ``Run.finish()`` returns once W&B's service process has taken the
    exit, but the service writes the file's buffered end (all it got since its last flush, every
    ``x_transaction_log_flush_interval`` = 15 s) only when it closes the run's stream, which
    ``finish()`` asks of it without waiting (wandb 0.31: ``inform_finish`` is published, not
    delivered). Measured on 2 loaded cores: right after ``finish()`` the file held only its 7-byte
    header in 7 of 16 runs; a CI run's read of a resumed run right after training lacked its last
    attempt's evaluation. W&B has no call that waits for it. ``timeout``: :data:`RUN_FILE_WAIT_S` as
    it is when called (a default bound at import kept waiting 60 s where it was set lower, and the
    close's warning then named the lower figure)."""
    from scalerl.curves.wandb_run_log import exit_code

    deadline = time.monotonic() + (RUN_FILE_WAIT_S if timeout is None else timeout)
    while True:
        try:
            if exit_code(run_file) is not None:
                return True
        except FileNotFoundError:  # (not created yet)
            pass
        if time.monotonic() >= deadline:
            return False
        time.sleep(RUN_FILE_POLL_S)


def _tear_down_wandb() -> None:
    """W&B's service process is gone (killed: ``pkill -f wandb-core``, the out-of-memory killer), and
    with it the connection W&B keeps for the whole process: every later run in the process was handed
    the broken one (a study's next run, in-process or in a reused Ray worker, could not start its W&B
    run: MailboxClosedError), and W&B's exit hook printed a ConnectionResetError traceback after the
    run's report. ``wandb.teardown()`` drops the connection and the hook (the next ``wandb.init``
    starts a service of its own); its own error, the dead service's, is the one already said."""
    import wandb

    try:
        wandb.teardown()
    except Exception:  # noqa: BLE001 -- the dead service's (ConnectionResetError): said by the caller
        pass


def _last_offline_step(directory: Path, run_id: str, own: Path | None = None) -> int:
    """The last step the offline W&B run ``run_id`` under ``directory/wandb`` holds, as ``scalerl fit``
    joins its attempts' run files (all but the attempt ``own``, a run directory): the latest-started
    file with a row holds the run from its first step on, so its last step is the run's (-1: none)."""
    from scalerl.curves.wandb_run_log import run_files

    own = own.resolve() if own is not None else None
    earlier = [f for f in run_files(directory / "wandb") if f.name == f"run-{run_id}.wandb" and f.parent.resolve() != own]
    for f in reversed(earlier):  # (in the order the attempts started)
        last = _last_logged_step(f)
        if last >= 0:
            return last
    return -1


def wandb_holds(directory: Path, rows: Sequence[dict[str, Any]]) -> bool:
    """Whether the W&B run of the scalerl run in ``directory`` already holds every one of ``rows`` (each
    with its ``step``): offline, its attempts' run files are read; online only W&B's server knows
    (False: the run is started, and asked). For a resume with nothing left to train, which started a
    W&B attempt only to add an empty offline-run directory and a note of rows to come that never did."""
    if not rows:
        return True
    id_file = directory / WandbSink.ID_FILE
    if not (id_file.is_file() and (directory / "wandb").is_dir()):
        return False
    try:
        from wandb.sdk import wandb_setup  # (W&B's settings as wandb.init resolves them: env, settings files)

        # singleton(): loads the settings without starting W&B's service process, as wandb.setup() does
        offline = wandb_setup.singleton().settings.mode in ("offline", "dryrun")
    except Exception:  # noqa: BLE001 -- a W&B without it: start the run, as before, and let it say
        return False
    return offline and _last_offline_step(directory, id_file.read_text().strip()) >= max(r["step"] for r in rows)


def _last_logged_step(run_file: Path) -> int:
    """:func:`~scalerl.curves.wandb_run_log.last_logged_step`, -1 for a file W&B had not got to
    write its header to (a kill as it started): every kept row is then logged again."""
    from scalerl.curves.wandb_run_log import last_logged_step
    from scalerl.errors import InputError

    try:
        return last_logged_step(run_file)
    except (InputError, OSError):
        return -1


def _remove_if_empty(directory: Path) -> None:
    try:
        directory.rmdir()
    except OSError:  # not empty (an earlier attempt's files), or gone
        pass


def make_sinks(log_cfg: LogConfig, output: Path, name: str, config: dict[str, Any], resume: bool,
               done_rows: Sequence[dict[str, Any]] | None = None) -> list[Sink]:
    """The sinks ``log_cfg`` asks for, each guarded (:mod:`scalerl.train.sink_guard`: one that fails
    mid-run is a warning, not the end of the training). One that cannot start raises here, before any step.
    ``done_rows``: a resume with nothing left to train, and the rows its run log keeps: W&B is started
    only where it may lack some of them (:func:`wandb_holds`), to log those again."""
    sinks: list[Sink] = []
    if log_cfg.tensorboard:
        sinks.append(GuardedSink(TensorBoardSink(output / "tensorboard"), "TensorBoard"))
    if log_cfg.wandb_project and not (done_rows is not None and wandb_holds(output, done_rows)):
        sinks.append(GuardedSink(WandbSink(log_cfg.wandb_project, name, config, output, resume,
                                           done=done_rows is not None), "W&B"))
    return sinks
