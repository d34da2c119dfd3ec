"""The file a recording writes: opened without following a symbolic link, written straight to the
OS one whole batch of MCAP records at a time, and cut back to the end of the last whole batch when
a write fails (a full disk), so what is on disk always reads.

The MCAP writer hands over complete records per write() (a chunk, its indexes, a metadata
record), so the end of the last write that went through whole is a record boundary: a file cut
back there is an ordinary prefix of the recording, and the space the torn write took is free
again for the few hundred bytes that say why the recording stopped (sink.py).
"""

from __future__ import annotations

import errno
import os
from typing import Optional, Union

__all__ = ["RecordingFile"]

_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class RecordingFile:
    """A write-only file for the MCAP writer (write, tell, flush, close)."""

    def __init__(self, path: Union[str, os.PathLike]):
        self.path = os.fspath(path)
        if os.path.islink(self.path):  # also where O_NOFOLLOW is missing
            raise _symlink_error(self.path)
        try:
            self._fd = os.open(self.path, _FLAGS, 0o666)
        except OSError as exc:
            if exc.errno == errno.ELOOP and os.path.islink(self.path):  # made a link since the check
                raise _symlink_error(self.path) from None
            raise
        self._offset = 0  # bytes the OS has taken
        self.whole = 0  # where the last write that went through whole ended: a record boundary

    def write(self, data: Union[bytes, bytearray, memoryview]) -> int:
        view = memoryview(data)
        while view:
            written = os.write(self._fd, view)
            self._offset += written
            view = view[written:]
        self.whole = self._offset
        return len(data)

    def cut_to(self, offset: Optional[int] = None) -> None:
        """Drop everything after `offset` (default: the last whole write), e.g. a torn chunk."""
        keep = self.whole if offset is None else offset
        os.ftruncate(self._fd, keep)
        os.lseek(self._fd, keep, os.SEEK_SET)
        self._offset = self.whole = keep

    def tell(self) -> int:
        return self._offset

    def flush(self) -> None:
        """Nothing to do: every write already went to the OS."""

    def gone(self) -> Optional[str]:
        """Why `path` no longer names the file being written (deleted, with its folder or not, or
        replaced by another file), else None. Writes to a deleted file still succeed and go nowhere."""
        if self._fd < 0:
            return None
        try:
            named = os.stat(self.path)
        except FileNotFoundError:
            folder = os.path.dirname(self.path) or "."
            return (f"{self.path} was deleted while it was being written"
                    + ("" if os.path.isdir(folder) else f" (its folder {folder} is gone too)"))
        except OSError:
            return None  # cannot tell (a permission changed): the writes themselves will say
        mine = os.fstat(self._fd)
        if (named.st_dev, named.st_ino) != (mine.st_dev, mine.st_ino):
            return f"{self.path} was replaced by another file while it was being written"
        return None

    def close(self) -> None:
        if self._fd >= 0:
            fd, self._fd = self._fd, -1
            os.close(fd)


def _symlink_error(path: str) -> OSError:
    try:
        target = f" (to {os.readlink(path)})"
    except OSError:
        target = ""
    return OSError(errno.ELOOP, f"{path} is a symbolic link{target}; a recording never writes through one: "
                                "remove the link or name the file itself")
