"""What a stop and a resume keep, at the moments ordinary kills do not reach: a disk that fills while a checkpoint
or final/ is written (one line, then --resume), the max_nan_steps stop (its step's evaluation logged; the streak
kept across a resume, as the collapse note's), and a study that cannot resume a run forward (reviews ci, cj)."""

import errno
import io
import os
from pathlib import Path

import pytest

import scalerl.train.checkpoint as checkpoint_module
import scalerl.train.trainer as trainer_module
from full_disk import FullDisk
from scalerl.cli import main
from scalerl.config import to_dict
from scalerl.errors import RunInterrupted
from scalerl.runlog import read_runlog
from scalerl.train.config import TrainConfig, resolve
from scalerl.train.trainer import Trainer, TrainingError
from scalerl.train.update import UpdateResult

pytestmark = pytest.mark.slow


def _args(output, *extra, steps=4):
    """A few-step synchronous run of the real tiny model: small batches and evaluations, one thread."""
    return ["train", "--model", "tiny", "--output", str(output), "--no-progress", "--no-report", "--steps", str(steps),
            "--eval-every", "2", "--threads", "1", "--set", "pipeline=sync", "--set", "batch.prompts_per_step=4",
            "--set", "batch.generations_per_prompt=4", "--set", "eval.problems=16",
            "--set", "eval.samples_per_problem=2", "--set", "forecast.enabled=false", *extra]


def _cfg(output, *extra, steps=8):
    return resolve(TrainConfig(), ["model.name_or_path=tiny", f"run.output={output}", f"run.steps={steps}",
                                   "eval.every=2", "log.progress=false", "run.threads=1", "forecast.enabled=false",
                                   "pipeline=sync", "batch.prompts_per_step=4", "batch.generations_per_prompt=4",
                                   "eval.problems=16", "eval.samples_per_problem=2", *extra])


def _one_line(capsys, code):
    err = capsys.readouterr().err.strip()
    lines = [line for line in err.splitlines() if line.startswith("scalerl train:")]
    assert code == 2 and "Traceback" not in err and len(lines) == 1, err
    return lines[0]


def _steps(out, kind="eval"):
    return [r["step"] for r in read_runlog(Path(out) / "runlog.jsonl")[1] if r["type"] == kind]


def _nan_at(monkeypatch, calls):
    """policy_update reports a non-finite loss (the step skipped) on the ``calls``-th calls (1-based), as a
    diverged step does; the others train as usual."""
    real, seen = trainer_module.policy_update, {"n": 0}

    def update(*args, **kwargs):
        result = real(*args, **kwargs)
        seen["n"] += 1
        if seen["n"] in calls:
            return UpdateResult(result.metrics, result.trained_tokens, skipped=True, reason="non-finite loss (nan)",
                                lag_counts=result.lag_counts)
        return result

    monkeypatch.setattr(trainer_module, "policy_update", update)


def _stopped_after_checkpoint(monkeypatch, cfg, step):
    """Run ``cfg`` and stop it (Ctrl-C) right after its checkpoint at ``step``, as a kill there would."""
    real_checkpoint = Trainer._checkpoint

    def checkpoint_then_stopped(self):
        real_checkpoint(self)
        if self.step == step:
            raise KeyboardInterrupt

    monkeypatch.setattr(Trainer, "_checkpoint", checkpoint_then_stopped)
    with pytest.raises(RunInterrupted):
        Trainer(cfg).run()
    monkeypatch.setattr(Trainer, "_checkpoint", real_checkpoint)


# --------------------------------------------------------------------------- full disks


def test_a_disk_that_fills_midway_through_a_checkpoint_stops_with_one_line(tiny_dir, tmp_path, capsys, monkeypatch):
    """README: "a full disk at a checkpoint (stopped; the last checkpoint resumes)" with a one-line error. Reproduced
    for real on a 45 MB tmpfs (a 17 MB checkpoint that did not fit): the OSError of the write comes out of
    torch.save as a RuntimeError. The test's disk has 200 kB left when the step-2 checkpoint is written."""
    out = tmp_path / "run"

    def fake_open(path, mode="r", *args, **kwargs):
        if "step_000002.tmp-" in str(path) and str(path).endswith("state.pt") and "w" in mode:
            return io.BufferedWriter(FullDisk(path, "wb"))
        return open(path, mode, *args, **kwargs)

    monkeypatch.setattr(checkpoint_module, "open", fake_open, raising=False)
    line = _one_line(capsys, main(_args(out)))
    assert "No space left on device" in line and f"scalerl train --output {out} --resume" in line
    # The checkpoint that could not be written, not the run directory (review cn: a buffered write's OSError names
    # no file) nor the temporary directory, removed by now.
    assert f"cannot write {out / 'checkpoints' / 'step_000002'}:" in line, line
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["latest", "step_000000"]
    monkeypatch.undo()
    assert main(_args(out, "--resume")) == 0, capsys.readouterr().err
    assert _steps(out) == [0, 2, 4]


@pytest.mark.parametrize("error", ["oserror", "safetensors"])
def test_a_full_disk_at_the_final_save_stops_with_one_line(tiny_dir, tmp_path, capsys, monkeypatch, error):
    """The run's steps are all done and checkpointed; only final/ could not be written. Expected: one line saying
    the disk is full and that --resume saves final/ again (it does: the resume below)."""
    from safetensors import SafetensorError

    out = tmp_path / "run"

    def full(model, directory, *args):  # the weights' write, inside save_policy (which says safetensors' error as the OSError)
        Path(directory).mkdir(parents=True, exist_ok=True)
        (Path(directory) / "model.safetensors").write_bytes(b"\0" * 1000)  # what fitted
        if error == "oserror":
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(Path(directory) / "tokenizer.json"))
        raise SafetensorError("Error while serializing: I/O error: No space left on device (os error 28)")

    monkeypatch.setattr("scalerl.train.policy._save_model", full)
    line = _one_line(capsys, main(_args(out)))
    assert "No space left on device" in line and f"scalerl train --output {out} --resume" in line
    assert not list(out.glob("final.tmp-*"))  # the half-written copy is gone at once (the space it held)
    assert f"cannot write {out / 'final'}:" in line and "final.tmp" not in line  # (not the directory just removed)
    monkeypatch.undo()
    assert main(_args(out, "--resume")) == 0, capsys.readouterr().err
    assert (out / "final" / "config.json").exists() and _steps(out) == [0, 2, 4]


# --------------------------------------------------------------------------- the max_nan_steps stop and resumes


def test_a_kill_in_a_streak_of_non_finite_steps_does_not_reset_it(tiny_dir, tmp_path, monkeypatch):
    """Every step non-finite, max_nan_steps 5: uninterrupted, the run stops at step 5 (checked first). Stopped
    right after its step-4 checkpoint (a kill there) and resumed, it must stop at step 5 too -- it trained on to
    step 8 with 8 non-finite steps in a row, and RunSummary.nan_streak said 4."""
    _nan_at(monkeypatch, range(1, 1000))
    ref = tmp_path / "ref"
    with pytest.raises(TrainingError, match="5 consecutive steps"):
        Trainer(_cfg(ref, "run.max_nan_steps=5")).run()
    assert _steps(ref, "train")[-1] == 5

    out = tmp_path / "killed"
    _stopped_after_checkpoint(monkeypatch, _cfg(out, "run.max_nan_steps=5"), 4)
    with pytest.raises(TrainingError, match="5 consecutive steps"):
        Trainer.resumed(out).run()
    assert _steps(out, "train")[-1] == 5


def test_a_resume_after_a_nan_stop_at_an_evaluation_step_logs_that_evaluation(tiny_dir, tmp_path, monkeypatch,
                                                                               capsys):
    """Steps 1-4 non-finite, max_nan_steps 4, evaluations every 2 steps: the run stops at step 4 ("the run can be
    resumed with --resume"), then is resumed and trains to 8. Every evaluation step must be in the log once; the
    resumed run logged 0, 2, 6, 8 -- step 4's is lost for good."""
    _nan_at(monkeypatch, {1, 2, 3, 4})
    out = tmp_path / "run"
    with pytest.raises(TrainingError, match="stopped at step 4"):
        Trainer(_cfg(out, "run.max_nan_steps=4")).run()
    Trainer.resumed(out).run()
    assert _steps(out) == [0, 2, 4, 6, 8]
    _, samples, _ = read_runlog(out / "samples.jsonl")
    assert sorted({r["step"] for r in samples}) == [0, 2, 4, 6, 8]


def test_a_study_does_not_resume_a_run_stopped_by_nans_at_its_last_step_for_ever(tiny_dir, tmp_path, monkeypatch):
    """One study run (steps 4, evaluations every 2) whose steps 3-4 were non-finite, max_nan_steps 2: it failed
    (recorded so); ``scalerl study --resume`` then calls execute_run on it. Expected: a bounded number of trainer
    runs and a run that ends at its budget with its last evaluation logged; it started trainer after trainer, each
    "already at step 4 of run.steps = 4: the run is done" (stopped here after 4)."""
    from scalerl.study.one_run import execute_run
    from scalerl.study.plan import Budget

    _nan_at(monkeypatch, {3, 4})
    out = tmp_path / "study" / "runs" / "scalerl" / "seed0"
    cfg = _cfg(out, "run.max_nan_steps=2", steps=4)
    with pytest.raises(TrainingError, match="stopped at step 4"):
        Trainer(cfg).run()

    real_run, runs = Trainer.run, []

    class Looping(Exception):
        pass

    def counted(self, **kwargs):
        runs.append(self.step)
        if len(runs) > 4:
            raise Looping(f"execute_run started {len(runs)} trainer runs, each from step {self.step}")
        return real_run(self, **kwargs)

    monkeypatch.setattr(Trainer, "run", counted)
    outcome = execute_run(to_dict(cfg), Budget(steps=4, compute=None, max_steps=4, x="flops", eval_every=2))
    assert len(runs) <= 2
    assert outcome.status == "resumed" and outcome.step == 4 and _steps(out) == [0, 2, 4]


def test_a_resumed_run_still_notes_a_collapse_that_spans_its_checkpoint(tiny_dir, tmp_path, monkeypatch, capsys):
    """README: weights broken without a NaN (lr far too high), every completion failing 5 steps in a row: "a note
    on stderr naming the lr, the run goes on". lr 1e4 breaks the tiny model at its first step: uninterrupted, the
    note comes at step 6 ("steps 2-6", checked first). Stopped right after its step-4 checkpoint and resumed,
    the run must say it too -- it said nothing (steps 5-8: a streak of 4)."""
    note = "every completion failed (train pass rate 0)"
    Trainer(_cfg(tmp_path / "ref", "lr=1e4")).run()
    assert "steps 2-6: " + note in capsys.readouterr().err

    out = tmp_path / "killed"
    _stopped_after_checkpoint(monkeypatch, _cfg(out, "lr=1e4"), 4)
    assert note not in capsys.readouterr().err  # (the stop came before step 6)
    Trainer.resumed(out).run()
    assert "steps 2-6: " + note in capsys.readouterr().err


# --------------------------------------------------------------------------- review cj: more full disks, older checkpoints


def _train_args(output, *extra, steps=2):
    return ["train", "--model", "tiny", "--output", str(output), "--no-progress", "--no-report", "--steps", str(steps),
            "--eval-every", "2", "--threads", "1", "--set", "pipeline=sync", "--set", "batch.prompts_per_step=4",
            "--set", "batch.generations_per_prompt=4", "--set", "eval.problems=8",
            "--set", "eval.samples_per_problem=1", "--set", "forecast.enabled=false", *extra]


@pytest.mark.slow
def test_a_disk_that_fills_while_the_tokenizer_is_saved_into_final_stops_with_one_line(tiny_dir, tmp_path, capsys,
                                                                                       monkeypatch):
    """README: a full disk "while final/ is written (stopped; --resume saves it again)" -- a one-line error. Reproduced
    on a real tmpfs (the weights fitted, tokenizer.json did not): ``Exception: No space left on device (os error
    28)`` from ``self.backend_tokenizer.save(tokenizer_file)``, a traceback through save_policy. Here the tokenizer's
    own file write raises what the Rust tokenizers library raised there."""
    import transformers.tokenization_utils_tokenizers as tok

    out = tmp_path / "run"
    real = tok.TokenizersBackend._save_pretrained

    def full(self, save_directory, *args, **kwargs):
        if ".tmp-" in str(save_directory) and "final" in str(save_directory):
            raise Exception("No space left on device (os error 28)")  # what tokenizers' Tokenizer.save raises
        return real(self, save_directory, *args, **kwargs)

    monkeypatch.setattr(tok.TokenizersBackend, "_save_pretrained", full)
    try:
        code = main(_train_args(out))
    except Exception as exc:  # noqa: BLE001 -- the traceback the command ends in today
        pytest.fail(f"scalerl train raised {type(exc).__name__}: {exc}")
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("scalerl train:")]
    assert code == 2 and len(lines) == 1 and "No space left on device" in lines[0], err
    assert f"scalerl train --output {out} --resume" in lines[0]


_FULL_DISK_SITECUSTOMIZE = '''
import os
if os.environ.get("CJ_FULL_DISK_AT"):
    import contextlib, io
    import torch.distributed.checkpoint.filesystem as fs
    from full_disk import FullDisk

    class _NearlyFull(FullDisk):
        room = 1000

    real = fs.FileSystem.create_stream

    @contextlib.contextmanager
    def create_stream(self, path, mode):
        if "w" in mode and os.environ["CJ_FULL_DISK_AT"] in str(path):
            with io.BufferedWriter(_NearlyFull(str(path), "wb")) as stream:
                yield stream
            return
        with real(self, path, mode) as stream:
            yield stream

    fs.FileSystem.create_stream = create_stream
'''


@pytest.mark.extended  # (26-33 s of a CI worker: two ranks, a resume; make test-all runs it)
def test_a_full_disk_while_nproc_shards_are_written_stops_with_one_line(tiny_dir, tmp_path, capfd, monkeypatch):
    """README: "a full disk at a checkpoint (stopped; the last checkpoint resumes)" with a one-line error. Reproduced
    with `--nproc 2` on a real 30 MB tmpfs: 200 lines of tracebacks from both ranks ending in ``RuntimeError: trainer
    rank 0 failed: ... CheckpointException ... RuntimeError: [enforce fail at inline_container.cc:672] . unexpected pos
    704 vs 598``. Here the spawned ranks' shard files (step 1's, after step 0's checkpoint) hold 1,000 bytes before a write fails with ENOSPC,
    as the kernel's does (a sitecustomize the spawned ranks import)."""
    site = tmp_path / "site"
    site.mkdir()
    (site / "sitecustomize.py").write_text(_FULL_DISK_SITECUSTOMIZE)
    root = Path(__file__).resolve().parents[2]  # (src, and tests/ for full_disk.py)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(site), str(root / "src"), str(root / "tests"),
                                                      os.environ.get("PYTHONPATH", "")]))
    monkeypatch.setenv("CJ_FULL_DISK_AT", "step_000001.tmp-")
    out = tmp_path / "run"
    small = ["--set", "batch.prompts_per_step=2", "--set", "batch.generations_per_prompt=2", "--set", "eval.problems=2"]
    try:
        code = main(_train_args(out, *small, "--nproc", "2", steps=1))
    except Exception as exc:  # noqa: BLE001 -- what the command ends in today
        pytest.fail(f"scalerl train --nproc 2 raised {type(exc).__name__}: {str(exc)[-300:]}")
    err = capfd.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("scalerl train:")]
    assert code == 2 and "Traceback" not in err and len(lines) == 1, err[-3000:]
    assert "No space left on device" in lines[0] and f"scalerl train --output {out} --resume" in lines[0], lines[0]
    assert "SIGTERM" not in err, err  # (torch's "Terminating process N via signal SIGTERM" of the other rank: noise)
    assert f"cannot write {out / 'checkpoints'}" in lines[0] and ".tmp-" not in lines[0], lines[0]
    assert not list((out / "checkpoints").glob("*.tmp-*"))  # the half-written shards are gone (the space they held)
    monkeypatch.delenv("CJ_FULL_DISK_AT")
    assert main(_train_args(out, *small, "--nproc", "2", "--resume", steps=1)) == 0
    assert _steps(out) == [0, 1]  # (the step-1 evaluation, logged before the failed checkpoint, once)


# --------------------------------------------------------------------------- a checkpoint of the previous commit


@pytest.mark.slow
def test_a_study_finishes_a_run_the_previous_commit_stopped_for_nans_at_its_last_step(tiny_dir, tmp_path, monkeypatch):
    """The previous commit's max_nan_steps stop: inside _train_step, `self._checkpoint()` then the TrainingError --
    before the step's evaluation, and its checkpoints held no nan_streak / fail_streak. A study's run stopped so at its
    last step (steps 3-4 non-finite, max_nan_steps 2, budget 4 steps) is on disk when scalerl is upgraded; `scalerl
    study --resume` calls execute_run on it. Expected (as for a run this commit stopped, its own test): resumed, its
    step-4 evaluation logged. Got: status 'failed', 'the run was resumed to step 4 and logged no new evaluation: it
    cannot reach the budget (4 steps) this way' -- at every study resume, as the run is never evaluated."""
    import scalerl.train.trainer as trainer_module
    from scalerl.config import to_dict
    from scalerl.runlog import read_runlog
    from scalerl.study.one_run import execute_run
    from scalerl.study.plan import Budget
    from scalerl.train.config import TrainConfig, resolve
    from scalerl.train.trainer import Trainer, TrainingError
    from scalerl.train.update import UpdateResult

    out = tmp_path / "study" / "runs" / "scalerl" / "seed0"
    cfg = resolve(TrainConfig(), ["model.name_or_path=tiny", f"run.output={out}", "run.steps=4", "eval.every=2",
                                  "log.progress=false", "run.threads=1", "forecast.enabled=false", "pipeline=sync",
                                  "batch.prompts_per_step=4", "batch.generations_per_prompt=4", "eval.problems=8",
                                  "eval.samples_per_problem=1", "run.max_nan_steps=2"])

    # The previous commit's trainer: steps 3 and 4 non-finite; the stop checkpoints inside the step, then raises.
    real_update, seen = trainer_module.policy_update, {"n": 0}

    def update(*args, **kwargs):
        result = real_update(*args, **kwargs)
        seen["n"] += 1
        if seen["n"] in (3, 4):
            return UpdateResult(result.metrics, result.trained_tokens, skipped=True, reason="non-finite loss (nan)",
                                lag_counts=result.lag_counts)
        return result

    real_step, real_state = Trainer._train_step, Trainer._state

    def old_step(self):
        real_step(self)
        if self.nan_streak >= self.cfg.run.max_nan_steps:
            self._checkpoint()
            raise TrainingError(f"{self.nan_streak} consecutive steps had a non-finite loss or gradient; stopped at "
                                f"step {self.step}. ... the run can be resumed with --resume")

    def old_state(self):
        state = real_state(self)
        state.pop("nan_streak", None)
        state.pop("fail_streak", None)
        return state

    with monkeypatch.context() as m:
        m.setattr(trainer_module, "policy_update", update)
        m.setattr(Trainer, "_train_step", old_step)
        m.setattr(Trainer, "_state", old_state)
        with pytest.raises(TrainingError, match="stopped at step 4"):
            Trainer(cfg).run()
    evals = [r["step"] for r in read_runlog(out / "runlog.jsonl")[1] if r["type"] == "eval"]
    assert evals == [0, 2]  # (the previous commit's stop: step 4 checkpointed, never evaluated)

    outcome = execute_run(to_dict(cfg), Budget(steps=4, compute=None, max_steps=4, x="flops", eval_every=2))
    evals = [r["step"] for r in read_runlog(out / "runlog.jsonl")[1] if r["type"] == "eval"]
    assert outcome.status == "resumed" and evals == [0, 2, 4], (outcome.status, outcome.error, evals)


# --------------------------------------------------------------------------- a full disk at a new run's first checkpoint


@pytest.mark.slow
def test_a_full_disk_at_the_first_checkpoint_says_what_works(tiny_dir, tmp_path, capsys, monkeypatch):
    """Reproduced on a real 3 MB tmpfs: `scalerl train` stops at step 0 with the line above, the run directory is
    emptied (discard_unstarted), and the --resume it names is refused. The CI fix (torch.save's write error raised as
    the OSError) sends this case to the handler written for a later checkpoint. The line must name a command that
    works once space is freed (a Ctrl-C there says: "run the same command again to start it")."""
    import scalerl.train.checkpoint as checkpoint_module

    out = tmp_path / "run"

    def fake_open(path, mode="r", *args, **kwargs):
        if "step_000000.tmp-" in str(path) and str(path).endswith("state.pt") and "w" in mode:
            return io.BufferedWriter(FullDisk(path, "wb"))
        return open(path, mode, *args, **kwargs)

    with monkeypatch.context() as m:
        m.setattr(checkpoint_module, "open", fake_open, raising=False)
        code = main(_train_args(out))
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.startswith("scalerl train:")]
    assert code == 2 and len(lines) == 1 and "No space left on device" in lines[0], err
    # Space freed: what the line says to do must work.
    again = _train_args(out, "--resume") if "--resume" in lines[0] else _train_args(out)
    code = main(again)
    assert code == 0, (lines[0], capsys.readouterr().err[-600:])
