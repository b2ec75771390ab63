"""What the report and ``scalerl eval --run`` say of an extension (``--resume --steps N``, N past the trained end)
that was stopped before its new end: config.yaml already holds N, final/ is still the earlier end's model.

Before: stopped before its first new step, the report said nothing of it (read "finished": final/'s step equals
the log's last), and so did a run directory from before final/ recorded its step (final/scalerl_final.json);
``eval --run`` evaluated the earlier end's final/ without saying which step that model is.
"""

import pytest

from scalerl.errors import RunInterrupted

from .test_run_outputs_after_stops import _cfg


@pytest.fixture
def one_thread():
    import torch

    threads = torch.get_num_threads()
    yield
    torch.set_num_threads(threads)


def _extension_stopped_at(tmp_path, monkeypatch, stop_step):
    """A 2-step run, finished (final/ = step 2), extended with ``--steps 4 --resume`` and stopped (Ctrl-C) as
    the step after ``stop_step`` begins (2: before any new step; 3: after one)."""
    from scalerl.train.trainer import Trainer

    out = tmp_path / "run"
    Trainer(_cfg(out, 2)).run()
    real = Trainer._train_step

    def stop(self):
        if self.step == stop_step:
            raise KeyboardInterrupt
        return real(self)

    monkeypatch.setattr(Trainer, "_train_step", stop)
    with pytest.raises(RunInterrupted):
        Trainer.resumed(out, steps=4).run()
    monkeypatch.undo()
    return out


def _status(out):
    from scalerl.train.report import summary_lines, write_run_report

    return dict(summary_lines(write_run_report(out, n_boot=0))).get("status", "")


@pytest.mark.slow
def test_an_extension_stopped_before_its_first_new_step_is_reported_unfinished(tmp_path, monkeypatch, one_thread):
    out = _extension_stopped_at(tmp_path, monkeypatch, 2)
    status = _status(out)
    assert "unfinished" in status and "step 2 of 4" in status, status
    assert f"scalerl train --output {out} --resume" in status


@pytest.mark.slow
@pytest.mark.parametrize("stop_step", [2, 3])
def test_without_the_final_step_marker_a_stopped_extension_is_not_reported_finished(tmp_path, monkeypatch, one_thread,
                                                                                     stop_step):
    # A run directory from before final/scalerl_final.json existed: config.yaml's steps against the log's. That
    # scalerl did not save --resume --steps in config.yaml, so a log short of its end is also what a run
    # shortened with --resume --steps and finished leaves (next test): the report says it cannot be told.
    out = _extension_stopped_at(tmp_path, monkeypatch, stop_step)
    (out / "final" / "scalerl_final.json").unlink()
    status = _status(out)
    assert "cannot be told" in status and f"last step ({stop_step}) is not config.yaml's end (4)" in status, status
    assert f"scalerl train --output {out} --resume" in status and "finished" in status


def _older_shortened_run(tmp_path):
    """A finished 4-step run made to look as an older scalerl left a run planned for 6 steps and shortened
    to its step-4 checkpoint (``--resume --steps 4``): config.yaml kept 6, final/ has no scalerl_final.json."""
    from scalerl.train.trainer import Trainer

    out = tmp_path / "run"
    Trainer(_cfg(out, 4)).run()
    (out / "final" / "scalerl_final.json").unlink()
    text = (out / "config.yaml").read_text()
    head, run_part = text.split("\nrun:\n", 1)
    assert "\n  steps: 4\n" in "\n" + run_part
    (out / "config.yaml").write_text(head + "\nrun:\n" + ("\n" + run_part).replace("\n  steps: 4\n", "\n  steps: 6\n", 1)[1:])
    return out


@pytest.mark.slow
def test_an_older_shortened_run_is_not_called_an_extension_stopped_part_way(tmp_path, one_thread):
    # (review o) It was "unfinished: trained to step 4 of 6; final/ ... an earlier end", and eval --run's note said
    # final/ is an earlier end's model: it is the step-4 model, the run's end.
    from scalerl.commands.evaluate import earlier_end_note

    out = _older_shortened_run(tmp_path)
    status = _status(out)
    assert "cannot be told" in status and "earlier end" not in status and "unfinished" not in status, status
    note = earlier_end_note(str(out))
    assert note is not None and "final/ is the model of step 4 if the run was shortened" in note, note


@pytest.mark.slow
def test_without_marker_or_config_the_report_says_the_finish_cannot_be_told(tmp_path, monkeypatch, one_thread):
    out = _extension_stopped_at(tmp_path, monkeypatch, 3)
    (out / "final" / "scalerl_final.json").unlink()
    (out / "config.yaml").unlink()
    status = _status(out)
    assert "cannot be told" in status, status


@pytest.mark.slow
def test_a_finished_run_has_no_status_line_with_or_without_the_marker(tmp_path, one_thread):
    from scalerl.train.trainer import Trainer

    out = tmp_path / "run"
    Trainer(_cfg(out, 2)).run()
    assert _status(out) == ""
    (out / "final" / "scalerl_final.json").unlink()  # an older run's final/: config.yaml's steps were reached
    assert _status(out) == ""


@pytest.mark.slow
def test_eval_run_of_a_stopped_extension_says_which_step_final_is(tmp_path, monkeypatch, capsys, one_thread):
    from scalerl.cli import main

    out = _extension_stopped_at(tmp_path, monkeypatch, 3)
    capsys.readouterr()
    assert main(["eval", "--run", str(out), "--problems", "2", "--k", "1", "--no-progress"]) == 0
    err = capsys.readouterr().err
    assert "final/ is the model of step 2" in err and "step 3 of 4" in err, err
    assert "checkpoints/step_000003" in err, err  # the newer state, and how to go on from it
    assert f"scalerl train --output {out} --resume" in err
    # A final/ saved before its step was recorded: the run's end in config.yaml against its newest checkpoint.
    from scalerl.commands.evaluate import earlier_end_note

    (out / "final" / "scalerl_final.json").unlink()
    note = earlier_end_note(str(out))
    assert note is not None and "does not record its step" in note and "(step 3), is not config.yaml's end (4)" in note, note
