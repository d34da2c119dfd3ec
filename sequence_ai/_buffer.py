"""The local action buffer and the seam between chunks (WIRE.md §7.4, §7.10).

A new chunk replaces the buffer (lookahead 1) or is appended to it (lookahead > 1). The seam is
where the last executed action meets the new chunk's first row: its size is measured on the raw
chunk, and for absolute action spaces the first rows may be ramped linearly out of that action.
"""

from __future__ import annotations

import threading
from collections import deque
from typing import List, Optional, Sequence

__all__ = ["ActionBuffer", "blend_seam", "is_absolute_space", "seam_jump"]

Row = List[float]

_ABSOLUTE_MARKERS = ("absolute", "position", "joint_pos")


def is_absolute_space(action_space: Optional[str]) -> bool:
    """Rows are targets, not increments: only then is blending a seam meaningful."""
    space = (action_space or "").lower()
    return any(marker in space for marker in _ABSOLUTE_MARKERS)


def seam_jump(last: Optional[Sequence[float]], first: Optional[Sequence[float]]) -> Optional[float]:
    """Largest per-dimension distance across the seam; None when there is nothing to compare."""
    if last is None or first is None or len(last) != len(first) or not len(first):
        return None
    return max(abs(float(a) - float(b)) for a, b in zip(first, last))


def blend_seam(rows: List[Row], last: Sequence[float], steps: int) -> List[Row]:
    """Ramp the first `steps` rows linearly out of `last`: row_i ← (1−w)·last + w·row_i with
    w = (i+1)/(n+1). A width mismatch leaves the rows untouched."""
    n = min(steps, len(rows))
    if n <= 0 or any(len(row) != len(last) for row in rows[:n]):
        return rows
    blended = [list(row) for row in rows]
    for i in range(n):
        w = (i + 1) / (n + 1)
        blended[i] = [(1.0 - w) * float(a) + w * float(b) for a, b in zip(last, rows[i])]
    return blended


class ActionBuffer:
    """Rows waiting to be executed, oldest first. Thread-safe so `len()` can be read from a
    progress thread while the driving thread pops."""

    def __init__(self) -> None:
        self._rows: deque = deque()
        self._lock = threading.Lock()

    def __len__(self) -> int:
        with self._lock:
            return len(self._rows)

    def install(self, rows: Sequence[Row], *, append: bool) -> None:
        with self._lock:
            if not append:
                self._rows.clear()
            self._rows.extend(list(row) for row in rows)

    def pop(self) -> Row:
        with self._lock:
            return self._rows.popleft()

    def last(self) -> Optional[Row]:
        with self._lock:
            return list(self._rows[-1]) if self._rows else None

    def clear(self) -> None:
        with self._lock:
            self._rows.clear()
