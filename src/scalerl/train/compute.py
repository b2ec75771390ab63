"""Compute accounting: the x axis of every forecast.

Logged at every evaluation (docs/paper.md, "Compute accounting"):

* ``gpu_hours`` -- measured accelerator-hours: wall seconds of training work x devices busy
  (on a CPU run, the devices are the CPU processes doing the work: ranks, generator processes);
  each stretch at its own session's count, and the generators' start-up left out;
* ``flops`` -- ~2 N per generated token (and per prompt token prefilled: a group's shared prompt
  once where the generator prefills it once) + 6 N per trained token, N = parameters (the standard
  dense-transformer estimate);
* ``tokens`` -- completion tokens generated (training rollouts; evaluation is not training
  compute and is counted separately as ``eval_tokens``);
* ``samples`` -- completions generated for training (filtered groups included: they cost
  compute even when they do not enter the loss);
* ``step`` -- optimizer steps.

Everything is a plain counter so it round-trips through checkpoints exactly.
"""

from __future__ import annotations

import time
from dataclasses import asdict, dataclass, field


@dataclass
class ComputeMeter:
    params: int
    """N: parameters of the policy."""
    devices: int = 1
    """Devices busy while the clock runs: this session's (a resume may run on another number of ranks or
    generators; the checkpoint's count is not taken back over it)."""
    step: int = 0
    samples: int = 0
    tokens: int = 0
    prompt_tokens: int = 0
    trained_tokens: int = 0
    eval_tokens: int = 0
    seconds: float = 0.0
    """Wall seconds of training work (evaluation excluded), summed over resumed sessions."""
    prior_seconds: float = 0.0
    """Of ``seconds``, those of the sessions before this one (a resume's checkpoint) ..."""
    prior_device_seconds: float = 0.0
    """... and their device-seconds, each session's at its own count: a run resumed on more (or fewer)
    devices counts its new seconds at the new number, the earlier ones as they were."""
    _t0: float | None = field(default=None, repr=False)

    # -- counting ----------------------------------------------------------------------
    def generated(self, samples: int, tokens: int, prompt_tokens: int) -> None:
        self.samples += samples
        self.tokens += tokens
        self.prompt_tokens += prompt_tokens

    def trained(self, tokens: int) -> None:
        self.trained_tokens += tokens

    def stepped(self) -> None:
        self.step += 1

    # -- the clock: only training work counts, not evaluation or checkpointing -----------
    def start(self) -> None:
        if self._t0 is None:
            self._t0 = time.perf_counter()

    def pause(self) -> None:
        if self._t0 is not None:
            self.seconds += time.perf_counter() - self._t0
            self._t0 = None

    # -- derived -------------------------------------------------------------------------
    @property
    def flops(self) -> float:
        return 2.0 * self.params * (self.tokens + self.prompt_tokens) + 6.0 * self.params * self.trained_tokens

    @property
    def gpu_hours(self) -> float:
        session = self.seconds + self._running() - self.prior_seconds
        return (self.prior_device_seconds + session * self.devices) / 3600.0

    def _running(self) -> float:
        return (time.perf_counter() - self._t0) if self._t0 is not None else 0.0

    def row(self) -> dict[str, float]:
        """The compute columns of a run-log row."""
        return {
            "step": self.step,
            "gpu_hours": self.gpu_hours,
            "flops": self.flops,
            "tokens": self.tokens,
            "samples": self.samples,
            "trained_tokens": self.trained_tokens,
            "eval_tokens": self.eval_tokens,
        }

    def state_dict(self) -> dict:
        state = {k: v for k, v in asdict(self).items() if not k.startswith("_")}
        state["seconds"] = self.seconds + self._running()  # the running stretch included
        return state

    def load_state_dict(self, state: dict) -> None:
        """The counters of a checkpoint, whose sessions become this one's prior ones; ``devices`` stays this
        session's. (A checkpoint without ``prior_seconds``: all its seconds at its own device count.)"""
        state = dict(state)
        saved_devices = state.pop("devices", self.devices)
        seconds, prior = float(state.get("seconds", 0.0)), float(state.get("prior_seconds", 0.0))
        state["prior_device_seconds"] = float(state.get("prior_device_seconds", 0.0)) + (seconds - prior) * saved_devices
        state["prior_seconds"] = seconds
        for k, v in state.items():
            setattr(self, k, v)
