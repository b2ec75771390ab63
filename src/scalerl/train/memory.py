"""Peak memory of a trainer process: the run log's ``memory/peak_gb`` on every train row.

On a GPU it is the most memory torch's allocator has held allocated on the device since the
process started (``torch.cuda.max_memory_allocated``; verl logs the same as
``perf/max_memory_allocated_gb``); on the CPU, the process's peak resident set (``getrusage``'s
``ru_maxrss``), which counts the interpreter, the libraries and generator threads too. Under
``--nproc N`` the row holds the largest over the ranks: the one that runs out first.
"""

from __future__ import annotations

import resource
import sys

import torch

GIB = 1024**3


def peak_memory_gb(device: torch.device | str) -> float:
    """This process's peak memory so far on ``device`` (GiB)."""
    device = torch.device(device)
    if device.type == "cuda":
        return torch.cuda.max_memory_allocated(device) / GIB
    # Linux reports kilobytes, macOS bytes.
    scale = 1 if sys.platform == "darwin" else 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * scale / GIB
