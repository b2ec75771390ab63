import os

import pytest


@pytest.fixture(scope="session")
def study_cache(tmp_path_factory):
    """The tiny model cache for the study's end-to-end tests: the one a test session already
    uses (tests/train sets $SCALERL_CACHE for the session), else a fresh one -- so the ~20 s
    warm start happens once per session, not once per test directory."""
    old = os.environ.get("SCALERL_CACHE")
    path = old or str(tmp_path_factory.mktemp("scalerl-cache"))
    os.environ["SCALERL_CACHE"] = path
    from scalerl.models.tiny import TinySpec, tiny_model_dir

    tiny_model_dir(TinySpec())
    yield path
    if old is None:
        os.environ.pop("SCALERL_CACHE", None)


def micro_args(output, *extra):
    """A micro-study: the real tiny model, 3 steps per run, small batches and evaluations."""
    return [
        "study", "--output", str(output), "--steps", "3", "--eval-every", "1", "--no-progress", "--bootstrap", "50",
        "--set", "batch.prompts_per_step=4",
        "--set", "batch.generations_per_prompt=4", "--set", "eval.problems=16", "--set", "eval.samples_per_problem=2",
        "--set", "forecast.enabled=false", *extra,
    ]
