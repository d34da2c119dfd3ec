"""Warming the worker before the node takes goals, and reporting it on ~/warming.

A thread waits with the client's own readiness poller (`Policy.wait_until_ready`, about once a
second) until the worker can serve, publishing waited/eta at each poll. If it is not ready within `startup_timeout_s` the thread gives up and says
so; the next goal starts another attempt (that goal is refused, naming the timeout), so the node
recovers without a restart once the worker serves.
"""

from __future__ import annotations

import math
import threading
import time
from typing import Any, Callable, Optional

import sequence_ai
from sequence_ai_ros.msg import WarmingStatus

__all__ = ["WarmUp"]


class WarmUp:
    """Waits for the worker to serve on a thread of its own, publishing ~/warming; `refusal` names why
    a goal cannot run yet."""

    def __init__(self, policy: sequence_ai.Policy, model_id: str, budget_s: float, publisher: Any,
                 stamp: Callable[[], Any], logger: Any):
        self._policy = policy
        self._model_id = model_id
        self._budget_s = budget_s
        self._publisher = publisher  # of ~/warming
        self._stamp = stamp
        self._logger = logger
        self.ready = threading.Event()
        self._closing = threading.Event()
        self._lock = threading.Lock()
        self._running = False
        self._failure = ""  # why the last attempt gave up ("" while none has)
        self._waited_s = 0.0
        self._eta_s: Optional[float] = None

    def start(self) -> bool:
        """Start an attempt unless one runs or the worker is ready; True if started."""
        with self._lock:
            if self._running or self.ready.is_set() or self._closing.is_set():
                return False
            self._running = True
        threading.Thread(target=self._attempt, name="warmup", daemon=True).start()
        return True

    def close(self) -> None:
        self._closing.set()
        if not self.ready.is_set():
            self._policy.interrupt()  # wakes the poller's sleep (no goal runs before ready)

    def on_warming(self, waited_s: float, eta_s: Optional[float]) -> None:
        """The client's warm-wait callback (a goal met a cold worker)."""
        self._waited_s, self._eta_s = float(waited_s), eta_s
        self._publish(False, True, waited_s, eta_s, f"starting the model, about {eta_s or 0:.0f}s to go")

    def refusal(self) -> Optional[str]:
        """Why a goal cannot run now (None once ready); after a failed attempt it starts another."""
        if self.ready.is_set():
            return None
        if self.start():
            return (f"{self._model_id} is not ready ({self._failure}); warming it again: "
                    f"~/warming reports ready when it can take a goal")
        eta = self._eta_s
        return (f"{self._model_id} is not ready yet (warming for {self._waited_s:.0f}s"
                f"{'' if eta is None or math.isnan(eta) else f', about {eta:.0f}s to go'})")

    def _publish(self, ready: bool, warming: bool, waited_s: float, eta_s: Optional[float], message: str) -> None:
        self._publisher.publish(WarmingStatus(
            stamp=self._stamp(), model=self._model_id, ready=ready, warming=warming, waited_s=float(waited_s),
            eta_s=math.nan if eta_s is None else float(eta_s), message=message,
        ))

    def _attempt(self) -> None:
        failure = None
        try:
            failure = self._poll()
        finally:
            with self._lock:
                self._running = False
                if failure is not None:
                    self._failure = failure
        if failure is not None:  # after the attempt is over: a goal refused from now on starts the next
            self._publish(False, False, self._waited_s, self._eta_s, f"{failure}; the next goal starts warming it again")
            self._logger.error(f"{self._model_id} {failure}; the next goal starts warming it again")

    def _poll(self) -> Optional[str]:
        """Wait for readiness with the client's poller (Policy.wait_until_ready), publishing each poll;
        the reason it gave up (startup_timeout_s), or None once ready or closing."""
        started = time.monotonic()
        budget = self._budget_s
        self._eta_s = None

        def progress(_waited: float, eta: Optional[float]) -> None:
            self._waited_s, self._eta_s = time.monotonic() - started, eta
            self._publish(False, True, self._waited_s, eta, f"starting the model, about {eta or 0:.0f}s to go")

        while not self._closing.is_set():
            left = budget - (time.monotonic() - started) if budget > 0 else float(10 ** 9)
            try:
                self._policy.wait_until_ready(timeout_s=max(0.0, left), poll_s=1.0, on_warming=progress)
            except sequence_ai.Unavailable as exc:
                if self._closing.is_set():
                    return None
                if exc.warming:  # still warming when the budget ran out
                    self._waited_s = time.monotonic() - started
                    return f"not ready after startup_timeout_s={budget:g}s"
                self._unreachable(started, exc)
            except sequence_ai.SequencesError as exc:
                self._unreachable(started, exc)
            else:
                waited = self._waited_s = time.monotonic() - started
                self._publish(True, False, waited, None, "ready")
                self.ready.set()
                self._logger.info(f"{self._model_id} is ready after {waited:.1f}s")
                return None
        return None

    def _unreachable(self, started: float, exc: Exception) -> None:
        self._publish(False, False, time.monotonic() - started, None, f"cannot reach the policy service: {exc}")
        self._closing.wait(1.0)
