"""Waiting out a cold worker before the first action (WIRE.md §7.5).

A warming answer (503 with `warming=True`) is retried after `max(1, retry_after_s or 5)` seconds
until the startup budget runs out; the sleep is interruptible and `on_warming(waited_s, eta_s)`
is called before each one. Any other error ends the wait at once.
"""

from __future__ import annotations

import sys
import threading
import time
import warnings
from typing import Callable, Optional, Tuple, TypeVar

from ._errors import Unavailable

__all__ = ["Interrupted", "WarmWait", "default_on_warming", "interruptible_sleep"]

T = TypeVar("T")
OnWarming = Callable[[float, float], None]


class Interrupted(BaseException):
    """interrupt() was called: unwinds the driving thread to the loop, which holds and reports
    `interrupted`. A BaseException so a broad `except Exception` cannot swallow it."""


def interruptible_sleep(seconds: float, interrupted: Callable[[], bool]) -> None:
    end = time.monotonic() + seconds
    while True:
        if interrupted():
            raise Interrupted()
        remaining = end - time.monotonic()
        if remaining <= 0:
            return
        time.sleep(min(remaining, 0.02))


def _eta_text(eta_s: float) -> str:
    return f"{eta_s:.0f}s" if eta_s < 90 else f"~{eta_s / 60:.0f} min"


def default_on_warming(waited_s: float, eta_s: float) -> None:
    print(f"[sequences] starting the model, about {_eta_text(eta_s)} to go (waited {waited_s:.0f}s so far)",
          file=sys.stdout, flush=True)


class WarmWait:
    """One warm-wait. Its state (`active`, `waited_s`, `eta_s`) is readable from other threads."""

    def __init__(self, budget_s: float, on_warming: Optional[OnWarming], interrupted: Callable[[], bool]):
        self.budget_s = budget_s
        self._on_warming = on_warming or default_on_warming
        self._interrupted = interrupted
        self._lock = threading.Lock()
        self.active = False
        self.started: Optional[float] = None
        self.eta_s: Optional[float] = None

    @property
    def waited_s(self) -> float:
        started = self.started
        return 0.0 if started is None else time.monotonic() - started

    def run(self, attempt: Callable[[float], T]) -> Tuple[T, float]:
        """Call `attempt(read_timeout_s)` until it stops answering "warming"; returns its value
        and the seconds since the wait began (the successful attempt included)."""
        self.started = time.monotonic()
        deadline = self.started + self.budget_s
        try:
            while True:
                try:
                    value = attempt(max(1.0, deadline - time.monotonic()))
                except Unavailable as exc:
                    self.handle(exc)
                    continue
                return value, self.waited_s
        finally:
            self.active = False

    def handle(self, exc: Unavailable) -> None:
        """Decide on one warming answer: sleep it out, or give up by raising."""
        if not exc.warming:
            raise exc
        self.active = True
        assert self.started is not None
        wait = max(1.0, float(exc.retry_after_s or 5))
        if time.monotonic() + wait > self.started + self.budget_s:
            raise Unavailable(f"{exc.message}; still warming after {self.budget_s:g}s (startup_timeout_s), giving up",
                              exc.status, exc.body, retry_after_s=exc.retry_after_s, warming=True,
                              job_id=exc.job_id) from None
        self.eta_s = wait
        self._on_warming(self.waited_s, wait)
        warnings.warn(f"model is warming: {exc.message}; retrying in {wait:.0f}s", UserWarning, stacklevel=3)
        interruptible_sleep(wait, self._interrupted)
