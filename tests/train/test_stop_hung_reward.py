"""A run stopped while a generator thread waits on a hung reward call ends at once."""

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from scalerl.cli import main
from scalerl.runlog import read_runlog

from .conftest import small_args

pytestmark = pytest.mark.slow

# Scores as an exact-match reward until the test creates the file HANG; from then on every call
# hangs, after writing its worker's pid to HANG + ".pid" (where the test sees a call hang).
HANGS_ON_REQUEST = '''
import os
import time

HANG = {hang!r}

def reward(completion, answer):
    if os.path.exists(HANG):
        with open(HANG + ".tmp", "w") as f:
            f.write(str(os.getpid()))
        os.replace(HANG + ".tmp", HANG + ".pid")
        time.sleep(3600)
    return completion.rsplit("</think>", 1)[-1].strip() == answer
'''


def _wait_for(condition, timeout):
    deadline = time.monotonic() + timeout
    while not condition() and time.monotonic() < deadline:
        time.sleep(0.05)
    return condition()


def test_a_stop_while_a_generator_waits_on_a_hung_reward_ends_at_once(tiny_dir, tmp_path, capsys):
    """SIGTERM (or Ctrl-C) to a run whose reward function hung in a generator thread's scoring:
    the trainer closed its generator threads first, waiting up to 60 s for each -- and the thread
    was waiting on the hung call (here for its 300 s timeout) -- and only then the reward workers
    that would have let it go. The stop took a minute. Now the reward workers close first: the
    hung call returns, the thread ends, the run stops in seconds with no reward worker left."""
    hang = tmp_path / "hang"
    module = tmp_path / "hangs_on_request.py"
    module.write_text(HANGS_ON_REQUEST.format(hang=str(hang)))
    out = tmp_path / "run"
    pid_file = Path(f"{hang}.pid")
    returned = threading.Event()
    stopped_at = []

    def stop_once_a_generator_hangs():
        # After the first step (the step-0 evaluation, the trainer's own scoring, is done and the
        # next is at step 40), every reward call is a generator thread's: make them hang.
        def trained():
            log = out / "runlog.jsonl"
            return returned.is_set() or (log.exists() and any(r["type"] == "train" for r in read_runlog(log)[1]))

        if not _wait_for(trained, 240) or returned.is_set():
            return
        hang.touch()
        if _wait_for(lambda: returned.is_set() or pid_file.exists(), 60) and not returned.is_set():
            stopped_at.append(time.monotonic())
            os.kill(os.getpid(), signal.SIGTERM)  # `kill PID`: the run stops as on Ctrl-C

    watcher = threading.Thread(target=stop_once_a_generator_hangs, daemon=True)
    watcher.start()
    try:
        code = main(small_args(out, "--steps", "40", "--eval-every", "40", "--no-report", "--reward", f"{module}:reward",
                               "--set", "task.reward_timeout=300", "--set", "backend.workers=threads"))
    finally:
        returned.set()
    took = time.monotonic() - stopped_at[0] if stopped_at else None
    err = capsys.readouterr().err
    assert stopped_at, f"no reward call hung before the run ended (exit {code}): {err}"
    assert code == 143 and "interrupted at step" in err, err
    assert took < 15, f"the stop took {took:.1f} s"
    pid = int(pid_file.read_text())
    with pytest.raises(ProcessLookupError):  # the hung reward worker: killed (and reaped)
        os.kill(pid, 0)
    assert not [t.name for t in threading.enumerate() if t.name.startswith("scalerl-generator")]
