import textwrap
import threading
import time

import pytest

from scalerl.errors import InputError
from scalerl.tasks import get_task
from scalerl.tasks.base import Problem
from scalerl.tasks.rewards import RewardWorkers, UserReward

REWARDS = '''
import time

def exact(completion, answer):
    print("user prints go to stderr, not into the protocol")
    return completion.rsplit("</think>", 1)[-1].strip() == answer

def scaled(completion, answer, prompt):
    return 0.5 if prompt.startswith("2") and answer in completion else -0.5

def raises(completion):
    raise RuntimeError("boom")

def own_limit(completion):
    raise TimeoutError("the judge did not answer in 30 s")

def not_a_number(completion):
    return "yes"

def extracted(completion):
    return completion.strip()  # the answer, not a reward: must not pass as the number 4

async def judged(completion, answer):
    import asyncio
    await asyncio.sleep(0)
    return completion.strip() == answer

def hangs(completion):
    time.sleep(60)

def beyond_float32(completion):
    return -1e39 if completion == "-" else 1e39

def numpy_bool(completion, answer):
    import numpy as np
    return np.bool_(completion == answer)

def wrong_signature(x, y):
    return 1

def positional_only(completion, /):
    return 1

def pid_after_a_while(completion):
    import os
    time.sleep(60 if completion == "hang" else 0.3)  # long enough for the batch to spread
    return os.getpid()

def echo(completion):
    return float(completion)

def hangs_but_on_ok(completion):
    if completion != "ok":
        time.sleep(60)
    return 1

class Unprintable(Exception):
    def __str__(self):
        raise RuntimeError("no message")

def raises_unprintable(completion):
    raise Unprintable()

def holds_the_gil(completion):
    import re
    # Catastrophic backtracking: 2**40 steps in the C regex engine, which never releases the GIL.
    return re.match(r"(a+)+$", "a" * 40 + "b") is not None
'''


@pytest.fixture()
def rewards_module(tmp_path, monkeypatch):
    (tmp_path / "my_rewards.py").write_text(textwrap.dedent(REWARDS))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path / "my_rewards.py"


PROBLEM = Problem(id="2+2", prompt="2+2=", answer="4")


def test_module_function_scores_bools_and_numbers(rewards_module):
    with UserReward("my_rewards:exact") as reward:
        assert reward(PROBLEM, "<think>x</think>4") == 1.0
        assert reward(PROBLEM, "<think>x</think>5") == -1.0
        assert reward.stats.as_dict() == {"calls": 2, "errors": 0, "timeouts": 0, "first_error": "", "last_error": ""}
    with UserReward("my_rewards:scaled") as reward:
        assert reward(PROBLEM, "4") == 0.5


def test_file_path_spec(rewards_module):
    with UserReward(f"{rewards_module}:exact") as reward:
        assert reward(PROBLEM, "</think>4") == 1.0


def test_a_failing_call_scores_like_a_wrong_answer_and_is_counted(rewards_module):
    # -1, the task's minimum: a failure must never pay better than a wrong answer (it scored 0
    # once, which rewarded completions that crash the function over wrong ones).
    with UserReward("my_rewards:exact") as reward:
        wrong = reward(PROBLEM, "<think>x</think>5")
    with UserReward("my_rewards:raises") as reward:
        assert reward(PROBLEM, "4") == wrong == -1.0
        assert reward(PROBLEM, "4") == -1.0
        assert reward.stats.errors == 2 and reward.stats.calls == 2
        assert "RuntimeError: boom" in reward.stats.last_error
        assert reward.stats.first_error == "RuntimeError: boom"
    with UserReward("my_rewards:not_a_number") as reward:
        assert reward(PROBLEM, "4") == -1.0
        assert "not a number" in reward.stats.last_error


def test_a_timeout_error_of_the_functions_own_is_counted_as_a_timeout(rewards_module):
    # (a limit of its own ran out -- a judge's request, math-verify's alarm: review cw)
    with UserReward("my_rewards:own_limit") as reward:
        pid = reward._proc.pid
        assert reward(PROBLEM, "4") == -1.0
        assert reward.stats.timeouts == 1 and reward.stats.errors == 0
        assert "the judge did not answer in 30 s" in reward.stats.last_error
        assert reward._proc is not None and reward._proc.pid == pid  # no hung worker to kill


def test_an_exception_whose_message_cannot_be_made_is_a_counted_error_not_a_dead_worker(rewards_module):
    # Its str() raised in the worker's own handler: the worker died on every call (a traceback on
    # stderr, a restart) and the count blamed a dead worker instead of the function's exception.
    with UserReward("my_rewards:raises_unprintable") as reward:
        pid = reward._proc.pid
        assert reward(PROBLEM, "4") == -1.0
        assert reward.stats.errors == 1
        assert reward.stats.last_error == ("Unprintable: <its message could not be made: RuntimeError in its "
                                           "__str__>")
        assert reward._proc is not None and reward._proc.pid == pid  # the same worker goes on


def test_text_is_not_a_reward_even_when_it_reads_as_a_number(rewards_module):
    with UserReward("my_rewards:extracted") as reward:
        assert reward(PROBLEM, "4") == -1.0
        assert "returned str '4', not a number" in reward.stats.last_error


def test_a_numpy_bool_scores_like_a_bool(rewards_module):
    # +1 / -1 as the contract says, not 1.0 / 0.0 (numpy's bool is no bool subclass).
    with UserReward("my_rewards:numpy_bool") as reward:
        assert reward(PROBLEM, "4") == 1.0 and reward(PROBLEM, "5") == -1.0


def test_a_reward_beyond_float32_is_a_failed_call(rewards_module):
    # It would be inf in the trainer's float32 rewards, and every step's loss NaN.
    with UserReward("my_rewards:beyond_float32") as reward:
        assert reward(PROBLEM, "4") == -1.0 and reward(PROBLEM, "-") == -1.0
        assert reward.stats.errors == 2 and reward.stats.calls == 2
        assert "returned 1e+39, outside the float32 range" in reward.stats.first_error
        assert "returned -1e+39" in reward.stats.last_error


def test_an_async_function_is_awaited(rewards_module):
    with UserReward("my_rewards:judged") as reward:
        assert reward(PROBLEM, "4") == 1.0
        assert reward(PROBLEM, "5") == -1.0
        assert reward.stats.errors == 0


def test_hanging_function_is_killed_after_the_timeout_and_counted(rewards_module):
    with UserReward("my_rewards:hangs", timeout=1.0) as reward:
        start = time.monotonic()
        assert reward(PROBLEM, "4") == -1.0
        assert time.monotonic() - start < 5
        assert reward.stats.timeouts == 1
        # The killed worker is restarted: the next call is bounded the same way.
        assert reward(PROBLEM, "4") == -1.0
        assert reward.stats.timeouts == 2 and reward.stats.calls == 2


@pytest.mark.parametrize(
    "spec, message",
    [
        ("my_rewards:wrong_signature", "must take parameters named"),
        ("my_rewards:missing", "has no function 'missing'"),
        ("no_such_module_xyz:f", "cannot import module"),
        ("/no/such/file.py:f", "does not exist"),
        ("just_a_name", "must look like 'module:function'"),
    ],
)
def test_unloadable_function_is_an_input_error(rewards_module, spec, message):
    with pytest.raises(InputError, match=message):
        UserReward(spec)


def test_get_task_with_a_user_reward(rewards_module):
    task = get_task("arithmetic", n_val=4, n_hard=0, reward="my_rewards:exact")
    problem = task.eval_sets()["val"][0]
    assert task.reward(problem, f"<think></think>{problem.answer}") == 1.0
    assert task.reward_stats()["calls"] == 1
    task.user_reward.close()


def test_writes_to_file_descriptor_1_do_not_corrupt_replies(tmp_path, monkeypatch):
    (tmp_path / "noisy.py").write_text("import os\ndef r(completion):\n    os.write(1, b'{\"value\": 99}\\n')\n    return 1\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with UserReward("noisy:r") as reward:
        assert [reward(PROBLEM, "x") for _ in range(3)] == [1.0, 1.0, 1.0]


def test_a_wrong_signature_is_told_the_contract(rewards_module):
    with pytest.raises(InputError) as exc:
        UserReward("my_rewards:wrong_signature")
    message = str(exc.value)
    # The parameter names, what it returns and what counts as a pass, with an example.
    for needle in ("prompt, completion, answer", "by name", "> 0 is a pass", "True +1, False -1",
                   "def reward(completion, answer)"):
        assert needle in message, message


def test_a_positional_only_parameter_is_refused_up_front(rewards_module):
    # It passed the load check, then failed on every call: arguments are passed by name.
    with pytest.raises(InputError, match=r"positional_only\(completion, /\) must take parameters named from .*by name"):
        UserReward("my_rewards:positional_only")


def test_the_documented_example_reward_is_accepted(tmp_path, monkeypatch):
    """The README's and docs/tasks.md's example, taken from the docs, loads and scores."""
    import re
    from pathlib import Path

    docs = (Path(__file__).resolve().parents[1] / "docs" / "tasks.md").read_text()
    code = re.search(r"```python\n# my_rewards.py\n(.*?)```", docs, re.S)[1]
    (tmp_path / "my_rewards.py").write_text(code)
    monkeypatch.syspath_prepend(str(tmp_path))
    with UserReward("my_rewards:exact") as reward:
        assert reward(PROBLEM, "<think>2+2</think> 4") == 1.0
        assert reward(PROBLEM, "<think>2+2</think> 5") == -1.0


def test_reward_workers_score_a_batch_concurrently_in_order(rewards_module):
    """A slow reward (a judge, a sandbox) scored one call at a time held up every step."""
    with RewardWorkers("my_rewards:pid_after_a_while", timeout=30, workers=3) as reward:
        pids = reward.score_many([(PROBLEM, str(i)) for i in range(9)])
        assert len(set(pids)) == 3  # three processes shared the batch
        assert reward.stats.calls == 9 and reward.stats.errors == reward.stats.timeouts == 0
    with RewardWorkers("my_rewards:echo", workers=4) as reward:
        assert reward.score_many([(PROBLEM, str(i)) for i in range(20)]) == [float(i) for i in range(20)]
        assert reward(PROBLEM, "7") == 7.0


def test_a_hung_call_stops_only_its_own_worker(rewards_module):
    with RewardWorkers("my_rewards:pid_after_a_while", timeout=2, workers=2) as reward:
        start = time.monotonic()
        scores = reward.score_many([(PROBLEM, c) for c in ("hang", "a", "b", "c", "d")])
        assert scores[0] == -1.0 and all(s > 1 for s in scores[1:])
        assert time.monotonic() - start < 10
        stats = reward.stats
        assert stats.calls == 5 and stats.timeouts == 1 and "exceeded 2 s" in stats.first_error


def _prompt(i):
    return Problem(id=f"{i}+0", prompt=f"{i}+0=", answer=str(i))


@pytest.mark.parametrize("workers", [1, 3])
def test_a_function_that_times_out_on_every_prompt_is_stopped_there(rewards_module, workers):
    """A hung function was found out by the first evaluation's "every call failed": calls x timeout /
    workers later (800 x 10 s with the tiny model's defaults). Timeouts on HUNG_PROMPTS (4) prompts with
    no call answered in time stop it now, in one line that names the limit to raise -- with several
    workers too, whose calls in flight must not hide that none has answered."""
    from scalerl.tasks.rewards import HUNG_PROMPTS

    pairs = [(_prompt(i), str(j)) for i in range(10) for j in range(2)]  # 10 prompts x 2 completions
    with RewardWorkers("my_rewards:hangs", timeout=0.2, workers=workers, timeout_setting="task.reward_timeout") as r:
        with pytest.raises(InputError, match=r"ran past its time limit \(task.reward_timeout=0.2 s\) on "
                                             rf"{HUNG_PROMPTS} different prompts and has answered no call.*raise --set task.reward_timeout"):
            r.score_many(pairs)
        assert r.stats.timeouts < 14  # stopped near the 4th prompt, not after all 20 calls


def test_a_function_that_has_answered_once_is_not_stopped_for_later_timeouts(rewards_module):
    with RewardWorkers("my_rewards:hangs_but_on_ok", timeout=0.2, timeout_setting="task.reward_timeout") as reward:
        scores = reward.score_many([(_prompt(i), c) for i, c in enumerate(["ok"] + ["x"] * 6)])
    assert scores == [1.0] + [-1.0] * 6  # timed out 6 times, on 6 prompts, scored as wrong answers, not stopped


def test_a_user_function_s_hang_stop_reaches_train_and_eval_through_get_task(rewards_module):
    """get_task's user reward names task.reward_timeout; a RewardWorkers without a timeout_setting (the math
    task's math-verify, whose time limit is task.settings verify_timeout) is never stopped as hung."""
    task = get_task("arithmetic", reward="my_rewards:hangs", reward_timeout=0.2)
    try:
        with pytest.raises(InputError, match=r"\(task.reward_timeout=0.2 s\)"):
            task.rewards([(_prompt(i), "x") for i in range(6)])
    finally:
        task.close()
    with RewardWorkers("my_rewards:hangs", timeout=0.2) as reward:
        assert reward.score_many([(_prompt(i), "x") for i in range(5)]) == [-1.0] * 5


@pytest.mark.parametrize("workers", [0, -1, 1.5, True, 10**6])
def test_reward_workers_must_be_a_whole_number_in_range(rewards_module, workers):
    with pytest.raises(InputError, match="reward workers must be a whole number"):
        RewardWorkers("my_rewards:echo", workers=workers)


def test_a_task_with_reward_workers_scores_rounds_through_them(rewards_module):
    from scalerl.tasks.base import score_all

    task = get_task("arithmetic", n_val=6, n_hard=0, reward="my_rewards:exact", reward_workers=2)
    problems = list(task.eval_sets()["val"])
    pairs = [(p, f"<think></think>{p.answer if i % 2 else 'x'}") for i, p in enumerate(problems)]
    assert score_all(task, pairs) == [1.0 if i % 2 else -1.0 for i in range(len(pairs))]
    assert task.reward_stats()["calls"] == len(pairs)
    task.close()


PARENT = '''
import json, subprocess, sys, time
worker = subprocess.Popen([sys.executable, "-m", "scalerl.tasks.reward_worker", sys.argv[1]],
                          stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
assert json.loads(worker.stdout.readline()) == {"ready": True}
worker.stdin.write(json.dumps({"prompt": "p", "completion": "c", "answer": "a"}) + "\\n")
worker.stdin.flush()
print(worker.pid, flush=True)
time.sleep(120)
'''


@pytest.mark.parametrize("function", ["hangs", "holds_the_gil"])
def test_a_worker_in_a_hung_call_exits_with_the_process_that_started_it(rewards_module, function):
    """kill -9 of a trainer whose reward call hung (the case the timeout is for): the worker never
    read the end of its requests and stayed behind, sleeping or spinning, for good. A call stuck in
    C code that holds the GIL (a regex backtracking) stopped the thread that watched the parent too."""
    import os
    import signal
    import subprocess
    import sys

    psutil = pytest.importorskip("psutil")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(rewards_module.parent), *sys.path])}
    parent = subprocess.Popen([sys.executable, "-c", PARENT, f"my_rewards:{function}"], stdout=subprocess.PIPE, text=True,
                              env=env)
    worker = psutil.Process(int(parent.stdout.readline()))
    time.sleep(0.5)  # in the call
    assert worker.is_running() and worker.status() != psutil.STATUS_ZOMBIE
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.time() + 10
    while time.time() < deadline:
        try:
            if worker.status() == psutil.STATUS_ZOMBIE:
                break
        except psutil.NoSuchProcess:
            break
        time.sleep(0.1)
    else:
        worker.kill()
        pytest.fail("the reward worker outlived the process that started it")


def test_a_worker_started_from_a_thread_that_ended_still_scores(rewards_module):
    """The kernel's parent-death signal (which ends a worker stuck in C code when the trainer is
    killed) follows the *thread* that started the worker: one started from a thread that then ended
    (a restart after a timeout, in a generator's or a pool's thread) must not be killed with it."""
    import threading

    made = []
    thread = threading.Thread(target=lambda: made.append(UserReward("my_rewards:echo")))
    thread.start()
    thread.join()
    time.sleep(0.5)  # a signal would have arrived by now
    reward = made[0]
    assert reward.score("p", "0.5", "a") == 0.5
    assert reward.stats.errors == 0
    reward.close()


def test_a_worker_killed_between_calls_is_a_counted_failure_and_restarted(rewards_module):
    """A worker gone between two calls (the out-of-memory killer, a stray kill): the next call's
    request stayed in the pipe's buffer, and closing the pipe raised BrokenPipeError out of
    score() -- a crash of the run instead of one failed call."""
    import os
    import signal

    reward = UserReward("my_rewards:echo")
    assert reward.score("p", "1", "a") == 1.0
    os.kill(reward._proc.pid, signal.SIGKILL)
    reward._proc.wait()
    assert reward.score("p", "2", "a") == -1.0
    assert reward.stats.errors == 1
    assert reward.score("p", "3", "a") == 3.0  # restarted
    reward.close()


def test_a_scorings_failures_are_tallied_for_it_alone_across_the_workers_threads(rewards_module):
    """Each batch carries the failures of its own scoring (so that a batch scored again after a
    resume is counted once): calls handed to the reward workers' threads count in the tally of
    the scoring that made them, not in a concurrent one's."""
    import threading

    from scalerl.tasks.failure_tally import counting_failures

    workers = RewardWorkers("my_rewards:raises", workers=2)
    pairs = [(PROBLEM, str(i)) for i in range(6)]
    other = {}

    def concurrent():
        with counting_failures() as tally:
            workers.score(PROBLEM.prompt, "x", PROBLEM.answer)
        other.update(tally.as_dict())

    with counting_failures() as tally:
        thread = threading.Thread(target=concurrent)
        thread.start()
        assert workers.score_many(pairs) == [-1.0] * 6
        thread.join()
    assert tally.as_dict() == {"errors": 6, "timeouts": 0}
    assert other == {"errors": 1, "timeouts": 0}
    assert workers.stats.errors == 7  # the task's own count: every call
    workers.close()


def test_a_reward_worker_outlives_a_sigterm_to_the_process_group_and_is_killed_on_close(rewards_module):
    """SIGTERM to the whole process group (``kill -- -PGID``, SLURM, Kubernetes) killed the reward
    workers with the trainer: a call in flight then failed as "the worker process died", racing the
    trainer's own clean stop. The worker ignores it (and Ctrl-C); the trainer stops it when it closes."""
    import os
    import signal

    with UserReward("my_rewards:exact") as reward:
        proc = reward._proc
        os.kill(proc.pid, signal.SIGTERM)
        os.kill(proc.pid, signal.SIGINT)
        time.sleep(0.5)
        assert proc.poll() is None
        assert reward(PROBLEM, "4") == 1.0 and reward.stats.errors == 0
    assert proc.poll() is not None


def test_close_stops_hung_and_queued_calls_at_once_and_does_not_count_them_as_failures(rewards_module):
    """A stopping run closes its reward workers: close() waited for every queued call and each hung
    one's timeout (here 6 calls of 30 s on 2 workers: 90 s) before it killed a worker. Now the
    workers die first; the calls cut short score -1 and are neither calls nor failures in the
    counts (the function did not fail: the run stopped it)."""
    import threading

    from scalerl.tasks.failure_tally import counting_failures

    workers = RewardWorkers("my_rewards:hangs", timeout=30, workers=2)
    scored, tallies = [], []

    def score_batch():
        with counting_failures() as tally:
            scored.extend(workers.score_many([(PROBLEM, str(i)) for i in range(6)]))
        tallies.append(tally.as_dict())

    batch = threading.Thread(target=score_batch, daemon=True)
    batch.start()
    deadline = time.monotonic() + 20
    while len(workers._all) < 2 and time.monotonic() < deadline:  # both workers started, calls in flight
        time.sleep(0.1)
    time.sleep(0.5)
    procs = [w._proc for w in workers._all]
    start = time.monotonic()
    closing = threading.Thread(target=workers.close, daemon=True)
    closing.start()
    closing.join(timeout=10)
    batch.join(timeout=5)
    assert not closing.is_alive() and time.monotonic() - start < 10
    assert not batch.is_alive() and scored == [-1.0] * 6
    assert tallies == [{"errors": 0, "timeouts": 0}]
    assert workers.stats.calls == workers.stats.errors == workers.stats.timeouts == 0
    assert all(p is not None and p.poll() is not None for p in procs)  # every worker process gone
    assert workers.score(PROBLEM.prompt, "4", PROBLEM.answer) == -1.0  # no worker restarted after close
    assert all(w._proc is None for w in workers._all)


SLOW_RESTART = '''
import os
import time

if os.path.exists(__file__ + ".loaded"):  # a restarted worker loads slowly (a heavy import)
    time.sleep(60)
open(__file__ + ".loaded", "w").close()

def hangs(completion):
    time.sleep(60)
'''


def test_close_during_a_workers_restart_is_not_counted_as_a_failure(tmp_path):
    """A call that restarts its worker (the one before it timed out) and is cut short by close()
    while the new worker loads: close killed that worker, the restart 'failed', and the call was
    counted as a reward error (in the stats and in the scoring's failure tally) -- the function did
    not fail, the run stopped it."""
    import threading

    from scalerl.tasks.failure_tally import counting_failures

    module = tmp_path / "slow_restart.py"
    module.write_text(SLOW_RESTART)
    reward = UserReward(f"{module}:hangs", timeout=0.5)
    tallies = []

    def score_twice():
        with counting_failures() as tally:
            reward.score("p", "1", "a")  # times out: a counted failure, the worker killed
            reward.score("p", "2", "a")  # restarts the worker, which takes 60 s to load
        tallies.append(tally.as_dict())

    scoring = threading.Thread(target=score_twice, daemon=True)
    scoring.start()
    deadline = time.monotonic() + 15
    while not (reward.stats.calls == 2 and reward._proc is not None) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.3)  # the new worker is loading
    assert reward.stats.timeouts == 1 and reward._proc is not None
    start = time.monotonic()
    reward.close()
    scoring.join(timeout=5)
    assert not scoring.is_alive() and time.monotonic() - start < 5
    assert tallies == [{"errors": 0, "timeouts": 1}]  # the first call's timeout alone
    assert (reward.stats.calls, reward.stats.errors, reward.stats.timeouts) == (1, 0, 1)
    assert reward._proc is None


SLOW_SECOND_WORKER = '''
import os
import time

if os.path.exists(__file__ + ".loaded"):  # the second worker loads slowly (a heavy import)
    open(__file__ + ".second", "w").close()
    time.sleep(5)
open(__file__ + ".loaded", "w").close()

def exact(completion, answer):
    time.sleep(5)  # still in flight when close() comes
    return completion == answer
'''


def test_close_while_a_second_worker_starts_returns_at_once_and_closes_that_worker(tmp_path):
    """close() took the lock a worker's start holds, so a stop that came while a slow-loading
    second worker started waited for that start (here 5 s; up to startup_timeout, 60 s). Now it
    returns at once (under 3 s), and the worker is closed as soon as it is up: its call scores -1,
    uncounted."""
    import threading

    module = tmp_path / "slow_second.py"
    module.write_text(SLOW_SECOND_WORKER)
    workers = RewardWorkers(f"{module}:exact", timeout=5, workers=2)
    scored = []
    batch = threading.Thread(target=lambda: scored.extend(workers.score_many([(PROBLEM, "4"), (PROBLEM, "4")])),
                             daemon=True)
    batch.start()
    deadline = time.monotonic() + 15
    while not (tmp_path / "slow_second.py.second").exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert (tmp_path / "slow_second.py.second").exists(), "the second worker never started loading"
    start = time.monotonic()
    closing = threading.Thread(target=workers.close, daemon=True)
    closing.start()
    closing.join(timeout=10)
    assert not closing.is_alive() and time.monotonic() - start < 3
    batch.join(timeout=20)  # the starting worker loads (5 s), is closed, and its call returns
    assert not batch.is_alive() and scored == [-1.0, -1.0]
    assert workers.stats.errors == workers.stats.timeouts == 0
    assert len(workers._all) == 2 and all(w._proc is None for w in workers._all)


INTERRUPTED = '''
import os
import time

LOADS = __file__ + ".loads"
with open(LOADS, "a") as f:  # one line per load of this module: per worker started
    f.write("x")
if os.path.getsize(LOADS) > 1 and os.environ.get("SLOW_RESTART"):  # a restart loads slowly
    time.sleep(3)

def marked(completion):
    if completion == "slow":
        time.sleep(3)
        return 99.0  # the slow call's own score: it must never be any other call's
    return float(completion)
'''


def _ctrl_c_in(seconds):
    """Ctrl-C (SIGINT, a KeyboardInterrupt) to the main thread ``seconds`` from now: it interrupts a
    blocking select() there as a real one does."""
    import signal
    import threading

    timer = threading.Timer(seconds, signal.pthread_kill, (threading.main_thread().ident, signal.SIGINT))
    timer.start()
    return timer


@pytest.fixture()
def python_sigint():
    """Python's own Ctrl-C handler, as in a notebook: pytest-xdist's workers ignore SIGINT (the
    controller's Ctrl-C is theirs to handle), and there a Ctrl-C never arrives."""
    import signal

    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


@pytest.mark.parametrize("where", ["call", "restart"])
def test_a_call_interrupted_by_ctrl_c_is_not_answered_to_the_next_call(tmp_path, monkeypatch, where, python_sigint):
    """Ctrl-C in a reward call (a notebook that catches it and evaluates again with the same
    reward): the worker still answered the interrupted call, and the next call read that reply --
    99.0, the slow call's score, for the completion "2". One interrupted while its worker restarted
    read the new worker's hello as its reply and raised KeyError('value'). The interrupt must
    propagate at once, and the interrupted call is neither a call nor a failure in the counts."""
    import signal

    if not hasattr(signal, "pthread_kill"):
        pytest.skip("needs signal.pthread_kill")
    module = tmp_path / "interrupted.py"
    module.write_text(INTERRUPTED)
    if where == "restart":
        monkeypatch.setenv("SLOW_RESTART", "1")
    reward = UserReward(f"{module}:marked", timeout=30)
    try:
        assert reward.score("p", "1", "a") == 1.0
        if where == "restart":
            reward._kill()  # as after a timeout: the next call restarts the worker, which loads for 3 s
        start = time.monotonic()
        with pytest.raises(KeyboardInterrupt):
            timer = _ctrl_c_in(0.5)
            reward.score("p", "slow", "a")
        timer.join()
        assert time.monotonic() - start < 2.5  # at once, not after the call (3 s)
        assert reward.score("p", "2", "a") == 2.0
        assert reward.score("p", "3", "a") == 3.0
        assert (reward.stats.calls, reward.stats.errors, reward.stats.timeouts) == (3, 0, 0)
    finally:
        reward.close()


@pytest.mark.parametrize("workers", [1, 2])
def test_a_function_that_times_out_only_on_some_inputs_is_not_stopped_as_hung(rewards_module, workers):
    """A function that hangs on one prompt's completions (a sandbox on an endless loop) and answers the rest:
    one prompt's group times out first, and the function must go on scoring (review ab)."""
    with RewardWorkers("my_rewards:hangs_but_on_ok", timeout=0.2, workers=workers,
                       timeout_setting="task.reward_timeout") as reward:
        scores = reward.score_many([(PROBLEM, "x")] * 8 + [(PROBLEM, "ok")] * 4)  # one prompt's group, then others
    assert scores == [-1.0] * 8 + [1.0] * 4


def test_math_verify_timeouts_on_some_answers_do_not_stop_the_math_task(tmp_path):
    """math-verify runs in RewardWorkers off the main thread: answers it cannot finish (99999999!) are its
    answers' timeouts, counted -- never a stop naming task.reward_timeout, which does not apply to it (review ab)."""
    import json

    data = tmp_path / "m.jsonl"
    data.write_text("".join(json.dumps({"prompt": f"What is {i}+1?", "answer": str(i + 1)}) + "\n" for i in range(40)))
    # Two answers it cannot finish, one a worker (eight took 18 s); 3 s for each call: with 1 s, a correct answer
    # on a worker restarted under a loaded machine's CI ran out of time too, scored -1, and the test failed.
    task = get_task("math", data=str(data), verify_timeout=3.0, verify_workers=2)
    try:
        problems = list(task.train_problems())
        pairs = [(problems[0], "</think>\\boxed{99999999!}")] * 2
        pairs += [(p, f"</think>\\boxed{{{p.answer}}}") for p in problems[1:5]]
        assert task.rewards(pairs) == [-1.0] * 2 + [1.0] * 4
    finally:
        task.close()


def test_a_state_loaded_as_a_result_arrives_does_not_undo_an_answer_the_trainer_just_saw(tmp_path):
    """PipelineRL-k on generator processes / Ray actors: PooledSource._deliver loads each result's reward_state into
    the trainer's task from the pool's thread (the processes' reader, Ray's dispatcher), while the trainer's thread
    scores its evaluation with that same task. RewardWorkers.load_state_dict does
    ``self._answered = self._answered or bool(state.get("answered"))`` outside ``_hang_lock``, under which
    ``_check_hung`` records an answer: an answer recorded between the read and the write is overwritten with False
    (here a worker that had not answered yet reports ``answered: False`` while the trainer's call answers). README:
    "once a call has answered in time, timeouts are counted, never a stop" -- with answered reset, the hung-call
    guard counts prompts again and can stop a run whose function answers, and the checkpoint saves it as never
    answered. The interleaving is forced (the trainer's call runs while the loader reads the state); with the
    load done atomically against _check_hung the call waits and the answer stays."""
    from scalerl.tasks.rewards import RewardWorkers

    reward = tmp_path / "judge.py"
    reward.write_text("def judge(prompt, completion, answer):\n    return 1.0\n")
    rw = RewardWorkers(f"{reward}:judge", timeout=5.0, timeout_setting="task.reward_timeout")
    try:
        trainer_call = threading.Thread(target=rw.score, args=("What is 1 + 1?", "2", "2"), name="trainer")

        class ArrivingState(dict):
            """A worker's reported state, read by the delivery thread; the trainer's call runs meanwhile."""

            def get(self, key, default=None):
                if key == "answered" and not trainer_call.is_alive() and trainer_call.ident is None:
                    trainer_call.start()
                    trainer_call.join(timeout=2.0)  # (blocked until the load is done, where the load is atomic)
                return super().get(key, default)

        assert rw.state_dict()["answered"] is False
        rw.load_state_dict(ArrivingState(lowest=-1.0, answered=False))  # PooledSource._deliver, delivery thread
        trainer_call.join(timeout=10.0)
        assert rw.state_dict()["answered"] is True, "the trainer's answered call was undone by the loaded state"
    finally:
        rw.close()
