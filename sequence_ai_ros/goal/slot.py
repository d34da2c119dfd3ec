"""The goal being driven: which goal holds the slot, and the one place that decides how it stops.

A run is stopped from several threads: a cancel request and the ~/interrupt service (executor
threads), a preempting goal, the e-stop input, the sim-time bound (the control tick) and shutdown
(the main thread). Each calls `stop(reason)`: under one lock the first reason wins, and the policy
is interrupted. While a run is stopping no command goes out: `publishing()` refuses (raises
`RunStopped`) and holds the same lock while one is published, so once `stop()` has returned no
command of this run starts going out. The run's loop then ends, holds once and reports the reason.
"""

from __future__ import annotations

import threading
import time
from contextlib import contextmanager
from typing import Any, Callable, Iterator, List, Optional

__all__ = ["GoalRun", "GoalSlot", "RunStopped"]


class RunStopped(Exception):
    """Raised inside the run's callbacks once it is stopping: ends the loop before it actuates."""


class GoalRun:
    """One goal from its claim to its result."""

    def __init__(self, goal_handle: Any, interrupt: Callable[[], None]):
        self.goal_handle = goal_handle
        self.held = threading.Event()  # the run's one hold went out (hold_once)
        self.started = False  # the loop took its first observation
        # The node keeps no instruction: the client holds the one in force. Except this, for a
        # moment: a ~/set_instruction accepted before the run's first observation, which the
        # client's latch cannot take yet (run(instruction=) would put the goal's own over it);
        # goal/services.py hands it to the client's set_instruction at that observation.
        self.change_before_start: Optional[str] = None
        self.recorder: Any = None  # record_dir: this goal's sequence_ai.recording.Recorder
        self._interrupt = interrupt
        self._lock = threading.Lock()
        self._reason: Optional[str] = None

    @property
    def goal_instruction(self) -> str:
        """The goal's own instruction, read from its request (run(instruction=): in force, not a swap)."""
        return self.goal_handle.request.instruction

    @property
    def stop_reason(self) -> Optional[str]:
        """Why the node stopped this run (None while it runs on)."""
        return self._reason

    def stop(self, reason: str) -> bool:
        """Stop the run for `reason` unless it is already stopping; True if this call decided."""
        with self._lock:
            first = self._reason is None
            if first:
                self._reason = reason
        self._interrupt()  # again on a repeat: run() clears the flag when it starts
        return first

    def interrupt_again(self) -> None:
        """Interrupt once more if stopping: run() clears the flag when it starts, so a stop that came
        just before it would otherwise wait for the next observation (the control tick calls this)."""
        if self._reason is not None:
            self._interrupt()

    def hold_once(self, hold: Callable[[], None]) -> bool:
        """Call `hold` unless this run has held already: one hold per run, on every ending. True if
        this call held."""
        if self.held.is_set():
            return False
        self.held.set()
        hold()
        return True

    def check(self) -> None:
        """RunStopped once the run is stopping (a callback of the loop calls it)."""
        if self._reason is not None:
            raise RunStopped(self._reason)

    @contextmanager
    def publishing(self) -> Iterator[None]:
        """Around one command's publish: refused once stopping, and stop() waits for it."""
        with self._lock:
            if self._reason is not None:
                raise RunStopped(self._reason)
            yield


class GoalSlot:
    """The one goal the node drives at a time. With busy_policy reject a goal holds the slot from
    its acceptance (`reserve`) to its end, so the next one is rejected at once; with preempt a new
    goal stops the running one (reason interrupted) and takes the slot once it has ended.

    A goal can be cancelled after its acceptance and before its run begins (waiting for a preempted
    goal to stop, or for a free executor thread): `cancel` remembers it, and its run stops as it
    begins: otherwise it would run on, to its time bound or the next preemption."""

    def __init__(self, preempt: bool, interrupt: Callable[[], None]):
        self._preempt = preempt
        self._interrupt = interrupt
        self._lock = threading.Lock()
        self._run: Optional[GoalRun] = None
        self._reserved = False
        self._canceled_early: List[Any] = []  # goal handles (rclpy's are unhashable: kept by identity)
        self._idle = threading.Event()
        self._idle.set()

    @property
    def run(self) -> Optional[GoalRun]:
        """The goal being driven, if any."""
        return self._run

    @property
    def driving(self) -> Optional[GoalRun]:
        """The goal being driven until its hold went out, if any."""
        run = self._run
        return run if run is not None and not run.held.is_set() else None

    def reserve(self) -> bool:
        """A goal is about to be accepted: False if it must be rejected as busy."""
        if self._preempt:
            return True
        with self._lock:
            if self._reserved:
                return False
            self._reserved = True
            return True

    def claim(self, goal_handle: Any, begin: Callable[[GoalRun], None], wait_s: float) -> Optional[GoalRun]:
        """This goal's run, begun (`begin` under the slot's lock); None if the running goal did not
        stop within `wait_s` (preempt)."""
        run = GoalRun(goal_handle, self._interrupt)
        deadline = time.monotonic() + wait_s
        while True:
            with self._lock:
                running = self._run
                if running is None:
                    begin(run)
                    self._run = run
                    self._idle.clear()
                    if self._forget_cancel(goal_handle):
                        run.stop("canceled")
                    return run
            running.stop("interrupted")
            if not self._idle.wait(max(0.0, deadline - time.monotonic())):
                with self._lock:
                    self._forget_cancel(goal_handle)
                return None

    def cancel(self, goal_handle: Any) -> None:
        """A cancel request for `goal_handle`'s goal: its run stops now, or as it begins."""
        with self._lock:
            run = self._run
            if run is None or run.goal_handle is not goal_handle:
                self._canceled_early.append(goal_handle)  # taken out when its run is claimed
                return
        run.stop("canceled")

    def _forget_cancel(self, goal_handle: Any) -> bool:
        """(The slot locked.) Whether `goal_handle`'s goal was cancelled before its run began."""
        for i, handle in enumerate(self._canceled_early):
            if handle is goal_handle:
                del self._canceled_early[i]
                return True
        return False

    def release(self, run: Optional[GoalRun]) -> None:
        """A goal ended (`run` None: it never ran): the slot is free."""
        with self._lock:
            if run is not None and self._run is run:
                self._run = None
                self._idle.set()
            self._reserved = False

    def wait_idle(self, timeout_s: float) -> bool:
        return self._idle.wait(timeout_s)

    @contextmanager
    def locked(self) -> Iterator[Optional[GoalRun]]:
        """`driving`, with the slot locked meanwhile: no run is claimed or begun inside."""
        with self._lock:
            yield self.driving
