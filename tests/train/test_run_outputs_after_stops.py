"""What a training run's own outputs tell its user after a stop (review k's reproducers, each failing on
5b30127): the report and the stop line of an extended run (``--steps`` more, ``--resume``) stopped before
its new end, the report's sample of an evaluation that was never logged, and a run directory that a
second command deletes or resumes while its run is still writing it."""

import json
import math
import os

import pytest

from scalerl.errors import InputError, RunInterrupted


def _cfg(out, steps, *extra):
    from scalerl.train.config import TrainConfig, resolve

    return resolve(TrainConfig(), ["model.name_or_path=tiny", f"run.output={out}", f"run.steps={steps}", "eval.every=1",
                                   "log.progress=false", "pipeline=sync", "batch.prompts_per_step=4",
                                   "batch.generations_per_prompt=4", "eval.problems=4", "eval.samples_per_problem=1",
                                   "forecast.enabled=false", "run.threads=1", *extra])


@pytest.fixture
def one_thread():
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _stopped_extension(tmp_path, monkeypatch):
    """A 2-step run, finished (final/ = step 2), then extended with ``--steps 4 --resume`` and stopped
    (Ctrl-C) as step 4 begins: the log holds step 3's evaluation, final/ is still step 2's."""
    from scalerl.train.trainer import Trainer

    out = tmp_path / "run"
    Trainer(_cfg(out, 2)).run()
    real = Trainer._train_step

    def stop_at_step_3(self):
        if self.step == 3:
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(Trainer, "_train_step", stop_at_step_3)
    with pytest.raises(RunInterrupted) as stopped:
        Trainer.resumed(out, steps=4).run()
    return out, str(stopped.value)


@pytest.mark.slow
def test_the_report_of_a_stopped_extension_says_it_is_unfinished(tmp_path, monkeypatch, one_thread):
    from scalerl.train.report import summary_lines, write_run_report

    out, _ = _stopped_extension(tmp_path, monkeypatch)
    rep = write_run_report(out, n_boot=20)
    assert rep.facts["steps"] == 3  # the log goes to step 3 ...
    lines = dict(summary_lines(rep))
    assert "status" in lines and "unfinished" in lines["status"]  # ... and final/ is step 2's, not the run's end


@pytest.mark.slow
def test_the_stop_line_of_an_extension_resumes_it_to_its_new_end(tmp_path, monkeypatch, one_thread):
    from scalerl.train.trainer import Trainer

    out, line = _stopped_extension(tmp_path, monkeypatch)
    monkeypatch.undo()
    assert "--resume" in line
    if "--steps 4" not in line:  # following the line as printed must train steps 4
        summary = Trainer.resumed(out).run()  # what `scalerl train --output OUT --resume` does
        assert summary.steps == 4, f"the line {line!r} ended the run at step {summary.steps}, not 4"


def test_the_reports_sample_comes_from_an_evaluation_in_the_report(tmp_path):
    """What a kill -9 during step 2's evaluation left (reproduced with `scalerl train ... --set
    'eval.sets=[val,hard]'`, SIGKILL once samples.jsonl held a step-2 row): the run log's last
    evaluation is step 0's, samples.jsonl already holds a sample of step 2's unfinished one."""
    from scalerl.runlog import RunLogWriter
    from scalerl.train.report import write_run_report

    with RunLogWriter(tmp_path / "runlog.jsonl", {"run": "r", "config": {}}) as log:
        log.append({"type": "eval", "step": 0, "flops": 0.0, "val/pass_rate": 0.3})
        log.append({"type": "train", "step": 1})
        log.append({"type": "train", "step": 2})
    rows = [{"step": 0, "version": 0, "set": "val", "problem_id": f"p{i}", "passed": i == 0} for i in range(3)]
    rows.append({"step": 2, "version": 2, "set": "val", "problem_id": "q0", "passed": False})
    (tmp_path / "samples.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert write_run_report(tmp_path, n_boot=0).sample["step"] == 0


@pytest.mark.slow
def test_overwrite_refuses_a_directory_whose_run_is_alive(tmp_path, one_thread):
    """Reproduced with two shells: `scalerl train ... --output D` running, then the same command with
    `--overwrite`: the second deleted D, then refused ("already holds a run"); the first went on writing
    into deleted files and ended with "no runlog.jsonl here": run log, config.yaml and samples lost."""
    from scalerl.commands._train_args import overwrite_run_dir
    from scalerl.train.trainer import Trainer

    out = tmp_path / "run"
    trainer = Trainer(_cfg(out, 2))  # the run has started: its directory is open
    try:
        with pytest.raises(InputError, match="a run is training in it now"):
            overwrite_run_dir(out)
        assert (out / "runlog.jsonl").exists() and (out / "config.yaml").exists()
        # Nor does a second run resume it beside the first (both "succeeded", one's rows, the other's checkpoints).
        with pytest.raises(InputError, match="a run is training in it now"):
            Trainer.resumed(out)
        assert (out / "runlog.jsonl").exists() and (out / "config.yaml").exists()
    finally:
        trainer._close(False)
        trainer.source.close()
    overwrite_run_dir(out)  # its run closed: the directory is free again
    assert not out.exists()


# Review l's reproducers (each failing on 707781e)

@pytest.mark.slow
def test_a_run_shortened_to_its_checkpoint_keeps_its_new_end(tmp_path, monkeypatch, one_thread):
    """Reproduced with the CLI: `scalerl train --model tiny --steps 4 --eval-every 2 ... --output C`, SIGTERM
    once checkpoints/step_000002 was written ("interrupted at step 2, last checkpoint at step 2"); then
    `scalerl train --output C --resume --steps 2` ("already at step 2 of run.steps = 2: the run is done ... A larger
    --steps extends it"; final/ = step 2, report: finished) left config.yaml's run.steps at 4, and a later
    `scalerl train --output C --resume` trained steps 3-4 and replaced final/ with step 4's model."""
    from scalerl.config import load_yaml
    from scalerl.train.config import TrainConfig
    from scalerl.train.trainer import Trainer

    out = tmp_path / "run"
    real = Trainer._train_step

    def stop_at_step_3(self):
        if self.step == 2:  # step 2's checkpoint is written (eval.every=1)
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(Trainer, "_train_step", stop_at_step_3)
    with pytest.raises(RunInterrupted):
        Trainer(_cfg(out, 4)).run()
    monkeypatch.undo()
    assert Trainer.resumed(out, steps=2).run().steps == 2  # shortened: final/ is step 2's, the run is done
    assert json.loads((out / "final" / "scalerl_final.json").read_text()) == {"step": 2}
    assert load_yaml(TrainConfig, out / "config.yaml").run.steps == 2
    assert Trainer.resumed(out).run().steps == 2  # `--resume` alone: nothing more to train


def test_the_forecast_error_of_a_run_whose_last_evaluation_is_nan_is_a_number(tmp_path):
    """`scalerl report DIR` on a run log whose last evaluation row has "val/pass_rate": NaN printed "observed
    0.567, error +nan" (and the note that the evaluation is left out of the fits)."""
    from scalerl.runlog import RunLogWriter
    from scalerl.train.report import summary_lines, write_run_report

    with RunLogWriter(tmp_path / "runlog.jsonl", {"run": "r", "config": {"forecast": {"x": "flops"}}}) as log:
        for i in range(12):
            rate = 0.2 + 0.4 * (1 - math.exp(-i / 4)) if i < 11 else float("nan")
            log.append({"type": "eval", "step": 10 * i, "flops": 1e12 * (10 * i + 1), "val/pass_rate": rate})
    rep = write_run_report(tmp_path, n_boot=20)
    assert "forecast_error" in rep.facts
    line = dict(summary_lines(rep))["forecast of the final val/pass_rate from the first half of the compute"]
    assert math.isfinite(rep.facts["forecast_error"]), line


def test_overwrite_of_a_symlinked_run_directory_is_one_line_or_done(tmp_path):
    """Reproduced: `scalerl train ... --output LINK` (LINK -> a real directory) trained; the same command with
    --overwrite ended in "OSError: Cannot call rmtree on a symbolic link" (a traceback, exit 1)."""
    from scalerl.commands._train_args import overwrite_run_dir

    real, link = tmp_path / "real", tmp_path / "link"
    real.mkdir()
    (real / "config.yaml").write_text("run: {steps: 1}\n")
    (real / "runlog.jsonl").write_text("")
    os.symlink(real, link)
    with pytest.raises(InputError, match="is a symbolic link"):
        overwrite_run_dir(link)
    assert (real / "runlog.jsonl").exists()
