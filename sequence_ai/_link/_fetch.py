"""A refill in flight: one HTTP call on a background thread, abandonable (docs/PROTOCOL.md §7.7, §7.12).

Only the HTTP call runs here; observe/validate/act stay on the driving thread. A fetch gets a
thread of its own, so an abandoned fetch (after an interrupt) never delays the next one. The
threads are reused: one that finished its fetch waits up to IDLE_S for the next, because starting
a thread per refill costs more CPU than the refill's HTTP exchange (bench/bench_underruns.py).

These threads run under SCHED_BATCH where Linux offers it (`background_thread`): a woken batch
thread does not preempt the thread running on its CPU. The driving thread hands a refill over
and goes on holding the GIL until it sleeps; a refill thread that preempted it there could only
block on that GIL, costing both threads a context switch (docs/CLIENT-LOOP.md).
"""

from __future__ import annotations

import os
import threading
import time
from typing import Any, Callable, Generic, List, Optional, TypeVar

from .._waiting import InterruptFlag

__all__ = ["Fetch", "background_thread"]

T = TypeVar("T")

IDLE_S = 10.0  # a runner with nothing to do for this long exits


def background_thread() -> None:
    """Put the calling thread under SCHED_BATCH (Linux; elsewhere, or if refused, nothing). Only
    a thread under SCHED_OTHER changes: one that inherited a real-time policy keeps it (the ROS
    node's control threads start theirs with SCHED_RESET_ON_FORK, so they start SCHED_OTHER).
    Called first thing on the threads this package starts."""
    policy = getattr(os, "SCHED_BATCH", None)
    if policy is None:
        return
    try:
        if os.sched_getscheduler(0) == os.SCHED_OTHER:
            os.sched_setscheduler(0, policy, os.sched_param(0))
    except OSError:
        pass


_idle: List[_Runner] = []  # runners waiting for a job
_pool_lock = threading.Lock()


class _Runner:
    """A daemon thread that runs one job at a time, handed over through a raw lock."""

    def __init__(self) -> None:
        self._job: Optional[Callable[[], None]] = None
        self._go = threading.Lock()
        self._go.acquire()
        self._thread = threading.Thread(target=self._loop, name="sequence-ai-refill", daemon=True)

    @classmethod
    def run(cls, job: Callable[[], None], name: str) -> None:
        with _pool_lock:
            runner = _idle.pop() if _idle else None
        if runner is None:
            runner = cls()
            runner._thread.start()  # it waits on _go for the job set below
        runner._job = job
        runner._thread.name = name
        runner._go.release()

    def _loop(self) -> None:
        background_thread()
        while True:
            if not self._go.acquire(timeout=IDLE_S):
                with _pool_lock:
                    if self in _idle:  # still unclaimed: retire
                        _idle.remove(self)
                        return
                self._go.acquire()  # claimed just now: its job is on the way
            job, self._job = self._job, None
            if job is not None:
                job()
            with _pool_lock:
                _idle.append(self)


def _forget_runners_after_fork() -> None:
    global _pool_lock
    _idle.clear()  # their threads do not exist in the child
    _pool_lock = threading.Lock()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_runners_after_fork)


class Fetch(Generic[T]):
    """Runs `call(cancelled)` on a daemon thread. `cancelled()` turns true once abandoned;
    `on_done()` (the Policy's Waiter.notify) is called on that thread when the call returns."""

    def __init__(self, call: Callable[[Callable[[], bool]], T], *, name: str = "sequence-ai-refill",
                 on_done: Optional[Callable[[], None]] = None):
        self.started_at = time.monotonic()
        self._on_done = on_done
        self.finished_at: Optional[float] = None
        self._abandoned = InterruptFlag()  # read as a plain attribute; a pause in the call can wait on it
        # done: an Event's set/is_set/wait on raw locks (a threading.Event builds a Condition per
        # request, and its set() takes four Python calls on the refill thread)
        self._done = InterruptFlag()
        self._value: Any = None
        self._error: Optional[BaseException] = None
        _Runner.run(lambda: self._run(call), name)

    def _run(self, call: Callable[[Callable[[], bool]], T]) -> None:
        try:
            self._value = call(self._abandoned.is_set)
        except BaseException as exc:  # handed to the driving thread by result()
            self._error = exc
        finally:
            self.finished_at = time.monotonic()
            self._done.set()
            if self._on_done is not None:
                self._on_done()

    def done(self) -> bool:
        return self._done.is_set()

    def succeeded(self) -> bool:
        """Done, with a value (not an exception) to hand over."""
        return self._done.is_set() and self._error is None

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
