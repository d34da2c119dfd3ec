"""The tests' one way to wait for something another thread or process makes true."""

from __future__ import annotations

import time
from typing import Callable, Optional

__all__ = ["wait_until"]


def wait_until(predicate: Callable[[], object], timeout_s: float = 10.0, poll_s: float = 0.005) -> Optional[float]:
    """The monotonic time at which `predicate()` first held (truthy), or None if it did not within
    `timeout_s` (looked at once more at the deadline)."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return time.monotonic()
        time.sleep(poll_s)
    return time.monotonic() if predicate() else None
