"""Logs kept in another wrapping than the file a trainer wrote -- or no file at all (``-``: standard
input, ``kubectl logs trainer | scalerl fit - ...``): compressed (gzip, bzip2, xz, zstd: how logs
are archived and shared -- ``train.log.gz``, ``metrics.jsonl.xz``, ``train.log.zst`` as ``logrotate``'s
``compresscmd zstd`` and ``tar --zstd`` write them), a tar or zip archive of a run
directory (``wandb.tar.gz``, ``runs.zip``: how TensorBoard, W&B and SwanLab directories travel), or text
written as UTF-16 (Windows PowerShell's ``>`` and ``Out-File`` write UTF-16 with a byte-order mark),
or UTF-8 text behind a byte-order mark (Notepad, PowerShell 5's ``Out-File -Encoding utf8``, Excel's
"CSV UTF-8"): the JSON-lines reader took its first line for no JSON object.

:func:`unwrapped` gives the path of what the file holds, unpacked into a temporary directory that
is removed afterwards, so every reader reads it as it would the original. A file is told by its
first bytes, not its name. A damaged archive is an error that says so; an archive member that
would land outside the directory (an absolute path, ``..``) is refused (tarfile's ``data`` filter;
zipfile keeps such names inside).
"""

from __future__ import annotations

import bz2
import codecs
import gzip
import lzma
import shutil
import sys
import tarfile
import tempfile
import zipfile
import zlib
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator

from scalerl.errors import InputError


def file_tail(path: Path, size: int = 1 << 16) -> bytes:
    """The last ``size`` bytes of file ``path`` (all of a smaller one): where a console's last line, or
    W&B's end-of-run block, is looked for without reading a log of gigabytes."""
    with open(path, "rb") as f:
        f.seek(0, 2)
        f.seek(max(0, f.tell() - size))
        return f.read()


class _ZstdStream:
    """A zstd-compressed file read as its bytes, through pyarrow's codec (the ``logs`` extra, which the training
    extra includes; Python has no zstd of its own before 3.14). A decoder's errors are
    raised as ``OSError``, what a damaged file gives the other openers."""

    def __init__(self, path, mode: str = "rb"):
        import pyarrow as pa  # (here: only a .zst file pays for the import)

        try:
            self._src = pa.input_stream(str(path), compression="zstd")
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 -- pyarrow.ArrowInvalid
            raise OSError(str(exc)) from None

    def read(self, n: int = -1) -> bytes:
        try:
            return self._src.read(None if n is None or n < 0 else n)
        except OSError:
            raise
        except Exception as exc:  # noqa: BLE001 -- pyarrow.ArrowInvalid (a damaged frame)
            raise OSError(str(exc)) from None

    def __enter__(self):
        return self

    def __exit__(self, *exc_info) -> None:
        self._src.close()


#: Compressed streams by their magic bytes: (name, opener, the suffix the compressed file's name carries).
COMPRESSED: dict[bytes, tuple[str, Callable, str]] = {
    b"\x1f\x8b": ("gzip", gzip.open, ".gz"),
    b"BZh": ("bzip2", bz2.open, ".bz2"),
    b"\xfd7zXZ\x00": ("xz", lzma.open, ".xz"),
    b"\x28\xb5\x2f\xfd": ("zstd", _ZstdStream, ".zst"),
}
#: Byte-order marks of UTF-16 text.
UTF16_BOMS = (codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)
#: What :func:`wrapping` calls UTF-8 text that begins with a byte-order mark.
UTF8_BOM = "utf-8-bom"
_CHUNK = 1 << 20


def _head(path: Path, n: int = 8) -> bytes:
    with open(path, "rb") as f:
        return f.read(n)


def wrapping(path: Path) -> str | None:
    """``'gzip'``, ``'bzip2'``, ``'xz'``, ``'zstd'``, ``'zip'``, ``'tar'``, ``'utf-16'``, ``'utf-8-bom'``, or None for a
    file read as it is."""
    if not path.is_file():
        return None
    head = _head(path)
    for magic, (name, _, _) in COMPRESSED.items():
        if head.startswith(magic):
            return name
    if head.startswith(UTF16_BOMS):
        return "utf-16"
    if head.startswith(codecs.BOM_UTF8):
        return UTF8_BOM
    if head.startswith(b"PK\x03\x04"):
        return "zip"
    return "tar" if tarfile.is_tarfile(path) else None


def _copy_path(root: Path, path: Path, name: str) -> Path:
    """Where in ``root`` the copy of ``path`` named ``name`` goes: in a directory named as ``path``'s, since
    a JSON-lines log's run is named after its directory (the temporary one's random name was its name)."""
    home = root / "copy" / path.parent.name
    home.mkdir(parents=True)
    return home / name


def _inner_name(path: Path, suffix: str) -> str:
    name = path.name
    if name.lower().endswith(suffix):
        return name[: -len(suffix)]
    if name.lower().endswith(".tgz"):
        return name[:-4] + ".tar"
    return name


#: The directories an archive is unpacked into: what ``unwrapped`` gives when its top holds several entries.
ARCHIVE_ROOTS = ("untarred", "unzipped")


def _contents(target: Path, archive: Path) -> Path:
    """What an archive unpacked into ``target`` holds: its one top-level entry if it has one
    (``wandb/``), else the directory."""
    entries = list(target.iterdir())
    if not entries:
        raise InputError(f"{archive.name}: an empty archive")
    return entries[0] if len(entries) == 1 else target


def _unzip(archive: Path, into: Path) -> Path:
    target = into / ARCHIVE_ROOTS[1]
    target.mkdir()
    with zipfile.ZipFile(archive) as z:
        z.extractall(target)  # member names with '..' or a root are kept inside target by zipfile
    return _contents(target, archive)


def _untar(archive: Path, into: Path) -> Path:
    target = into / ARCHIVE_ROOTS[0]
    target.mkdir()
    with tarfile.open(archive) as tar:
        if hasattr(tarfile, "data_filter"):  # Python >= 3.10.12 / 3.11.4
            tar.extractall(target, filter="data")
        else:
            members = [m for m in tar.getmembers() if m.isfile() or m.isdir()]
            for m in members:
                if Path(m.name).is_absolute() or ".." in Path(m.name).parts:
                    raise tarfile.TarError(f"member {m.name!r} would land outside the directory")
            tar.extractall(target, members=members)
    return _contents(target, archive)


#: The path that names standard input.
STDIN = "-"


@contextmanager
def stdin_copy() -> Iterator[Path]:
    """Standard input, copied to a temporary file named ``stdin`` (every reader reads a file; a
    console piped in has no name, so its format is told by its content)."""
    if sys.stdin is None or sys.stdin.isatty():
        raise InputError("PATH '-' reads the log from standard input, which is a terminal: pipe a log in "
                         "(kubectl logs POD | scalerl fit - ...) or name a file")
    with tempfile.TemporaryDirectory(prefix="scalerl-stdin-") as tmp:
        copy = _copy_path(Path(tmp), Path("stdin", "stdin"), "stdin")
        with open(copy, "wb") as dst:
            shutil.copyfileobj(sys.stdin.buffer, dst, _CHUNK)
        yield copy


@contextmanager
def stream_copy(path: Path) -> Iterator[Path]:
    """A pipe (``<(zcat log.gz)``), FIFO or device copied once to a temporary file, as standard input
    is: it can be read only once, and the format probes each read it (the last found it "empty")."""
    with tempfile.TemporaryDirectory(prefix="scalerl-pipe-") as tmp:
        copy = _copy_path(Path(tmp), path, path.name)
        try:
            with open(path, "rb") as src, open(copy, "wb") as dst:
                shutil.copyfileobj(src, dst, _CHUNK)
        except OSError as exc:
            raise InputError(f"{path}: cannot be read ({exc.strerror or exc})") from None
        yield copy


@contextmanager
def without_last_line(path: Path) -> Iterator[Path]:
    """A temporary copy of text file ``path`` up to its last newline: the file less a last line that a kill
    cut off (:func:`scalerl.curves.console.cut_last_line`)."""
    # Back to the last newline: the cut line is at most a few KiB long (a metric line).
    tail = file_tail(path)
    if b"\n" not in tail:  # its only line (or one longer than 64 KiB): nothing whole to read
        raise InputError(f"{path}: its only line ends inside a number with no newline after it (a run "
                         "killed while writing): no whole line to read")
    keep = path.stat().st_size - len(tail) + tail.rfind(b"\n") + 1
    with tempfile.TemporaryDirectory(prefix="scalerl-cut-") as tmp:
        copy = _copy_path(Path(tmp), path, path.name)
        with open(path, "rb") as src, open(copy, "wb") as dst:
            shutil.copyfileobj(src, dst, _CHUNK)
            dst.truncate(keep)
        yield copy


@contextmanager
def unwrapped(path: Path) -> Iterator[Path]:
    """The path of what ``path`` holds (``path`` itself when it is no archive, compressed, UTF-16 or
    byte-order-marked file); unpacked ones live in a temporary directory for the ``with`` block."""
    kind = wrapping(path)
    if kind is None:
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="scalerl-log-") as tmp:
        root = Path(tmp)
        try:
            if kind == "utf-16":
                inner = _copy_path(root, path, path.name)
                with open(path, encoding="utf-16", newline="") as src, open(inner, "w", encoding="utf-8", newline="") as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
            elif kind == UTF8_BOM:  # the text less its mark, byte for byte
                inner = _copy_path(root, path, path.name)
                with open(path, "rb") as src, open(inner, "wb") as dst:
                    src.seek(len(codecs.BOM_UTF8))
                    shutil.copyfileobj(src, dst, _CHUNK)
            elif kind == "tar":
                inner = _untar(path, root)
            elif kind == "zip":
                inner = _unzip(path, root)
            else:
                _, opener, suffix = next(v for m, v in COMPRESSED.items() if v[0] == kind)
                inner = _copy_path(root, path, _inner_name(path, suffix))
                with opener(path, "rb") as src, open(inner, "wb") as dst:
                    shutil.copyfileobj(src, dst, _CHUNK)
                if tarfile.is_tarfile(inner):  # a compressed tar archive: runs.tar.gz
                    inner = _untar(inner, root)
        except (OSError, EOFError, zlib.error, lzma.LZMAError, tarfile.TarError, zipfile.BadZipFile,
                UnicodeError, RuntimeError, NotImplementedError) as exc:
            # (zipfile: RuntimeError for a member it takes as encrypted, NotImplementedError for an
            # unknown compression method -- both what a damaged header looks like.)
            raise InputError(f"{path}: a damaged {kind} file, which could not be unpacked ({exc})") from None
        yield inner
