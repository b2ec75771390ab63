"""A file on a disk that fills: the tests' full disk, for this process (patched into ``open``) and for the ranks a
test spawns (a sitecustomize on their PYTHONPATH imports it from this directory)."""

import errno
import io
import os


class FullDisk(io.FileIO):
    """A file on a disk with ``room`` bytes left: a write past it fails with ENOSPC and, as the kernel's through
    Python's buffered file, names no file."""

    room = 200_000

    def write(self, data):
        if self.tell() + memoryview(data).nbytes > self.room:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        return super().write(data)
