"""The metric sinks (TensorBoard, W&B) under resumes and failures, driven directly (no training)."""

from pathlib import Path

import pytest


def _tb_steps(logdir, tag):
    """``[(step, value)]`` of ``tag`` as TensorBoard's own loader shows them (purge marks applied)."""
    from tensorboard.backend.event_processing import event_accumulator as ea

    acc = ea.EventAccumulator(str(logdir), size_guidance={ea.SCALARS: 0})
    acc.Reload()
    return [(e.step, e.value) for e in acc.Scalars(tag)]


def test_a_resumed_tensorboard_sink_hides_the_stopped_attempts_redone_steps(tmp_path, caplog):
    """Killed after logging steps 5 and 6, resumed from the checkpoint at step 4: the new attempt logs
    5 and 6 again. Both attempts' events showed in TensorBoard (step 5, 6, then 5, 6 again: a curve
    that jumps back); the resumed attempt's event file now opens with a purge mark at step 5."""
    pytest.importorskip("tensorboard")
    from scalerl.curves.tensorboard_log import read_tensorboard
    from scalerl.train.loggers import TensorBoardSink

    logdir = tmp_path / "run" / "tensorboard"
    first = TensorBoardSink(logdir)
    for step in range(1, 7):
        first.log({"reward": float(step), "type": "train"}, step)
    first.close(False)
    resumed = TensorBoardSink(logdir)
    assert resumed.resume(5) is None
    for step in range(5, 9):
        resumed.log({"reward": 10.0 + step}, step)
    resumed.close()
    assert len(list(logdir.glob("*tfevents*"))) == 2
    assert _tb_steps(logdir, "reward") == [(1, 1), (2, 2), (3, 3), (4, 4), (5, 15), (6, 16), (7, 17), (8, 18)]
    caplog.clear()
    curve, = read_tensorboard(logdir, "step", "reward", bounded=False)
    assert list(curve.x) == [1, 2, 3, 4, 5, 6, 7, 8] and list(curve.y) == [1, 2, 3, 4, 15, 16, 17, 18]
    # scalerl fit says the purge in the curve's notes, not as TensorBoard's warning about "a TensorFlow restart"
    assert any("purge mark dropped the events a stopped one logged from step 5 on" in n for n in curve.notes)
    assert "TensorFlow restart" not in caplog.text


def test_a_tensorboard_sink_resumed_without_a_checkpoint_purges_everything(tmp_path):
    """Killed before the first checkpoint: the run starts over at step 0, and so does its curve."""
    pytest.importorskip("tensorboard")
    from scalerl.train.loggers import TensorBoardSink

    first = TensorBoardSink(tmp_path)
    first.log({"val/pass_rate": 0.25}, 0)
    first.close(False)
    again = TensorBoardSink(tmp_path)
    again.resume(0)
    again.log({"val/pass_rate": 0.5}, 0)
    again.close()
    assert _tb_steps(tmp_path, "val/pass_rate") == [(0, 0.5)]


class _Failing:
    """A sink whose every call raises, as TensorBoard's writer does once its disk is full."""

    def __init__(self):
        self.calls = 0

    def resume(self, first_step):
        return None

    def log(self, row, step):
        self.calls += 1
        raise OSError(28, "No space left on device")

    def close(self, ok=True):
        raise OSError(28, "No space left on device")


def test_a_sink_failing_mid_run_warns_once_counts_the_lost_rows_and_never_raises(capsys):
    """A full disk under <output>/tensorboard (or W&B raising in log) raised out of the sink and
    ended the training, hours of it, for a mirror of the run log. Now: one warning, the rows counted,
    said at the close; the sink is still tried (a disk freed, W&B back, takes the next rows)."""
    from scalerl.train.sink_guard import GuardedSink

    inner = _Failing()
    sink = GuardedSink(inner, "TensorBoard")
    for step in range(1, 4):
        sink.log({"reward": 0.5}, step)
    sink.close(False)
    err = capsys.readouterr().err
    assert inner.calls == 3 and sink.lost == 3
    assert err.count("warning:") == 1
    assert "TensorBoard failed at step 1: OSError: [Errno 28] No space left on device; training goes on" in err
    assert "note: TensorBoard could not take 3 row(s), the first at step 1" in err


def test_a_guarded_sink_lets_a_stop_through():
    """Ctrl-C / SIGTERM (KeyboardInterrupt) while a sink flushes stops the run; only errors are caught."""
    from scalerl.train.sink_guard import GuardedSink

    class Stopped(_Failing):
        def log(self, row, step):
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        GuardedSink(Stopped(), "W&B").log({"x": 1.0}, 1)


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # its writing thread's error
def test_a_real_tensorboard_sink_on_a_full_disk_does_not_raise(tmp_path, monkeypatch, capsys):
    """TensorBoard's own writer on a disk that fills: its writing thread fails, and every later
    add_scalar, flush and close raise that error -- which ended the training before."""
    pytest.importorskip("tensorboard")
    from scalerl.train import loggers

    import tensorboard.summary.writer.record_writer as record_writer

    def full(self, data):
        raise OSError(28, "No space left on device")

    sink = loggers.make_sinks(loggers_cfg(tensorboard=True), tmp_path, "run", {}, resume=False)[0]
    sink.log({"reward": 0.5}, 1)
    monkeypatch.setattr(record_writer.RecordWriter, "write", full)
    for step in range(2, 6):
        sink.log({"reward": 0.5}, step)
    sink.close()
    # Its writing thread's error inside this test (the filter above), not in whichever test runs next.
    import threading

    from tensorboard.summary.writer.event_file_writer import _AsyncWriterThread

    for thread in threading.enumerate():
        if isinstance(thread, _AsyncWriterThread):
            thread.join(timeout=30)
    err = capsys.readouterr().err
    assert "warning: TensorBoard failed at step" in err and "No space left on device" in err
    assert "note: TensorBoard could not take" in err


def loggers_cfg(**values):
    from scalerl.train.config import LogConfig

    return LogConfig(**values)


class _Run:
    """What WandbSink reads of a W&B run at a resume."""

    def __init__(self, offline, starting_step):
        self.offline, self.starting_step, self.id = offline, starting_step, "abc12345"
        self.dir = "wandb/offline-run-20250101_000000-abc12345/files"


def _wandb_sink(tmp_path, run):
    from scalerl.train.loggers import WandbSink

    sink = WandbSink.__new__(WandbSink)  # the run W&B would hand back, without W&B
    sink.run, sink.directory, sink.run_id, sink.done = run, tmp_path, run.id, False
    return sink


def test_a_resumed_wandb_sink_says_what_wandb_keeps_of_the_redone_steps(tmp_path):
    """W&B drops rows at a step below the run's last (online), and cannot resume offline at all:
    a resumed run's redone steps went missing from W&B without a word."""
    offline = _wandb_sink(tmp_path, _Run(offline=True, starting_step=0)).resume(5)
    assert "W&B cannot resume a run offline" in offline and "from step 5" in offline
    assert f"scalerl fit {tmp_path / 'wandb'}" in offline
    ahead = _wandb_sink(tmp_path, _Run(offline=False, starting_step=8)).resume(5)
    assert "up to step 7" in ahead and "drops this attempt's rows for steps 5-7" in ahead
    assert _wandb_sink(tmp_path, _Run(offline=False, starting_step=5)).resume(5) is None  # nothing redone


def test_a_resumed_offline_wandb_sink_keeps_its_id_and_says_so(tmp_path, monkeypatch, capsys):
    """The real W&B, offline: the resumed sink continues the id from wandb_run_id, and says at the
    resume that W&B keeps this attempt in a run directory of its own."""
    wandb = pytest.importorskip("wandb")
    from scalerl.train.loggers import WandbSink

    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    wandb.teardown()
    try:
        first = WandbSink("scalerl-test", "run", {}, tmp_path, resume=False)
        first.log({"x": 1.0}, 1)
        first.close(False)
        resumed = WandbSink("scalerl-test", "run", {}, tmp_path, resume=True)
        assert resumed.run.id == first.run.id == (tmp_path / "wandb_run_id").read_text().strip()
        assert "W&B cannot resume a run offline" in resumed.resume(1)
        resumed.log({"x": 2.0}, 1)
        resumed.close()
    finally:
        wandb.teardown()


@pytest.mark.parametrize(("resumed_from", "first"), [(4, 5), (None, 0)])
def test_the_trainer_tells_each_sink_where_a_resume_goes_on(capsys, resumed_from, first):
    """After its checkpoint at step 4 a resume logs from step 5 on; without a checkpoint, from step 0."""
    from types import SimpleNamespace

    from scalerl.train.trainer import Trainer

    told = []

    class Sink:
        def resume(self, first_step, kept=()):
            told.append((first_step, kept))
            return "W&B keeps this"

    kept = [{"type": "eval", "step": 0}]
    Trainer._resume_sinks(SimpleNamespace(step=resumed_from or 0, resumed_from=resumed_from, sinks=[Sink()],
                                          _kept_rows=lambda: kept))
    assert told == [(first, kept if first else [])]
    assert capsys.readouterr().err == "note: W&B keeps this\n"


def _offline_wandb(monkeypatch):
    wandb = pytest.importorskip("wandb")
    monkeypatch.setenv("WANDB_MODE", "offline")
    monkeypatch.setenv("WANDB_SILENT", "true")
    wandb.teardown()
    return wandb


def test_a_discarded_wandb_sink_removes_its_attempts_files_and_no_earlier_ones(tmp_path, monkeypatch):
    """A new run stopped before its first checkpoint is discarded so that the same command starts it
    again; its W&B run directory (wandb/offline-run-*-<id>) and wandb_run_id stayed, and every such
    stopped start left one more W&B run beside the one that trained. Only this attempt's go: an
    earlier attempt's run directory (a kill -9'd start, whose id was another) stays, and so does
    wandb/ with it."""
    wandb = _offline_wandb(monkeypatch)
    from scalerl.train.loggers import WandbSink

    earlier = tmp_path / "wandb" / "offline-run-20250101_000000-earlier1"
    earlier.mkdir(parents=True)
    try:
        sink = WandbSink("scalerl-test", "run", {}, tmp_path, resume=False)
        sink.log({"x": 1.0}, 0)
        assert list((tmp_path / "wandb").glob(f"*-{sink.run_id}"))
        sink.discard()  # (closes the W&B run first)
    finally:
        wandb.teardown()
    assert sorted(p.name for p in (tmp_path / "wandb").iterdir()) == [earlier.name]  # latest-run, debug.log gone
    assert not (tmp_path / "wandb_run_id").exists()
    earlier.rmdir()
    sink.discard()  # nothing of it left: removes nothing else
    assert not (tmp_path / "wandb").exists() or not any((tmp_path / "wandb").iterdir())


def test_a_closed_wandb_sink_leaves_every_row_on_disk_when_wandbs_service_writes_the_file_late(tmp_path, monkeypatch):
    """W&B's service process writes the run file's buffered end when it closes the run's stream, which
    ``finish()`` asks of it without waiting: on a loaded machine `scalerl fit RUN/wandb` right after
    training read the file as its header alone (a resumed run's curve lacked its last attempt's
    steps, a CI failure). Here the service is asked late -- W&B's own request to close the stream,
    sent a second after ``finish()`` returns, as a busy service gets to it -- and the closed sink's
    run file holds every row and the exit code."""
    import threading

    from wandb.sdk.lib.service.service_connection import ServiceConnection

    from scalerl.curves.wandb_run_log import exit_code, read_wandb_run
    from scalerl.train.loggers import WandbSink

    wandb = _offline_wandb(monkeypatch)
    inform_finish, late = ServiceConnection.inform_finish, []

    def inform_finish_late(self, run_id):
        late.append(threading.Timer(1.0, inform_finish, (self, run_id)))
        late[-1].start()

    monkeypatch.setattr(ServiceConnection, "inform_finish", inform_finish_late)
    try:
        sink = WandbSink("scalerl-test", "run", {}, tmp_path, resume=False)
        for step in range(3):
            sink.log({"loss": float(step)}, step)
        sink.close()
        loss, = read_wandb_run(tmp_path / "wandb", "step", "loss", bounded=False)  # (`scalerl fit RUN/wandb`)
        assert list(loss.x) == [0, 1, 2]
        run_file, = (tmp_path / "wandb").glob(f"offline-run-*-{sink.run_id}/run-{sink.run_id}.wandb")
        assert exit_code(run_file) == 0
    finally:
        for timer in late:
            timer.join()
        wandb.teardown()


def test_a_resumed_wandb_sink_discards_nothing(tmp_path, monkeypatch):
    """A resume's W&B id, and the run directories named by it, are the earlier attempts' too."""
    wandb = _offline_wandb(monkeypatch)
    from scalerl.train.loggers import WandbSink

    try:
        first = WandbSink("scalerl-test", "run", {}, tmp_path, resume=False)
        first.log({"x": 1.0}, 0)
        first.close(False)
        resumed = WandbSink("scalerl-test", "run", {}, tmp_path, resume=True)
        resumed.close(False)
        resumed.discard()
    finally:
        wandb.teardown()
    # (one directory or two: W&B names them by the second they started)
    assert list((tmp_path / "wandb").glob(f"offline-run-*-{first.run_id}/run-{first.run_id}.wandb"))
    assert (tmp_path / "wandb_run_id").read_text().strip() == first.run_id


@pytest.mark.parametrize("stop", [KeyboardInterrupt, "wandb-error"])
def test_a_wandb_start_that_fails_leaves_nothing_of_its_attempt(tmp_path, monkeypatch, stop):
    """A stop (or W&B's own error) while wandb.init starts the run: the sink never came to be, so the
    trainer's discard of the unstarted run could not reach it, and wandb_run_id and W&B's half-made
    run directory stayed beside the next attempt's."""
    wandb = _offline_wandb(monkeypatch)
    from scalerl.errors import ConfigError
    from scalerl.train.loggers import WandbSink

    def init(*, dir, id, **kw):  # W&B has made the run's directory, then the stop lands
        (Path(dir) / "wandb" / f"offline-run-20250101_000001-{id}" / "logs").mkdir(parents=True)
        raise KeyboardInterrupt if stop is KeyboardInterrupt else wandb.errors.Error("not logged in")

    monkeypatch.setattr(wandb, "init", init)
    with pytest.raises(KeyboardInterrupt if stop is KeyboardInterrupt else ConfigError):
        WandbSink("scalerl-test", "run", {}, tmp_path, resume=False)
    assert list(tmp_path.iterdir()) == []


def test_a_discarded_tensorboard_sink_removes_its_event_file_only(tmp_path):
    """The step-0 evaluation is logged before the first checkpoint: a run stopped between them
    left its event file, and the same command run again (a new run: no purge mark) showed step 0 twice."""
    pytest.importorskip("tensorboard")
    from scalerl.train.loggers import TensorBoardSink

    earlier = tmp_path / "events.out.tfevents.1.host.1.0"
    earlier.write_bytes(b"")
    sink = TensorBoardSink(tmp_path)
    sink.log({"val/pass_rate": 0.25}, 0)
    assert len(list(tmp_path.iterdir())) == 2
    sink.discard()  # (closes the writer first)
    assert list(tmp_path.iterdir()) == [earlier]


def test_the_trainer_discards_its_sinks_instead_of_closing_them_only_when_it_discarded_the_run():
    """discard closes the sink itself first (W&B writes its run directory until finish)."""
    from types import SimpleNamespace

    from scalerl.train.trainer import Trainer

    calls = []

    class Sink:
        def close(self, ok=True):
            calls.append(("close", ok))

        def discard(self):
            calls.append("discard")

    for discarded in (False, True):
        calls.clear()
        parts = SimpleNamespace(runlog=SimpleNamespace(close=lambda: None), samples=SimpleNamespace(close=lambda: None),
                                sinks=[Sink()], _discarded=discarded, _release_output=lambda: None,
                                _remove_made_output=lambda: None)
        parts._end_sink = lambda sink, ok, parts=parts: Trainer._end_sink(parts, sink, ok)
        Trainer._close(parts, False)
        assert calls == (["discard"] if discarded else [("close", False)])


def _resumed_sink_note(monkeypatch, tmp_path, killed, resume_at, kept, then):
    """Offline W&B sinks of one run: the ``killed`` attempts, each ``(its resume's first step and kept
    rows, or None for the first attempt; the rows W&B got to write)``, stopped as a kill leaves them;
    then a sink resumed at step ``resume_at`` with the run log's ``kept`` rows, which logs ``then``.
    Returns the resume's note."""
    import time

    wandb = _offline_wandb(monkeypatch)
    from scalerl.train.loggers import WandbSink

    try:
        for resumed_from, written in killed:
            sink = WandbSink("scalerl-test", "run", {}, tmp_path, resume=resumed_from is not None)
            if resumed_from is not None:
                sink.resume(*resumed_from)
            for row in written:
                sink.log(row, row["step"])
            sink.close(False)
            time.sleep(1.1)  # (W&B names a run's directory by the second it started)
        last = WandbSink("scalerl-test", "run", {}, tmp_path, resume=True)
        note = last.resume(resume_at, kept)
        for row in then:
            last.log(row, row["step"])
        last.close()
    finally:
        wandb.teardown()
    return note


def test_a_resumed_offline_wandb_sink_logs_again_what_the_killed_attempt_had_not_written(tmp_path, monkeypatch):
    """W&B writes its run file every 15 s: a kill -9 lost the killed attempt's last rows -- those
    before the checkpoint the resume goes on from among them, which no later attempt logs again (a
    short run's whole history: `scalerl fit RUN/wandb` then found "no logged history"). The resumed
    sink logs what the earlier attempts' files lack from the run log's kept rows, and `scalerl fit`
    reads every step once."""
    from scalerl.curves.wandb_run_log import read_wandb_run

    kept = [{"type": "eval", "step": 0, "val/pass_rate": 0.25}] + [
        {"type": "train", "step": s, "loss": float(s)} for s in (1, 2)] + [{"type": "eval", "step": 2, "val/pass_rate": 0.5}]
    # What the kill -9 left: rows 0 and 1 written, step 2's train and eval rows (the checkpoint's) not
    note = _resumed_sink_note(monkeypatch, tmp_path, [(None, kept[:2])], 3, kept,
                              [{"type": "train", "step": 3, "loss": 3.0}])
    assert "the 2 row(s) of steps 2-2 the stopped attempt had not written are logged again" in note
    loss, = read_wandb_run(tmp_path / "wandb", "step", "loss", bounded=False)
    assert list(loss.x) == [1, 2, 3] and list(loss.y) == [1, 2, 3]
    rate, = read_wandb_run(tmp_path / "wandb", "step", "val/pass_rate", bounded=False)
    assert list(rate.x) == [0, 2] and list(rate.y) == [0.25, 0.5]


def test_after_two_kills_the_resumed_wandb_sink_logs_again_what_the_joined_history_lacks(tmp_path, monkeypatch):
    """Attempt A wrote steps 0-8 (its checkpoint at 4); B resumed from 4 and W&B had written its 5 and 6
    when a kill -9 hit (its checkpoint at 8); C resumed from 8. The last step W&B held was taken as the
    highest of any file (A's 8), so C logged nothing again -- but the reader joins B over A from step 5 on:
    steps 7 and 8 were in no one's history (review)."""
    from scalerl.curves.wandb_run_log import read_wandb_run

    kept = [{"type": "train", "step": s, "loss": float(s)} for s in range(9)]
    note = _resumed_sink_note(monkeypatch, tmp_path, [(None, kept), ((5, kept[:5]), kept[5:7])], 9, kept,
                              [{"type": "train", "step": 9, "loss": 9.0}])
    assert "steps 7-8 the stopped attempt had not written are logged again" in note
    loss, = read_wandb_run(tmp_path / "wandb", "step", "loss", bounded=False)
    assert list(loss.x) == list(range(10)) and list(loss.y) == list(range(10))


def _history(monkeypatch, tmp_path, attempts):
    """W&B run files of one run id, an attempt each (``attempts``: lists of (step, value)), read by
    ``scalerl fit`` as one curve."""
    import time

    wandb = _offline_wandb(monkeypatch)
    from scalerl.curves.wandb_run_log import read_wandb_run
    from scalerl.train.loggers import wait_for_run_file

    try:
        for i, rows in enumerate(attempts):
            run = wandb.init(project="scalerl-test", dir=str(tmp_path), id="abcd1234", resume="allow",
                             reinit="create_new")
            for step, value in rows:
                run.log({"m": value}, step=step)
            run_file = Path(run.dir).parent / f"run-{run.id}.wandb"
            run.finish()
            assert wait_for_run_file(run_file)  # (W&B's service writes the file's end after finish() returns)
            if i < len(attempts) - 1:
                time.sleep(1.1)  # (W&B names a run's directory by the second it started)
    finally:
        wandb.teardown()
    curve, = read_wandb_run(tmp_path / "wandb", "step", "m", bounded=False)
    return list(zip(curve.x, curve.y)), curve.notes


@pytest.mark.parametrize(("attempts", "want"), [
    # stopped after step 5, its checkpoint at 4: the resume's first step is the last one logged
    ([[(0, 0.0), (4, 0.4), (5, 0.5)], [(5, 5.0), (6, 6.0)]], [(0, 0.0), (4, 0.4), (5, 5.0), (6, 6.0)]),
    # killed between the step-0 evaluation and the first checkpoint: the resume starts over at step 0
    ([[(0, 0.1)], [(0, 0.2), (1, 1.0)]], [(0, 0.2), (1, 1.0)]),
], ids=["at-the-last-step", "over-at-step-0"])
def test_an_offline_resume_at_a_step_the_earlier_attempt_logged_reads_each_step_once(monkeypatch, tmp_path, attempts,
                                                                                    want):
    """The step does not go back at a file that starts at the earlier one's last step, and the
    abandoned attempt's row stayed beside the resumed one's; a file that starts at step 0 again after
    step 0 alone was continued as a _step that started over: every row one step on, step 0 twice."""
    points, notes = _history(monkeypatch, tmp_path, attempts)
    assert points == want
    assert any("abandoned attempt(s)" in n for n in notes)


def test_a_wandb_service_late_with_the_runs_end_gets_the_wait_set_then_a_warning(tmp_path, monkeypatch, capsys):
    """W&B's service never asked to close the run's stream (its request dropped, as a stuck service
    never gets to it; it writes the file's buffered end at its next flush, 15 s on, or at W&B's
    teardown): the close waits RUN_FILE_WAIT_S as it is set when the run closes -- a default bound at
    import waited 60 s whatever it was set to (here the flush came first, and no warning), and a
    warning would have named the figure set -- then warns, naming the file, and returns."""
    from wandb.sdk.lib.service.service_connection import ServiceConnection

    from scalerl.curves import wandb_run_log
    from scalerl.train import loggers
    from scalerl.train.loggers import WandbSink

    wandb = _offline_wandb(monkeypatch)
    monkeypatch.setattr(ServiceConnection, "inform_finish", lambda self, run_id: None)
    monkeypatch.setattr(loggers, "RUN_FILE_WAIT_S", 0.3)
    monkeypatch.setattr(loggers, "RUN_FILE_POLL_S", 0.05)
    look, looks = wandb_run_log.exit_code, []

    def counted(run_file):
        looks.append(run_file)
        return look(run_file)

    monkeypatch.setattr(wandb_run_log, "exit_code", counted)
    try:
        sink = WandbSink("scalerl-test", "run", {}, tmp_path, resume=False)
        for step in range(3):
            sink.log({"loss": float(step)}, step)
        sink.close()
        err = capsys.readouterr().err
        run_file, = (tmp_path / "wandb").glob(f"offline-run-*-{sink.run_id}/run-{sink.run_id}.wandb")
        assert f"warning: W&B's run file {run_file} did not hold the run's end 0.3 s after" in err, err
        assert 1 <= len(looks) < 100  # 0.3 s of looks every 0.05 s (60 s: some 600)
    finally:
        wandb.teardown()
    assert look(run_file) == 0
    loss, = wandb_run_log.read_wandb_run(tmp_path / "wandb", "step", "loss", bounded=False)
    assert list(loss.x) == [0, 1, 2]


def test_after_wandbs_service_is_killed_the_next_run_in_the_process_gets_a_wandb_run_of_its_own(tmp_path, monkeypatch,
                                                                                                capsys):
    """W&B's service process killed mid-run (`pkill -f wandb-core`, the out-of-memory killer): the
    guarded sink warns and the run goes on; and W&B's connection to the dead service, kept for the
    whole process, was handed to the next run in it -- a study's next run (in-process, or in a reused
    Ray worker) failed to start its W&B run (MailboxClosedError), and W&B's exit hook printed a
    traceback. The close tears W&B down: the next run starts a service of its own and its rows read back."""
    import os
    import signal
    import time

    psutil = pytest.importorskip("psutil")
    from scalerl.curves.wandb_run_log import read_wandb_run
    from scalerl.train.loggers import WandbSink
    from scalerl.train.sink_guard import GuardedSink

    wandb = _offline_wandb(monkeypatch)
    for run_dir in ("a", "b"):
        (tmp_path / run_dir).mkdir()
    try:
        sink = GuardedSink(WandbSink("scalerl-test", "run", {}, tmp_path / "a", resume=False), "W&B")
        sink.log({"loss": 0.0}, 0)
        services = [p for p in psutil.Process().children(recursive=True) if "wandb-core" in p.name()]
        assert services
        for service in services:
            os.kill(service.pid, signal.SIGKILL)
        psutil.wait_procs(services, timeout=30)
        time.sleep(0.5)  # (W&B's reader thread sees the connection close)
        sink.log({"loss": 1.0}, 1)
        sink.close()
        assert "warning: W&B failed" in capsys.readouterr().err
        following = WandbSink("scalerl-test", "run", {}, tmp_path / "b", resume=False)
        for step in range(3):
            following.log({"loss": float(step)}, step)
        following.close()
    finally:
        wandb.teardown()
    loss, = read_wandb_run(tmp_path / "b" / "wandb", "step", "loss", bounded=False)
    assert list(loss.x) == [0, 1, 2]
