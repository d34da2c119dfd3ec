"""One Policy per control loop (docs/PROTOCOL.md §6.7): a second thread driving it is refused."""

from __future__ import annotations

import threading
from contextlib import contextmanager
from typing import Iterator, Optional

from .._errors import SequencesError

__all__ = ["DriverGuard"]


class DriverGuard:
    """Non-blocking ownership of the driving role; re-entry from the same thread is allowed."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._owner: Optional[int] = None
        self._depth = 0

    @contextmanager
    def driving(self) -> Iterator[None]:
        me = threading.get_ident()
        with self._lock:
            if self._owner is not None and self._owner != me:
                raise SequencesError(
                    "this Policy is already being driven by another thread; use one Policy per control loop")
            self._owner = me
            self._depth += 1
        try:
            yield
        finally:
            with self._lock:
                self._depth -= 1
                if self._depth == 0:
                    self._owner = None
