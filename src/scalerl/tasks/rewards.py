"""User reward functions, given as ``module:function`` or ``path/to/file.py:function``.

The function takes any of the parameters ``prompt``, ``completion``, ``answer`` (by name) and
returns a number (``pass`` means > 0) or a bool (True -> +1, False -> -1)::

    # my_rewards.py
    def exact(completion, answer):
        return completion.rsplit("</think>", 1)[-1].strip() == answer

It runs in a separate worker process. That is what makes a hung call stoppable: a thread
cannot be killed, a process can. A call that raises (or returns a non-number) scores
:data:`FAILURE_REWARD` (-1, what a wrong answer scores), or the lowest score the function has returned
where that is lower (:attr:`UserReward.lowest`): a failure must never pay better than a wrong answer, or
the policy learns to make the function fail (a training batch then scores its failures at its own lowest score:
:func:`scalerl.rollout.produce.floor_failures`); a call that exceeds ``timeout``
seconds scores the same and the worker is killed and restarted for the next call; one that raises
``TimeoutError`` (a limit of its own ran out: a judge's request, math-verify's) is a timeout too. Both are
counted in :attr:`UserReward.stats` (and logged once each) so the trainer can put them in the run
log. :meth:`UserReward.close` kills the worker at once, a call in flight included: that call, and
any made after, scores -1 too but is neither a call nor a failure in the counts (the function did
not fail: the run stopped it). A call interrupted by the caller (Ctrl-C) raises at once, is not
counted either, and the worker is killed and restarted for the next call, which would otherwise
read the interrupted call's reply. The worker is one process started once, not one per call: a round
trip costs well under a millisecond, a process start ~50-100 ms.
"""

from __future__ import annotations

import json
import logging
import os
import queue
import select
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Sequence

from scalerl.errors import InputError
from scalerl.parent_death import start_process
from scalerl.tasks.base import Problem, Task
from scalerl.tasks.failure_tally import current_tally, in_tally, note_failure

log = logging.getLogger(__name__)

#: The longest per-call timeout, in seconds: a day. A timeout is finite (the worker must be
#: stoppable) and within what select() takes (1e12 s overflowed it).
MAX_TIMEOUT = 86400

#: The most worker processes one reward function may run in (each a Python process: ~30-100 MB).
MAX_WORKERS = 256

#: What a failed call (raised, returned a non-number, timed out) scores at most: the tasks' minimum, -1,
#: the score of a wrong answer -- or the lowest score the function has returned, where its scale goes below
#: (a judge's -5 for a wrong answer: a failure at -1 paid better, and the policy learns to make it fail: review cb).
FAILURE_REWARD = -1.0
#: A user function whose calls ran past their timeout on this many different prompts before any call
#: answered in time is stopped there: it hangs (or needs a longer ``timeout``). Waiting for the first
#: evaluation's "every call failed" took calls x timeout / workers -- 800 x 10 s, over two hours, with the
#: tiny model's defaults -- for the same verdict. Prompts, not calls: a function that loops on some inputs
#: only (a sandbox on one prompt's programs, math-verify on ``99999999!``) times out on one prompt's whole
#: group first, and must go on scoring the rest.
HUNG_PROMPTS = 4


#: What the failed calls of a run or an evaluation scored, as the report and eval say it: a judge's own lower score
#: for a wrong answer may have come after the first failures, so no one number holds for them all (review cg).
SCORED_AS_WRONG = ("each scored as a wrong answer (-1, or the lowest score of its training batch -- in an evaluation, "
                   "the lowest the function had returned)")


class LowestScore:
    """The lowest of -1 and every score a reward function has returned, shared by the workers that call it (review
    cf: each worker kept its own, and one that had not seen a judge's -5 scored a failure -1, better than it). Per
    process: Ray actors and generator processes each keep theirs, and trade it with the trainer's through their
    requests and results (:attr:`scalerl.pipeline.work.RoundRequest.reward_state`), which a checkpoint keeps."""

    def __init__(self) -> None:
        self.value = FAILURE_REWARD
        self._lock = threading.Lock()

    def saw(self, score: float) -> None:
        with self._lock:
            self.value = min(self.value, score)


@dataclass
class RewardStats:
    """What happened to the calls so far (failed, scored :data:`FAILURE_REWARD`: errors + timeouts)."""

    calls: int = 0
    errors: int = 0
    timeouts: int = 0
    first_error: str = ""
    last_error: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"calls": self.calls, "errors": self.errors, "timeouts": self.timeouts,
                "first_error": self.first_error, "last_error": self.last_error}


class _WorkerDied(Exception):
    pass


class UserReward:
    """A user reward function run in a worker process, bounded by a per-call timeout.

    Callable as a task's reward: ``reward(problem, completion) -> float``. Thread-safe (calls
    are serialised). Raises :class:`InputError` at construction when the function cannot be
    loaded. Use as a context manager, or call :meth:`close`, to stop the worker.
    """

    def __init__(self, spec: str, timeout: float = 10.0, startup_timeout: float = 60.0,
                 lowest: "LowestScore | None" = None) -> None:
        """``lowest``: the floor failed calls score, shared by the workers of one :class:`RewardWorkers`."""
        self.spec = spec
        self.timeout = timeout
        self.startup_timeout = startup_timeout
        self.stats = RewardStats()
        self._lowest = lowest if lowest is not None else LowestScore()
        self._lock = threading.Lock()
        self._proc: subprocess.Popen | None = None
        self._buffer = b""
        self._closed = False
        self._unanswered = False  # a call left before its reply (see _interrupted)
        error = self._start()
        if error is not None:
            raise InputError(f"reward function {spec!r}: {error}")

    # ---- process management ----------------------------------------------------------------
    def _start(self) -> str | None:
        """Start the worker; returns None when it is ready, else why not."""
        env = dict(os.environ)
        # The worker resolves 'module:function' on the same path as this process (tests, notebooks
        # and scripts often extend sys.path at run time).
        env["PYTHONPATH"] = os.pathsep.join(p for p in sys.path if p)
        # (From a thread that lasts: the worker dies with the thread that started it, on Linux.)
        self._proc = start_process(
            [sys.executable, "-m", "scalerl.tasks.reward_worker", self.spec],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=env,
        )
        self._buffer = b""
        try:
            hello = self._read(time.monotonic() + self.startup_timeout)
        except TimeoutError:
            self._kill()
            return (f"the worker did not load it within {self.startup_timeout:g} s (a module that loads a model at "
                    "import may need longer: raise --set task.reward_load_timeout=SECONDS)")
        except _WorkerDied:
            self._kill()
            return "the worker exited while loading it"
        if "load_error" in hello:
            self._kill()
            return hello["load_error"]
        return None

    def _kill(self) -> None:
        if self._proc is not None:
            self._proc.kill()
            self._proc.wait()
            for stream in (self._proc.stdin, self._proc.stdout):
                try:
                    stream.close()
                except OSError:  # a request left in the buffer of a dead worker's pipe: close flushes it
                    pass
            self._proc = None

    def _read(self, deadline: float) -> dict:
        """One JSON line from the worker, or TimeoutError / _WorkerDied."""
        fd = self._proc.stdout.fileno()
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
                raise TimeoutError
            chunk = os.read(fd, 65536)
            if not chunk:
                raise _WorkerDied
            self._buffer += chunk
        line, self._buffer = self._buffer.split(b"\n", 1)
        return json.loads(line)

    def close(self) -> None:
        """Kill the worker now, without waiting for a call in flight (a hung one waited out its
        timeout, up to a day, and held up a stopping run): that call sees its worker die and
        returns (see :meth:`score`); later calls score -1 at once, no worker restarted."""
        self._closed = True
        proc = self._proc  # (a kill signal only: the call in flight owns the pipes until it returns)
        if proc is not None:
            proc.kill()
        with self._lock:
            self._kill()

    def __enter__(self) -> "UserReward":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self._kill()
        except Exception:  # noqa: BLE001 -- interpreter shutdown
            pass

    # ---- scoring -----------------------------------------------------------------------------
    def _failed(self, kind: str, message: str) -> float:
        if kind == "timeout":
            self.stats.timeouts += 1
            first = self.stats.timeouts == 1
        else:
            self.stats.errors += 1
            first = self.stats.errors == 1
        note_failure("timeouts" if kind == "timeout" else "errors")  # for the batch or evaluation it scored
        self.stats.last_error = message
        self.stats.first_error = self.stats.first_error or message
        if first:  # once per kind; the counts carry the rest
            # (no number: a training batch rescores it at its own lowest answer, rollout.produce.floor_failures, and
            # an evaluation at the lowest score returned by its end -- review FT: a resumed run's said -5 where it
            # trained on -1; FW: an evaluation's said -1 where a -5 came after)
            log.warning("reward function %s: %s (scored as a wrong answer, no better: -1, or lower where the "
                        "function's scale is -- in a training batch its lowest score, in an evaluation the lowest "
                        "the function has returned; further ones are counted, not logged)", self.spec, message)
        return self.lowest

    @property
    def lowest(self) -> float:
        """What a failed call scores now: the lowest of -1 and every score the function has returned."""
        return self._lowest.value

    def _cut_short(self) -> float:
        """A call :meth:`close` cut short: scored -1, and neither a call nor a failure in the counts
        (the function did not fail: the run stopped it)."""
        self._kill()
        self.stats.calls -= 1
        return FAILURE_REWARD

    def _interrupted(self) -> None:
        """A call left before its reply by an exception (Ctrl-C, a SIGTERM's Terminated, or any
        other raised while it waited): the worker still answers it -- or, restarting, still says it is ready -- and
        the next call read that line as its own reply (the wrong score for the wrong completion).
        So the worker is killed now (no wait for the call; a hung one stops at once) and the next
        call restarts it; should this kill be interrupted too, ``_unanswered`` stays set and the
        next call kills it first. The call is neither a call nor a failure in the counts (the
        function did not fail: the caller stopped it)."""
        self.stats.calls -= 1
        self._kill()

    def score(self, prompt: str, completion: str, answer: str) -> float:
        """Reward of one completion; :data:`FAILURE_REWARD` when the function raised or timed out.
        An exception while it waits (Ctrl-C) propagates at once (see :meth:`_interrupted`)."""
        with self._lock:
            if self._closed:  # a stopping run's last calls: its results are thrown away
                return FAILURE_REWARD
            if self._unanswered:  # the last call was interrupted and its worker not yet killed
                self._kill()
            self.stats.calls += 1
            self._unanswered = True
            try:
                value = self._call(prompt, completion, answer)
            except BaseException:
                self._interrupted()
                raise
            self._unanswered = False
            return value

    def _call(self, prompt: str, completion: str, answer: str) -> float:
        """One request and its reply, the worker restarted first if it was killed (see :meth:`score`)."""
        if self._proc is None:  # killed after a timeout or an interrupted call: restart for this call
            error = self._start()
            if self._closed:  # close() came during the restart (and killed the worker loading)
                return self._cut_short()
            if error is not None:
                return self._failed("error", f"restart failed: {error}")
        request = json.dumps({"prompt": prompt, "completion": completion, "answer": answer}) + "\n"
        try:
            self._proc.stdin.write(request.encode())
            self._proc.stdin.flush()
            reply = self._read(time.monotonic() + self.timeout)
        except (TimeoutError, _WorkerDied, BrokenPipeError) as exc:
            if self._closed:  # close() killed it mid-call
                return self._cut_short()
            self._kill()
            if isinstance(exc, TimeoutError):
                return self._failed("timeout", f"call exceeded {self.timeout:g} s; worker killed")
            return self._failed("error", "the worker process died during the call")
        if "timeout" in reply:  # the function's own limit (math-verify's): a timeout, its worker still sound
            return self._failed("timeout", reply["timeout"])
        if "error" in reply:
            return self._failed("error", reply["error"])
        value = float(reply["value"])
        self._lowest.saw(value)
        return value

    def __call__(self, problem: Problem, completion: str) -> float:
        return self.score(problem.prompt, completion, problem.answer)


class RewardWorkers:
    """``workers`` worker processes of one reward function (:class:`UserReward` each): a batch of
    calls is scored concurrently, each call on whichever worker is free.

    A slow reward -- an LLM judge, a code sandbox, math-verify on long answers (~2 ms a call) --
    scored one call at a time holds up every step: 8,192 completions of 20 ms are 164 s. The
    first worker starts here (a function that cannot be loaded is refused at once); the others
    start on the first batch that can use them, and one that fails to start leaves the batch to
    the workers already running. Each worker keeps its own timeout and restart, so one hung call
    stops only its own worker. Callable as a task's reward; thread-safe.
    """

    def __init__(self, spec: str, timeout: float = 10.0, workers: int = 1, startup_timeout: float = 60.0,
                 timeout_setting: str | None = None) -> None:
        """``timeout_setting``: the setting that raises ``timeout`` (``task.reward_timeout``), named when the
        function is stopped as hung (:data:`HUNG_PROMPTS`); None: never stopped (math-verify, whose
        timeouts are its answers' and counted)."""
        if isinstance(workers, bool) or not isinstance(workers, int) or not 1 <= workers <= MAX_WORKERS:
            raise InputError(f"reward workers must be a whole number in [1, {MAX_WORKERS}], got {workers!r}")
        self.spec, self.timeout, self.workers, self.startup_timeout = spec, timeout, workers, startup_timeout
        self._lowest = LowestScore()
        first = UserReward(spec, timeout=timeout, startup_timeout=startup_timeout, lowest=self._lowest)
        self._all = [first]
        self._free: queue.SimpleQueue[UserReward] = queue.SimpleQueue()
        self._free.put(first)
        self._grow = threading.Lock()
        self._start_failed = False
        self._closed = False
        self.timeout_setting = timeout_setting
        self._answered = False  # any call returned within its time limit (see HUNG_PROMPTS)
        self._hung_prompts: set[str] = set()  # the prompts whose calls timed out before that
        self._hang_lock = threading.Lock()  # (not _grow: a worker's start holds that for up to startup_timeout)
        self._executor: ThreadPoolExecutor | None = None

    @property
    def stats(self) -> RewardStats:
        """The calls of every worker, added up (first and last error: of the first worker that had one)."""
        total = RewardStats()
        for w in list(self._all):
            total.calls += w.stats.calls
            total.errors += w.stats.errors
            total.timeouts += w.stats.timeouts
            total.first_error = total.first_error or w.stats.first_error
            total.last_error = total.last_error or w.stats.last_error
        return total

    def _checkout(self) -> UserReward:
        """A free worker; a new one while fewer than ``workers`` run, else wait for one."""
        try:
            return self._free.get_nowait()
        except queue.Empty:
            pass
        with self._grow:
            if len(self._all) < self.workers and not self._start_failed and not self._closed:
                try:
                    worker = UserReward(self.spec, timeout=self.timeout, startup_timeout=self.startup_timeout,
                                        lowest=self._lowest)
                except InputError as exc:  # out of processes or memory: carry on with the ones running
                    self._start_failed = True
                    log.warning("reward function %s: worker %d did not start (%s); scoring with %d", self.spec,
                                len(self._all) + 1, exc, len(self._all))
                else:
                    self._all.append(worker)
                    if self._closed:  # close() came while it started (and may not have seen it)
                        worker.close()  # its call scores -1 at once, uncounted
                    return worker
        return self._free.get()

    def score(self, prompt: str, completion: str, answer: str) -> float:
        """Reward of one completion on a free worker (see :meth:`UserReward.score`); an
        :class:`~scalerl.errors.InputError` once the function has timed out on :data:`HUNG_PROMPTS` prompts
        and answered none in time (with a ``timeout_setting``)."""
        return self._scored(prompt, completion, answer)[0]

    def _scored(self, prompt: str, completion: str, answer: str) -> tuple[float, bool]:
        """``(reward, whether the call failed)``: see :meth:`score`."""
        worker = self._checkout()
        try:
            before = worker.stats.timeouts, worker.stats.errors  # (the worker is this call's alone until put back)
            value = worker.score(prompt, completion, answer)
            timed_out = worker.stats.timeouts > before[0]
            failed = timed_out or worker.stats.errors > before[1]
        finally:
            self._free.put(worker)
        if self.timeout_setting is not None and not self._answered:
            self._check_hung(prompt, timed_out)
        return value, failed

    def _check_hung(self, prompt: str, timed_out: bool) -> None:
        with self._hang_lock:
            if not timed_out:
                self._answered = True  # (a value or an error: the function answers)
                return
            self._hung_prompts.add(prompt)
            hung = not self._answered and len(self._hung_prompts) >= HUNG_PROMPTS
        if hung:
            raise InputError(f"the reward function {self.spec} ran past its time limit ({self.timeout_setting}="
                             f"{self.timeout:g} s) on {HUNG_PROMPTS} different prompts and has answered no call in "
                             f"time: it hangs, or needs longer -- fix it, or raise --set {self.timeout_setting}=SECONDS")

    def __call__(self, problem: Problem, completion: str) -> float:
        return self.score(problem.prompt, completion, problem.answer)

    def state_dict(self) -> dict[str, Any]:
        """What the calls so far decided, for a checkpoint: the floor a failed call scores and whether the
        function has answered in time (a resume that forgot them scored failures -1 where the run had seen -5,
        and took a function that had answered for one that hangs -- review eb)."""
        return {"lowest": self._lowest.value, "answered": self._answered}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        """Take in what another copy's calls decided (a checkpoint's, a generator process's or Ray actor's result,
        loaded from the pool's thread while the trainer scores): the floor only goes down, "answered" only becomes
        true -- under the lock :meth:`_check_hung` records an answer with (review eh: read and written outside it, an
        answer recorded between the two was overwritten with False)."""
        if "lowest" in state:
            self._lowest.saw(float(state["lowest"]))
        answered = bool(state.get("answered", False))
        with self._hang_lock:
            self._answered = self._answered or answered

    def score_many(self, pairs: Sequence[tuple[Problem, str]]) -> list[float]:
        """Rewards of ``(problem, completion)`` pairs, in order, up to ``workers`` calls at a time. A failed call
        scores no better than any score of the batch (review cg: one that failed before the function's first -5
        came back scored -1, above the wrong answer beside it)."""
        return [value for value, _ in self.score_flagged(pairs)]

    def score_flagged(self, pairs: Sequence[tuple[Problem, str]]) -> list[tuple[float, bool]]:
        """:meth:`score_many`'s rewards, each with whether its call failed -- so that a batch scored in several
        rounds (DAPO's refills) floors an earlier round's failures at a later round's lower score."""
        def one(problem: Problem, completion: str) -> tuple[float, bool]:
            return self._scored(problem.prompt, completion, problem.answer)

        if self.workers == 1 or len(pairs) < 2:
            scored = [one(problem, completion) for problem, completion in pairs]
        else:
            with self._grow:
                if self._executor is None:
                    self._executor = ThreadPoolExecutor(self.workers, thread_name_prefix="reward")
            tally = current_tally()  # the calls run in the executor's threads: their failures are this scoring's
            scored = list(self._executor.map(lambda pair: in_tally(tally, one, *pair), pairs))
        floor = self._lowest.value
        return [(min(value, floor), True) if failed else (value, False) for value, failed in scored]

    def close(self) -> None:
        """Stop every worker process (and the threads that fed them) at once: the workers first, so
        that calls in flight return and queued ones score -1 without a call (see
        :meth:`UserReward.close`); waiting for them first made a stopping run wait out each hung
        call's timeout, one after another. Not under ``_grow``: a worker's start holds it (up to
        ``startup_timeout``), and a stop must not wait for that start -- :meth:`_checkout` closes
        the new worker once it is up."""
        self._closed = True
        for worker in list(self._all):
            worker.close()
        if self._executor is not None:
            # Not waiting: its calls return at once on closed workers (queued ones included, which
            # must run to give their -1: a cancelled future would raise in score_many) -- except
            # one that is starting a worker, which ends when that start does.
            self._executor.shutdown(wait=False)
            self._executor = None

    def __enter__(self) -> "RewardWorkers":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def check_reward_works(spec: str | None, stats: dict[str, Any], when: str) -> None:
    """Stop when every reward call so far (``when``: "of the first evaluation") failed: a run on a
    broken reward would train on -1 everywhere and report a pass rate of 0 as if it were a result.
    ``scalerl eval`` makes the same check, for the same reason."""
    failed = stats["errors"] + stats["timeouts"]
    if stats["calls"] and failed == stats["calls"]:
        raise InputError(
            f"the reward function {spec} failed on all {stats['calls']} calls {when}; "
            f"the first: {stats['first_error'] or stats['last_error']}. Fix it (README: 'Your own reward "
            "function' has the contract) and run again"
        )

@dataclass
class UserRewardTask:
    """A task whose problems come from ``base`` and whose reward is a user function."""

    base: Task
    user_reward: RewardWorkers
    name: str = field(init=False)

    def __post_init__(self) -> None:
        self.name = f"{self.base.name}+{self.user_reward.spec}"

    def train_problems(self) -> Sequence[Problem]:
        return self.base.train_problems()

    def eval_sets(self) -> dict[str, Sequence[Problem]]:
        return self.base.eval_sets()

    def reward(self, problem: Problem, completion: str) -> float:
        return self.user_reward(problem, completion)

    def rewards(self, pairs: Sequence[tuple[Problem, str]]) -> list[float]:
        """Many completions at once, on the function's worker processes (``task.reward_workers``)."""
        return self.user_reward.score_many(pairs)

    def flagged_rewards(self, pairs: Sequence[tuple[Problem, str]]) -> list[tuple[float, bool]]:
        """:meth:`rewards`, each with whether its call failed (:func:`scalerl.tasks.base.score_flagged`)."""
        return self.user_reward.score_flagged(pairs)

    @property
    def reward_calls_at_once(self) -> int:
        """The function's worker processes (:func:`scalerl.tasks.base.calls_at_once`)."""
        return self.user_reward.workers

    def reward_stats(self) -> dict[str, Any]:
        return self.user_reward.stats.as_dict()

    def reward_state(self) -> dict[str, Any]:
        """The function's state a checkpoint keeps (:meth:`RewardWorkers.state_dict`)."""
        return self.user_reward.state_dict()

    def load_reward_state(self, state: dict[str, Any]) -> None:
        self.user_reward.load_state_dict(state)

    def close(self) -> None:
        """Stop the function's worker processes."""
        self.user_reward.close()
