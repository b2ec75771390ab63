"""What a checkpoint's checksums cost, beside the checkpoint's own write and read.

    python benchmarks/checkpoint_checksums.py                      # 256 MB and 1024 MB of fp32 state
    python benchmarks/checkpoint_checksums.py --sizes-mb 4096 --dir /scratch   # on the disk the runs use

A one-process checkpoint is ``state.pt`` (``torch.save``'s zip archive: its writer computes each record's
CRC-32 as it writes, so saving costs nothing more; a resume reads the file once more to check them,
``checkpoint.check_zip_crcs``). A trainer group's checkpoint is ``shards/`` (``torch.distributed.checkpoint``,
which checks no bytes) plus ``shards/crc32.json``: the shard files are read back once more after they are
written to checksum them, and once more on resume before the ranks load them. This script times, for each
size, in one process on ``--dir``'s file system (page-cached, as a checkpoint just written is):

* ``torch.save`` + fsync of ``state.pt``, ``check_zip_crcs`` of it, ``torch.load`` of it;
* ``dcp.save`` of the same state as shards (no process group: ``--readers`` files, as many ranks write one each),
  the checksum of every shard file by one reader (``checkpoint.shard_sums``, as rank 0 alone read them before),
  the same split over ``--readers`` threads reading at once (as the ranks of a group split it; ``zlib.crc32``
  and file reads release the GIL, so the threads overlap as processes would, on this machine's cores), and
  ``verify_shards`` (sizes and checksums, as a resume runs it).

The ratios (checksum time over write time) are the figures to quote; absolute times depend on the disk. A state
of fewer than ``--readers`` 16 MB tensors cannot be split into that many files.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import torch
import torch.distributed.checkpoint as dcp

from scalerl.train.checkpoint import check_zip_crcs, shard_sums, verify_shards, write_shard_sums


def _timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def _state(size_mb: int) -> dict[str, torch.Tensor]:
    """``size_mb`` of fp32 tensors in 16 MB pieces (a model's weights and AdamW moments, roughly)."""
    piece = 4 << 20  # floats: 16 MB
    count = max(1, size_mb // 16)
    generator = torch.Generator().manual_seed(0)
    return {f"layer{i}.weight": torch.randn(piece, generator=generator) for i in range(count)}


def _save_fsynced(state: dict, file: Path) -> None:
    with open(file, "wb") as f:
        torch.save(state, f)
        f.flush()
        os.fsync(f.fileno())


def measure(size_mb: int, root: Path, readers: int) -> dict[str, float]:
    state = _state(size_mb)
    out = Path(tempfile.mkdtemp(dir=root))
    try:
        file = out / "state.pt"
        row = {"size_mb": sum(t.numel() * 4 for t in state.values()) / 2**20,
               "save_s": _timed(lambda: _save_fsynced(state, file)),
               "crc_check_s": _timed(lambda: check_zip_crcs(file)),
               "load_s": _timed(lambda: torch.load(file, map_location="cpu", weights_only=True))}
        # One file per reader, as a group of `readers` ranks writes one each; written twice, so that each way of
        # reading it back reads a checkpoint just written (a second read of the same files is faster).
        shards, again = out / "shards", out / "again"
        row["dcp_save_s"] = _timed(lambda: dcp.save(state, storage_writer=dcp.FileSystemWriter(shards, thread_count=readers),
                                                    no_dist=True))
        dcp.save(state, storage_writer=dcp.FileSystemWriter(again, thread_count=readers), no_dist=True)
        files = sorted(f for f in shards.iterdir() if f.is_file())
        row["sums_s"] = _timed(lambda: shard_sums(files))
        # A group of `readers` ranks: each checksums every readers-th file, all at once.
        parts = sorted(f for f in again.iterdir() if f.is_file())
        with ThreadPoolExecutor(readers) as pool:
            row["sums_split_s"] = _timed(lambda: list(pool.map(shard_sums, [parts[r::readers] for r in range(readers)])))
        write_shard_sums(shards, shard_sums(files))
        row["verify_s"] = _timed(lambda: verify_shards(shards, sums_written=True))
        return row
    finally:
        shutil.rmtree(out, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes-mb", type=int, nargs="+", default=[256, 1024], help="state sizes, MB of fp32")
    parser.add_argument("--dir", type=Path, default=Path(tempfile.gettempdir()), help="where to write (default: %(default)s)")
    parser.add_argument("--readers", type=int, default=min(4, os.cpu_count() or 1),
                        help="ranks the shard checksums are split over (default: %(default)s: at most one a core)")
    parser.add_argument("--repeats", type=int, default=3, help="runs per size; the median is printed (default: %(default)s)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore", message="torch.distributed is disabled")  # (no_dist: one writer, said above)
    print(f"{'MB':>6} | {'save':>6} {'CRC check':>9} {'load':>6} {'check/save':>10} | "
          f"{'dcp save':>8} {'sums':>6} {'split':>6} {'verify':>6} {'sums/save':>9} {'split/save':>10}")
    for size in args.sizes_mb:
        runs = [measure(size, args.dir, args.readers) for _ in range(args.repeats)]
        row = {key: sorted(r[key] for r in runs)[len(runs) // 2] for key in runs[0]}
        print(f"{row['size_mb']:6.0f} | {row['save_s']:6.2f} {row['crc_check_s']:9.2f} {row['load_s']:6.2f} "
              f"{row['crc_check_s'] / row['save_s']:10.2f} | {row['dcp_save_s']:8.2f} {row['sums_s']:6.2f} "
              f"{row['sums_split_s']:6.2f} {row['verify_s']:6.2f} {row['sums_s'] / row['dcp_save_s']:9.2f} "
              f"{row['sums_split_s'] / row['dcp_save_s']:10.2f}")
    print(f"(seconds, median of {args.repeats}; 'split': the sums split over {args.readers} readers at once, "
          f"on {os.cpu_count()} cores)")


if __name__ == "__main__":
    main()
