"""Backend settings that cannot run are refused up front, on one line, before anything starts."""

from __future__ import annotations

import pytest

from scalerl.cli import main
from scalerl.errors import ConfigError
from scalerl.train.config import TrainConfig, resolve


@pytest.mark.parametrize("overrides,message", [
    (["backend.generator=vllm"], "backend.generator=vllm runs in Ray actors: add --backend ray"),
    (["backend.name=ray", "backend.weight_sync=nccl"], "weight_sync=nccl is implemented for the vllm generator"),
    (["backend.generators=0"], "backend.generators must be >= 1"),
    # (A negative or NaN reservation reached Ray: a ValueError traceback after the cluster started.)
    (["backend.name=ray", "backend.generator_cpus=-1"], r"backend.generator_cpus must be a number >= 0, got -1"),
    (["backend.name=ray", "backend.generator_cpus=nan"], r"backend.generator_cpus: expected a number, got 'nan'"),
    (["backend.name=ray", "backend.generator_gpus=-0.5"], r"backend.generator_gpus must be a number >= 0, got -0.5"),
    (["backend.workers=threads", "backend.generator_device=cuda"], "thread workers share the trainer's device"),
    (["backend.workers=processes", "backend.updates=seeded"], "backend.updates=seeded runs on the local backend's "
                                                              "generator threads"),
    (["backend.name=ray", "backend.updates=seeded"], "with processes or Ray use backend.updates=timing"),
    (["backend.updates=sometimes"], "backend.updates: 'sometimes' is not one of 'auto', 'seeded', 'timing'"),
    (["eval.engine=generators"], "eval.engine=generators evaluates on Ray's generator actors: add --backend ray"),
    (["run.nproc=2", "run.generate_on_shards=true"], "pipeline-rl-k's generator threads would each hold one there"),
])
def test_unsupported_backend_combinations_are_config_errors(overrides, message):
    with pytest.raises(ConfigError, match=message):
        resolve(TrainConfig(), overrides)


def test_the_cli_prints_them_and_exits_2(tmp_path, capsys):
    code = main(["train", "--model", "tiny", "--output", str(tmp_path / "r"), "--no-progress",
                 "--set", "backend.generator=vllm"])
    err = capsys.readouterr().err
    assert code == 2 and "--backend ray" in err and "Traceback" not in err


def test_importing_scalerl_needs_neither_vllm_nor_ray():
    import subprocess
    import sys

    code = ("import sys; sys.modules['vllm'] = None; sys.modules['ray'] = None\n"
            "import scalerl.cli, scalerl.train.trainer, scalerl.pipeline.registry, scalerl.generate.vllm\n"
            "import scalerl.pipeline.ray_backend, scalerl.generate.vllm_worker\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_ray_backend_without_ray_is_a_clear_error(monkeypatch):
    import sys

    from scalerl.pipeline.ray_backend import _ray

    monkeypatch.setitem(sys.modules, "ray", None)
    with pytest.raises(ConfigError, match=r"pip install 'scalerl\[ray\]'"):
        _ray()


def test_updates_auto_is_seeded_on_local_threads_only_and_placement_splits_the_cores():
    from scalerl.pipeline.config import BackendConfig, update_mode
    from scalerl.pipeline.registry import trainer_threads

    assert update_mode(BackendConfig()) == "seeded"
    assert update_mode(BackendConfig(workers="processes")) == "timing"
    assert update_mode(BackendConfig(name="ray")) == "timing"
    assert update_mode(BackendConfig(updates="timing")) == "timing"
    # The trainer gets the cores the generators leave, at least one; sync keeps torch's default.
    assert trainer_threads("pipeline-rl-k", BackendConfig(), cores=2) == 1
    assert trainer_threads("pipeline-rl-k", BackendConfig(generators=2, generator_threads=2), cores=16) == 12
    assert trainer_threads("pipeline-rl-k", BackendConfig(generators=4), cores=2) == 1
    assert trainer_threads("sync", BackendConfig(), cores=2) is None
    assert trainer_threads("pipeline-rl-k", BackendConfig(name="ray"), cores=2) is None


def test_evaluations_go_to_vllm_actors_by_default_and_stay_with_the_trainer_otherwise():
    from scalerl.train.config import eval_engine

    engine = lambda *o: eval_engine(resolve(TrainConfig(), list(o)))  # noqa: E731
    assert engine() == "trainer"
    assert engine("backend.name=ray") == "trainer"  # hf actors: no faster than the trainer's model
    assert engine("backend.name=ray", "backend.generator=vllm") == "generators"
    assert engine("backend.name=ray", "backend.generator=vllm", "eval.engine=trainer") == "trainer"
    assert engine("backend.name=ray", "eval.engine=generators") == "generators"


def test_a_ray_address_where_nothing_listens_is_one_line_at_once():
    """`--set backend.ray_address=HOST:PORT` with no cluster there (a typo, a cluster not started):
    Ray retried for minutes, printing GCS time-outs, before anything said what was wrong."""
    import socket
    import time

    pytest.importorskip("ray")
    from scalerl.pipeline.ray_backend import init_ray

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    t = time.monotonic()
    with pytest.raises(ConfigError, match=rf"backend.ray_address 127.0.0.1:{port}: no Ray cluster answers there .*"
                                          r"ray start --head"):
        init_ray(f"127.0.0.1:{port}")
    assert time.monotonic() - t < 15


def test_nccl_weight_sync_with_a_trainer_off_cuda_is_refused_before_ray_starts(random_model, char_tokenizer):
    """vLLM actors with the trainer on a CPU (``weight_sync`` auto is nccl for vllm): the refusal
    came only after the Ray cluster and every actor had started (minutes of vLLM loading)."""
    ray = pytest.importorskip("ray")
    from scalerl.pipeline.ray_backend import RayPool
    from scalerl.pipeline.work import WorkerSpec
    from scalerl.rl.recipe import RecipeConfig

    spec = WorkerSpec(model_config=random_model.config, tokenizer=char_tokenizer, dtype="float32",
                      fp32_lm_head=False, recipe=RecipeConfig(), task_name="arithmetic", task_settings={},
                      task_reward=None, task_reward_timeout=5, seed=0, generator="vllm")
    running = ray.is_initialized()
    with pytest.raises(ConfigError, match=r"weight_sync=nccl needs the trainer on a CUDA GPU .*object_store"):
        RayPool(spec, random_model, 0, 1, weight_sync="auto")
    assert ray.is_initialized() == running  # no cluster started (nor joined) for it


def test_more_generator_processes_than_cores_get_a_one_line_note(monkeypatch, capsys):
    """backend.workers=processes ran 5 generator processes and the trainer on 2 cores without a
    word (Ray refuses more actors than CPUs): a one-line note, not an error; none where they fit."""
    from types import SimpleNamespace

    from scalerl.pipeline import processes, registry
    from scalerl.pipeline.config import BackendConfig

    monkeypatch.setattr(processes.ProcessPool, "for_context", classmethod(lambda cls, ctx: "pool"))
    monkeypatch.setattr(registry, "cpu_cores", lambda: 2)
    ctx = lambda **kw: SimpleNamespace(backend=BackendConfig(workers="processes", **kw))
    assert registry._process_pool(ctx(generators=5)) == "pool"
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("note: ")
    assert "5 generator processes" in err and "2 CPU cores" in err and "backend.generators=1" in err
    registry._process_pool(ctx(generators=1))
    registry._process_pool(ctx(generators=1, generator_threads=2))  # 1 x 2 threads + the trainer: 3 on 2
    assert capsys.readouterr().err.count("note: ") == 1
    registry._process_pool(ctx(generators=2, generator_device="cuda"))  # 2 + 1 on 2: still more
    assert capsys.readouterr().err.count("note: ") == 1


class _FakeRay:
    """A ``ray`` module whose ``init`` raises ``error`` (what Ray raises), recording its calls."""

    def __init__(self, error: BaseException | None = None) -> None:
        self.error, self.inits = error, []

    def is_initialized(self) -> bool:
        return False

    def init(self, **kwargs) -> None:
        self.inits.append(kwargs)
        if self.error is not None:
            raise self.error


def _free_port() -> int:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_ray_address_auto_with_no_cluster_running_is_one_line(monkeypatch):
    """`--set backend.ray_address=auto` (or RAY_ADDRESS=auto) with no cluster on this machine: Ray's
    ConnectionError came out as a traceback."""
    import sys

    from scalerl.pipeline.ray_cluster import init_ray

    fake = _FakeRay(ConnectionError("Could not find any running Ray instance. Please specify the one to connect to "
                                    "by setting `--address` flag or `RAY_ADDRESS` environment variable."))
    monkeypatch.setitem(sys.modules, "ray", fake)
    monkeypatch.delenv("RAY_ADDRESS", raising=False)
    with pytest.raises(ConfigError, match=r"^backend.ray_address auto: Could not find any running Ray instance; "
                                          r"start a cluster with ray start --head, or unset backend.ray_address "
                                          r"and RAY_ADDRESS \(a local cluster then starts by itself\)$"):
        init_ray("auto")
    monkeypatch.setenv("RAY_ADDRESS", "auto")  # the environment's address, named as such
    with pytest.raises(ConfigError, match=r"^backend.ray_address auto: Could not find"):
        init_ray(None)


def test_a_ray_client_address_where_nothing_listens_is_one_line_at_once(monkeypatch):
    """`ray://HOST:PORT` (a Ray Client address) with nothing there: Ray's client retried for 30 s,
    then raised a ConnectionError traceback ("ray client connection timeout")."""
    import sys

    from scalerl.pipeline.ray_cluster import init_ray

    fake = _FakeRay()
    monkeypatch.setitem(sys.modules, "ray", fake)
    port = _free_port()
    with pytest.raises(ConfigError, match=rf"^backend.ray_address ray://127.0.0.1:{port}: no Ray cluster answers "
                                          r"there .*ray start --head"):
        init_ray(f"ray://127.0.0.1:{port}")
    assert fake.inits == []  # refused before Ray was asked


def test_a_ray_study_with_an_address_where_nothing_listens_is_one_line_at_once(monkeypatch, tmp_path, capsys):
    """`scalerl study --backend ray --ray-address HOST:PORT` with no cluster there: the study called
    ray.init itself, which retried for minutes (GCS time-outs; 5 minutes here before it was killed)."""
    import sys

    import scalerl.study.runner as runner

    fake = _FakeRay(AssertionError("ray.init was called with an address where nothing listens"))
    monkeypatch.setitem(sys.modules, "ray", fake)
    # Before the study's models are built or loaded (a warm start of minutes before the one line, once)
    monkeypatch.setattr(runner, "prepare_models", lambda *a, **k: pytest.fail("models prepared before the refusal"))
    port = _free_port()
    code = main(["study", "--output", str(tmp_path / "s"), "--family", "loo", "--only", "loo-loss-dapo",
                 "--steps", "8", "--eval-every", "2", "--no-progress", "--no-report", "--backend", "ray",
                 "--ray-address", f"127.0.0.1:{port}"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and fake.inits == [], err
    assert err[-1].startswith(f"scalerl study: error: --ray-address 127.0.0.1:{port}: no Ray cluster answers there")
    assert f"ray start --head --port {port}" in err[-1]
