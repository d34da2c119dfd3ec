"""Waiting, one way: until something is ready, a deadline passes, or interrupt() is called.

Everything the driving thread waits for — a refill in flight, a warm-wait sleep, the catalogue
lookup — goes through one `Waiter` per Policy. It sleeps on a condition that the interrupt flag
and every finishing fetch notify, so an interrupt wakes it at once rather than at the next poll
(docs/PROTOCOL.md §7.12 asks for a 20 ms poll; this is event-driven instead).

`InterruptFlag` is the flag itself: threading.Event's set/clear/is_set/wait on a raw lock that is
held while the flag is down, so the pacer's once-per-action sleep on it is one C call.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, List, Optional

__all__ = ["InterruptFlag", "Interrupted", "Waiter", "blocking_wait", "wait_on"]

POLL_S = 0.02  # the longest wait between looks at a flag that cannot wake a wait itself


class Interrupted(BaseException):
    """interrupt() was called: unwinds the driving thread to the loop, which holds and reports
    `interrupted`. A BaseException so a broad `except Exception` cannot swallow it."""


class InterruptFlag:
    """Set from any thread; listeners registered with `on_set` are called when it goes up."""

    def __init__(self) -> None:
        self._up = False
        self._gate = threading.Lock()
        self._gate.acquire()
        self._mutex = threading.Lock()
        self._listeners: List[Callable[[], None]] = []

    def on_set(self, listener: Callable[[], None]) -> None:
        """Call `listener()` (from the setting thread) every time the flag goes up."""
        with self._mutex:
            if listener not in self._listeners:
                self._listeners.append(listener)

    def set(self) -> None:
        with self._mutex:
            if self._up:
                return
            self._up = True
            self._gate.release()
            listeners = list(self._listeners)
        for listener in listeners:
            listener()

    def clear(self) -> None:
        with self._mutex:
            if self._up:
                self._up = False
                self._gate.acquire()  # at most a moment: a waiter holds it only to pass it on

    def is_set(self) -> bool:
        return self._up

    def wait(self, timeout: Optional[float] = None) -> bool:
        """True once the flag is up; False after `timeout` seconds without it."""
        if self._gate.acquire(True, -1 if timeout is None else max(0.0, timeout)):
            self._gate.release()
            return True
        return self._up


class Waiter:
    """The driving thread's one way to wait. `notify()` (any thread) makes it look again."""

    def __init__(self, flag: InterruptFlag):
        self.flag = flag
        self._cond = threading.Condition(threading.Lock())
        flag.on_set(self.notify)

    def notify(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def until(self, ready: Callable[[], bool], deadline: Optional[float] = None) -> bool:
        """Block until `ready()` (True) or the monotonic `deadline` (False); Interrupted if the
        flag goes up first. Whatever makes `ready()` true must call `notify()` afterwards."""
        with self._cond:
            while True:
                if self.flag.is_set():
                    raise Interrupted()
                if ready():
                    return True
                if deadline is None:
                    self._cond.wait()
                    continue
                left = deadline - time.monotonic()
                if left <= 0:
                    return False
                self._cond.wait(left)

    def sleep(self, seconds: float) -> None:
        """Sleep `seconds`, or raise Interrupted as soon as the flag goes up."""
        self.until(_never, time.monotonic() + seconds)


def wait_on(is_set: Callable[[], bool], seconds: float) -> bool:
    """Wait up to `seconds` for a flag: True as soon as `is_set()` holds. The `is_set` of an
    InterruptFlag or a threading.Event wakes the wait itself (one blocking call); any other
    callable is looked at every POLL_S."""
    return bool(blocking_wait(is_set)(max(0.0, seconds)))


def blocking_wait(is_set: Callable[[], bool]) -> Callable[[float], bool]:
    """`wait_on`'s wait for this `is_set`, as a function of the seconds (≥ 0) to wait, for a caller
    that waits on the same flag again and again (the pacer, once per action)."""
    flag = getattr(is_set, "__self__", None)
    if isinstance(flag, (InterruptFlag, threading.Event)):
        return flag.wait
    return lambda seconds: _poll(is_set, seconds)


def _poll(is_set: Callable[[], bool], seconds: float) -> bool:
    end = time.monotonic() + seconds
    while not is_set():
        remaining = end - time.monotonic()
        if remaining <= 0:
            return False
        time.sleep(min(remaining, POLL_S))
    return True


def _never() -> bool:
    return False
