"""Errors that the command line turns into a one-line message and exit status 2."""


class ScaleRLError(Exception):
    """Base class for user-facing errors: bad input, bad config, impossible request.

    The message must say what is wrong and what to do about it; the CLI prints it
    on one line without a traceback.
    """


class InputError(ScaleRLError, ValueError):
    """A file, column or value given by the user cannot be used."""


class ConfigError(ScaleRLError, ValueError):
    """A configuration value is unknown or inconsistent."""


class NonFiniteError(ScaleRLError, ArithmeticError):
    """The model produced non-finite values (NaN / inf weights or logits): training diverged."""


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; the message says where it stopped and how to resume (exit status 130)."""
