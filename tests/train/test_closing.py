"""A run's parts are all closed at its end, whichever close fails: close_each, and the trainer's use of it."""

import threading

import pytest
import torch

from scalerl.train.closing import close_each
from scalerl.train.config import TrainConfig, resolve
from scalerl.train.trainer import Trainer


def test_every_step_runs_and_the_first_error_is_raised(capsys):
    ran = []

    def fails(name):
        def step():
            ran.append(name)
            raise RuntimeError(name)
        return step

    with pytest.raises(RuntimeError, match="^a$"):
        close_each([fails("a"), lambda: ran.append("b"), fails("c")], failing=False)
    assert ran == ["a", "b", "c"]
    assert "RuntimeError: c" in capsys.readouterr().err  # the later error: a note


def test_an_error_already_on_its_way_out_wins(capsys):
    ran = []

    def interrupted():
        raise KeyboardInterrupt

    close_each([interrupted, lambda: ran.append("b")], failing=True)  # nothing raised: the run's error will be
    assert ran == ["b"]
    assert "KeyboardInterrupt" in capsys.readouterr().err


def test_a_task_close_that_raises_still_closes_the_generators(tiny_dir, tmp_path):
    """PipelineRL-k's generator threads and torch's thread count, after a user task's close() raised."""
    threads_before, torch_threads = set(threading.enumerate()), torch.get_num_threads()
    cfg = resolve(TrainConfig(), ["model.name_or_path=tiny", f"run.output={tmp_path / 'run'}", "run.steps=1",
                                  "eval.every=1", "log.progress=false", "batch.prompts_per_step=4",
                                  "batch.generations_per_prompt=4", "eval.problems=4", "eval.samples_per_problem=1",
                                  "forecast.enabled=false", f"run.threads={1 if torch_threads > 1 else 2}"])
    trainer = Trainer(cfg)

    def close():
        raise RuntimeError("the task's own close failed")

    trainer._close_task = close  # (the task: a frozen dataclass; this is the call to its close())
    try:
        with pytest.raises(RuntimeError, match="the task's own close failed"):
            trainer.run()
        left = [t for t in set(threading.enumerate()) - threads_before if t.is_alive()]
        assert not left, f"threads left running: {left}"
        assert torch.get_num_threads() == torch_threads
    finally:
        trainer.source.close()
        torch.set_num_threads(torch_threads)


@pytest.mark.parametrize("lost", ["process", "actors"])
def test_a_lost_generator_says_how_to_resume_this_run(tiny_dir, tmp_path, lost):
    """A generator process killed, or every Ray actor lost with its restarts used up: the one line said
    "the run continues from its last checkpoint with scalerl train --output RUN_DIR --resume" --
    a placeholder where the trainer knows the run directory."""
    from scalerl.pipeline.processes import GeneratorExited, exited_message

    out = tmp_path / "run"
    cfg = resolve(TrainConfig(), ["model.name_or_path=tiny", f"run.output={out}", "run.steps=2", "eval.every=2",
                                  "log.progress=false", "batch.prompts_per_step=4", "batch.generations_per_prompt=4",
                                  "eval.problems=4", "eval.samples_per_problem=1", "forecast.enabled=false",
                                  "pipeline=sync", "k=1"])
    trainer = Trainer(cfg)
    if lost == "process":
        error = GeneratorExited(exited_message(0, -9))
    else:
        ray = pytest.importorskip("ray")
        from scalerl.pipeline.ray_backend import ActorsLost, actors_lost_message

        error = ActorsLost(actors_lost_message(3, ray.exceptions.ActorDiedError()))

    def next_batch(step):  # what the pool raises in the trainer once its generator is gone
        raise error

    trainer.source.next_batch = next_batch
    with pytest.raises(type(error)) as caught:
        trainer.run()
    message = str(caught.value)
    assert "RUN_DIR" not in message and message.endswith(f"from its last checkpoint with scalerl train --output {out} "
                                                         "--resume"), message
