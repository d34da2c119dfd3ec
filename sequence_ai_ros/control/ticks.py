"""The ROS timer as the control loop's only clock.

A ROS timer at the model's control frequency calls `tick()`; the client's control loop, running on
the goal's thread, calls `wait()` after each action and blocks until the next tick. Pacing thus
follows the node's clock (sim time included) and there is no second schedule. Missed ticks are
dropped, never replayed as a burst; after a stall the next action waits for the next tick.

The node also sends each command inside `beat()`, which calls `on_beat()` just before it goes out:
the run's first command and the first after a stall (when no tick released the loop) wait for the
next tick, so consecutive commands are one period apart — the spacing the step and velocity checks
assume. And no command goes out less than half a period after the one before, on the timer's clock
(sim time too): such a command waits until then, off the beat, and the next one is on its tick
again. That happens when its tick came moments after the previous command went out — the previous
tick's callback ran late (a busy executor; rcl puts the next call on the next period boundary,
which may then be a few milliseconds away), or the previous command's thread was held up after its
tick (a starved CPU, a long-held GIL). Waiting for the next tick instead would drop a whole period
each time, and every row after it would play that much later. A timer that is late by the same
amount on every call keeps its commands a period apart, and they all go out.

The node knows when its commands went out late: a command more than one and a half periods after
the one before, with no underrun between (the client's `reset()` after a late chunk, or a run's
start), is a late beat: the node's own threads did not run in time (on a loaded machine, the
process not scheduled: the host or the kernel gave its cores to others), the beats between were
skipped and never made up. `late_beats` counts them and `late_beat_s` adds up how late each was
(its interval less one period), on the timer's clock, for the run since `start_run()`.

A tick that releases the loop then stands aside: the timer's callback blocks (the GIL released)
until `sent()` after the publish (the end of `beat()`), at most HANDOFF_S. Otherwise the executor's
own Python after the callback would hold the GIL while the loop, woken on the other core, waits for
it — a few hundred microseconds on every command, more in the tail (docs/ROS.md "One clock").
"""

from __future__ import annotations

import math
import threading
import time
from contextlib import contextmanager
from typing import Callable, Iterator

__all__ = ["TimerTicks"]

# Longest wait without looking at an `interrupted` that cannot wake the wait itself (a plain
# callable; the Policy's interrupt flag wakes it at once).
_POLL_S = 0.02
# Shortest turn of the wait for the spacing (a clock that moves slower than the wall's).
_MIN_WAIT_S = 0.0005
# Longest the timer's thread stands aside after a tick for the loop's command to go out.
HANDOFF_S = 0.005


class TimerTicks:
    """Implements sequence_ai's Pacer protocol from timer callbacks."""

    def __init__(self, period_s: float, now: Callable[[], float] = time.monotonic,
                 handoff_s: float = HANDOFF_S) -> None:
        """`period_s` and `now` on the timer's clock (seconds)."""
        if not (period_s > 0 and math.isfinite(period_s)):
            raise ValueError(f"period_s must be a positive number of seconds (got {period_s!r})")
        self._period_s = period_s
        self._now = now
        self._handoff_s = handoff_s
        self._cond = threading.Condition()
        self._ticks = 0
        self._seen = 0
        self._fresh = True
        self._released = False  # a tick released the loop and no command has gone out since
        self._waiting = False  # the loop is blocked until the next tick
        self._sent = threading.Event()  # the command of the latest tick went out
        self._beat_at = -math.inf  # when the latest command went out (sent(), on `now`'s clock)
        self._beat_waiting = False  # a command waits in on_beat for a tick
        self._woken_by: set = set()  # ids of the interrupt flags that notify this object
        self._judged = False  # the latest command's interval from the one before counts (no reset since)
        self.late_beats = 0  # this run's commands that went out late (module docstring)
        self.late_beat_s = 0.0  # how late they were in all: each one's interval less one period

    def tick(self) -> None:
        with self._cond:
            self._ticks += 1
            # (a loop that this tick will not let publish, by the spacing rule, is not waited for)
            waiting = self._waiting and not self._too_soon()
            self._sent.clear()
            self._cond.notify_all()
        if waiting:
            # Stand aside (GIL released) until the loop's command has gone out: the executor's own
            # code after this callback would otherwise run first and delay the command.
            self._sent.wait(self._handoff_s)

    def sent(self, published: bool = True) -> None:
        """The command on_beat let go has gone out (`published`) or will not: the timer's thread
        goes on, and the next command keeps half a period from this one."""
        if published:
            now = self._now()
            with self._cond:
                late = now - self._beat_at - self._period_s
                if self._judged and late > self._period_s / 2:  # (a clock that went back: not late)
                    self.late_beats += 1
                    self.late_beat_s += late
                self._beat_at = now
                self._judged = True
        self._sent.set()

    @property
    def command_waiting(self) -> bool:
        """A command is ready and waits in on_beat for a tick (the timer's callback need not fill
        this interval with a stall's zero velocity: the command follows at once)."""
        return self._beat_waiting

    def _too_soon(self) -> bool:
        # (a clock that went back — a sim reset, a wall-clock step — spaces nothing)
        return 0 <= self._now() - self._beat_at < self._period_s / 2

    def start_run(self) -> None:
        """A run begins: its late beats are counted from zero, and its first command waits for a tick."""
        with self._cond:
            self.late_beats, self.late_beat_s = 0, 0.0
        self.reset()

    def reset(self) -> None:
        """Start of a run, or the end of a stall: that action was not on a tick, so the next one
        waits for one (and its time since the command before, a late chunk's, is no late beat)."""
        with self._cond:
            self._seen = self._ticks
            self._fresh = True
            self._released = False
            self._judged = False

    def wait(self, period_s: float, interrupted: Callable[[], bool]) -> None:
        with self._cond:
            if self._fresh or self._ticks > self._seen + 1:
                # More than one tick went by since the last action (a refill stall, or the run's
                # first fill): re-anchor on the next tick rather than act at once off the beat.
                self._seen = self._ticks
                self._fresh = False
            self._await_tick_after(self._seen, interrupted)
            self._released = self._ticks > self._seen
            self._seen = self._ticks

    def on_beat(self, interrupted: Callable[[], bool]) -> None:
        """Just before a command goes out: at once when a tick released the loop and nothing was
        published since; otherwise (a run's first command, the first after a stall) at the next
        tick, which then counts as this command's. Either way, not less than half a period after
        the command before went out (`sent`): until then, on the timer's clock."""
        with self._cond:
            waited = not self._released
            self._released = False
            self._beat_waiting = True
            try:
                if waited:
                    self._await_tick_after(self._ticks, interrupted)
                ticks = self._ticks
                self._await_spacing(interrupted)
                waited = waited or self._ticks != ticks
            finally:
                self._beat_waiting = False
            if waited:  # the tick this command goes out on is the loop's latest
                self._seen = self._ticks
                self._fresh = False

    @contextmanager
    def beat(self, interrupted: Callable[[], bool]) -> Iterator[None]:
        """Around one command's publish: `on_beat()` first, `sent()` after, saying whether the body
        finished (the command went out) or raised (it did not)."""
        self.on_beat(interrupted)
        published = False
        try:
            yield
            published = True
        finally:
            self.sent(published)

    def _wake(self) -> None:
        with self._cond:
            self._cond.notify_all()

    def _await_spacing(self, interrupted: Callable[[], bool]) -> None:
        """Block (lock held, released while waiting) until half a period after the latest command
        on the timer's clock, or an interrupt. The wait is timed in wall seconds and the timer's
        clock read again after it: a sim clock at another rate takes another turn."""
        while self._too_soon() and not interrupted():
            left = self._beat_at + self._period_s / 2 - self._now()
            self._cond.wait(min(max(left, _MIN_WAIT_S), _POLL_S))

    def _await_tick_after(self, count: int, interrupted: Callable[[], bool]) -> None:
        """Block (lock held, released while waiting) until tick number `count` + 1 or an interrupt.
        When `interrupted` is a flag's `is_set` that can tell us (the Policy's), it wakes this wait
        the moment it goes up; any other callable is looked at every _POLL_S."""
        flag = getattr(interrupted, "__self__", None)
        on_set = getattr(flag, "on_set", None)
        timeout = _POLL_S
        if callable(on_set):
            if id(flag) not in self._woken_by:
                on_set(self._wake)
                self._woken_by.add(id(flag))
            timeout = None
        self._waiting = True
        try:
            while self._ticks <= count and not interrupted():
                self._cond.wait(timeout)
        finally:
            self._waiting = False
