"""SIGTERM (`kill PID`, a scheduler's stop) stops a command as Ctrl-C does, exit status 143."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from scalerl import cli
from scalerl.errors import RunInterrupted, Terminated, interrupt_status
from scalerl.stop_signals import sigterm_stops_like_ctrl_c, stops_deferred


def test_sigterm_raises_terminated_inside_the_block_and_the_handler_is_put_back():
    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        with sigterm_stops_like_ctrl_c():
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at the next bytecode: never this long
    assert signal.getsignal(signal.SIGTERM) is before


def test_a_sigterm_that_a_block_turned_into_sys_exit_reaches_the_handler_from_before():
    """`kill PID` while `ray.init` starts a cluster (a few seconds of every --backend ray run): Ray first
    sets a SIGTERM handler that calls sys.exit(15), and the command ended with exit 15 and no word
    (benchmarks/kill_fuzz.py --backend ray). keeps_sigterm delivers it again to the handler from
    before: under a command, Terminated -- the run stops as anywhere else, 143."""
    from scalerl.stop_signals import keeps_sigterm

    before = signal.getsignal(signal.SIGTERM)
    with pytest.raises(Terminated):
        with sigterm_stops_like_ctrl_c(), keeps_sigterm():
            signal.signal(signal.SIGTERM, lambda signum, frame: sys.exit(signum))  # what ray.init sets first
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)  # the handler runs at the next bytecode: never this long
    assert signal.getsignal(signal.SIGTERM) is before


def test_the_exit_status_is_143_after_sigterm_and_130_after_ctrl_c():
    assert interrupt_status(Terminated()) == 143
    assert interrupt_status(KeyboardInterrupt()) == 130
    # A run's own message keeps the status of what stopped it (the study re-wraps the run's).
    assert interrupt_status(RunInterrupted("x", cause=Terminated())) == 143
    assert interrupt_status(RunInterrupted("y", cause=RunInterrupted("x", cause=Terminated()))) == 143
    assert interrupt_status(RunInterrupted("x", cause=KeyboardInterrupt())) == 130


def test_a_command_killed_with_sigterm_says_so_in_one_line_and_exits_143(monkeypatch, capsys):
    def run(args):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)

    monkeypatch.setitem(cli.COMMANDS, "recipes", ("scalerl.commands.recipes", "list recipes"))
    import scalerl.commands.recipes as recipes

    monkeypatch.setattr(recipes, "run", run)
    assert cli.main(["recipes"]) == 143
    assert capsys.readouterr().err == "scalerl recipes: terminated (SIGTERM)\n"


def test_a_ctrl_c_raised_inside_exec_d_code_still_exits_130_not_by_sigint(tmp_path):
    """CPython marks a KeyboardInterrupt that leaves an ``exec`` of a string as unhandled, even once
    caught, and a ``python -m`` interpreter then killed itself with SIGINT as it exited (-2) after the
    command's one line: a study stopped by Ctrl-C as a run started (its imports build dataclasses so)."""
    (tmp_path / "exec_stop.py").write_text(
        "import os, signal\n"
        "def add_arguments(parser):\n    pass\n"
        "def run(args):\n"
        "    exec('os.kill(os.getpid(), signal.SIGINT)\\nfor _ in range(9): pass')\n")
    (tmp_path / "run_it.py").write_text(
        "import signal, sys\n"
        "signal.signal(signal.SIGINT, signal.default_int_handler)  # (a pytest-xdist worker ignores SIGINT)\n"
        "from scalerl import cli\n"
        "cli.COMMANDS['stop'] = ('exec_stop', 'Ctrl-C inside exec')\n"
        "sys.exit(cli.main(['stop']))\n")
    src = str(Path(cli.__file__).resolve().parents[1])
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), src])}
    done = subprocess.run([sys.executable, "-m", "run_it"], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=60)
    assert (done.returncode, done.stderr) == (130, "scalerl stop: interrupted\n")


def test_a_second_sigterm_during_the_clean_up_ends_the_process():
    code = ("import os, signal, time\n"
            "from scalerl.stop_signals import sigterm_stops_like_ctrl_c, stops_deferred\n"
            "with sigterm_stops_like_ctrl_c():\n"
            "    try:\n"
            "        os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)\n"
            "    except KeyboardInterrupt:\n"
            "        os.kill(os.getpid(), signal.SIGTERM); time.sleep(5)\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == -signal.SIGTERM, done.stderr


def test_a_parallel_study_passes_sigterm_on_to_its_workers_and_starts_no_queued_run():
    """`kill PID` reaches the study's driver alone: leaving its worker pool waited for every
    running run to finish (the study trained on for a run's length), and a fresh worker then
    started the run the pool had queued."""
    from scalerl.stop_signals import StopLatch
    from scalerl.study.local_runs import _stop_workers, _Stops, _unless_stopped, _worker_pool

    stops = _Stops(StopLatch(), StopLatch())
    pool = _worker_pool(1, stops)
    running, queued = (pool.submit(_unless_stopped, time.sleep, 60) for _ in range(2))
    deadline = time.time() + 60
    while not (running.running() and pool._processes) and time.time() < deadline:
        time.sleep(0.05)
    time.sleep(2)  # the worker ran its initializer: it is in time.sleep
    t0 = time.time()
    _stop_workers([running, queued], stops, Terminated())
    with pytest.raises(Terminated):
        running.result(timeout=30)
    # Queued in the pool's call queue (not cancellable), it starts in a fresh worker and stops at once.
    assert queued.cancelled() or isinstance(queued.exception(timeout=30), Terminated)
    pool.shutdown(wait=True)
    assert time.time() - t0 < 30


def test_the_interrupted_line_names_the_checkpoint_a_resume_goes_on_from():
    """Stopped at step 4 with the last checkpoint at step 2, the line said "interrupted at step 4;
    resume with ..." (the resume trains steps 3 and 4 again); stopped before the first checkpoint
    it said to --resume a directory it had just emptied (which --resume then refused)."""
    from pathlib import Path
    from types import SimpleNamespace

    from scalerl.train.trainer import Trainer

    line = lambda **kw: Trainer._interrupted_message(SimpleNamespace(output=Path("runs/x"), **kw))
    assert line(step=4, checkpoint_step=2, resume=False) == (
        "interrupted at step 4, last checkpoint at step 2; resume with: scalerl train --output runs/x --resume")
    assert line(step=0, checkpoint_step=None, resume=False) == (
        "interrupted at step 0, before its first checkpoint (nothing kept in runs/x); run the same command again "
        "to start it")
    assert line(step=0, checkpoint_step=None, resume=True).endswith("resume with: scalerl train --output runs/x --resume")


# Stops that wait for a write that must not be cut (a checkpoint), then take effect.


@pytest.mark.parametrize("signum, raised", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)],
                         ids=["sigterm", "ctrl-c"])
def test_a_stop_during_the_block_takes_effect_after_it(signum, raised):
    # Python's own Ctrl-C handler, as a command has it (a pytest-xdist worker ignores SIGINT, and
    # the deferred stop then takes effect as that handler says: not at all)
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        _stop_during_the_block(signum, raised)
    finally:
        signal.signal(signal.SIGINT, before)


def _stop_during_the_block(signum, raised):
    done = []
    with sigterm_stops_like_ctrl_c():
        with pytest.raises(raised) as exc:
            with stops_deferred():
                os.kill(os.getpid(), signum)
                done.append("the write finished")  # not cut by the signal
        assert done == ["the write finished"]
    assert interrupt_status(exc.value) == (143 if signum == signal.SIGTERM else 130)


def test_without_a_stop_nothing_is_raised_and_the_handlers_are_put_back():
    before = signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)
    with stops_deferred():
        pass
    assert (signal.getsignal(signal.SIGINT), signal.getsignal(signal.SIGTERM)) == before


# The final model's save: a stop waits for it, and final/ is never half-written.


@pytest.mark.parametrize("when", ["writing", "replacing"])
def test_a_stop_during_the_final_save_waits_for_it_and_never_leaves_half_a_final_model(tmp_path, monkeypatch, when):
    """A stop (Ctrl-C, SIGTERM) during the final model's save was not deferred as a checkpoint's is:
    cut while the old final/ (an extended run's) was deleted, it left a final/ with its config.json
    and without its weights -- a directory that reads as a saved model and does not load; cut while
    the new one was written, the command said "terminated" without a word of the run's state."""
    import shutil
    from types import SimpleNamespace

    from scalerl.train import trainer as trainer_module
    from scalerl.train.trainer import Trainer

    def stop():
        os.kill(os.getpid(), signal.SIGTERM)

    def save_policy(policy, path, **kw):
        path.mkdir()
        (path / "config.json").write_text("new")
        if when == "writing":
            stop()
        (path / "model.safetensors").write_text("new")

    real_rmtree = shutil.rmtree

    def rmtree(path, *args, **kw):  # stopped after the first file
        files = sorted(Path(path).iterdir())
        files[0].unlink()
        if when == "replacing":
            stop()
        real_rmtree(path, *args, **kw)

    from pathlib import Path

    monkeypatch.setattr(trainer_module, "save_policy", save_policy)
    monkeypatch.setattr(shutil, "rmtree", rmtree)
    final = tmp_path / "final"
    final.mkdir()
    for name in ("config.json", "model.safetensors"):
        (final / name).write_text("old")
    me = SimpleNamespace(output=tmp_path, group=None, policy=None, step=4,
                         cfg=SimpleNamespace(model=SimpleNamespace(lora=SimpleNamespace(save="merged"))))
    with sigterm_stops_like_ctrl_c():
        with pytest.raises(Terminated):
            Trainer._save_final(me)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["final"]
    assert {p.name: p.read_text() for p in final.iterdir()} == {"config.json": "new", "model.safetensors": "new",
                                                              "scalerl_final.json": '{"step": 4}\n'}


def test_the_line_of_a_stop_during_the_final_save_says_the_run_is_trained():
    from pathlib import Path
    from types import SimpleNamespace

    from scalerl.train.trainer import Trainer

    line = Trainer._final_interrupted_message(SimpleNamespace(output=Path("runs/x"), step=8))
    assert line == ("interrupted after the last step (8) and the final model's save (runs/x/final): the run is "
                    "complete; `scalerl report runs/x` writes its report")


@pytest.mark.parametrize("stop", [KeyboardInterrupt, Terminated])
def test_a_stop_while_the_report_is_written_says_the_run_is_complete(tmp_path, monkeypatch, capsys, stop):
    """Ctrl-C or SIGTERM once the run had finished, while its report was written (plots and fits:
    seconds), said "scalerl train: interrupted" alone -- no step, no checkpoint, no way on, on a run
    that is complete and only lacks its report. (benchmarks/kill_fuzz.py found it.)"""
    from types import SimpleNamespace

    from scalerl.commands import train as train_command
    from scalerl.train import report

    def write_run_report(output):
        (output / "curve.png").write_text("half")
        raise stop()

    monkeypatch.setattr(report, "write_run_report", write_run_report)
    monkeypatch.setattr(train_command, "_start", lambda cfg, **kw: train_command._finish(
        SimpleNamespace(output=tmp_path, steps=12, evals=[], skipped_steps=0, nan_streak=0, release_directory=lambda: None),
        kw["report"]))
    status = cli.main(["train", "--model", "tiny", "--output", str(tmp_path / "unused")])
    assert status == (143 if stop is Terminated else 130)
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1] == (
        f"scalerl train: interrupted while the report was written; the run is complete (step 12, {tmp_path}/final "
        f"saved): `scalerl report {tmp_path}` writes its report")


def test_a_stop_deferred_in_a_process_that_blocks_the_signal_still_takes_effect():
    """A Ray worker blocks SIGINT, and ray.cancel stops its task through Python's handler alone
    (PyErr_SetInterrupt; here _thread.interrupt_main): a cancel that came during a checkpoint was
    raised again with raise_signal after it, stayed pending for good, and the study's run that
    should have stopped trained on to its end."""
    code = ("import _thread, signal, time\n"
            "from scalerl.stop_signals import stops_deferred\n"
            "signal.signal(signal.SIGINT, signal.default_int_handler)\n"
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})\n"
            "try:\n"
            "    with stops_deferred():\n"
            "        _thread.interrupt_main()\n"
            "        time.sleep(0.2)\n"
            "    time.sleep(2)\n"
            "    print('not stopped')\n"
            "except KeyboardInterrupt:\n"
            "    print('stopped')\n")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.stdout.strip() == "stopped", done.stderr


def test_a_keyboard_interrupt_that_c_code_made_of_a_sigterm_is_terminated_again():
    """Ray's ray.wait turns the Terminated our SIGTERM handler raised into a plain KeyboardInterrupt:
    the study exited 130, not 143."""
    from scalerl.stop_signals import terminated_stays_terminated

    with sigterm_stops_like_ctrl_c():
        with pytest.raises(Terminated):
            with terminated_stays_terminated():
                try:
                    os.kill(os.getpid(), signal.SIGTERM)
                    time.sleep(5)
                except Terminated:
                    raise KeyboardInterrupt from None  # what Ray's check_status does
    with pytest.raises(KeyboardInterrupt) as ctrl_c:  # no SIGTERM: Ctrl-C's stays Ctrl-C's
        with terminated_stays_terminated():
            raise KeyboardInterrupt
    assert not isinstance(ctrl_c.value, Terminated)


def test_a_repeated_interrupt_waits_for_the_clean_up_of_the_stop_it_repeats():
    """A study cancels a Ray task every few seconds until it ends (a cancel that lands while the task
    starts can be lost); each cancel is a KeyboardInterrupt through Python's SIGINT handler. One that
    came during the run's clean-up (closing its generators, finishing its W&B run) cut it."""
    from scalerl.stop_signals import interrupted_until_stopping, stop_under_way

    steps, cleaned = [], []
    outside = signal.getsignal(signal.SIGINT)
    with interrupted_until_stopping():
        with pytest.raises(KeyboardInterrupt):
            try:
                for step in range(100):
                    steps.append(step)
                    if step == 3:
                        signal.raise_signal(signal.SIGINT)  # the first cancel
            except KeyboardInterrupt:
                stop_under_way()
                for part in ("generators", "trackers"):
                    signal.raise_signal(signal.SIGINT)  # a cancel repeated during the clean-up
                    cleaned.append(part)
                raise
    assert steps == [0, 1, 2, 3] and cleaned == ["generators", "trackers"]
    assert signal.getsignal(signal.SIGINT) is outside
    with interrupted_until_stopping():  # the next task in a reused worker: interruptible again
        with pytest.raises(KeyboardInterrupt):
            signal.raise_signal(signal.SIGINT)


def test_a_run_cancelled_again_during_its_clean_up_closes_its_generators_and_says_where_it_stopped(
        tiny_dir, tmp_path, monkeypatch, capsys):
    """The trainer says stop_under_way when it catches its stop: a study's repeated cancel of its Ray
    task (here, SIGINT again while the generators close) no longer cuts the clean-up."""
    from scalerl.stop_signals import interrupted_until_stopping
    from scalerl.train import trainer
    from scalerl.train.trainer import Trainer

    step, make_source, closed = Trainer._train_step, trainer.make_source, []

    def stopped_at_step_3(self):
        if self.step == 2:
            signal.raise_signal(signal.SIGINT)  # the study's cancel
        step(self)

    def source_closed_under_cancels(pipeline):
        source = make_source(pipeline)
        close = source.close

        def cancelled_while_closing():
            signal.raise_signal(signal.SIGINT)  # the cancel, repeated
            close()
            closed.append(True)
        source.close = cancelled_while_closing
        return source

    monkeypatch.setattr(Trainer, "_train_step", stopped_at_step_3)
    monkeypatch.setattr(trainer, "make_source", source_closed_under_cancels)  # where the trainer looks it up
    out = tmp_path / "run"
    args = ["train", "--model", "tiny", "--output", str(out), "--no-progress", "--steps", "4", "--eval-every", "2",
            "--set", "batch.prompts_per_step=4", "--set", "batch.generations_per_prompt=4", "--set", "eval.problems=8",
            "--set", "pipeline=sync", "--set", "k=1", "--no-report"]
    with interrupted_until_stopping():
        assert cli.main(args) == 130
    assert "interrupted at step 2, last checkpoint at step 2" in capsys.readouterr().err
    assert closed == [True]


@pytest.mark.parametrize("exc, passed_on", [(Terminated(), True), (BrokenPipeError(32, "Broken pipe"), True),
                                            (OSError(28, "No space left on device"), True),
                                            (KeyboardInterrupt(), False)])
def test_a_study_driver_that_stops_starts_no_run_and_stops_the_running_ones_unless_ctrl_c_reached_them(
        exc, passed_on):
    """`kill PID` and the driver's own errors (its output closed, a full disk) reach the driver
    alone: its running runs are told to stop. Ctrl-C reached every worker already (the process
    group): a second stop would cut their clean-up. No queued run starts, either way."""
    from scalerl.stop_signals import StopLatch
    from scalerl.study.local_runs import _stop_workers, _Stops

    stops = _Stops(StopLatch(), StopLatch())
    _stop_workers([], stops, exc)
    assert stops.start_none.is_set()
    assert stops.stop_runs.is_set() == passed_on


@pytest.mark.parametrize("resume", [False, True], ids=["new", "resume"])
def test_a_stop_as_a_run_sets_up_says_what_to_run_next(tmp_path, monkeypatch, capsys, resume):
    """A stop before the run could say where it stopped -- the model's load, W&B's start (seconds of
    every run with log.wandb_project) -- printed "terminated (SIGTERM)" alone: no word of the same
    command or --resume. The directory the set-up left says which."""
    from scalerl.config import save_yaml
    from scalerl.train import trainer
    from scalerl.train.config import TrainConfig

    def stop(self, cfg, **kw):
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)

    monkeypatch.setattr(trainer.Trainer, "__init__", stop)
    out = tmp_path / "run"
    args = ["train", "--model", "tiny", "--steps", "2", "--output", str(out)]
    if resume:
        out.mkdir()
        cfg = TrainConfig()
        cfg.model.name, cfg.run.steps, cfg.run.output = "tiny", 2, str(out)
        save_yaml(cfg, out / "config.yaml")
        args.append("--resume")
    assert cli.main(args) == 143
    assert capsys.readouterr().err == "scalerl train: " + (
        f"interrupted before training went on; resume with: scalerl train --output {out} --resume\n" if resume else
        f"interrupted before the run started (nothing kept in {out}); run the same command again to start it\n")


@pytest.mark.parametrize("rank", [0, 1])
def test_under_torchrun_only_rank_0_says_what_to_run_next(tmp_path, monkeypatch, capsys, rank):
    """Every rank of a torchrun group gets the stop and runs the command: rank 1 said "resume with ..."
    (or "run the same command again") as rank 0 did, often the wrong one of the two (rank 0 knows where
    the run stopped). A rank > 0 now says why it stopped, tagged with its rank, and nothing to run.
    (End to end, under torchrun: tests/train/test_nproc.py, ``extended``.)"""
    from scalerl.train import launch

    def stop(cfg, **kw):  # a rank in its group, which SIGTERM (torchrun's stop) reaches
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(5)

    monkeypatch.setattr(launch, "run_rank", stop)
    for key, value in {"RANK": str(rank), "WORLD_SIZE": "2", "LOCAL_RANK": str(rank)}.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "run"
    assert cli.main(["train", "--model", "tiny", "--steps", "2", "--output", str(out)]) == 143
    assert capsys.readouterr().err == "scalerl train: " + (
        f"interrupted before the run started (nothing kept in {out}); run the same command again to start it\n"
        if rank == 0 else
        "trainer rank 1 of 2: terminated (SIGTERM); rank 0 says where the run stopped and what to run next\n")
