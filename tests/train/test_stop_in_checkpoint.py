"""A stop (SIGTERM, Ctrl-C) that lands while a checkpoint is written waits for it: the checkpoint then
exists, and the trainer's "interrupted ..." line must say so."""

import os
import signal
from types import SimpleNamespace

import pytest

import scalerl.train.trainer as trainer_module
from scalerl.stop_signals import raise_terminated
from scalerl.train.checkpoint import latest_checkpoint
from scalerl.train.trainer import Trainer


def test_a_stop_during_the_first_checkpoint_says_it_was_kept(tmp_path, monkeypatch):
    """kill PID while the step-0 checkpoint was written (benchmarks/kill_fuzz.py, a bf16 run): the
    checkpoint was finished and kept, but the trainer noted it only after the deferred stop had
    already been raised, so it said "before its first checkpoint (nothing kept ...); run the same
    command again" -- which then refused the directory as one that "already holds a run"."""
    real_save = trainer_module.save_checkpoint

    def save_while_stopped(*args, **kwargs):
        os.kill(os.getpid(), signal.SIGTERM)  # `kill PID` mid-write: held until the write is done
        return real_save(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "save_checkpoint", save_while_stopped)
    before = signal.signal(signal.SIGTERM, raise_terminated)  # (the command line's handler)
    try:
        trainer = Trainer.__new__(Trainer)  # only what _checkpoint and the stop's message read
        trainer.output, trainer.step, trainer.group, trainer.resume = tmp_path, 0, None, False
        trainer.checkpoint_step = None
        trainer.cfg = SimpleNamespace(run=SimpleNamespace(keep_checkpoints=2))
        trainer._state = lambda: {"step": 0}
        with pytest.raises(KeyboardInterrupt):
            trainer._checkpoint()
    finally:
        signal.signal(signal.SIGTERM, before)
    assert latest_checkpoint(tmp_path / "checkpoints") is not None  # the write was finished
    message = trainer._interrupted_message()
    assert message == f"interrupted at step 0, last checkpoint at step 0; resume with: scalerl train --output {tmp_path} --resume"
