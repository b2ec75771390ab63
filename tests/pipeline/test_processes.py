"""Generator processes: weights pushed through shared memory land mid-sequence, the per-token versions
record the switch, and the tokens after it really come from the new weights."""

from __future__ import annotations

import math
import threading
import time

import pytest
import torch

from scalerl.generate.base import SamplingParams
from scalerl.pipeline.processes import ProcessPool
from scalerl.pipeline.work import RoundRequest, WorkerSpec
from scalerl.rl.recipe import RecipeConfig
from scalerl.tasks.arithmetic import ArithmeticTask

pytestmark = pytest.mark.slow


@pytest.fixture()
def models(char_tokenizer):
    """Two weight sets of one architecture: 'uniform' (final norm zeroed: every logit 0, so every
    sampled token's log-prob is exactly -log V) and 'peaked' (a random model with a sharpened head)."""
    from scalerl.models.tiny import TinyArchitecture, build_tiny_model

    arch = TinyArchitecture(hidden_size=32, intermediate_size=64, num_hidden_layers=1, num_attention_heads=2,
                            num_key_value_heads=2)
    random_model = build_tiny_model(char_tokenizer, arch, seed=0)
    with torch.no_grad():
        random_model.lm_head.weight.mul_(20.0)
    uniform = build_tiny_model(char_tokenizer, arch, seed=0)
    with torch.no_grad():
        uniform.model.norm.weight.zero_()
    return uniform, random_model


def worker_spec(model, tokenizer, *, max_new_tokens: int) -> WorkerSpec:
    """A generator process's spec for the arithmetic task, sequences cut at ``max_new_tokens``."""
    recipe = RecipeConfig()
    recipe.length.mode = "truncate"
    recipe.length.max_new_tokens = max_new_tokens
    return WorkerSpec(model_config=model.config, tokenizer=tokenizer, dtype="float32", fp32_lm_head=False,
                      recipe=recipe, task_name="arithmetic", task_settings={}, task_reward=None, task_reward_timeout=5,
                      seed=0)


def test_weights_pushed_mid_sequence_show_in_versions_and_are_used(char_tokenizer, models):
    uniform, random_model = models
    spec = worker_spec(uniform, char_tokenizer, max_new_tokens=300)
    pool = ProcessPool(spec, uniform, version=0, size=1)
    results, errors = [], []
    done = threading.Event()
    pool.start(lambda r: (results.append(r), done.set()), lambda e: (errors.append(e), done.set()))
    try:
        problems = ArithmeticTask().train_problems()[:8]
        pool.submit(RoundRequest(0, 0, problems, SamplingParams(max_new_tokens=300, temperature=1.0, seed=1), 0))
        # Alternate the two weight sets (odd versions: random, even: uniform) until the request is done.
        version = 0
        while not done.wait(0.05):
            version += 1
            pool.push_weights(random_model if version % 2 else uniform, version)
            assert version < 2000, "the generator process never answered"
    finally:
        pool.close()
    assert not errors, errors
    log_v = math.log(uniform.config.vocab_size)
    switched, deviation = 0, []
    for group in results[0].groups:
        for c in group.completions:
            assert c.versions == sorted(c.versions)  # versions only move forward
            switched += len(set(c.versions)) > 1
            for v, lp in zip(c.versions, c.logprobs):
                if v % 2 == 0:  # uniform weights produced it
                    assert lp == pytest.approx(-log_v, abs=1e-5)
                else:  # the peaked weights: never the uniform value
                    assert abs(lp + log_v) > 1e-6
                    deviation.append(abs(lp + log_v))
    assert sum(deviation) / len(deviation) > 0.1
    assert switched > 0  # some sequences changed weights mid-way, with their KV cache


def test_a_process_decodes_run_decode_rows_at_a_time(char_tokenizer, models):
    """``run.decode_rows`` reaches a generator process's hf engine: its seeded batch is the one an
    in-process worker cutting 3 rows at a time samples, not the one it samples whole."""
    from dataclasses import replace

    from scalerl.pipeline.work import build_worker

    _, random_model = models
    recipe = RecipeConfig()
    recipe.length.mode = "truncate"
    recipe.length.max_new_tokens = 12
    spec = WorkerSpec(model_config=random_model.config, tokenizer=char_tokenizer, dtype="float32",
                      fp32_lm_head=False, recipe=recipe, task_name="arithmetic", task_settings={}, task_reward=None,
                      task_reward_timeout=5, seed=0, decode_rows=3)
    request = RoundRequest(0, 0, ArithmeticTask().train_problems()[:4],
                           SamplingParams(max_new_tokens=12, temperature=1.0, seed=7), 0)
    pool = ProcessPool(spec, random_model, version=0, size=1)
    results, errors = [], []
    done = threading.Event()
    pool.start(lambda r: (results.append(r), done.set()), lambda e: (errors.append(e), done.set()))
    try:
        pool.submit(request)
        assert done.wait(120), "the generator process never answered"
    finally:
        pool.close()
    assert not errors, errors

    def tokens(result):
        return [c.token_ids for g in result.groups for c in g.completions]

    def in_process(rows):
        worker = build_worker(replace(spec, decode_rows=rows), random_model.state_dict(), 0, 0)
        assert worker.generator.max_rows == rows
        return tokens(worker.run(request))

    assert tokens(results[0]) == in_process(3) != in_process(None)


def test_a_killed_generator_process_is_one_line_that_says_how_to_resume():
    """kill -9 of a generator process: the trainer stopped at once (no hang) but with a traceback
    ending in 'exited unexpectedly (exit code -9); see its output above' (there was none)."""
    from scalerl.errors import ScaleRLError
    from scalerl.pipeline.processes import GeneratorExited, exited_message
    from scalerl.pipeline.scheduler import PipelineError

    killed = exited_message(1, -9)
    assert "generator process 1" in killed and "SIGKILL" in killed and "--resume" in killed
    assert "output above" in exited_message(0, 1)
    assert issubclass(GeneratorExited, ScaleRLError) and issubclass(GeneratorExited, PipelineError)


def test_a_generator_process_outlives_a_sigterm_to_the_process_group_and_is_killed_on_close(char_tokenizer, models):
    """SIGTERM to the whole process group (``kill -- -PGID``, SLURM, Kubernetes) killed the generator
    processes with the trainer, and "generator process N exited unexpectedly (SIGTERM)" could win the
    race against the trainer's own clean stop. A generator process ignores it (and Ctrl-C); the
    trainer stops it when it closes the pool, at once, even mid-request."""
    import os
    import signal
    import time

    uniform, _ = models
    spec = worker_spec(uniform, char_tokenizer, max_new_tokens=12)
    pool = ProcessPool(spec, uniform, version=0, size=1)
    errors = []
    pool.start(lambda r: None, errors.append)
    try:
        deadline = time.monotonic() + 120
        while not pool.ready and time.monotonic() < deadline:
            time.sleep(0.1)
        assert pool.ready, "the generator process never started"
        (proc,) = pool._procs
        os.kill(proc.pid, signal.SIGTERM)
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(1.5)  # the results reader looks for dead processes every 0.5 s
        assert proc.is_alive() and not errors, (proc.exitcode, errors)
    finally:
        t0 = time.monotonic()
        pool.close()
    assert not proc.is_alive() and time.monotonic() - t0 < 10


SPIN = '''
import re
from pathlib import Path

def spin(ready):
    from scalerl.pipeline.processes import _exit_with_parent

    _exit_with_parent()
    Path(ready).write_text("ready")
    # Catastrophic backtracking: 2**40 steps in the C regex engine, which never releases the GIL.
    re.match(r"(a+)+$", "a" * 40 + "b")
'''

PARENT = '''
import multiprocessing, sys, time
from spin import spin

if __name__ == "__main__":
    child = multiprocessing.get_context("spawn").Process(target=spin, args=(sys.argv[1],), daemon=True)
    child.start()
    print(child.pid, flush=True)
    time.sleep(120)
'''


def _gone(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] in ("Z", "X")
    except FileNotFoundError:
        return True


@pytest.mark.skipif(not __import__("sys").platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_generator_process_holding_the_gil_dies_with_its_trainer_killed_with_sigkill(tmp_path):
    """A generator process watched its trainer from a Python thread, which cannot run while the
    process's main thread is stuck in C code that holds the GIL: after a ``kill -9`` of the trainer
    it stayed behind. The kernel kills it now (parent_death.die_with_parent)."""
    import os
    import signal
    import subprocess
    import sys
    import time

    (tmp_path / "spin.py").write_text(SPIN)
    (tmp_path / "parent.py").write_text(PARENT)
    ready = tmp_path / "ready"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    parent = subprocess.Popen([sys.executable, str(tmp_path / "parent.py"), str(ready)], stdout=subprocess.PIPE,
                              text=True, env=env)
    child = int(parent.stdout.readline())
    try:
        deadline = time.monotonic() + 60
        while not ready.exists() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert ready.exists(), "the child never started"
        time.sleep(0.5)  # in the regex
        parent.kill()
        parent.wait()
        deadline = time.monotonic() + 10
        while not _gone(child) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _gone(child), "the generator process outlived its trainer"
    finally:
        parent.kill()
        try:
            os.kill(child, signal.SIGKILL)
        except OSError:
            pass


class _FailsOnPickle:
    """A spec value that pickles ``good`` times (as a plain dict) and then raises ``error``: each
    generator process pickles its spec when it starts (``spawn``), so this fails the start of the
    process after the first ``good`` -- as running out of memory or file descriptors would, or
    Ctrl-C (KeyboardInterrupt) pressed while the pool starts its processes."""

    def __init__(self, error: BaseException, good: int = 1) -> None:
        self.error = error
        self.left = good

    def __reduce__(self):
        if self.left == 0:
            raise self.error
        self.left -= 1
        return dict, ()


def _generator_processes() -> list:
    import multiprocessing

    return [p for p in multiprocessing.active_children() if p.name.startswith("scalerl-generator-")]


@pytest.mark.parametrize("error", [OSError("no more processes"), KeyboardInterrupt()], ids=type)
def test_a_pool_whose_constructor_fails_leaves_no_generator_process_running(char_tokenizer, models, error):
    """A process that failed to start (or a Ctrl-C) in ProcessPool's constructor left the processes
    it had started running -- with nothing to close them: the trainer never got the pool, and the
    pool's atexit guard kept it alive until the interpreter exited (a notebook's next run found them)."""
    from dataclasses import replace

    uniform, _ = models
    spec = worker_spec(uniform, char_tokenizer, max_new_tokens=12)
    # The hf engine ignores generator_options: the value is only there to be pickled.
    spec = replace(spec, generator_options={"fails_on_pickle": _FailsOnPickle(error)})
    assert not _generator_processes()
    try:
        with pytest.raises(type(error)) as caught:
            ProcessPool(spec, uniform, version=0, size=3)
        assert caught.value is error  # the constructor's own error, not one from its clean-up
        assert not _generator_processes()
    finally:  # the old code's leftovers: not into the next test
        for p in _generator_processes():
            p.kill()
            p.join(5)


# --------------------------------------------------------------------------------------------- wait_ready


def _wait_ready_with_failed_builder(size_of_error: int, seconds: float) -> tuple[bool, list]:
    """A one-process ProcessPool whose process fails while it builds its worker (an unknown task whose name makes the
    error's report ``size_of_error`` characters long); ``(wait_ready returned within seconds, the pool's errors)``."""
    spec = WorkerSpec(model_config=None, tokenizer=None, dtype="float32", fp32_lm_head=False, recipe=RecipeConfig(),
                      task_name="x" * size_of_error, task_settings={}, task_reward=None, task_reward_timeout=1.0,
                      seed=0)
    pool = ProcessPool(spec, torch.nn.Linear(2, 2), 0, 1)
    errors: list = []
    try:
        waiter = threading.Thread(target=pool.wait_ready, daemon=True)
        waiter.start()
        waiter.join(seconds)
        returned = not waiter.is_alive()
        pool.start(lambda result: None, errors.append)  # (the reader drains the queue: the process can exit)
        for _ in range(40):
            if errors:
                break
            time.sleep(0.1)
    finally:
        pool._kill()  # (close's grace for a process finishing a request: none has one)
        pool.close()
    return returned, errors


@pytest.mark.slow
def test_wait_ready_returns_when_a_generator_process_fails_with_a_long_error():
    returned, errors = _wait_ready_with_failed_builder(200_000, seconds=10)
    assert errors and "unknown task" in str(errors[0])  # (the premise: the error is there, once the reader runs)
    assert returned, "wait_ready still waiting 10 s after the generator process failed"


def test_a_generator_process_user_facing_error_reaches_the_trainer_as_itself():
    """A ScaleRLError in a generator process (a reward function its own check found hung, a device the machine
    lacks) reached the trainer as 'generator process N failed:' and the process's traceback (review dd); a bug still
    brings its traceback."""
    import queue
    import threading

    from scalerl.errors import InputError
    from scalerl.models.devices import DeviceUnavailable
    from scalerl.pipeline import processes

    kind, _, exc = processes._failure(1, InputError("the reward function hangs"))
    assert kind == "said" and isinstance(exc, InputError) and str(exc) == "the reward function hangs"
    kind, _, exc = processes._failure(1, DeviceUnavailable("backend.generator_device", "cuda: none here", "cpu"))
    assert kind == "said" and type(exc) is DeviceUnavailable and str(exc) == "cuda: none here; use cpu"
    try:
        raise ValueError("a bug")
    except ValueError as bug:
        kind, _, text = processes._failure(1, bug)
    assert kind == "error" and "Traceback" in text and "ValueError: a bug" in text

    pool = processes.ProcessPool.__new__(processes.ProcessPool)  # the reader's books only: no process
    pool._stop, pool._results, pool._procs, pool._error, pool.ready = threading.Event(), queue.Queue(), [], None, 0
    said = InputError("the reward function hangs")
    pool._results.put(("said", 0, said))
    failed = []
    pool._read(lambda result: None, failed.append)
    assert failed == [said] and pool._error is said
