"""Client telemetry: batched `POST /v1/reports/act` from a background thread (docs/PROTOCOL.md §4.6).

Never blocks the control loop and never raises: reports go into a bounded queue (oldest dropped),
a daemon thread posts batches of at most 64 every 5 s (sooner when 64 are waiting), and every
failure is swallowed. Reports carry timings only — never the key, the direct secret or the
observation.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from typing import Any, Dict, List, Optional

from ._act_request import ActTrace
from ._fetch import background_thread

__all__ = ["TelemetrySender", "act_report"]

QUEUE_MAX = 1024
BATCH_MAX = 64
FLUSH_EVERY_S = 5.0  # the reference flushes every 0.5 s; 5 s costs a tenth of the wake-ups and posts
JOIN_ON_CLOSE_S = 2.0  # close() waits this long for a post in progress ...
FLUSH_ON_CLOSE_S = 1.0  # ... and then this long, in all, to send what is left


def act_report(trace: ActTrace, outcome: str, *, total_s: Optional[float] = None,
               perf: Optional[Dict[str, Any]] = None, warmup_s: Optional[float] = None) -> Dict[str, Any]:
    """One report. `outcome` is served, warming or error."""
    perf = dict(perf or {}) if outcome == "served" else {}
    rtt_ms = None if trace.rtt_s is None else round(trace.rtt_s * 1000.0, 2)
    handler = perf.get("handler_ms")
    network_ms = None
    if rtt_ms is not None and isinstance(handler, (int, float)) and not isinstance(handler, bool):
        network_ms = round(rtt_ms - handler, 2) if rtt_ms - handler >= 0 else None
    return {
        "rid": trace.rid,
        "outcome": outcome,
        "client": {
            "total_ms": None if total_s is None else round(total_s * 1000.0, 2),
            "rtt_ms": rtt_ms,
            "network_ms": network_ms,
            "warmup_ms": None if warmup_s is None else round(warmup_s * 1000.0, 2),
            "first_after_connect": trace.first_after_connect,
            "rid_mismatch": trace.rid_mismatch,
        },
        "perf": perf,
    }


class TelemetrySender:
    """The Policy's telemetry: `submit()` queues a report without blocking, a background thread
    posts them in batches, `close()` sends what is left within a bound."""

    def __init__(self, client: Any):
        self._client = client  # a GatewayTransport (_http.telemetry_client)
        self._queue: deque = deque(maxlen=QUEUE_MAX)
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: Optional[threading.Thread] = None
        self.sent = 0

    def submit(self, report: Dict[str, Any]) -> None:
        with self._lock:
            self._queue.append(report)
            if self._thread is None and not self._stop.is_set():
                self._thread = threading.Thread(target=self._loop, name="sequence-ai-telemetry", daemon=True)
                self._thread.start()
            if len(self._queue) >= BATCH_MAX:
                self._wake.set()

    def _take(self) -> List[Dict[str, Any]]:
        with self._lock:
            batch = [self._queue.popleft() for _ in range(min(BATCH_MAX, len(self._queue)))]
        return batch

    def _post(self, batch: List[Dict[str, Any]], timeout_s: Optional[float] = None) -> None:
        if not batch:
            return
        try:
            extra = {} if timeout_s is None else {"timeout": timeout_s}
            response = self._client.post("/v1/reports/act", json={"reports": batch}, **extra)
            if 200 <= response.status_code < 300:
                self.sent += len(batch)
        except Exception:
            pass  # telemetry never disturbs the robot

    def _loop(self) -> None:
        background_thread()
        while not self._stop.is_set():
            self._wake.wait(FLUSH_EVERY_S)
            self._wake.clear()
            self._post(self._take())

    def close(self) -> None:
        """Join the thread for at most 2 s, then flush what is left within 1 s in all — unless
        the thread is still stuck on a slow gateway, whose request closing the client ends:
        shutting a robot down never waits on telemetry (at most ~3 s, whatever the gateway does)."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join(JOIN_ON_CLOSE_S)
        if self._thread is None or not self._thread.is_alive():
            end = time.monotonic() + FLUSH_ON_CLOSE_S
            while time.monotonic() < end:
                batch = self._take()
                if not batch:
                    break
                self._post(batch, timeout_s=max(0.01, end - time.monotonic()))
        try:
            self._client.close()
        except Exception:
            pass
