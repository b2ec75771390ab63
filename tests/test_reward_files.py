"""Loading a user's reward file as Python imports a module (review t): a dataclass under postponed
annotations, a function that is pickled; the reward contract said for a callable object and for a
function that takes **kwargs beside a parameter of another name (TRL's batch contract).

Each builds a small reward file in a temporary directory and loads it the way ``scalerl train
--reward FILE.py:fn`` does (:class:`~scalerl.tasks.rewards.UserReward`, a real worker process).
"""

import json
import os
import subprocess
import sys
import textwrap

import pytest

from scalerl.errors import InputError
from scalerl.tasks.base import Problem
from scalerl.tasks.rewards import UserReward

PROBLEM = Problem(id="2+2", prompt="2+2=", answer="4")


def _write(tmp_path, name, source):
    path = tmp_path / name
    path.write_text(textwrap.dedent(source))
    return path


def test_a_reward_file_with_a_dataclass_under_postponed_annotations_loads(tmp_path):
    # dataclasses resolves string annotations through sys.modules[cls.__module__]; the worker runs the
    # file as module 'scalerl_user_reward_<stem>' without registering it, so the load failed with
    # "AttributeError: 'NoneType' object has no attribute '__dict__'" -- a perfectly good file refused.
    path = _write(tmp_path, "dc_reward.py", '''
        from __future__ import annotations
        from dataclasses import dataclass

        @dataclass
        class Judge:
            threshold: float = 0.5

        def score(completion, answer):
            return completion.strip() == answer
        ''')
    with UserReward(f"{path}:score") as reward:
        assert reward(PROBLEM, "4") == 1.0


def test_a_reward_file_whose_functions_are_pickled_scores(tmp_path):
    # What a reward that runs a sandbox in a process pool (or multiprocessing with spawn) does.
    path = _write(tmp_path, "pickle_reward.py", '''
        import pickle

        def helper(x):
            return x

        def score(completion, answer):
            pickle.dumps(helper)
            return completion.strip() == answer
        ''')
    with UserReward(f"{path}:score") as reward:
        assert reward(PROBLEM, "4") == 1.0
        assert reward.stats.errors == 0, reward.stats.first_error


def test_a_callable_object_with_the_wrong_parameters_is_told_the_contract(tmp_path):
    path = _write(tmp_path, "cls_reward.py", '''
        class Scorer:
            def __call__(self, text, gold):
                return text == gold

        score = Scorer()
        ''')
    with pytest.raises(InputError) as exc:
        UserReward(f"{path}:score")
    assert "must take parameters named from prompt, completion, answer" in str(exc.value), str(exc.value)


def test_a_required_parameter_beside_kwargs_is_refused_up_front(tmp_path):
    # docs/tasks.md: "A function with other parameter names is refused when the run starts, with the
    # contract in the message." With **kwargs it was accepted, and `scalerl train` ran the whole
    # first evaluation (800 calls of the tiny model; 1,000 prompts x k of a real run) before it stopped.
    path = _write(tmp_path, "trl_reward.py", '''
        def score(completions, **kwargs):
            return [1.0 for _ in completions]
        ''')
    with pytest.raises(InputError, match="must take parameters named from prompt, completion, answer") as exc:
        UserReward(f"{path}:score")
    assert "called once per completion, with strings, not with lists as TRL's" in str(exc.value)


def test_kwargs_alone_still_takes_every_argument(tmp_path):
    path = _write(tmp_path, "any_reward.py", '''
        def score(**kwargs):
            return kwargs["completion"].strip() == kwargs["answer"] and kwargs["prompt"] == "2+2="
        ''')
    with UserReward(f"{path}:score") as reward:
        assert reward(PROBLEM, "4") == 1.0
        assert reward(PROBLEM, "5") == -1.0


def test_a_slow_loading_module_is_given_task_reward_load_timeout(tmp_path):
    from scalerl.tasks import get_task

    path = _write(tmp_path, "slow_reward.py", '''
        import time
        time.sleep(3)  # a judge model read from disk at import

        def score(completion, answer):
            return completion.strip() == answer
        ''')
    with pytest.raises(InputError, match=r"did not load it within 1 s .*--set task\.reward_load_timeout=SECONDS"):
        get_task("arithmetic", reward=f"{path}:score", reward_load_timeout=1)
    task = get_task("arithmetic", reward=f"{path}:score", reward_load_timeout=60)
    task.close()


def test_reward_load_timeout_is_checked_with_the_config():
    from scalerl.errors import ConfigError
    from scalerl.train.config import TrainConfig

    cfg = TrainConfig()
    cfg.task.reward_load_timeout = 0
    with pytest.raises(ConfigError, match=r"task\.reward_load_timeout must be seconds in \(0, 86400\]"):
        cfg.validate()


def test_a_reward_file_that_uses_a_spawn_process_pool_scores(tmp_path):
    from scalerl.tasks.base import Problem
    from scalerl.tasks.rewards import UserReward

    path = tmp_path / "pool_reward.py"  # a sandbox run in a process pool (spawn: macOS; forkserver: Linux, 3.14)
    path.write_text(textwrap.dedent('''
        import multiprocessing as mp
        from concurrent.futures import ProcessPoolExecutor

        def check(completion, answer):
            return completion.strip() == answer

        def score(completion, answer):
            with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn")) as pool:
                return pool.submit(check, completion, answer).result()
        '''))
    with UserReward(f"{path}:score", timeout=60) as reward:
        assert reward(Problem(id="2+2", prompt="2+2=", answer="4"), "4") == 1.0, reward.stats.first_error


def test_a_reward_file_in_a_failing_package_that_imports_numpy_loads_on_its_own(tmp_path):
    """proj/__init__.py imports numpy and then fails (a project root's __init__, never meant to be imported with
    the file); proj/rewards.py imports numpy. 86e8e43: the package route fails, every module it imported is
    removed from sys.modules, and the file is imported on its own -- whose `import numpy` loads numpy's C
    extension a second time: "ImportError: cannot load module more than once per process". The worker's
    load_error: "cannot import .../rewards.py as proj.rewards (ImportError: cannot import name 'MISSING' ...) nor
    on its own (ImportError: cannot load module more than once per process)". The file loads on its own
    (scalerl before 2b90c66 did, and so does `python rewards.py`) (review ac)."""
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import numpy\nfrom .settings import MISSING\n")
    (pkg / "settings.py").write_text("X = 1\n")
    (pkg / "rewards.py").write_text(textwrap.dedent("""\
        import numpy as np

        def score(completion, answer):
            return float(np.float64(1.0)) if completion.strip() == answer.strip() else -1.0
        """))
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-m", "scalerl.tasks.reward_worker", f"{pkg / 'rewards.py'}:score"],
                          input=json.dumps({"prompt": "p", "completion": "1", "answer": "1"}) + "\n",
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert lines and lines[0] == {"ready": True}, lines
    assert lines[1] == {"value": 1.0}


def test_a_reward_file_whose_failing_package_imported_a_root_module_of_its_sibling_s_name_gets_its_sibling(tmp_path):
    """ROOT/config.py and ROOT/proj/config.py; proj/__init__.py does `import config` (ROOT's: ROOT is first on
    sys.path in the package route) and then fails; proj/rewards.py does `import config`, meaning its sibling (as
    `python proj/rewards.py` and scalerl before 2907e2a find it). 2907e2a undid only proj.*, so the file's own
    import got ROOT/config.py from sys.modules: the function scored -1 on a right answer (review ad)."""
    (tmp_path / "config.py").write_text('NAME = "root config"\n')
    pkg = tmp_path / "proj"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("import config\nfrom .missing import X\n")
    (pkg / "config.py").write_text('NAME = "proj config"\n')
    (pkg / "rewards.py").write_text('import config\n\n\ndef score(completion, answer):\n'
                                    '    return 1.0 if config.NAME == "proj config" else -1.0\n')
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(os.path.abspath(p) for p in sys.path if p)}
    proc = subprocess.run([sys.executable, "-m", "scalerl.tasks.reward_worker", f"{pkg / 'rewards.py'}:score"],
                          input=json.dumps({"prompt": "p", "completion": "1", "answer": "1"}) + "\n",
                          capture_output=True, text=True, timeout=120, cwd=tmp_path, env=env)
    lines = [json.loads(line) for line in proc.stdout.splitlines() if line.strip()]
    assert lines[:2] == [{"ready": True}, {"value": 1.0}], (lines, proc.stderr[-2000:])
