"""Metric sinks besides the run log: TensorBoard and Weights & Biases, when asked for.

Each sink takes flat ``{name: number}`` rows with a step; non-numeric values are skipped.
"""

from __future__ import annotations

import numbers
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from scalerl.atomic_files import write_text_atomically
from scalerl.errors import ConfigError

if TYPE_CHECKING:  # train.config imports no loggers; only the annotation needs it
    from scalerl.train.config import LogConfig


class Sink(Protocol):
    def log(self, row: dict[str, Any], step: int) -> None: ...

    def close(self, ok: bool = True) -> None:
        """Flush and close; ``ok`` is False when the run failed or was stopped."""
        ...


def _numeric(row: dict[str, Any]) -> dict[str, float]:
    return {k: float(v) for k, v in row.items() if isinstance(v, numbers.Number) and not isinstance(v, bool)}


class TensorBoardSink:
    def __init__(self, logdir: Path) -> None:
        try:
            from torch.utils.tensorboard import SummaryWriter
        except ImportError:
            raise ConfigError("log.tensorboard needs the tensorboard package: pip install 'scalerl[tensorboard]'") from None
        self.writer = SummaryWriter(str(logdir))

    def log(self, row: dict[str, Any], step: int) -> None:
        for k, v in _numeric(row).items():
            self.writer.add_scalar(k, v, step)
        self.writer.flush()

    def close(self, ok: bool = True) -> None:
        self.writer.close()


class WandbSink:
    """A W&B run per scalerl run: ``--resume`` continues the same W&B run (its id is kept in the run
    directory, ``wandb_run_id``), so a killed and resumed run is one curve in W&B, not two."""

    ID_FILE = "wandb_run_id"

    def __init__(self, project: str, name: str, config: dict[str, Any], directory: Path, resume: bool) -> None:
        try:
            import wandb
        except ImportError:
            raise ConfigError("log.wandb_project needs the wandb package: pip install 'scalerl[wandb]'") from None
        id_file = directory / self.ID_FILE
        run_id = id_file.read_text().strip() if resume and id_file.is_file() else ""
        if not run_id:
            run_id = uuid.uuid4().hex[:8]  # W&B's id alphabet: lower-case letters and digits
            write_text_atomically(id_file, run_id + "\n")  # a cut id would resume into a stranger's run
        # create_new: a run of its own even where the process has another W&B run open (a user's
        # script or notebook calling scalerl; W&B's default handed that one back, and our metrics
        # went into it). The sink logs through its own run object, never the global wandb.log.
        try:
            self.run = wandb.init(project=project, name=name, config=config, dir=str(directory), id=run_id,
                                  resume="allow", reinit="create_new")
        except wandb.errors.Error as exc:  # not logged in, no network, a bad entity: before any step
            raise ConfigError(f"log.wandb_project: W&B could not start the run: {exc} (or set WANDB_MODE=offline to "
                              "keep the W&B run on this machine; `wandb sync` uploads it later)") from None

    def log(self, row: dict[str, Any], step: int) -> None:
        self.run.log(_numeric(row), step=step)

    def close(self, ok: bool = True) -> None:
        self.run.finish(exit_code=0 if ok else 1)  # W&B shows a run that failed or was stopped as failed


def make_sinks(log_cfg: LogConfig, output: Path, name: str, config: dict[str, Any], resume: bool) -> list[Sink]:
    sinks: list[Sink] = []
    if log_cfg.tensorboard:
        sinks.append(TensorBoardSink(output / "tensorboard"))
    if log_cfg.wandb_project:
        sinks.append(WandbSink(log_cfg.wandb_project, name, config, output, resume))
    return sinks
