"""A run directory's checkpoints as a user manages them (review bg): a damaged checkpoint renamed in place as the
refusal advised, a user's copy beside the checkpoints, a checkpoint whose bytes changed after it was written."""

import io
import json
import pathlib
import shutil
import struct
from pathlib import Path

import pytest
import torch

from scalerl import errors
from scalerl.errors import CannotResume, InputError, ScaleRLError
from scalerl.train.checkpoint import (SHARDS, _looks_intact, checkpoint_step, damaged, latest_checkpoint, load_checkpoint,
                                      refuse_damaged_newer, save_checkpoint, verify_shards)


def test_a_damaged_checkpoint_renamed_in_place_is_not_taken_for_the_newest(tmp_path):
    """The damaged-checkpoint refusal says "move step_000007 away to resume from step_000006"; a user
    who renames it in place (step_000007.bad) left the ``latest`` pointer stale, and the fallback took
    the renamed directory as the newest checkpoint: `scalerl train --resume` then ended in a
    ValueError traceback from checkpoint_step (reproduced with the CLI on a tiny run)."""
    ckpts = tmp_path / "checkpoints"
    for step in (6, 7):
        save_checkpoint(ckpts, step, {"step": step}, keep=2)
    (ckpts / "step_000007").rename(ckpts / "step_000007.bad")
    chosen = latest_checkpoint(ckpts)
    assert chosen is not None and chosen.name == "step_000006"
    assert checkpoint_step(chosen) == 6


def test_pruning_leaves_a_users_copy_of_a_checkpoint_alone(tmp_path):
    """A user's copy of a checkpoint kept beside the others (step_000006.keep) was deleted without a
    word by the pruning after the next checkpoint (reproduced with the CLI: a finished 7-step run
    extended to --steps 10 lost it)."""
    ckpts = tmp_path / "checkpoints"
    for step in (6, 7):
        save_checkpoint(ckpts, step, {"step": step}, keep=2)
    backup = ckpts / "step_000006.keep"
    (ckpts / "step_000006").rename(backup)  # as `cp -r` would leave it, without a second copy's bytes
    save_checkpoint(ckpts, 8, {"step": 8}, keep=2)
    assert backup.is_dir()


def test_a_checkpoint_whose_bytes_changed_is_refused_not_loaded(tmp_path):
    """4 KiB of a checkpoint's tensor data overwritten (bit rot, a bad disk block): load_checkpoint
    returned the state with 1,024 NaN weights. With the CLI, --resume of a finished run then replaced
    its good final/ with them ("its final model is saved again from its last checkpoint"), and a
    resume mid-run stopped blaming the learning rate ("lower it and start again")."""
    ckpts = tmp_path / "checkpoints"
    path = save_checkpoint(ckpts, 1, {"model": {"w": torch.zeros(1 << 20)}}, keep=2)
    state_file = path / "state.pt"
    with open(state_file, "r+b") as f:
        f.seek(state_file.stat().st_size // 2)  # inside the one tensor's 4 MiB of data
        f.write(b"\xff" * 4096)
    with pytest.raises(InputError, match="does not match the checksum written with it"):
        load_checkpoint(path)


# Review bi
def test_a_damaged_shard_is_refused(tmp_path):
    import torch.distributed.checkpoint as dcp

    ckpt = save_checkpoint(tmp_path, 2, {"step": 2, "weights": "shards"},
                           write_shards=lambda p: dcp.save({"w": torch.ones(4096)}, checkpoint_id=str(p)))
    shard = next((ckpt / "shards").glob("*.distcp"))
    data = bytearray(shard.read_bytes())
    at = data.find(torch.ones(64).numpy().tobytes())
    data[at:at + 4096] = b"\xff" * 4096  # 1024 floats become NaN, the file's length kept
    shard.write_bytes(bytes(data))
    with pytest.raises(OSError, match="does not match the checksum written with it"):
        verify_shards(ckpt / "shards")


def test_checkpoints_past_step_999999_are_ordered_by_step(tmp_path):
    for step in (999_998, 999_999, 1_000_000, 1_000_001):
        save_checkpoint(tmp_path, step, {"step": step}, keep=2)
    (tmp_path / "latest").unlink()
    assert latest_checkpoint(tmp_path).name == "step_1000001"
    assert sorted(p.name for p in tmp_path.glob("step_*")) == ["step_1000000", "step_1000001"]


# Review bk
def test_a_legacy_earlier_checkpoint_is_named_to_resume_from(tmp_path):
    older = tmp_path / "step_000003"
    older.mkdir()
    torch.save({"step": 3}, older / "state.pt", _use_new_zipfile_serialization=False)
    assert load_checkpoint(older) == {"step": 3}  # 7a03c9f: a legacy state.pt is left to torch.load, and loads
    newer = save_checkpoint(tmp_path, 4, {"step": 4, "w": torch.ones(1000)}, keep=5)
    data = (newer / "state.pt").read_bytes()
    (newer / "state.pt").write_bytes(data[: len(data) // 2])
    with pytest.raises(InputError) as refused:
        load_checkpoint(newer)
    # Said before: "step_000003 cannot be read either ... no earlier checkpoint is left: start the run again".
    assert "to resume from step_000003" in str(refused.value), str(refused.value)


def test_a_damaged_shard_left_out_of_the_sums_is_refused(tmp_path):
    import torch.distributed.checkpoint as dcp

    ckpt = save_checkpoint(tmp_path, 2, {"step": 2, "weights": "shards"},
                           write_shards=lambda p: dcp.save({"w": torch.ones(4096)}, checkpoint_id=str(p)))
    shards = ckpt / "shards"
    shard = next(shards.glob("*.distcp"))
    sums = json.loads((shards / "crc32.json").read_text())
    del sums[shard.name]  # the sums file damaged too (or hand-edited): the entry lost
    (shards / "crc32.json").write_text(json.dumps(sums))
    data = bytearray(shard.read_bytes())
    at = data.find(torch.ones(64).numpy().tobytes())
    data[at:at + 4096] = b"\xff" * 4096  # 1024 floats become NaN, the file's length kept
    shard.write_bytes(bytes(data))
    with pytest.raises(OSError):
        verify_shards(shards)


def test_damaged_checksums_are_said_naming_their_file(tmp_path):
    # Review bk: a crc32.json that is no JSON was refused as "JSONDecodeError: Expecting property name", naming no file.
    import torch.distributed.checkpoint as dcp

    ckpt = save_checkpoint(tmp_path, 2, {"step": 2, "weights": "shards"},
                           write_shards=lambda p: dcp.save({"w": torch.ones(64)}, checkpoint_id=str(p)))
    (ckpt / "shards" / "crc32.json").write_text("{garbage")
    with pytest.raises(OSError, match=r"crc32.json cannot be read \(JSONDecodeError\)"):
        verify_shards(ckpt / "shards")


def test_a_run_that_cannot_resume_crosses_processes_whole():
    # CannotResume (review bj: a study replaces train's remedy) is raised in worker processes: pickled, the default
    # rebuilt it from its message alone, which its two-part constructor refuses.
    import pickle

    from scalerl.errors import CannotResume

    back = pickle.loads(pickle.dumps(CannotResume("no checkpoint", ": start the run again")))
    assert (str(back), back.problem) == ("no checkpoint: start the run again", "no checkpoint")


# Review bl
def test_a_rank_0_cannot_resume_error_comes_back_through_the_launcher():
    """``scalerl train --nproc 2 --resume`` of a run whose checkpoints are gone: rank 0 raises CannotResume, the
    launcher (launch._run_group) rebuilds it from its class name and message alone -- and CannotResume's
    (problem, remedy) signature made that a TypeError traceback (exit 1) instead of the one-line error (exit 2)."""
    sent = CannotResume("--resume: run has 2 logged steps but no checkpoint", ". Start a new run")
    name, message = type(sent).__name__, str(sent)  # what a rank puts in the box
    cls = getattr(errors, name, None)
    rebuilt = cls(message)  # as launch._run_group does
    assert isinstance(rebuilt, ScaleRLError) and str(rebuilt) == message


def test_a_legacy_state_cut_short_is_not_named_to_resume_from(tmp_path):
    """A legacy-format (pickle) state.pt cut in half, which torch.load refuses ('unexpected EOF'), was taken as
    intact (its first byte is 0x80) and named as the checkpoint to resume from: the second error that naming only
    intact ones avoids. A zip state cut short is refused (its directory is at the end)."""
    ckpts = tmp_path / "checkpoints"
    for step in (1, 2):
        (ckpts / f"step_{step:06d}").mkdir(parents=True)
    buf = io.BytesIO()
    torch.save({"w": torch.randn(1000)}, buf, _use_new_zipfile_serialization=False)
    (ckpts / "step_000001" / "state.pt").write_bytes(buf.getvalue()[: len(buf.getvalue()) // 2])
    with pytest.raises(RuntimeError):  # damaged: torch cannot load it
        torch.load(ckpts / "step_000001" / "state.pt", weights_only=False)
    (ckpts / "step_000002" / "state.pt").write_bytes(b"junk")
    assert not _looks_intact(ckpts / "step_000001")
    assert "resume from step_000001" not in str(damaged(ckpts / "step_000002", OSError("x")))


# Review bn: the damaged-checkpoint advice, followed, resumes
def _resume(d: Path) -> int:
    """What Trainer._restore does with the checkpoints before loading the model."""
    ckpt = latest_checkpoint(d)
    refuse_damaged_newer(ckpt)
    return load_checkpoint(ckpt)["step"]


def _cut(p: Path) -> None:
    data = p.read_bytes()
    p.write_bytes(data[: len(data) // 2])


@pytest.mark.parametrize("middle", ["cut", "missing"])
def test_following_the_damaged_advice_resumes_from_the_checkpoint_it_names(tmp_path, middle):
    d = tmp_path / "checkpoints"
    for step in (10, 20, 30):
        save_checkpoint(d, step, {"step": step}, keep=5)
    _cut(d / "step_000030" / "state.pt")
    if middle == "cut":
        _cut(d / "step_000020" / "state.pt")
    else:
        (d / "step_000020" / "state.pt").unlink()
    with pytest.raises(InputError, match="to resume from step_000010") as first:
        _resume(d)
    # Do what the error says (review bn: it named only the newest, and the resume then refused the one between).
    assert _follow_the_advice(first.value, d, tmp_path / "aside") == ["step_000030", "step_000020"]
    assert _resume(d) == 10


def _follow_the_advice(error: Exception, checkpoints: Path, aside: Path) -> list[str]:
    """Move the checkpoints a damaged-checkpoint refusal says to move out of ``checkpoints``; their names."""
    names = [Path(m).name for m in str(error).split("; move ", 1)[1].split(" out of ", 1)[0].split(" and ")]
    aside.mkdir()
    for name in names:
        shutil.move(str(checkpoints / name), aside)
    return names


# Review bo
def test_the_advice_does_not_name_a_sharded_checkpoint_that_lost_its_shards(tmp_path):
    import torch.distributed.checkpoint as dcp

    d = tmp_path / "checkpoints"
    for step in (10, 20, 30):
        save_checkpoint(d, step, {"step": step, "weights": "shards", "nproc": 2}, keep=5,
                        write_shards=lambda p: dcp.save({"w": torch.ones(4)}, checkpoint_id=str(p)))
    shutil.rmtree(d / "step_000020" / SHARDS)
    state = d / "step_000030" / "state.pt"
    state.write_bytes(state.read_bytes()[:100])
    with pytest.raises(Exception) as first:
        _resume(d)
    _follow_the_advice(first.value, d, tmp_path / "aside")
    assert _resume(d) == 10


def test_many_damaged_checkpoints_are_counted_not_listed(tmp_path):
    # Review bo: 38 damaged checkpoints were each named twice, a 1,586-character line.
    d = tmp_path / "checkpoints"
    for step in range(1, 11):
        save_checkpoint(d, step, {"step": step}, keep=20)
    for step in range(2, 11):
        _cut(d / f"step_{step:06d}" / "state.pt")
    with pytest.raises(InputError, match=r"step_000010 and the 8 checkpoints before it down to step_000002 out of "
                                         r"checkpoints/ \(or delete them: the others cannot be read either\) to resume "
                                         r"from step_000001") as refused:
        _resume(d)
    assert "step_000005" not in str(refused.value)  # (counted, not each named)


def test_sharded_checkpoint_that_lost_its_checksums_is_refused(tmp_path):
    # A checkpoint whose crc32.json was lost was taken for one an older scalerl wrote, and loaded unchecked: its state
    # now says the checksums were written.
    import torch.distributed.checkpoint as dcp

    ckpt = save_checkpoint(tmp_path, 2, {"step": 2, "weights": "shards"},
                           write_shards=lambda p: dcp.save({"w": torch.ones(64)}, checkpoint_id=str(p)))
    assert load_checkpoint(ckpt)["shard_sums"] is True
    (ckpt / "shards" / "crc32.json").unlink()
    verify_shards(ckpt / "shards")  # (as an older scalerl's checkpoint: nothing to check against)
    with pytest.raises(FileNotFoundError, match=r"crc32.json is missing \(the checkpoint was written with it\)"):
        verify_shards(ckpt / "shards", sums_written=True)
    newer = save_checkpoint(tmp_path, 4, {"step": 4}, keep=5)
    (newer / "state.pt").write_bytes(b"")
    with pytest.raises(InputError, match="no earlier checkpoint is left") as refused:
        load_checkpoint(newer)
    assert "step_000002 cannot be read either" in str(refused.value)


# Review bp
def _rot(state: Path, where: str) -> None:
    """Change bytes of a zip state.pt without touching its end-of-central-directory record (bit rot)."""
    data = bytearray(state.read_bytes())
    if where == "data":  # inside the tensor's bytes
        at = len(data) // 2
        data[at:at + 64] = b"\xff" * 64
    else:  # the CRC-32 field of the central directory's first record
        at = data.find(b"PK\x01\x02") + 16
        crc = struct.unpack_from("<I", data, at)[0]
        struct.pack_into("<I", data, at, crc ^ 0xFFFFFFFF)
    state.write_bytes(bytes(data))


@pytest.mark.parametrize("where", ["data", "directory"])
def test_the_advice_does_not_name_an_earlier_checkpoint_whose_bytes_changed(tmp_path, where):
    d = tmp_path / "checkpoints"
    for step in (10, 20, 30):
        save_checkpoint(d, step, {"step": step, "w": torch.zeros(1 << 16)}, keep=5)
    _rot(d / "step_000020" / "state.pt", where)
    _cut(d / "step_000030" / "state.pt")
    with pytest.raises(InputError) as first:
        _resume(d)
    # Today: "move .../step_000030 out of checkpoints/ (or delete it) to resume from step_000020, ..."; moved, the
    # resume then says step_000020 "does not match the checksum written with it" -- the second error that naming
    # only intact checkpoints was to avoid (review bo's pattern).
    assert "to resume from step_000010" in str(first.value), str(first.value)
    _follow_the_advice(first.value, d, tmp_path / "aside")
    assert _resume(d) == 10


def test_a_damaged_checkpoint_of_a_trainer_group_is_not_called_one_process(tmp_path, monkeypatch):
    import torch.distributed.checkpoint as dcp

    from scalerl.train import launch as launching
    from scalerl.train.config import TrainConfig

    out = tmp_path / "run"
    d = out / "checkpoints"
    for step in (10, 20):
        save_checkpoint(d, step, {"step": step, "weights": "shards", "nproc": 2}, keep=5,
                        write_shards=lambda p: dcp.save({"w": torch.ones(4)}, checkpoint_id=str(p)))
    _cut(d / "step_000020" / "state.pt")  # written by 2 processes, its state.pt damaged since

    class RanksStarted(Exception):
        pass

    def started(*args, **kwargs):
        raise RanksStarted("the ranks would start here (rank 0 then says the checkpoint is damaged)")

    monkeypatch.setattr(launching, "_run_group", started)
    cfg = TrainConfig()
    cfg.run.nproc, cfg.run.output, cfg.run.device = 2, str(out), "cpu"
    with pytest.raises(Exception) as refused:
        launching.launch(cfg, resume=True)
    message = str(refused.value)
    # Today: ".../step_000020 was written by 1 trainer process(es); resume it with --nproc 1" -- false (2 wrote it),
    # and --nproc 1 then refuses the damaged checkpoint, and the earlier one as "written by 2".
    assert "written by 1 trainer" not in message and "--nproc 1" not in message, message


def test_a_latest_pointer_that_is_a_directory_does_not_end_the_run_in_a_traceback(tmp_path):
    d = tmp_path / "checkpoints"
    save_checkpoint(d, 2, {"step": 2}, keep=2)
    (d / "latest").unlink()
    (d / "latest").mkdir()  # damaged on disk (checkpoint._pointed: "a directory"), passed over on resume
    assert latest_checkpoint(d).name == "step_000002"  # the resume goes on from it ...
    try:
        save_checkpoint(d, 4, {"step": 4}, keep=2)  # ... and its first checkpoint:
    except ScaleRLError:
        return  # a one-line refusal would do
    assert latest_checkpoint(d).name == "step_000004"


# Review br
def test_a_latest_directory_holding_files_is_not_deleted_without_a_word(tmp_path):
    d = tmp_path / "checkpoints"
    save_checkpoint(d, 2, {"step": 2}, keep=2)
    (d / "latest").unlink()
    (d / "latest").mkdir()  # e.g. `cp -r checkpoints/step_000002 checkpoints/latest`: a copy the user keeps
    (d / "latest" / "state.pt").write_bytes(b"the user's copy")
    try:
        save_checkpoint(d, 4, {"step": 4}, keep=2)
    except ScaleRLError:
        return  # a one-line refusal would do
    assert latest_checkpoint(d).name == "step_000004"
    kept = [p for p in tmp_path.rglob("state.pt") if p.read_bytes() == b"the user's copy"]
    assert kept, "the directory's files were deleted"


def test_a_shard_without_read_permission_is_not_called_damaged_nor_the_run_started_again(tmp_path, monkeypatch):
    import torch
    import torch.distributed.checkpoint as dcp

    from scalerl.errors import CannotResume
    from scalerl.train import checkpoint as ck

    step = tmp_path / "checkpoints" / "step_000004"
    shards = step / ck.SHARDS
    dcp.save({"model": {"w": torch.ones(8)}}, checkpoint_id=shards)  # (one process: what each --nproc rank writes)
    ck.write_shard_sums(shards, ck.shard_sums(ck.shard_files(shards)))
    torch.save({"step": 4, "nproc": 2, "weights": "shards", "shard_sums": True}, step / "state.pt")
    (unreadable,) = [f for f in ck.shard_files(shards) if f.suffix == ".distcp"]
    crc32 = ck._crc32

    def no_permission(file):  # what reading the shard as a user without read permission gives (tests run as root)
        if Path(file) == unreadable:
            raise PermissionError(13, "Permission denied", str(file))
        return crc32(file)

    monkeypatch.setattr(ck, "_crc32", no_permission)
    # As Trainer._restore does before the ranks load the shards:
    with pytest.raises(OSError) as caught:
        ck.verify_shards(shards, sums_written=True)
    err = ck.damaged(step, caught.value)
    assert "damaged after it was written" not in str(err), str(err)
    assert not isinstance(err, CannotResume), f"the run is to be trained anew: {err}"


def test_a_checkpoint_directory_without_permission_is_said_in_one_line(tmp_path, monkeypatch):
    from scalerl.errors import InputError
    from scalerl.train import checkpoint as ck

    d = tmp_path / "checkpoints"
    for step in (4, 8):
        ck.save_checkpoint(d, step, {"step": step}, keep=3)
    locked = d / "step_000008"
    real_stat = pathlib.Path.stat

    def stat(self, *args, **kwargs):  # what a non-owner sees inside a mode-700 directory (tests run as root)
        if locked in self.parents:
            raise PermissionError(13, "Permission denied", str(self))
        return real_stat(self, *args, **kwargs)

    monkeypatch.setattr(pathlib.Path, "stat", stat)
    try:
        chosen = ck.latest_checkpoint(d)
        ck.refuse_damaged_newer(chosen)
    except InputError as exc:
        assert "permission denied" in str(exc).lower() and "damaged after" not in str(exc), str(exc)
        return
    except PermissionError as exc:
        pytest.fail(f"a traceback where one line is due: {exc!r}")
    # Not said: then the newest checkpoint is still the one chosen (its load says permission denied), never an
    # earlier one silently (the run's progress since thrown away).
    assert chosen.name == "step_000008", chosen
