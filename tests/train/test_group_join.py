"""Joining the trainer group's process group (``scalerl train --nproc N``, torchrun, or a scheduler's
MASTER_ADDR / MASTER_PORT) on a port another program holds: one line that says what to do, not
torch's DistNetworkError traceback."""

import contextlib
import socket

import pytest

from scalerl.cli import main
from scalerl.train.config import TrainConfig
from scalerl.train.launch import TrainerGroupError, run_rank


@pytest.fixture
def held_port():
    """A port another program listens on."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        yield s.getsockname()[1]


def test_a_port_taken_after_the_launcher_chose_it_says_run_again(held_port):
    """--nproc: the launcher picks a free port, and another program may take it before rank 0 listens."""
    with pytest.raises(TrainerGroupError, match=rf"^trainer rank 0 of 2 could not open the process group at "
                                                rf"tcp://127.0.0.1:{held_port}: .*address already in use; "
                                                r"run the command again"):
        run_rank(TrainConfig(), resume=False, rank=0, world=2, local_rank=0, init_method=f"tcp://127.0.0.1:{held_port}")


def test_a_master_port_in_use_is_one_line_naming_master_port(held_port, tmp_path, monkeypatch, capsys):
    """A rank started with RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (torchrun, srun) where that
    port is another program's: exit 2 and one line, and no run directory left behind."""
    for key, value in {"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0", "MASTER_ADDR": "127.0.0.1",
                       "MASTER_PORT": str(held_port)}.items():
        monkeypatch.setenv(key, value)
    out = tmp_path / "run"
    code = main(["train", "--model", "tiny", "--output", str(out), "--no-progress", "--steps", "1", "--no-report"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1, err
    assert err[0].startswith(f"scalerl train: error: trainer rank 0 of 1 could not open the process group at "
                             f"MASTER_ADDR:MASTER_PORT 127.0.0.1:{held_port}: "), err
    assert "another program holds the port: set MASTER_PORT to a free one" in err[0]
    assert not out.exists()


def test_more_cpu_ranks_than_cores_are_noted_before_they_start(monkeypatch, capsys):
    """``--nproc`` above the cores started its interpreters without a word (``--nproc 100000``
    too): now a note says they take turns; the run still starts. What it says of a resume is the resume's rule
    (checkpoint.refuse_other_nproc): another --nproc above one, except where the ranks generate on their shards."""
    import torch.multiprocessing

    from scalerl.pipeline import registry
    from scalerl.train import launch as launch_module

    assert launch_module.ranks_cores_note(2, "cpu", 2) is None and launch_module.ranks_cores_note(8, "cuda", 2) is None
    assert "a resume may give another --nproc of 2 or more" in launch_module.ranks_cores_note(3, "cpu", 2)
    assert "keeps its --nproc" in launch_module.ranks_cores_note(3, "cpu", 2, on_shards=True)

    class Started(Exception):
        pass

    def start_processes(*args, **kwargs):
        raise Started

    monkeypatch.setattr(registry, "cpu_cores", lambda: 2)
    monkeypatch.setattr(torch.multiprocessing, "start_processes", start_processes)
    cfg = TrainConfig()
    cfg.run.nproc, cfg.run.device = 3, "cpu"
    with pytest.raises(Started):
        launch_module.launch(cfg)
    assert "note: --nproc 3 trainer processes on 2 CPU core(s): they take turns, slower than --nproc 2" in \
        capsys.readouterr().err


def test_a_one_process_run_resumed_with_nproc_is_refused_before_any_rank_starts(tmp_path, monkeypatch, capsys):
    """A run of one process resumed with ``--nproc 2`` was refused only by rank 0, once both ranks had
    started and joined their group (~12 s, and torch's "Terminating process" warning): the launcher
    now reads who wrote the latest checkpoint first."""
    import torch.multiprocessing

    from .conftest import small_args

    out = tmp_path / "r"
    assert main(small_args(out, "--steps", "1")) == 0

    def start_processes(*args, **kwargs):
        raise AssertionError("the ranks were started")

    monkeypatch.setattr(torch.multiprocessing, "start_processes", start_processes)
    capsys.readouterr()
    assert main(["train", "--output", str(out), "--resume", "--nproc", "2", "--steps", "2", "--no-progress"]) == 2
    err = capsys.readouterr().err
    assert "was written by 1 trainer process(es); resume it with --nproc 1" in err, err


def test_a_rank_waiting_for_an_absent_rank_0_says_so(tmp_path):
    """A rank > 0 whose rank 0 never listens (not started, a MASTER_ADDR this machine cannot reach)
    waited torch's 30 minutes without a word: now it says so once after GROUP_WAIT_NOTE_S."""
    import subprocess
    import sys
    import time

    with socket.socket() as s:  # a port nobody listens on (bound, never listening, then closed)
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    code = ("import torch, scalerl.train.launch as launch; launch.GROUP_WAIT_NOTE_S = 0.5; "
            f"launch._join_group(torch.device('cpu'), 'tcp://127.0.0.1:{port}', 1, 2)")
    err = tmp_path / "err"
    with open(err, "w") as sink:
        proc = subprocess.Popen([sys.executable, "-c", code], stderr=sink)
        try:
            deadline = time.monotonic() + 60
            while "note:" not in err.read_text() and time.monotonic() < deadline and proc.poll() is None:
                time.sleep(0.2)
        finally:
            proc.kill()
            proc.wait()
    assert (f"note: trainer rank 1 of 2 has waited 0.5 s for rank 0 at tcp://127.0.0.1:{port}; check that rank 0 "
            "runs and that this machine reaches it (torch gives up after 30 minutes)") in err.read_text()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def rank_1_in_the_gloo_join(tmp_path, rank_1_code):
    """Rank 0 joins the default group and never opens the gloo group (a rank 0 stuck, or one rank 1
    cannot connect to); rank 1 (``rank_1_code``, a Python script with ``{port}``) joins with a gloo
    note after 0.5 s. Yields (rank 0, rank 1, rank 1's stderr file, stdout file) once rank 1 has
    printed its note; both are killed at the end."""
    import subprocess
    import sys
    import time

    port = _free_port()
    rank_0 = subprocess.Popen([sys.executable, "-c", (
        "import time, torch.distributed as dist; "
        f"dist.init_process_group('gloo', init_method='tcp://127.0.0.1:{port}', rank=0, world_size=2); "
        "time.sleep(600)")], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    err, out = tmp_path / "err", tmp_path / "out"
    with open(err, "w") as err_sink, open(out, "w") as out_sink:
        rank_1 = subprocess.Popen([sys.executable, "-c", rank_1_code.format(port=port)], stdout=out_sink,
                                  stderr=err_sink)
    try:
        deadline = time.monotonic() + 120
        while "gloo group" not in err.read_text() and time.monotonic() < deadline and rank_1.poll() is None:
            time.sleep(0.2)
        yield rank_0, rank_1, err, out
    finally:
        for proc in (rank_0, rank_1):
            proc.kill()
            proc.wait()


def test_a_rank_waiting_for_its_gloo_group_says_what_to_check(tmp_path):
    """The gloo group's connections are bounded by its 7-day timeout (which its collectives need):
    a host name resolving to 127.0.1.1 across machines, or a firewall, kept a rank waiting 7 days
    without a word. Now it says so once after ``note_after_s``, naming what to check."""
    code = ("import torch, scalerl.train.launch as launch; "
            "launch._join_group(torch.device('cpu'), 'tcp://127.0.0.1:{port}', 1, 2, note_after_s=0.5)")
    with rank_1_in_the_gloo_join(tmp_path, code) as (_, rank_1, err, _):
        assert rank_1.poll() is None, err.read_text()
        said = err.read_text()
    assert ("note: trainer rank 1 of 2 joined the process group but has waited 0.5 s to connect its gloo group "
            "(Python objects and waits, on every backend) to the other ranks; check that every rank has started it, "
            "and across machines that each machine's host name resolves to an address the others reach (not a "
            "loopback one such as 127.0.1.1; or set GLOO_SOCKET_IFNAME to the network interface they share) and that "
            "no firewall blocks the ports between them (gloo waits 7 days)") in said, said
    # Once: the gloo note is not repeated. (A note about waiting for rank 0 may come before it where rank 0's
    # process is slow to start -- importing torch on a loaded machine took over the 0.5 s: seen in a CI run.)
    assert said.count("to connect its gloo group") == 1


def test_a_failed_gloo_join_closes_the_default_group_it_opened(tmp_path):
    """``run_rank`` (the Python API) whose gloo join fails -- here rank 0 dies while rank 1 connects --
    raised with the default process group still open, so the same process could not join again
    ("trying to initialize the default process group twice"). Now: one clear error, no group left."""
    code = (
        "import torch.distributed as dist\n"
        "from scalerl.train import launch\n"
        "from scalerl.train.config import TrainConfig\n"
        "launch.GROUP_WAIT_NOTE_S = 0.5\n"
        "try:\n"
        "    launch.run_rank(TrainConfig(), resume=False, rank=1, world=2, local_rank=0,\n"
        "                    init_method='tcp://127.0.0.1:{port}')\n"
        "except launch.TrainerGroupError as exc:\n"
        "    print('error:', exc)\n"
        "print('initialized:', dist.is_initialized())\n"
        f"dist.init_process_group('gloo', init_method='tcp://127.0.0.1:{_free_port()}', rank=0, world_size=1)\n"
        "print('joined again')\n")
    with rank_1_in_the_gloo_join(tmp_path, code) as (rank_0, rank_1, err, out):
        assert rank_1.poll() is None, err.read_text()
        rank_0.kill()  # (it hosts the rendezvous: rank 1's gloo join fails at once)
        rank_1.wait(timeout=120)
    lines = out.read_text().splitlines()
    assert lines[0].startswith("error: trainer rank 1 of 2 joined the process group but not its gloo group "
                               "(Python objects and waits go through gloo, on every backend): "), lines
    assert lines[1:] == ["initialized: False", "joined again"], (lines, err.read_text())


def test_a_group_checkpoint_refused_to_one_process_names_every_group_that_reads_it(tmp_path):
    """Review fn: "resume it with --nproc 2" where --nproc 3 reads it too (a group's checkpoint is resharded)."""
    from scalerl.errors import InputError
    from scalerl.train.checkpoint import refuse_other_nproc

    with pytest.raises(InputError, match=r"resume it with --nproc 2 \(or any number above 1"):
        refuse_other_nproc(tmp_path / "step_000002", 2, grouped=False)
    with pytest.raises(InputError, match=r"resume it with --nproc 1$"):
        refuse_other_nproc(tmp_path / "step_000002", 1, grouped=True)
    refuse_other_nproc(tmp_path / "step_000002", 2, grouped=True, now=3)  # (read by a group of 3: no refusal)


def test_on_shards_checkpoint_message_offers_no_other_group_size(tmp_path):
    from scalerl.errors import InputError
    from scalerl.train.checkpoint import refuse_other_nproc

    ckpt = tmp_path / "step_4"
    # a group of 4 that generated on its shards, resumed as one process
    with pytest.raises(InputError) as err:
        refuse_other_nproc(ckpt, 4, grouped=False, now=1, exact=True)
    assert "any number above 1" not in str(err.value)
    # (the size it offers is indeed refused)
    with pytest.raises(InputError, match="resume it with --nproc 4$"):
        refuse_other_nproc(ckpt, 4, grouped=True, now=2, exact=True)
