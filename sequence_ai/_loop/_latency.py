"""How long a refill takes, so the next request can start in time (docs/PROTOCOL.md §7.7).

An exponential moving average (new = 0.7·old + 0.3·sample, the first sample taken as is) of the
worker's *service time*: the wall time of the /act call minus one-off costs that will not recur —
the gateway admission, warm-wait sleeps and reconnect backoff. Those costs are reported separately
by the worker connection and never enter the average, so a seven-minute cold start does not make
the loop prefetch on every tick for the next dozen chunks.

Beside the average it keeps the mean deviation (gain 1/4, as in TCP's retransmission timer), so
a jittery link asks for more lead than a steady one of the same mean. See docs/CLIENT-LOOP.md.

`predict()` is no sample (docs/PROTOCOL.md §7.7), but what it took is the best guess there is before a run
has one: `seed()` keeps it as the estimate until the first sample, which replaces it. Without it a
run that starts on the rows a warm-up predict() left has nothing to time its first request by, and
stops twice at its start above the window.

The newest chunk taking over on arrival (`_takeover.py`) needs a bound, not an average: how late
the next chunk may still be, so the rows taken from the one arriving last until it lands.
`latest_s()` is the 90th percentile of the last 32 samples (fewer than 8: the estimate plus
the larger of 2.5 mean deviations and half of it).
"""

from __future__ import annotations

import math
import threading
from collections import deque
from typing import Deque, Optional, Tuple

__all__ = ["RefillLatency"]

RECENT = 32  # samples latest_s() reads
_FEW = 8  # below this many, latest_s() is the estimate and its margins


class RefillLatency:
    """Thread-safe EMA of refill service time, in seconds."""

    def __init__(self, keep: float = 0.7) -> None:
        self._keep = keep
        self._estimate: Optional[float] = None
        self._deviation = 0.0
        self._samples = 0
        self._seeded = False  # the estimate is a seed(), not a sample
        self._recent: Deque[float] = deque(maxlen=RECENT)
        self._lock = threading.Lock()

    @property
    def estimate_s(self) -> Optional[float]:
        with self._lock:
            return self._estimate

    @property
    def samples(self) -> int:
        with self._lock:
            return self._samples

    def record(self, sample_s: float) -> None:
        if not sample_s >= 0.0:  # also rejects NaN
            return
        with self._lock:
            if self._estimate is None or self._seeded:
                self._estimate, self._seeded = sample_s, False
            else:
                self._deviation += 0.25 * (abs(sample_s - self._estimate) - self._deviation)
                self._estimate = self._keep * self._estimate + (1.0 - self._keep) * sample_s
            self._samples += 1
            self._recent.append(sample_s)

    def seed(self, service_s: float) -> None:
        """A service time seen outside run() (predict()): the estimate until the first sample, which
        replaces it; never averaged in, and ignored once there is a sample."""
        if not service_s >= 0.0:
            return
        with self._lock:
            if self._estimate is None or self._seeded:
                self._estimate, self._seeded = service_s, True

    @property
    def deviation_s(self) -> float:
        with self._lock:
            return self._deviation

    def lead_s(self, hz: float) -> Optional[float]:
        """How much buffered motion must remain when the next request starts: 1.25 × estimate,
        plus twice the mean deviation, plus one control period. None until the first sample."""
        with self._lock:
            if self._estimate is None:
                return None
            return 1.25 * self._estimate + 2.0 * self._deviation + 1.0 / hz

    def lead_and_estimate(self, hz: float) -> Tuple[Optional[float], Optional[float]]:
        """(`lead_s(hz)`, `estimate_s`), read at once: the request cadence needs both every tick."""
        with self._lock:
            if self._estimate is None:
                return None, None
            return 1.25 * self._estimate + 2.0 * self._deviation + 1.0 / hz, self._estimate

    def start_lead_s(self, hz: float) -> Optional[float]:
        """The lead the first action of a run waits by: `lead_s`, or, when larger, how late the
        refill may still come plus a period (a run after predict() has one sample, a seed)."""
        lead, latest = self.lead_s(hz), self.latest_s()
        if lead is None or latest is None:
            return lead
        return max(lead, latest + 1.0 / hz)

    def latest_s(self) -> Optional[float]:
        """How late a refill may still come: the 90th percentile of the recent samples, or with
        fewer than 8 the estimate (a seed counts) plus max(2.5 × mean deviation, 0.5 × estimate):
        one sample of a latency varying ±20 % may be its low end.
        None with no estimate."""
        with self._lock:
            if len(self._recent) >= _FEW:
                ordered = sorted(self._recent)
                return ordered[min(len(ordered) - 1, math.ceil(0.9 * len(ordered)) - 1)]
            if self._estimate is None:
                return None
            return self._estimate + max(2.5 * self._deviation, 0.5 * self._estimate)
