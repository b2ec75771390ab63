import os

import pytest


@pytest.fixture(scope="session")
def scalerl_cache(tmp_path_factory):
    """One cache for the session: the real ``tiny`` model is warm-started once (~20 s) and
    shared by every end-to-end test and subprocess."""
    path = tmp_path_factory.mktemp("scalerl-cache")
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


def small_args(output, *extra):
    """A few-step run of the real tiny model: small batches and evaluations, no progress bar."""
    return [
        "train", "--model", "tiny", "--output", str(output), "--no-progress", "--steps", "4", "--eval-every", "2",
        "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4",
        "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2", "--set", "forecast.min_points=3",
        "--set", "forecast.bootstrap=20", *extra,
    ]
