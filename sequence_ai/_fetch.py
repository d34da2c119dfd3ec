"""A refill in flight: one HTTP call on a background thread, abandonable (WIRE.md §7.7, §7.12).

Only the HTTP call runs here; observe/validate/act stay on the driving thread. A fetch gets a
thread of its own, so an abandoned fetch (after an interrupt) never delays the next one.
"""

from __future__ import annotations

import threading
import time
from typing import Any, Callable, Generic, Optional, TypeVar

__all__ = ["Fetch"]

T = TypeVar("T")


class Fetch(Generic[T]):
    """Runs `call(cancelled)` on a daemon thread. `cancelled()` turns true once abandoned."""

    def __init__(self, call: Callable[[Callable[[], bool]], T], *, name: str = "sequence-ai-refill"):
        self.started_at = time.monotonic()
        self.finished_at: Optional[float] = None
        self._abandoned = threading.Event()
        self._done = threading.Event()
        self._value: Any = None
        self._error: Optional[BaseException] = None
        self._thread = threading.Thread(target=self._run, args=(call,), name=name, daemon=True)
        self._thread.start()

    def _run(self, call: Callable[[Callable[[], bool]], T]) -> None:
        try:
            self._value = call(self._abandoned.is_set)
        except BaseException as exc:  # handed to the driving thread by result()
            self._error = exc
        finally:
            self.finished_at = time.monotonic()
            self._done.set()

    def done(self) -> bool:
        return self._done.is_set()

    def wait(self, timeout_s: float) -> bool:
        return self._done.wait(timeout_s)

    def result(self) -> T:
        """The call's value, or its exception re-raised on the calling thread (must be done)."""
        if self._error is not None:
            error, self._error = self._error, None
            raise error
        return self._value

    def abandon(self) -> None:
        self._abandoned.set()

    @property
    def abandoned(self) -> bool:
        return self._abandoned.is_set()
