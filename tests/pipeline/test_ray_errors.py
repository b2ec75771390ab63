"""Errors on the Ray backend said in one line (review dd): an actor's user-facing error, a generator device the
actor's machine lacks, a device name no machine knows. No cluster: a fake of Ray's dispatch, the actor class
called as Ray would call it on its node."""

from __future__ import annotations

import pickle
import threading
from types import SimpleNamespace

import pytest

from scalerl.errors import InputError, ScaleRLError

ray = pytest.importorskip("ray")


# ----------------------------------------------------------------------------- an actor's user-facing error
class _FakeRay:
    """Just what RayPool._dispatch calls: every call's result is ready, and getting it raises what
    ``ray.get`` raises for an actor method that raised ``error`` (Ray 2.60: the RayTaskError made an
    instance of the cause's class too, its str Ray's process title and the actor's traceback)."""

    exceptions = ray.exceptions

    def __init__(self, error: BaseException) -> None:
        self.error = error

    def wait(self, refs, num_returns, timeout, fetch_local=True):
        return list(refs), []

    def get(self, ref, timeout=None):
        raise self.error


def _pool_on(fake: _FakeRay):
    from scalerl.pipeline.ray_backend import RayPool

    pool = RayPool.__new__(RayPool)  # the dispatcher's books only: no cluster
    pool.size = 1
    pool._init_dispatch_state()
    pool.ray = fake
    pool.max_restarts = 3
    pool.actors = [SimpleNamespace(run=SimpleNamespace(remote=lambda *args: "ref-0"))]
    pool._sync = SimpleNamespace(request_args=lambda: ([], 0))
    pool._pids = [None]
    return pool


def test_a_user_error_raised_in_a_generator_actor_stops_the_run_in_one_line():
    """Seen with `scalerl train --backend ray --reward rew.py:hanging --set task.reward_timeout=2`, a
    reward that hangs only on the actors (an LLM judge the workers cannot reach): the actor's reward
    check raised its InputError ("ran past its time limit ... on 4 different prompts"), and the command
    printed the trainer's traceback around `PipelineError: generator actor 0 failed on batch 0: ray::
    GeneratorActor.run() (pid=..., ip=...)` and the actor's own traceback (exit 1). The same error
    raised where the trainer scores (the local backend, an evaluation) is one line, exit 2; and the
    actor's start-up errors already reach the driver as themselves (RayPool._wait_ready)."""
    from scalerl.generate.base import SamplingParams
    from scalerl.pipeline.work import RoundRequest

    message = ("the reward function rew.py:hanging ran past its time limit (task.reward_timeout=2 s) on 4 "
               "different prompts and has answered no call in time: it hangs, or needs longer -- fix it, or raise "
               "--set task.reward_timeout=SECONDS")
    traceback = ('Traceback (most recent call last):\n  File "ray_backend.py", line 111, in run\n'
                 '    return os.getpid(), self.worker.run(request)\n  File "rewards.py", line 393, in _check_hung\n'
                 f"scalerl.errors.InputError: {message}")
    error = ray.exceptions.RayTaskError("GeneratorActor.run", traceback, InputError(message),
                                        proctitle="ray::GeneratorActor.run()", pid=13600, ip="192.0.2.2"
                                        ).as_instanceof_cause()
    pool = _pool_on(_FakeRay(error))
    pool.submit(RoundRequest(0, 0, [], SamplingParams(max_new_tokens=4), min_version=0))
    failed = []
    runner = threading.Thread(target=pool._dispatch, args=(lambda result: None, failed.append), daemon=True)
    runner.start()
    runner.join(10)
    assert failed, "the dispatcher never reported the actor's error"
    with pytest.raises(ScaleRLError) as raised:  # what the trainer's next_batch raises (pool.check)
        pool.check()
    said = str(raised.value)
    assert message in said
    assert "\n" not in said and "Traceback" not in said and "ray::" not in said


# ----------------------------------------------------------------------------- generator devices
def _spec(model, tokenizer, device):
    from scalerl.pipeline.work import WorkerSpec
    from scalerl.rl.recipe import RecipeConfig

    return WorkerSpec(model_config=model.config, tokenizer=tokenizer, dtype="float32", fp32_lm_head=False,
                      recipe=RecipeConfig(), task_name="arithmetic", task_settings={}, task_reward=None,
                      task_reward_timeout=10, seed=0, device=device)


def test_a_generator_device_the_actors_machine_lacks_is_one_line_from_the_actor(char_tokenizer, random_model):
    """The local backend refuses the same setting for its generator processes in one line before the
    run starts (train/preflight.py: check_generator_device, review cx); Ray's actors may run on other
    machines, so the check is skipped there -- and then nothing says it in one line: the actor's
    constructor raises, Ray kills the actor, and the driver prints the trainer's traceback around
    Ray's and the actor's. GeneratorActor's own rule is that an error raised in its constructor buries
    the line that says what to do: it is kept and raised by ready(), as a ScaleRLError."""
    import torch

    from scalerl.pipeline.ray_backend import GeneratorActor

    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA: the actor would build its generator there")
    actor = GeneratorActor(_spec(random_model, char_tokenizer, "cuda"), 0)  # (what Ray runs on the actor's node)
    with pytest.raises(ScaleRLError) as raised:
        actor.ready()
    said = str(raised.value)
    assert "backend.generator_device" in said and "\n" not in said


def test_a_generator_device_name_torch_does_not_know_is_refused_before_a_cluster_starts(char_tokenizer, random_model,
                                                                                         tmp_path, monkeypatch):
    """`scalerl train --backend ray --set backend.generator_device=cdua`: a typo on any machine, so
    nothing needs the actors to find it out (the local backend's processes: one line, review cx)."""
    from scalerl.pipeline import ray_backend
    from scalerl.train.config import TrainConfig, resolve
    from scalerl.train.trainer import Trainer

    def no_cluster(*args, **kwargs):
        raise AssertionError("a Ray cluster and its actors were started for a device name torch does not know")

    monkeypatch.setattr(ray_backend.RayPool, "for_context", no_cluster)
    model_dir = tmp_path / "model"  # (a random tiny Qwen2: the warm-started `tiny` takes a minute to build)
    random_model.save_pretrained(model_dir)
    char_tokenizer.save_pretrained(model_dir)
    cfg = resolve(TrainConfig(), [
        f"model.name_or_path={model_dir}", "profile=cpu-tiny", f"run.output={tmp_path / 'run'}", "log.progress=false", "run.threads=1", "run.steps=2", "eval.every=2",
        "batch.prompts_per_step=4", "batch.generations_per_prompt=4", "eval.problems=8", "forecast.enabled=false",
        "pipeline=sync", "k=1", "backend.name=ray", "backend.generator_device=cdua",
    ])
    with pytest.raises(ScaleRLError, match="backend.generator_device"):
        Trainer(cfg)


def test_an_actor_wider_than_every_node_is_refused():
    """Resources were compared with the cluster's totals: on two 2-CPU nodes an actor of 3 CPUs passed, and waited
    out the start's timeout (600 s) -- no node can hold it."""
    from scalerl.errors import ConfigError
    from scalerl.pipeline.ray_backend import RayPool

    pool = RayPool.__new__(RayPool)
    pool.ray = SimpleNamespace(cluster_resources=lambda: {"CPU": 4.0},
                               nodes=lambda: [{"Alive": True, "Resources": {"CPU": 2.0}},
                                              {"Alive": True, "Resources": {"CPU": 2.0}},
                                              {"Alive": False, "Resources": {"CPU": 8.0}}])
    pool._check_resources(2, 2.0, 0.0)  # one actor a node
    with pytest.raises(ConfigError, match="1 generator actors of 3 CPU and 0 GPU each, but the nodes of the Ray cluster hold 0"):
        pool._check_resources(1, 3.0, 0.0)


def _device_unavailable():
    from scalerl.models.devices import DeviceUnavailable

    return DeviceUnavailable("backend.generator_device",
                             "backend.generator_device=cuda:1: only 1 GPU(s) are visible",
                             "--set backend.generator_device=cuda:0", instead="cuda:0")


def test_device_unavailable_pickles_as_itself():
    """Raised in a generator process or a Ray actor (each checks its device), a DeviceUnavailable did not unpickle
    (rebuilt from its message alone): through processes a bare ScaleRLError, through Ray a page of traceback, exit 1
    (review dg)."""
    from scalerl.models.devices import DeviceUnavailable

    exc = _device_unavailable()
    back = pickle.loads(pickle.dumps(exc))
    assert type(back) is DeviceUnavailable
    assert str(back) == str(exc)
    assert (back.setting, back.what, back.instead) == (exc.setting, exc.what, exc.instead)


def test_a_generator_process_device_error_reaches_the_trainer_as_its_own_kind():
    from scalerl.models.devices import DeviceUnavailable
    from scalerl.pipeline.processes import _failure

    try:
        raise _device_unavailable()
    except DeviceUnavailable as exc:
        kind, _, payload = _failure(0, exc)
    # What ProcessPool._reader receives, through the results queue's pickling.
    payload = pickle.loads(pickle.dumps(payload))
    assert kind == "said"
    assert isinstance(payload, DeviceUnavailable), type(payload)
    assert payload.instead == "cuda:0"


@pytest.mark.ray_cluster
@pytest.mark.extended  # (make test-all: a device error from a generator actor, one line, is in the default run above)
def test_a_ray_actors_device_error_reaches_the_driver_in_one_line():
    ray = pytest.importorskip("ray")
    from scalerl.pipeline.ray_backend import RayPool

    import sys

    ray.cloudpickle.register_pickle_by_value(sys.modules[__name__])  # (the workers cannot import this test file)
    ray.init(num_cpus=1, include_dashboard=False, log_to_driver=False)
    try:
        @ray.remote(num_cpus=0)
        class Actor:  # what GeneratorActor.ready() raises when build_worker's run_device refuses the device
            def ready(self):
                raise _device_unavailable()

        pool = RayPool.__new__(RayPool)
        pool.ray, pool.actors = ray, [Actor.remote()]
        with pytest.raises(ScaleRLError, match="only 1 GPU"):
            pool._wait_ready(timeout=60)
    finally:
        ray.shutdown()
        ray.cloudpickle.unregister_pickle_by_value(sys.modules[__name__])


def test_actors_that_fit_no_packing_of_the_nodes_are_refused():
    """Three 2-CPU actors on two 3-CPU nodes passed the totals (6 of 6) and the widest node (2 of 3); one actor fits
    a node, so the third waited out the 600 s start (review dg)."""
    from scalerl.errors import ConfigError

    pool = _pool_on_nodes(nodes=[{"CPU": 3.0}, {"CPU": 3.0}])
    with pytest.raises(ConfigError):
        pool._check_resources(3, 2.0, 0.0)


def _pool_on_nodes(nodes):
    from scalerl.pipeline.ray_backend import RayPool

    pool = RayPool.__new__(RayPool)
    total: dict[str, float] = {}
    for node in nodes:
        for name, amount in node.items():
            total[name] = total.get(name, 0.0) + amount
    pool.ray = SimpleNamespace(cluster_resources=lambda: total,
                               nodes=lambda: [{"Alive": True, "Resources": dict(n)} for n in nodes])
    return pool
