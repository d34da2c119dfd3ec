"""A goal's time bound on the ROS clock, for `use_sim_time`.

Under simulated time a goal's `max_seconds` is ROS time: the control tick asks `expired()` and
ends the run within one period of the clock passing it, and `elapsed_s()` is the run's length in
ROS time (feedback and outcome). The client's own bound is wall-clock, so it becomes only a safety
net for a clock that stopped (what `start()` returns; at most the client's MAX_RUN_SECONDS). On the
wall clock (no sim time) the client bounds the run itself and this object stays idle.
"""

from __future__ import annotations

import threading
from typing import Callable, Optional

import sequence_ai

__all__ = ["SIM_TIME_WALL_FACTOR", "SIM_TIME_WALL_MARGIN_S", "RunClock"]

# The client's wall-clock bound under sim time: this many times max_seconds, and at least
# max_seconds + SIM_TIME_WALL_MARGIN_S.
SIM_TIME_WALL_FACTOR = 10.0
SIM_TIME_WALL_MARGIN_S = 60.0


class RunClock:
    """The running goal's start and bound on the ROS clock (under sim time; idle on the wall clock)."""

    def __init__(self, now_s: Callable[[], float], sim_time: bool):
        self._now_s = now_s
        self.sim_time = sim_time
        self._lock = threading.Lock()
        self._max_s: Optional[float] = None  # the running goal's bound (sim time only)
        self._started_s: Optional[float] = None  # ROS time it started (None before the first /clock)

    def start(self, max_seconds: float) -> float:
        """A goal starts: returns the wall-clock bound to give the client."""
        if not self.sim_time:
            return max_seconds
        now = self._now_s()
        with self._lock:
            self._max_s = max_seconds
            self._started_s = now if now > 0 else None
        net = max(SIM_TIME_WALL_FACTOR * max_seconds, max_seconds + SIM_TIME_WALL_MARGIN_S)
        return max(max_seconds, min(net, sequence_ai.MAX_RUN_SECONDS))  # the longest the client takes

    def expired(self) -> bool:
        """True once the running goal's max_seconds of ROS time have passed (control tick)."""
        with self._lock:
            if self._max_s is None:
                return False
            now = self._now_s()
            if self._started_s is None:  # the goal arrived before the first /clock message
                if now > 0:
                    self._started_s = now
                return False
            return now - self._started_s >= self._max_s

    def elapsed_s(self) -> Optional[float]:
        """ROS seconds the running goal has taken (sim time), else None."""
        with self._lock:
            started = self._started_s if self._max_s is not None else None
        return None if started is None else max(0.0, self._now_s() - started)

    def finish(self) -> Optional[float]:
        """The goal ended: its length in ROS time (sim time; None otherwise or before any /clock)."""
        elapsed = self.elapsed_s()
        with self._lock:
            self._max_s = self._started_s = None
        return elapsed
