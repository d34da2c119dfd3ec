"""The local action buffer (docs/PROTOCOL.md §7.4): rows waiting to be executed, oldest first.

A chunk's rows replace the buffer (lookahead 1, predict()) or are appended to it (lookahead > 1,
and the pipelined default); how they meet the motion in progress is `_stitch.py`'s business.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import Deque, List, Optional, Sequence

__all__ = ["ActionBuffer"]

Row = List[float]


class ActionBuffer:
    """Thread-safe so `len()` can be read from a progress thread while the driving thread pops.
    Rows are kept as given (an `Action` keeps its provenance)."""

    def __init__(self) -> None:
        self._rows: Deque[Row] = deque()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def install(self, rows: Sequence[Row], *, append: bool) -> None:
        with self._lock:
            if not append:
                self._rows.clear()
            self._rows.extend(rows)

    def pop(self) -> Row:
        with self._lock:
            return self._rows.popleft()

    def last(self) -> Optional[Row]:
        """The row that will play last (the object itself: do not modify it)."""
        with self._lock:
            return self._rows[-1] if self._rows else None

    def rows(self) -> List[Row]:
        """The rows buffered, oldest first (a snapshot; the objects themselves)."""
        with self._lock:
            return list(self._rows)

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
