"""The default recipe (PipelineRL-8 on generator threads, seeded in-flight updates) is reproducible:
the same seed gives the same run log -- evaluations and training figures -- whatever the threads'
timing. (tests/train/test_resume.py: a killed and resumed run repeats the uninterrupted one.)"""

import pytest

from scalerl.cli import main
from scalerl.runlog import read_runlog

from .conftest import small_args

#: Columns that measure wall-clock time, which no two runs share.
TIMING = ("gpu_hours",)


def _rows(out):
    _, rows, notes = read_runlog(out / "runlog.jsonl")
    assert not notes
    return [{k: v for k, v in r.items() if k not in TIMING and not k.startswith(("pipeline/", "memory/"))} for r in rows]


# bf16 + LoRA is `extended` (make test-all, ~30 s): the merged-adapter copies it adds are checked
# against the trained model by tests/train/test_adapters.py.
@pytest.mark.parametrize(("generators", "extra"), [(1, []), (2, []),
                                                   pytest.param(2, ["--set", "precision.compute=bf16",
                                                                    "--set", "model.lora.rank=4"],
                                                                marks=pytest.mark.extended)],
                         ids=["default", "two-generators", "two-generators-bf16-lora"])
def test_same_seed_same_run_log_for_the_default_recipe(tiny_dir, tmp_path, capsys, generators, extra):
    """bf16-lora: the generator threads hold bf16 copies with the adapter merged in, and the weights
    that land mid-sequence are the merged ones (scalerl.models.lora) -- still reproducible."""
    logs = []
    for name in ("a", "b"):
        assert main(small_args(tmp_path / name, "--steps", "6", "--seed", "3",
                               "--set", f"backend.generators={generators}", *extra)) == 0
        logs.append(_rows(tmp_path / name))
    header = read_runlog(tmp_path / "a" / "runlog.jsonl")[0]
    assert header["config"]["recipe"]["off_policy"] == {"pipeline": "pipeline-rl-k", "k": 8}
    evals = [r for r in logs[0] if r["type"] == "eval"]
    trains = [r for r in logs[0] if r["type"] == "train"]
    assert [r["step"] for r in evals] == [0, 2, 4, 6] and len(trains) == 6
    assert logs[0] == logs[1]
    if generators == 1:  # every batch on the weights one step behind (the first on the initial ones)
        assert [r["lag_max"] for r in trains] == [0.0] + [1.0] * 5
    else:  # one update lands mid-sequence: tokens from two policy versions in one batch
        assert any(r["lag_max"] > r["lag_mean"] > 0 for r in trains)


# ----------------------------------------------------------------------------- review dc


def test_what_is_not_reproducible():
    """not_reproducible: timing-driven in-flight updates (what auto picks off local threads) and generators' own
    sampling streams (run.deterministic=false, not in a checkpoint); the default recipe and sync are reproducible."""
    from scalerl.train.config import TrainConfig, not_reproducible, resolve

    assert not_reproducible(resolve(TrainConfig())) is None
    assert not_reproducible(resolve(TrainConfig(), ["pipeline=sync"])) is None
    assert "auto picks" in not_reproducible(resolve(TrainConfig(), ["backend.workers=processes"]))
    assert "backend.updates=timing:" in not_reproducible(resolve(TrainConfig(), ["backend.updates=timing"]))
    one_stream = resolve(TrainConfig(), ["pipeline=sync", "run.deterministic=false"])
    assert not_reproducible(one_stream) is None  # (seeded from the run's seed: two runs repeat -- review df)
    assert "run.deterministic=false" in not_reproducible(one_stream, resumed=True)
    two = resolve(TrainConfig(), ["run.deterministic=false", "backend.generators=2"])
    assert "timing decides which generator" in not_reproducible(two)
    ray_actors = resolve(TrainConfig(), ["profile=cpu-tiny", "backend.name=ray", "backend.generators=2",
                                         "run.deterministic=false", "pipeline=ppo-off-policy-k", "k=2"])
    assert "timing decides which generator" in not_reproducible(ray_actors)  # (any mode's actors -- review dg)


def test_a_resume_that_does_not_repeat_the_run_says_so(tiny_dir, tmp_path, capsys, monkeypatch):
    """run.deterministic=false (each generator's stream seeded once, not in a checkpoint): a resumed run's rows
    differed from the uninterrupted run's from its first step on, and the resume did not say so; two new runs of one
    seed repeat (one stream), so the start says nothing."""
    from scalerl.train.trainer import Trainer

    out, step = tmp_path / "run", Trainer._train_step

    def stopped(self):
        if self.step == 3:
            raise KeyboardInterrupt
        step(self)

    args = small_args(out, "--no-report", "--set", "pipeline=sync", "--set", "run.deterministic=false")
    monkeypatch.setattr(Trainer, "_train_step", stopped)
    assert main(args) == 130
    assert "not reproducible" not in capsys.readouterr().err
    monkeypatch.setattr(Trainer, "_train_step", step)
    assert main([*args, "--resume"]) == 0
    assert "its rows from here need not repeat an uninterrupted run's: run.deterministic=false" in capsys.readouterr().err
