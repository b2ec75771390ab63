"""Atomic checkpoints: a run can be killed at any moment and resumed.

Layout under ``<run>/checkpoints/``::

    step_000040/state.pt     model, optimizer, scheduler, sampler, compute counters, RNG
                             states, pending rollouts, and the run log's byte offset
    step_000040/shards/      under a multi-process trainer: each rank's shard of the model and
                             the optimizer (torch.distributed.checkpoint), which state.pt then
                             leaves out; crc32.json, the CRC-32 of each of its files
    latest                   the name of the newest complete checkpoint

Only ``step_NNNNNN`` directories are checkpoints (resumed from, pruned); a resume checks the bytes it
loads against the checksums written with them (state.pt's zip records, the shards' crc32.json).

A checkpoint is written to ``step_000040.tmp-<pid>`` and renamed into place; ``latest`` is
replaced with ``os.replace``. A kill at any point leaves either the old or the new
checkpoint, never half of one. On resume the run log is truncated back to the offset the
checkpoint recorded, so rows written after it (which the resumed run redoes) are neither
lost nor duplicated.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import sys
import zlib
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from scalerl.errors import CannotResume, InputError

LATEST = "latest"


def rng_state() -> dict[str, Any]:
    state = {"python": random.getstate(), "numpy": np.random.get_state(), "torch": torch.get_rng_state()}
    if torch.cuda.is_available():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: dict[str, Any]) -> None:
    random.setstate(state["python"])
    np.random.set_state(state["numpy"])
    torch.set_rng_state(state["torch"])
    if "cuda" in state and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


#: The directory of a checkpoint that holds the trainer ranks' shards.
SHARDS = "shards"


def save_checkpoint(directory: str | os.PathLike, step: int, state: dict[str, Any], *, keep: int = 2,
                    write_shards: Callable[[Path], None] | None = None) -> Path:
    """Write ``state`` as checkpoint ``step`` atomically; keep the newest ``keep`` checkpoints.

    ``write_shards``: called with the checkpoint's ``shards/`` directory inside the temporary
    copy, before ``state.pt`` is written (every rank of a trainer group writes its shard there),
    so the rename makes shards and state appear together or not at all. It may write the shards'
    checksums (:data:`SHARD_SUMS`; a group splits their reads over its ranks); where it did not,
    they are computed here. ``state.pt`` then says they were written (``shard_sums``): a
    checkpoint that lost them is damaged, not one an older scalerl wrote."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    name = f"step_{step:06d}"
    final = directory / name
    tmp = directory / f"{name}.tmp-{os.getpid()}"
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir()
    try:
        if write_shards is not None:
            write_shards(tmp / SHARDS)
            if not (tmp / SHARDS / SHARD_SUMS).is_file():
                write_shard_sums(tmp / SHARDS, shard_sums(shard_files(tmp / SHARDS)))
            state = {**state, "shard_sums": True}
        with open(tmp / "state.pt", "wb") as f:
            _save_through(state, f)
    except BaseException:  # a full disk, a kill: the half-written copy goes, the previous one stays
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    if final.exists():  # a checkpoint of the same step from an earlier, interrupted attempt
        # Renamed aside before it is deleted: a kill inside rmtree left step_N without its state.pt,
        # newer than the checkpoint `latest` names, and the resume was refused as a damaged one.
        aside = directory / f"{name}.replaced.tmp-{os.getpid()}"
        os.rename(final, aside)
        shutil.rmtree(aside)
    os.rename(tmp, final)
    pointer = directory / f"{LATEST}.tmp-{os.getpid()}"
    pointer.write_text(name + "\n")
    _move_aside_a_latest_directory(directory)
    os.replace(pointer, directory / LATEST)
    _fsync_dir(directory)
    prune_checkpoints(directory, keep, current=name)
    return final


class KeptWriteErrors:
    """The file torch.save writes through, keeping the first OSError of its writes and flushes: torch's zip writer
    raises a RuntimeError of its own over it (``unexpected pos ...``), and a disk that filled while ``state.pt`` (or,
    under ``--nproc``, a rank's shard: :mod:`scalerl.train.shard_writer`) was written read as a crash, a traceback,
    where a full disk is a one-line stop that says how to go on (review ci). Everything else is the file's own."""

    def __init__(self, f: Any) -> None:
        self.f, self.error = f, None

    def write(self, data: Any) -> int:
        try:
            return self.f.write(data)
        except OSError as exc:
            self.error = self.error or exc
            raise

    def flush(self) -> None:
        try:
            self.f.flush()
        except OSError as exc:
            self.error = self.error or exc
            raise

    def __getattr__(self, name: str) -> Any:  # tell, fileno, close ...
        return getattr(self.f, name)


def _save_through(state: dict[str, Any], f) -> None:
    """``torch.save(state, f)``, flushed and synced, a failed write raised as its OSError naming the file (a buffered
    write's names none: the disk-full line said the run directory -- review cn)."""
    sink = KeptWriteErrors(f)
    try:
        try:
            torch.save(state, sink)
        except RuntimeError:
            if sink.error is None:
                raise
            raise sink.error from None
        f.flush()
        os.fsync(f.fileno())
    except OSError as exc:
        if exc.filename is not None:
            raise
        raise OSError(exc.errno, exc.strerror, getattr(f, "name", None)) from None


def _move_aside_a_latest_directory(directory: Path) -> None:
    """A ``latest`` pointer that is a directory (``_pointed`` passes over it) cannot be replaced: the run ended in a
    traceback at its first checkpoint, and at every resume after (review bp). It may hold a user's copy of a
    checkpoint (review br: deleted with it): renamed aside, and said."""
    latest = directory / LATEST
    if not latest.is_dir() or latest.is_symlink():
        return
    aside = directory / f"{LATEST}.moved-aside-{os.getpid()}"
    os.rename(latest, aside)
    print(f"warning: {latest} was a directory, where the name of the newest checkpoint belongs: moved to {aside}",
          file=sys.stderr)


#: A checkpoint's directory name as :func:`save_checkpoint` writes it. Any other ``step_*`` -- a user's copy
#: (``step_000006.keep``), one renamed aside (``step_000007.bad``), a write in progress (``.tmp-``) -- is none:
#: neither resumed from nor pruned (review bg: the fallback took ``step_000007.bad`` for the newest, a traceback;
#: pruning deleted a user's copy).
_CHECKPOINT_NAME = re.compile(r"step_\d{6,}")


def _checkpoints(directory: Path) -> list[Path]:
    """The directories in ``directory`` named as checkpoints, oldest first -- by step, not name (review bi: past
    step 999999, ``step_1000000`` sorted before ``step_999998``, and pruning deleted the newest)."""
    return sorted((p for p in directory.glob("step_*") if _CHECKPOINT_NAME.fullmatch(p.name) and p.is_dir()),
                  key=checkpoint_step)


def prune_checkpoints(directory: str | os.PathLike, keep: int, current: str) -> None:
    """Delete all but the newest ``keep`` complete checkpoints (never ``current``, the one a run
    goes on from) and the leftovers of a kill mid-write. After each checkpoint, and on resume: a kill
    after the last checkpoint's pointer moved, before this ran, left one checkpoint too many (a
    model's size), and a resume of the finished run writes no checkpoint that would delete it."""
    directory = Path(directory)
    done = _checkpoints(directory)
    for old in done[: max(len(done) - keep, 0)]:
        if old.name != current:
            shutil.rmtree(old, ignore_errors=True)
    for stale in directory.glob("*.tmp-*"):  # leftovers of a kill mid-write
        if stale.is_dir():
            shutil.rmtree(stale, ignore_errors=True)
        else:
            stale.unlink(missing_ok=True)


def latest_checkpoint(directory: str | os.PathLike) -> Path | None:
    """The newest complete checkpoint, or None."""
    directory = Path(directory)
    pointed = _pointed(directory)
    if pointed is not None:
        return pointed
    # No (or a stale or garbled) pointer: fall back to the newest complete directory.
    done = [p for p in _checkpoints(directory) if _has_state(p)]
    return done[-1] if done else None


def _has_state(path: Path) -> bool:
    """Whether checkpoint ``path`` holds its ``state.pt`` -- refused in one line where this user may not look
    (review cd: a step directory of another user, umask 077, ended --resume in a PermissionError traceback)."""
    try:
        return (path / "state.pt").exists()
    except PermissionError as exc:
        raise _permission_denied(path, exc) from None


def _permission_denied(path: Path, exc: PermissionError) -> InputError:
    """The refusal of checkpoint ``path`` this user may not read: no damage, and nothing to move aside or redo."""
    return InputError(f"checkpoint {path} cannot be read: permission denied on {exc.filename or path} (nothing says it "
                      f"is damaged): give this user access to {path} (chmod -R u+rwX, or chown) and resume again")


def checkpoint_step(path: Path) -> int:
    """The step a checkpoint holds, from its directory's name (``step_000012``: :func:`save_checkpoint`),
    without loading it."""
    return int(path.name.removeprefix("step_"))


def refuse_damaged_newer(chosen: Path) -> None:
    """Raise :func:`damaged` for a checkpoint newer than ``chosen`` that has lost its state (a kill
    cannot leave one: a checkpoint is renamed into place whole). Passed over, it made the resume
    go back to an earlier checkpoint without a word, where a state cut short is refused."""
    newer = [p for p in _checkpoints(chosen.parent)
             if checkpoint_step(p) > checkpoint_step(chosen) and not _has_state(p)]
    if newer:
        raise damaged(newer[-1], FileNotFoundError(f"{newer[-1] / 'state.pt'} is missing"))


def _pointed(directory: Path) -> Path | None:
    """The complete checkpoint the ``latest`` pointer names, or None: no pointer, a stale one, or
    one whose bytes are no name (damaged on disk: not UTF-8, a NUL byte, a directory)."""
    try:
        name = (directory / LATEST).read_text().strip()
        candidate = directory / name
        return candidate if _CHECKPOINT_NAME.fullmatch(name) and (candidate / "state.pt").exists() else None
    except (OSError, UnicodeDecodeError, ValueError):  # (ValueError: an embedded NUL byte)
        return None


def load_checkpoint(path: str | os.PathLike) -> dict[str, Any]:
    """The state a checkpoint holds. One that cannot be read was damaged after it was written (a
    kill cannot leave half of one): an :class:`InputError` that names the newest earlier checkpoint
    to resume from instead."""
    path = Path(path)
    try:
        check_zip_crcs(path / "state.pt")
        # weights_only=False: the state holds our own dataclasses (pending rollouts) and RNG states.
        return torch.load(path / "state.pt", map_location="cpu", weights_only=False)
    except Exception as exc:  # noqa: BLE001 -- torch raises RuntimeError, EOFError, UnpicklingError, ...
        raise damaged(path, exc) from None


def check_zip_crcs(state: Path) -> None:
    """Raise ``OSError`` where a record of the state's zip archive (what ``torch.save`` writes) does not match the
    CRC-32 written with it: torch.load does not check them, and a checkpoint whose bytes changed on disk (a bad
    block, bit rot) loaded -- NaN weights trained on, or saved over a good ``final/`` (review bg). It reads the file
    once more: a resume's cost, paid once."""
    import zipfile

    if not zipfile.is_zipfile(state):  # (torch's legacy format holds no CRCs: torch.load says what it can)
        return
    with zipfile.ZipFile(state) as archive:
        bad = archive.testzip()
    if bad is not None:
        raise OSError(f"{bad} in {state.name} does not match the checksum written with it")


def refuse_other_nproc(ckpt: Path, written: int | None, grouped: bool, *, now: int | None = None,
                       exact: bool = False) -> None:
    """Refuse to resume checkpoint ``ckpt``, written by ``written`` trainer processes, in a run of one
    process (``grouped`` False) when it was written by several, or the other way round: the
    optimizer's state is laid out by the group that wrote it. ``exact`` (``run.generate_on_shards``): any
    other number of processes ``now`` is refused too -- each rank samples with the run's seed shifted by its
    rank, so another --nproc draws other completions (review eb: resumed unsaid). ``written`` None (the state
    cannot be read): nothing to refuse here -- the resume's load says the checkpoint is damaged."""
    if written is not None and (written > 1) != grouped:
        # (a group's checkpoint is resharded for any group: review fn, the message named only the one that wrote it)
        others = (" (or any number above 1: a group's checkpoint loads in a group of another size)"
                  if written > 1 and not exact else "")  # (review fq: not where the ranks generate on their shards)
        raise InputError(f"{ckpt} was written by {written} trainer process(es); resume it with --nproc {written}"
                         f"{others}")
    if written is not None and exact and now is not None and now != written:
        raise InputError(f"{ckpt} was written by {written} trainer processes generating on their shards "
                         f"(run.generate_on_shards: each rank samples with its own seed), so {now} would draw other "
                         f"completions than the run's; resume it with --nproc {written}")


def written_by(ckpt: Path) -> int | None:
    """How many trainer processes wrote checkpoint ``ckpt``, read before any of them starts (its
    state memory-mapped: the tensors are not read); None where the checkpoint cannot be read (review bp:
    read as 1, a damaged group checkpoint was refused as "written by 1 trainer process(es); resume it
    with --nproc 1", which then refused it as damaged and the earlier one as written by 2)."""
    try:
        state = _saved_state(ckpt / "state.pt")
    except Exception:  # noqa: BLE001 -- a damaged or legacy-format file: the resume itself says what is wrong
        return None
    return int(state.get("nproc", 1)) if isinstance(state, dict) else None


def _permission_error(exc: BaseException | None) -> PermissionError | None:
    """The PermissionError behind ``exc`` (itself, or what it was raised from), if any."""
    seen = set()
    while exc is not None and id(exc) not in seen:
        if isinstance(exc, PermissionError):
            return exc
        seen.add(id(exc))
        exc = exc.__cause__ or exc.__context__
    return None


def verify_shards(path: Path, sums_written: bool = False) -> None:
    """Raise ``OSError`` unless every file the shards' metadata (``torch.distributed.checkpoint``)
    lists is in ``path`` and as long as the metadata says -- and, where the shards have their checksums
    (:data:`SHARD_SUMS`), matches them: a lost, cut-short or changed shard is found here, by one process,
    before every rank sets out to read (or finishes writing) a checkpoint. ``sums_written``: the
    checkpoint's state says the checksums were written, so a missing :data:`SHARD_SUMS` is a lost one
    (it went unchecked)."""
    from torch.distributed.checkpoint import FileSystemReader

    if not (path / ".metadata").is_file():
        raise FileNotFoundError(f"{path}/.metadata is missing")
    metadata = FileSystemReader(str(path)).read_metadata()
    need: dict[str, int] = {}
    for info in (metadata.storage_data or {}).values():
        need[info.relative_path] = max(need.get(info.relative_path, 0), info.offset + info.length)
    for name, size in sorted(need.items()):
        file = path / name
        if not file.is_file():
            raise FileNotFoundError(f"{file} is missing")
        if file.stat().st_size < size:
            raise OSError(f"{file} holds {file.stat().st_size} bytes of the {size} its metadata lists")
    sums = path / SHARD_SUMS
    if not sums.is_file():  # (none in a checkpoint being written, nor in one an older scalerl wrote)
        if sums_written:
            raise FileNotFoundError(f"{sums} is missing (the checkpoint was written with it)")
        return
    try:
        crcs = json.loads(sums.read_text())
        crcs = {str(name): int(crc) for name, crc in crcs.items()}
    except (ValueError, TypeError, AttributeError) as exc:
        raise OSError(f"{sums} cannot be read ({type(exc).__name__})") from None
    unlisted = sorted(set(need) - set(crcs))
    if unlisted:  # (review bk: a file left out of the sums went unchecked)
        raise OSError(f"{sums} lists no checksum for {', '.join(unlisted)}")
    for name, crc in shard_sums([path / name for name in crcs]).items():
        if crc != crcs[name]:
            raise OSError(f"{path / name} does not match the checksum written with it")


#: The CRC-32 of every file of a checkpoint's shards, written once they are all in place: the shards'
#: format (torch.distributed.checkpoint) checks no bytes, and a shard whose bytes changed on disk loaded as NaN
#: weights (review bi), as a state.pt did before its zip records' CRCs were checked (:func:`check_zip_crcs`).
SHARD_SUMS = "crc32.json"


def shard_files(path: Path) -> list[Path]:
    """The files of the shards in ``path`` whose checksums :data:`SHARD_SUMS` holds: every one but itself, by name."""
    return sorted(f for f in path.iterdir() if f.is_file() and f.name != SHARD_SUMS)


def shard_sums(files: list[Path]) -> dict[str, int]:
    """The CRC-32 of each of ``files``, by name: a read of each (a trainer group splits them over its ranks:
    ``benchmarks/checkpoint_checksums.py`` measures the cost)."""
    return {file.name: _crc32(file) for file in files}


def write_shard_sums(path: Path, sums: dict[str, int]) -> None:
    """Write ``sums`` (:func:`shard_sums` of every file in ``path`` but this one) as ``path``'s :data:`SHARD_SUMS`."""
    with open(path / SHARD_SUMS, "w") as f:  # (synced as state.pt is: one that came back empty refused the checkpoint)
        f.write(json.dumps(dict(sorted(sums.items())), indent=0) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _crc32(file: Path) -> int:
    crc = 0
    with open(file, "rb") as f:
        while chunk := f.read(1 << 24):
            crc = zlib.crc32(chunk, crc)
    return crc


def _looks_intact(path: Path) -> bool:
    """Whether checkpoint ``path`` passes every check short of loading it: its state's zip records match their
    CRC-32s (what ``torch.save`` writes; one cut short has lost its directory at the end) -- or, in torch's legacy
    format, which has no checksums, it loads (review bl: its first byte alone passed one cut in half) -- and its
    shards are all there and match their checksums. Each is a full read of the checkpoint: it runs only on the way
    to naming one to resume from after a damaged one (an unchecked zip state named there was refused next)."""
    import zipfile

    state = path / "state.pt"
    try:
        if zipfile.is_zipfile(state):
            check_zip_crcs(state)
            saved = _saved_state(state)
        else:  # (no memory map for that format: a full load)
            saved = torch.load(state, map_location="cpu", weights_only=False)
        saved = saved if isinstance(saved, dict) else {}
        if (path / SHARDS).is_dir():
            verify_shards(path / SHARDS, sums_written=bool(saved.get("shard_sums")))
        elif saved.get("weights") == "shards":  # (review bo: one that lost its shards/ was named)
            return False
    except Exception:  # noqa: BLE001 -- any failure to check means it cannot be resumed from
        return False
    return True


def _saved_state(state: Path) -> Any:
    """``state`` loaded memory-mapped: its small entries (``nproc``, ``weights``, ``shard_sums``) read, its tensors
    not. Raises as ``torch.load`` does (a legacy-format file: no memory map)."""
    return torch.load(state, map_location="cpu", weights_only=False, mmap=True)


def damaged(path: Path, exc: BaseException) -> InputError:
    """The error for checkpoint ``path`` (its state or its shards) that cannot be read: it names the
    newest earlier checkpoint to resume from instead -- unless this user may not read it, which is no damage:
    moving it aside or training anew (what the advice said: review ca) throws the run's progress away."""
    denied = _permission_error(exc)
    if denied is not None:
        return _permission_denied(path, denied)
    earlier = [p for p in _checkpoints(path.parent) if checkpoint_step(p) < checkpoint_step(path)]
    # Only one that passes the cheap checks is named: naming a damaged one led to a second error. Newest first, to
    # the first that looks intact (each check may read a whole checkpoint: review bm); every unreadable one between
    # is to be moved too, one without its state.pt included (review bn: moving only the first, the resume refused
    # the next).
    intact, broken = None, []
    for p in reversed(earlier):
        if _has_state(p) and _looks_intact(p):
            intact = p
            break
        broken.insert(0, p.name)
    reason = (str(exc).splitlines() or [""])[0]
    reason = reason if len(reason) <= 160 else reason[:160].rsplit(" ", 1)[0] + " ..."  # (cut mid-word: "If yo")
    problem = f"checkpoint {path} cannot be read ({type(exc).__name__}: {reason}): it was damaged after it was written"
    if not intact:
        also = f" ({', '.join(broken)} cannot be read either)" if broken else ""
        return CannotResume(f"{problem}; no earlier checkpoint is left{also}", ": start the run again")
    if len(broken) > 3:  # (review bo: 38 names, each twice, made a 1,586-character line)
        moved = f"{path} and the {len(broken)} checkpoints before it down to {broken[0]}"
    else:
        moved = f"{path}" + "".join(f" and {name}" for name in reversed(broken))
    delete = "them: the others cannot be read either" if broken else "it"
    return InputError(f"{problem}; move {moved} out of {path.parent.name}/ (or delete {delete}) to resume from "
                      f"{intact.name}, the newest earlier one that looks intact (the run log is cut back to it)")
