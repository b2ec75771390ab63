import os
import signal
import time

import pytest


@pytest.fixture(scope="session")
def study_cache(scalerl_cache):
    """The tiny model cache for the study's end-to-end tests: the session's (tests/conftest.py),
    so the ~20 s warm start happens once per session, not once per test directory."""
    from scalerl.models.tiny import TinySpec, tiny_model_dir

    tiny_model_dir(TinySpec())
    return str(scalerl_cache)


def micro_args(output, *extra):
    """A micro-study: the real tiny model, 4 steps per run (the fewest evaluations a fit takes),
    small batches and evaluations."""
    return [
        "study", "--output", str(output), "--steps", "4", "--eval-every", "1", "--no-progress", "--bootstrap", "50",
        "--set", "batch.prompts_per_step=4",
        "--set", "batch.generations_per_prompt=4", "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2",
        "--set", "forecast.enabled=false", *extra,
    ]


def kill_when_logged(proc, log, shows, what: str, timeout: float = 300) -> None:
    """SIGKILL the study process ``proc`` once a line of the run log ``log`` ``shows`` (a predicate on the
    line); the test fails if the study ends first or ``what`` never shows within ``timeout`` seconds."""
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"the study ended before it could be killed (exit {proc.returncode})")
        if log.exists() and any(shows(line) for line in log.read_text().splitlines()):
            break
        time.sleep(0.02)
    else:
        pytest.fail(f"timed out waiting for {what}")
    proc.send_signal(signal.SIGKILL)
    proc.wait()


@pytest.fixture
def time_zone():
    """Set the process's time zone (TZ) for a test; restored after it."""
    before = os.environ.get("TZ")

    def use(zone: str) -> None:
        os.environ["TZ"] = zone
        time.tzset()

    yield use
    if before is None:
        os.environ.pop("TZ", None)
    else:
        os.environ["TZ"] = before
    time.tzset()
