"""The record log W&B (``run-<id>.wandb``) and SwanLab (``*.swanlab``) write a run's history to: a
LevelDB-style log. A 7-byte file header (ident, magic, version), then 32 KiB blocks of chunks, each
with a 7-byte header (CRC-32 of its type byte and data, length, type: the full record, or its first,
middle or last piece). This module undoes the framing; what a record holds is each format's own.

A run killed mid-write leaves a torn last record, and a flipped byte fails a chunk's checksum: both
are skipped and said in the notes, the rest is read.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Iterator

from scalerl.errors import InputError

FILE_HEADER = struct.Struct("<4sHB")  # ident, magic, version
CHUNK_HEADER = struct.Struct("<IHB")  # checksum, length, type
BLOCK = 32 * 1024
FULL, FIRST, MIDDLE, LAST = 1, 2, 3, 4


@dataclass(frozen=True)
class Kind:
    """Which program's record log: its header's ident and magic, and what to call it."""

    ident: bytes
    magic: int
    what: str


def has_ident(path: Path, kind: Kind) -> bool:
    try:
        with open(path, "rb") as f:
            return f.read(len(kind.ident)) == kind.ident
    except OSError:
        return False


def version(data: bytes, path: Path, kind: Kind) -> int:
    """The format version in the file header (an error if the header is not ``kind``'s)."""
    if len(data) < FILE_HEADER.size:
        raise InputError(f"{path}: not a {kind.what} (shorter than its header)")
    ident, magic, found = FILE_HEADER.unpack_from(data)
    if ident != kind.ident or magic != kind.magic:
        raise InputError(f"{path}: not a {kind.what} (its header is {data[:FILE_HEADER.size]!r})")
    return found


def records(data: bytes, name: str, notes: list[str]) -> Iterator[bytes]:
    """The serialized records of one file's bytes, in order (framing undone, checksums checked);
    ``name`` names the file in the notes."""
    pos, pieces, bad, torn = FILE_HEADER.size, [], 0, False
    while pos < len(data):
        room = BLOCK - pos % BLOCK
        if room < CHUNK_HEADER.size:  # a block's tail too short for a header is padding
            pos += room
            continue
        if pos + CHUNK_HEADER.size > len(data):
            torn = True
            break
        checksum, length, kind = CHUNK_HEADER.unpack_from(data, pos)
        if kind == 0 and length == 0:  # zero padding up to the next block
            pos += room
            continue
        start = pos + CHUNK_HEADER.size
        chunk = data[start:start + length]
        pos = start + length
        if len(chunk) < length:
            torn = True
            break
        if zlib.crc32(chunk, zlib.crc32(bytes([kind]))) != checksum or kind not in (FULL, FIRST, MIDDLE, LAST):
            bad += 1
            pieces = []
            continue
        if kind in (FULL, FIRST):
            bad += bool(pieces)  # a record left unfinished by a new one
            pieces = [chunk]
        elif pieces:
            pieces.append(chunk)
        if kind in (FULL, LAST) and pieces:
            yield b"".join(pieces)
            pieces = []
    torn = torn or bool(pieces)
    if torn:
        notes.append(f"{name}: skipped a torn last record -- the run was probably killed mid-write")
    if bad:
        notes.append(f"{name}: skipped {bad} damaged record(s) (checksum or framing failed)")
