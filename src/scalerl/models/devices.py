"""Torch devices a setting names (``run.device``, ``backend.generator_device``), checked against the machine that
will use them: a name torch does not know, or a device the machine lacks, is one line before any weights are
loaded -- in the trainer's process, and in each generator process or Ray actor on its own machine."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from scalerl.errors import ConfigError

if TYPE_CHECKING:  # (imported where it is used: run_directory and the commands read this module without torch)
    import torch


class DeviceUnavailable(ConfigError):
    """A device setting names a device this machine lacks: ``what`` says which and why, ``fallback`` what a new
    run may set instead (a resume may not: :meth:`on_resume`), ``instead`` the device a new run from the saved
    config would name (review df: a GPU run's was always the CPU)."""

    def __init__(self, setting: str, what: str, fallback: str, instead: str = "cpu") -> None:
        super().__init__(f"{what}; use {fallback}")
        self.setting, self.what, self.fallback, self.instead = setting, what, fallback, instead

    def on_resume(self, output: Path) -> str:
        """The message for a resume, which keeps the saved run's devices (review db: "use --set run.device=cpu"
        was then refused by --resume as a flag that differs from the saved run)."""
        return (f"{self.what} -- the saved run's {self.setting}, which a resume keeps: resume it on a machine that "
                f"has that device, or start a new run from its config on another: scalerl train --config "
                f"{output / 'config.yaml'} --set {self.setting}={self.instead} --output NEW_DIR")


def run_device(name: str, setting: str = "run.device", *, auto: bool = True, here: bool = True) -> torch.device:
    """``run.device`` (or the ``setting`` named) as a torch device; :class:`ConfigError` for a name torch does not
    know or (``here``) a device this machine does not have (before any weights are loaded onto it). ``auto``:
    whether the setting takes ``auto`` (the advice names only what it takes)."""
    import torch

    names = "auto, cpu, cuda or cuda:N" if auto else "cpu, cuda or cuda:N"
    fallback = f"--set {setting}=cpu" + (" or auto" if auto else "")
    if name == "auto" and auto:
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        device = torch.device(name)
    except (RuntimeError, ValueError):
        raise ConfigError(f"{setting}: unknown device {name!r}; use {names}") from None
    if device.type not in ("cpu", "cuda", "mps"):
        raise ConfigError(f"{setting}={name}: unsupported device type; use {names}")
    if not here:  # (a device of another machine: its name is all this one can check)
        return device
    if device.type == "cuda":
        if not torch.cuda.is_available():
            why = "this torch build has no CUDA" if torch.version.cuda is None else "no GPU is visible"
            raise DeviceUnavailable(setting, f"{setting}={name}: CUDA is not available ({why})", fallback)
        if device.index is not None and device.index >= torch.cuda.device_count():
            raise DeviceUnavailable(setting, f"{setting}={name}: only {torch.cuda.device_count()} GPU(s) are visible",
                                    f"--set {setting}=cuda:0" + (" or auto" if auto else ""), instead="cuda:0")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise DeviceUnavailable(setting, f"{setting}={name}: MPS is not available", fallback)
    return device
