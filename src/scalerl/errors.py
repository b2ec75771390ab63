"""Errors that the command line turns into a one-line message and exit status 2 (a stopped run:
130 for Ctrl-C, 143 for SIGTERM)."""


class ScaleRLError(Exception):
    """Base class for user-facing errors: bad input, bad config, impossible request.

    The message must say what is wrong and what to do about it; the CLI prints it
    on one line without a traceback.
    """

    def __reduce__(self):
        # Pickled across processes (a generator process, a Ray actor, the --nproc launcher's ranks): the default
        # calls ``type(self)(*self.args)``, which fails for a subclass whose constructor takes other arguments than
        # its message (UnknownColumn, UnknownKey) and doubles a message the constructor adds to (SplitNotFound).
        # Rebuilt as it was instead: its message and its fields, no constructor called.
        return _rebuilt, (type(self), self.args, self.__dict__)


def _rebuilt(cls: type, args: tuple, fields: dict) -> "ScaleRLError":
    exc = cls.__new__(cls, *args)
    exc.args = args
    exc.__dict__.update(fields)
    return exc


class InputError(ScaleRLError, ValueError):
    """A file, column or value given by the user cannot be used."""


class CannotResume(InputError):
    """A run directory that cannot be resumed and must be trained anew. ``problem`` is what is wrong; the message
    adds ``scalerl train``'s remedy, which a caller that trains runs its own way (a study) replaces with its own
    (a study's run said "--overwrite", which ``scalerl study`` has not)."""

    def __init__(self, problem: str, remedy: str = "") -> None:  # (the --nproc launcher rebuilds it from its message)
        super().__init__(f"{problem}{remedy}")
        self.problem, self.remedy = problem, remedy


class ConfigError(ScaleRLError, ValueError):
    """A configuration value is unknown or inconsistent."""


class NonFiniteError(ScaleRLError, ArithmeticError):
    """The model produced non-finite values (NaN / inf weights or logits): training diverged."""


class Note(UserWarning):
    """A warning meant for the user of the command line, not for the code's author: the CLI prints it as one
    line, ``scalerl CMD: warning: ...``, without the source line Python's warnings show."""


#: The exit status of a command stopped by Ctrl-C (128 + SIGINT), the shell's convention.
INTERRUPTED_STATUS = 130


class Terminated(KeyboardInterrupt):
    """SIGTERM (``kill PID``; what SLURM, Kubernetes and systemd send to stop a job), raised in the
    main thread by the handler the command line installs, so that a run stops as on Ctrl-C. A
    KeyboardInterrupt, so that every ``except KeyboardInterrupt`` that cleans up after Ctrl-C
    cleans up after it too; the command exits 143 (128 + SIGTERM), the shell's convention."""

    status = 143


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C or SIGTERM during a run; the message says where it stopped and how to resume
    (exit status 130 for Ctrl-C, 143 for SIGTERM: ``status``)."""

    def __init__(self, message: str, *, cause: BaseException | None = None) -> None:
        super().__init__(message)
        self.status = interrupt_status(cause) if cause is not None else INTERRUPTED_STATUS


def interrupt_status(exc: BaseException) -> int:
    """The exit status for a run stopped by ``exc`` (a KeyboardInterrupt): 143 after SIGTERM, 130 else."""
    return getattr(exc, "status", INTERRUPTED_STATUS)
