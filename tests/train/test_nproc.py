"""``scalerl train --nproc 2`` (two gloo processes, FSDP2) follows ``--nproc 1``; it checkpoints in shards and resumes exactly."""

import contextlib
import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest
import torch
from safetensors.torch import load_file

from scalerl.cli import main
from scalerl.runlog import read_runlog
from scalerl.train.checkpoint import latest_checkpoint, load_checkpoint

from .conftest import small_args

pytestmark = [pytest.mark.slow, pytest.mark.filterwarnings("ignore::UserWarning")]

SYNC = ["--set", "pipeline=sync", "--set", "k=1", "--set", "run.micro_batch_size=4", "--set", "forecast.enabled=false"]
WALL = ("gpu_hours",)


def _rows(out):
    _, rows, notes = read_runlog(out / "runlog.jsonl")
    assert not notes
    return [{k: v for k, v in r.items() if k not in WALL and not k.startswith(("pipeline/", "memory/"))} for r in rows
            if r["type"] != "resume"]  # (the row that says the run was resumed)


def _assert_follows(got, want):
    assert [r["type"] for r in got] == [r["type"] for r in want]
    for g, w in zip(got, want):
        assert g.keys() == w.keys()
        for k, v in w.items():
            if isinstance(v, float):
                assert g[k] == pytest.approx(v, rel=1e-4, abs=1e-6), (w.get("step"), k)
            else:
                assert g[k] == v, (w.get("step"), k)


@contextlib.contextmanager
def training_nproc_2(out, *, torchrun=False):
    """``scalerl train --nproc 2`` (40 steps) in its own process group, once it trains (after step
    0's checkpoint): yields the launcher and its two ranks; whatever is left is killed at the end.
    ``torchrun``: the same two ranks started by torchrun (each runs the command) instead."""
    import psutil

    args = small_args(out, *SYNC, "--steps", "40", "--no-report")
    if torchrun:
        cmd = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2",
               "-m", "scalerl.cli", *args]
    else:
        cmd = [sys.executable, "-m", "scalerl.cli", *args, "--nproc", "2"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True, start_new_session=True)
    try:
        deadline = time.time() + 300
        log = out / "runlog.jsonl"
        while time.time() < deadline:
            assert proc.poll() is None, proc.communicate()[1]
            if log.exists() and any(r["type"] == "train" for r in read_runlog(log)[1]):
                break
            time.sleep(0.05)
        rank_mark = "scalerl.cli" if torchrun else "spawn_main"
        ranks = [p for p in psutil.Process(proc.pid).children() if rank_mark in " ".join(p.cmdline())]
        assert len(ranks) == 2
        yield proc, ranks
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


@pytest.fixture(scope="module")
def one_process_run(tiny_dir, tmp_path_factory):
    """The reference: the same run in one process (``--nproc 1``)."""
    out = tmp_path_factory.mktemp("nproc") / "one"
    assert main(small_args(out, *SYNC, "--no-report")) == 0
    return out


def test_nproc_2_follows_nproc_1(one_process_run, tmp_path, capsys):
    two = tmp_path / "two"
    assert main(small_args(two, *SYNC, "--nproc", "2")) == 0
    assert "final model" in capsys.readouterr().out
    _assert_follows(_rows(two), _rows(one_process_run))
    assert json.loads((two / "final" / "config.json").read_text())["dtype"] == "float32"
    # final/ gathered from the shards holds what the one process trained.
    got, want = load_file(two / "final" / "model.safetensors"), load_file(one_process_run / "final" / "model.safetensors")
    assert got.keys() == want.keys()
    for name, w in want.items():
        torch.testing.assert_close(got[name], w, rtol=1e-4, atol=1e-6)
    # Each rank wrote its own shard; rank 0's state.pt holds no weights and no optimizer state.
    ckpt = latest_checkpoint(two / "checkpoints")
    state = load_checkpoint(ckpt)
    assert state["weights"] == "shards" and "model" not in state and "optimizer" not in state
    assert len(list((ckpt / "shards").glob("*.distcp"))) == 2 and (ckpt / "shards" / ".metadata").exists()
    # The ranks split the checksums' reads; rank 0 wrote them all, and the state says they were written.
    sums = json.loads((ckpt / "shards" / "crc32.json").read_text())
    assert set(sums) == {f.name for f in (ckpt / "shards").iterdir() if f.name != "crc32.json"}
    assert state["shard_sums"] is True


# `extended` (make test-all, ~35 s): the sharded checkpoint's resume is checked in one process group by
# tests/train/test_distributed_update.py, and kill -9 + resume of the default recipe by test_resume.py.
@pytest.mark.extended
def test_nproc_2_resumes_after_kill_9(one_process_run, tmp_path):
    """Killed and resumed with two processes, the run still follows the one-process run (which
    an uninterrupted two-process run follows: the test above), row for row."""
    killed = tmp_path / "killed"
    cmd = lambda out: [sys.executable, "-m", "scalerl.cli", *small_args(out, *SYNC, "--nproc", "2", "--no-report")]
    # Its own process group: kill -9 reaches the launcher and both ranks at once.
    proc = subprocess.Popen(cmd(killed), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    deadline = time.time() + 300
    log = killed / "runlog.jsonl"
    while time.time() < deadline:  # kill after step 3's row: checkpoints are at steps 0, 2, 4
        assert proc.poll() is None, "the run ended before it could be killed"
        if log.exists() and log.stat().st_size and any(r.get("step") == 3 and r["type"] == "train"
                                                       for r in read_runlog(log)[1]):
            break
        time.sleep(0.05)
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    assert main(["train", "--output", str(killed), "--resume", "--no-progress", "--no-report"]) == 0
    _assert_follows(_rows(killed), _rows(one_process_run))


@pytest.mark.extended  # (the latch that passes a stop on: tests/test_stop_signals.py, in the default run)
def test_sigterm_to_the_launcher_stops_the_ranks_cleanly(tiny_dir, tmp_path):
    """`kill PID` of `scalerl train --nproc 2` (a scheduler's stop reaches the launcher alone): the
    launcher printed "terminated (SIGTERM)" but the ranks never heard of it -- they trained the run to
    its end while the launcher waited for them to exit, then exited 143 over a finished run. Now the
    ranks stop as on their own SIGTERM, and the launcher waits for them and exits 143 with rank 0's
    line: where it stopped, its checkpoint, how to resume."""
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "run"
    with training_nproc_2(out) as (proc, ranks):
        proc.terminate()
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 143, err
    assert "Traceback" not in err, err
    line = err.strip().splitlines()[-1]  # (after any note the run printed)
    stopped = re.fullmatch(rf"scalerl train: interrupted at step (\d+), last checkpoint at step (\d+); resume with: "
                           rf"scalerl train --output {re.escape(str(out))} --resume", line)
    assert stopped, err
    assert int(stopped[1]) < 40 and latest_checkpoint(out / "checkpoints").name == f"step_{int(stopped[2]):06d}"
    assert not any(r.is_running() and r.status() != psutil.STATUS_ZOMBIE for r in ranks)


@pytest.mark.extended  # (as above)
@pytest.mark.parametrize("group", [False, True], ids=["launcher-alone", "ctrl-c"])
def test_sigint_stops_the_ranks_cleanly(tiny_dir, tmp_path, group):
    """A SIGINT to the launcher alone (a notebook's "interrupt kernel", `timeout -s INT`) reached no
    rank: they trained the run to its end while the launcher waited. Ctrl-C at the terminal (the
    whole process group) must still stop it once, cleanly: exit 130 and rank 0's resume line."""
    psutil = pytest.importorskip("psutil")
    out = tmp_path / "run"
    with training_nproc_2(out) as (proc, ranks):
        if group:
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    stopped = re.fullmatch(rf"scalerl train: interrupted at step (\d+), last checkpoint at step (\d+); resume with: "
                           rf"scalerl train --output {re.escape(str(out))} --resume", line)
    assert stopped, err
    assert int(stopped[1]) < 40
    assert not any(r.is_running() and r.status() != psutil.STATUS_ZOMBIE for r in ranks)


@pytest.mark.extended  # (as above)
def test_under_torchrun_only_rank_0_says_how_to_go_on_after_a_stop(tiny_dir, tmp_path):
    """torchrun passes its SIGTERM (a scheduler's stop) on to every rank, and each rank runs the
    command: rank 1 printed "interrupted before training went on; resume with ..." beside rank 0's
    "interrupted at step N, last checkpoint at step C; resume with ...". Only rank 0 knows where the
    run stopped: rank 1 now says why it stopped, tagged with its rank, and nothing to run."""
    out = tmp_path / "run"
    with training_nproc_2(out, torchrun=True) as (proc, ranks):
        proc.terminate()
        _, err = proc.communicate(timeout=120)
    said = [line for line in err.splitlines() if line.startswith("scalerl train:")]  # (torchrun's own lines aside)
    assert err.count("resume with") == 1, err
    rank_1 = ("scalerl train: trainer rank 1 of 2: terminated (SIGTERM); rank 0 says where the run stopped and what "
              "to run next")
    assert len(said) == 2 and rank_1 in said, err
    (rank_0,) = [line for line in said if line != rank_1]
    assert re.fullmatch(rf"scalerl train: interrupted at step \d+, last checkpoint at step \d+; resume with: "
                        rf"scalerl train --output {re.escape(str(out))} --resume", rank_0), err


def test_nproc_refuses_what_it_does_not_shard(tmp_path, capsys):
    assert main(small_args(tmp_path / "x", "--nproc", "2", "--set", "model.lora.rank=4")) == 2
    err = capsys.readouterr().err
    assert "LoRA" in err and "Traceback" not in err
    assert main(small_args(tmp_path / "y", "--nproc", "0")) == 2


@pytest.mark.extended  # (make test-all: test_nproc_2_follows_nproc_1 runs two ranks in the default run)
def test_an_error_in_rank_0_comes_back_as_one_line(user_model, math_jsonl, tmp_path, capsys):
    """The generation budget is checked in rank 0's process: its error crosses back to the launcher."""
    out = tmp_path / "run"
    args = ["train", "--model", str(user_model("gpt2", positions=64)), "--task", "math", "--data", str(math_jsonl),
            "--output", str(out), "--no-progress", "--nproc", "2"]
    assert main(args) == 2
    err = capsys.readouterr().err
    line = [x for x in err.splitlines() if x.startswith("scalerl train: error:")]
    assert len(line) == 1 and "Traceback" not in err and "64 positions" in line[0]
    assert not out.exists() or not any(out.iterdir())  # the directory stays usable


def test_a_rank_killed_without_a_word_is_reported_with_how_to_resume():
    """kill -9 of one rank: the launcher said only 'stopped without a result (a rank was killed?)'."""
    from scalerl.train.launch import lost_rank_message

    message = lost_rank_message(2, "runs/big")
    assert "2 processes" in message and "scalerl train --output runs/big --resume" in message


def test_a_rank_killed_by_a_signal_is_named_with_its_signal_and_rank_0s_resume_line():
    from scalerl.train.launch import killed_rank_message

    where = "interrupted at step 3, last checkpoint at step 2; resume with: scalerl train --output runs/big --resume"
    message = killed_rank_message(1, 9, 2, "runs/big", where)
    assert message == ("trainer rank 1 of 2 was killed by signal 9 (SIGKILL: kill -9, or the out-of-memory killer?), "
                       f"so the group stopped: {where}")
    message = killed_rank_message(0, 11, 2, "runs/big", None)  # rank 0 itself: nobody said where it stopped
    assert message.startswith("trainer rank 0 of 2 was killed by signal 11 (SIGSEGV: ")
    assert message.endswith("continue from the last checkpoint with: scalerl train --output runs/big --resume")


@pytest.mark.extended
def test_kill_9_of_a_follower_rank_says_so_instead_of_looking_like_a_stop(tiny_dir, tmp_path):
    """A follower rank killed (the out-of-memory killer, kill -9): torch stopped rank 0 with SIGTERM,
    and the launcher exited 143 with rank 0's "interrupted at step N ...; resume with" -- a user's
    stop, as far as anyone could tell. Now it names the rank and the signal, then rank 0's line."""
    pytest.importorskip("psutil")
    out = tmp_path / "run"
    with training_nproc_2(out) as (proc, ranks):
        ranks[1].kill()  # spawned in rank order: rank 1, a follower
        _, err = proc.communicate(timeout=120)
    assert proc.returncode == 2, err
    assert "Traceback" not in err, err
    line = err.strip().splitlines()[-1]
    assert re.fullmatch(rf"scalerl train: error: trainer rank 1 of 2 was killed by signal 9 \(SIGKILL: .*\), so the "
                        rf"group stopped: interrupted at step \d+, last checkpoint at step \d+; resume with: "
                        rf"scalerl train --output {re.escape(str(out))} --resume", line), err


_STUB_LAUNCHER = '''
import sys, time
import torch.multiprocessing as mp
from scalerl.stop_signals import StopLatch
from scalerl.train.launch import prepare_rank


def rank(index, stop):
    prepare_rank(stop)  # what each spawned rank does first
    print("ready", flush=True)
    time.sleep(600)


if __name__ == "__main__":
    context = mp.start_processes(rank, args=(StopLatch(),), nprocs=1, join=False, start_method="spawn")
    print(context.processes[0].pid, flush=True)
    context.join()
'''


def test_kill_9_of_the_launcher_takes_the_ranks_with_it(tmp_path):
    """A rank is spawned by torch, which asks the kernel for a SIGINT when the launcher dies; the
    ranks ignore SIGINT (the launcher passes every stop on), so after `kill -9` of `scalerl train
    --nproc 2` they trained on in the background -- finishing the run while its resume started
    (benchmarks/kill_fuzz.py --extra "--nproc 2" found it). Now they die with the launcher."""
    psutil = pytest.importorskip("psutil")
    script = tmp_path / "launcher.py"
    script.write_text(_STUB_LAUNCHER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    proc = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True, env=env,
                            start_new_session=True)
    try:
        child = psutil.Process(int(proc.stdout.readline()))
        assert proc.stdout.readline().strip() == "ready"  # (its set-up done)
        proc.kill()
        proc.wait()
        deadline = time.time() + 10
        while time.time() < deadline and child.is_running() and child.status() != psutil.STATUS_ZOMBIE:
            time.sleep(0.05)
        assert not child.is_running() or child.status() == psutil.STATUS_ZOMBIE, "the rank outlived kill -9 of its launcher"
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)


@pytest.mark.extended  # (the same end to end: the test above runs the rank's set-up in the default run)
def test_kill_9_of_a_training_launcher_stops_its_ranks(tiny_dir, tmp_path):
    """`kill -9` of the launcher alone, mid-run: both ranks are gone within seconds, not training on."""
    psutil = pytest.importorskip("psutil")
    with training_nproc_2(tmp_path / "run") as (proc, ranks):
        proc.kill()
        proc.wait()
        deadline = time.time() + 10
        alive = ranks
        while alive and time.time() < deadline:
            alive = [r for r in ranks if r.is_running() and r.status() != psutil.STATUS_ZOMBIE]
            time.sleep(0.1)
        for rank in alive:  # (training on: the fixture kills only a launcher that still runs)
            rank.kill()
        assert not alive, "a rank outlived kill -9 of its launcher"
