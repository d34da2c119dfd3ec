"""The tick source of the control loop (docs/PROTOCOL.md §7.9).

The loop calls `pacer.wait(period_s, interrupted)` once after each executed action. The default
`MonotonicPacer` keeps an absolute schedule on the monotonic clock; a ROS node passes its own
pacer that blocks until the next timer tick, so the robot has exactly one clock.
"""

from __future__ import annotations

import math
import time
from typing import Callable, Optional

from .._waiting import POLL_S, InterruptFlag, blocking_wait

try:
    from typing import Protocol
except ImportError:  # pragma: no cover - Python < 3.8
    Protocol = object  # type: ignore[assignment,misc]

__all__ = ["POLL_S", "InterruptFlag", "MonotonicPacer", "Pacer"]


class Pacer(Protocol):
    """Blocks until the next action is due. Must return within ~20 ms of `interrupted()` turning
    true. A pacer driven by an external clock may ignore `period_s`. An optional `reset()` method,
    if present, is called at the start of every run and after every underrun: the next wait then
    lasts a full period from the action just taken, instead of catching up on the old schedule."""

    def wait(self, period_s: float, interrupted: Callable[[], bool]) -> None: ...


class MonotonicPacer:
    """Absolute schedule: action k is due at anchor + k·period. When the loop falls more than one
    period behind (a stall, a slow act()), the schedule re-anchors at now instead of bursting
    actions to catch up. Less than a period behind (this thread woke late on a busy machine), the
    schedule holds, but no wait returns less than half a period after the one before: the action
    after a late one waits that long, the next is on the schedule again (the ROS timer's pacer
    keeps the same spacing, sequence_ai_ros/control/ticks.py). Never busy-waits: when `interrupted` is the `is_set` of a threading.Event
    or of an InterruptFlag it blocks on that flag (one wake-up per period), otherwise it sleeps in
    slices of at most POLL_S."""

    def __init__(self, clock: Callable[[], float] = time.monotonic,
                 sleep: Callable[[float], None] = time.sleep):
        self._clock = clock
        self._sleep = sleep
        self._next_due: Optional[float] = None
        self._released = -math.inf  # when the latest wait returned
        self.reanchors = 0
        self._waits_on: Optional[Callable[[], bool]] = None  # the `interrupted` of the last wait ...
        self._block: Callable[[float], bool] = time.sleep  # ... and how to wait on it (blocking_wait)

    def reset(self) -> None:
        self._next_due = None

    def wait(self, period_s: float, interrupted: Callable[[], bool]) -> None:
        now = self._clock()
        if self._next_due is None or now - self._next_due > period_s:
            if self._next_due is not None:
                self.reanchors += 1
            self._next_due = now
        self._next_due += period_s
        due = max(self._next_due, self._released + period_s / 2)
        remaining = due - self._clock()
        if self._clock is time.monotonic:
            if remaining > 0:
                if interrupted is not self._waits_on:  # a run passes the same one every action
                    self._waits_on, self._block = interrupted, blocking_wait(interrupted)
                self._block(remaining)  # a flag wakes it at once; other callables are polled
        else:
            while not interrupted():  # an injected clock (tests): its sleep, in slices
                remaining = due - self._clock()
                if remaining <= 0:
                    break
                self._sleep(min(remaining, POLL_S))
        self._released = self._clock()
