"""Waiting out a cold worker before the first action (WIRE.md §7.5).

A warming answer (503 with `warming=True`) is retried after `max(1, retry_after_s or 5)` seconds
until the startup budget runs out; the sleep is interruptible and `on_warming(waited_s, eta_s)`
is called before each one. Any other error ends the wait at once.
"""

from __future__ import annotations

import threading
import time
from typing import Callable, Optional, Tuple, TypeVar

from .._console import warming_line, warn_user
from .._errors import Unavailable

__all__ = ["WarmWait", "eta_of"]

T = TypeVar("T")
OnWarming = Callable[[float, float], None]


def eta_of(answer: object) -> Optional[float]:
    """The `eta_s` of a /v1/act/ready answer, or None when it has none (or not a number)."""
    eta = answer.get("eta_s") if isinstance(answer, dict) else None
    return float(eta) if isinstance(eta, (int, float)) and not isinstance(eta, bool) else None


class WarmWait:
    """One warm-wait. Its state (`active`, `waited_s`, `eta_s`) is readable from other threads.
    `sleep(seconds)` is the Policy's interruptible sleep (raises Interrupted)."""

    def __init__(self, budget_s: float, on_warming: Optional[OnWarming], sleep: Callable[[float], None]):
        self.budget_s = budget_s
        self._on_warming = on_warming or warming_line
        self._sleep = sleep
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
        warn_user(f"model is warming: {exc.message}; retrying in {wait:.0f}s")
        self._sleep(wait)
