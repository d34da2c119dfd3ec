"""A small tmpfs, to fill: what a full disk does to a recording. Mounting needs root (or
CAP_SYS_ADMIN); where it cannot be mounted the test is skipped, and the skip line says why."""

from __future__ import annotations

import os
import shutil
import subprocess
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

__all__ = ["fill", "small_disk"]


@contextmanager
def small_disk(folder: Path, size_kib: int) -> Iterator[Path]:
    """`folder` as a tmpfs of `size_kib` KiB, unmounted after."""
    folder.mkdir(parents=True, exist_ok=True)
    if shutil.which("mount") is None:
        pytest.skip("no mount command: cannot mount a small tmpfs to fill")
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size_kib}k,mode=0777", "tmpfs", str(folder)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a {size_kib} KiB tmpfs at {folder} to fill (needs root or CAP_SYS_ADMIN): "
                    f"{mounted.stderr.strip() or mounted.returncode}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], capture_output=True)


def fill(folder: Path, leave_bytes: int) -> int:
    """Take all but about `leave_bytes` of the disk `folder` is on; the bytes left (the file system's
    own rounding decides the exact figure)."""
    free = _free(folder)
    with open(folder / "filler", "wb") as filler:
        filler.write(b"\0" * max(0, free - leave_bytes))
    return _free(folder)


def _free(folder: Path) -> int:
    stats = os.statvfs(folder)
    return stats.f_bavail * stats.f_frsize
