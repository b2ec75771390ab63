import contextlib
import os

import pytest


def shared_dir(tmp_path_factory, name):
    """A directory every pytest-xdist worker of this session shares (the workers' base temp
    directories have one parent), so cached models are built once, not once per worker; the
    cache's own file lock keeps two workers from building the same model at once."""
    if os.environ.get("PYTEST_XDIST_WORKER"):
        path = tmp_path_factory.getbasetemp().parent / name
        path.mkdir(exist_ok=True)
        return path
    return tmp_path_factory.mktemp(name)


@pytest.fixture(scope="session")
def ray_cluster_lock(tmp_path_factory):
    """The lock a Ray cluster is started under: a file lock every xdist worker shares (a no-op
    without xdist). One object per worker, and filelock's locks are reentrant, so a module that
    keeps one Ray session for its tests (``test_ray_backend.py``) holds it from ``ray.init`` to
    ``ray.shutdown`` while its tests take it again."""
    if not os.environ.get("PYTEST_XDIST_WORKER"):
        return contextlib.nullcontext()
    from filelock import FileLock

    return FileLock(shared_dir(tmp_path_factory, "locks") / "ray_cluster.lock")


@pytest.fixture(autouse=True)
def one_ray_cluster_at_a_time(request):
    """Tests marked ``ray_cluster`` run one at a time across xdist workers: two Ray clusters busy
    at once on a two-core machine time out (a joined node's ``ray start`` failed in set-up). A file
    lock, not xdist's ``xdist_group``: pytest-xdist 3.8's ``--dist loadgroup`` groups nothing under
    pytest 9.2 (it renames ``item._nodeid``, which pytest 9.2 no longer reads), and the lock holds
    whichever way the tests are scheduled."""
    if request.node.get_closest_marker("ray_cluster") is None:
        yield
        return
    with request.getfixturevalue("ray_cluster_lock"):
        yield


@pytest.fixture(scope="session")
def char_tokenizer():
    from scalerl.models.char_tokenizer import build_char_tokenizer

    return build_char_tokenizer()


@pytest.fixture(scope="session")
def random_model(char_tokenizer):
    """A freshly initialised tiny Qwen2 (no warm start): fast, with non-trivial weights."""
    from scalerl.models.tiny import TinyArchitecture, build_tiny_model

    arch = TinyArchitecture(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2)
    return build_tiny_model(char_tokenizer, arch, seed=0)


@pytest.fixture(scope="session")
def warm_tiny_dir(tmp_path_factory):
    """A short warm start of the tiny model on 1-digit addition, cached in a session tmp dir."""
    from scalerl.models.tiny import TinySpec, tiny_model_dir

    spec = TinySpec(task_settings={"digits": 1}, warm_start_steps=60, warm_start_batch_size=32)
    # A cache of its own: tests list its directory and expect this model alone there.
    return tiny_model_dir(spec, cache_dir=shared_dir(tmp_path_factory, "scalerl-cache-warm"))


@pytest.fixture(scope="session")
def scalerl_cache(tmp_path_factory):
    """One cache for the session: the real ``tiny`` model is warm-started once (~20 s) and
    shared by every end-to-end test and subprocess."""
    path = shared_dir(tmp_path_factory, "scalerl-cache")
    old = os.environ.get("SCALERL_CACHE")
    os.environ["SCALERL_CACHE"] = str(path)
    yield path
    if old is None:
        os.environ.pop("SCALERL_CACHE", None)
    else:
        os.environ["SCALERL_CACHE"] = old


@pytest.fixture(scope="session")
def tiny_dir(scalerl_cache):
    from scalerl.models.tiny import TinySpec, tiny_model_dir

    return tiny_model_dir(TinySpec(warm_start_steps=200), cache_dir=scalerl_cache)


def _load_example(name):
    """A module from examples/ (the README's scripts are what the tests use, not a copy)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "examples" / f"{name}.py"
    spec = importlib.util.spec_from_file_location(f"scalerl_examples_{name}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="session")
def user_model(tmp_path_factory):
    """``user_model(arch, positions=2048, dtype="bfloat16")`` -> the directory of a random Llama /
    Qwen2 / GPT-2 saved like a hub checkpoint (bf16, byte-level BPE tokenizer, chat template),
    built once per session by examples/user_model.py."""
    module = _load_example("user_model")
    root = tmp_path_factory.mktemp("user-models")
    built = {}

    def make(arch="llama", positions=2048, dtype="bfloat16"):
        key = (arch, positions, dtype)
        if key not in built:
            built[key] = module.save_user_model(root / f"{arch}-{positions}-{dtype}", arch, positions=positions,
                                                dtype=dtype)
        return built[key]

    return make


@pytest.fixture(scope="session")
def math_jsonl(tmp_path_factory):
    """The 200-row math JSONL of examples/user_model.py."""
    return _load_example("user_model").write_math_data(tmp_path_factory.mktemp("math") / "math.jsonl")


@pytest.fixture
def figures(monkeypatch):
    """The figures the plotting functions would close, kept open for inspection (matplotlib only:
    no model, no torch)."""
    from scalerl.curves.plot import _plt

    plt = _plt()
    close, kept = plt.close, []
    monkeypatch.setattr(plt, "close", lambda fig=None: kept.append(fig))
    yield kept
    for fig in kept:
        close(fig)


@pytest.fixture
def two_level_calibration(tmp_path):
    """The shipped calibration cut to its factors at levels 0.8 and 0.9 (a hand-edited file): no
    factors at the 0.95 a forecast is made at unless told otherwise."""
    import json

    from scalerl.curves.bands import default_calibration

    d = default_calibration().as_dict()
    keep = [i for i, lv in enumerate(d["levels"]) if lv in (0.8, 0.9)]
    for key in ("levels", "q_confidence", "q_prediction", "q_gain"):
        d[key] = [d[key][i] for i in keep]
    path = tmp_path / "two-levels.json"
    path.write_text(json.dumps(d))
    return path


@pytest.fixture()
def onednn(monkeypatch):
    """scalerl.models.onednn_linear with the oneDNN path switched on whatever this CPU (it is chosen only
    on AMD CPUs with AVX-512), and for every call (MIN_ROWS 1: the tests' batches are small)."""
    import torch

    import scalerl.models.onednn_linear as linear_module

    if not torch.backends.mkldnn.is_available():
        pytest.skip("torch was built without oneDNN")
    monkeypatch.setattr(linear_module, "onednn_faster", lambda: True)
    monkeypatch.setattr(linear_module, "MIN_ROWS", 1)
    return linear_module
