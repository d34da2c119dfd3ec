"""The ROS timer as the control loop's only clock.

A ROS timer at the model's control frequency calls `tick()`; the client's control loop, running on
the goal's thread, calls `wait()` after each action and blocks until the next tick. Pacing thus
follows the node's clock (sim time included) and there is no second schedule. Missed ticks are
dropped, never replayed as a burst; after a stall the next action waits for the next tick.
"""

from __future__ import annotations

import threading
from typing import Callable

__all__ = ["TimerTicks"]

# Longest wait without looking at the interrupt flag.
_POLL_S = 0.02


class TimerTicks:
    """Implements sequence_ai's Pacer protocol from timer callbacks."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._ticks = 0
        self._seen = 0
        self._fresh = True

    def tick(self) -> None:
        with self._cond:
            self._ticks += 1
            self._cond.notify_all()

    def reset(self) -> None:
        """Start of a run, or the end of a stall: that action was not on a tick, so the next one
        waits for one."""
        with self._cond:
            self._seen = self._ticks
            self._fresh = True

    def wait(self, period_s: float, interrupted: Callable[[], bool]) -> None:
        with self._cond:
            if self._fresh or self._ticks > self._seen + 1:
                # More than one tick went by since the last action (a refill stall, or the run's
                # first fill): re-anchor on the next tick rather than act at once off the beat.
                self._seen = self._ticks
                self._fresh = False
            while self._ticks <= self._seen and not interrupted():
                self._cond.wait(_POLL_S)
            self._seen = self._ticks
