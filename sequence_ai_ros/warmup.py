"""Warming the worker before the node takes goals, and reporting it on ~/warming.

A thread polls the worker's readiness (about once a second) until it can serve, publishing
waited/eta each time. If it is not ready within `startup_timeout_s` the thread gives up and says
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
        try:
            self._poll()
        finally:
            with self._lock:
                self._running = False

    def _poll(self) -> None:
        started = time.monotonic()
        budget = self._budget_s
        self._eta_s = None
        while not self._closing.is_set():
            waited = self._waited_s = time.monotonic() - started
            try:
                ready, eta = self._policy.ready()
            except sequence_ai.SequencesError as exc:
                self._publish(False, False, waited, None, f"cannot reach the policy service: {exc}")
                ready, eta = False, None
            if ready:
                self._publish(True, False, waited, None, "ready")
                self.ready.set()
                self._logger.info(f"{self._model_id} is ready after {waited:.1f}s")
                return
            self._eta_s = eta
            self._publish(False, True, waited, eta, f"starting the model, about {eta or 0:.0f}s to go")
            if budget > 0 and waited > budget:
                self._failure = f"not ready after startup_timeout_s={budget:g}s"
                self._publish(False, False, waited, eta, f"{self._failure}; the next goal starts warming it again")
                self._logger.error(f"{self._model_id} not ready after {budget:g}s; the next goal starts warming it again")
                return
            self._closing.wait(1.0)
