"""When the next request starts (docs/PROTOCOL.md §7.7, extended for refills slower than a chunk).

`lead` (from `RefillLatency`) is how much motion must still be queued when a request starts for
its answer to land in time. Pipelined (the default, `lookahead="auto"`): a request starts as soon
as the rows buffered plus a window for every request already in flight fall to `lead`; so in
steady play one request starts per window played — the fewest a chunk's length allows — and as
many are in flight as the latency needs (one below the window, two or three above it). With an
int `lookahead` the reference rule holds: at most that many chunks buffered or in flight, and at
lookahead 1 a request only once the buffered motion falls to `lead`.
"""

from __future__ import annotations

import math
from typing import Optional

from ._settings import RunSettings

__all__ = ["MAX_IN_FLIGHT", "PrefetchRule"]

# Pipelined: never more requests in flight than this, whatever a latency spike makes the lead.
MAX_IN_FLIGHT = 4


class PrefetchRule:
    """Decides, from the values the loop passes, how many requests to start now; the loop starts
    them (observe() is called for each, on its thread)."""

    def __init__(self, settings: RunSettings):
        self.s = settings
        # The action count before which no request can be due: between installs the buffer only
        # shrinks by one row per action and the lead does not change, so the ticks in between
        # skip the arithmetic (0 after every install and arrival; never, without prefetch).
        self._from = 0 if settings.prefetch else math.inf

    def due(self, actions: int) -> bool:
        return actions >= self._from

    def installed(self) -> None:
        if self.s.prefetch:
            self._from = 0

    def start_now(self, *, actions: int, buffered: int, in_flight: int, per_chunk: int,
                  lead_rows: Optional[float]) -> int:
        """How many requests to start now, with `actions` executed, `buffered` rows in the buffer,
        `in_flight` requests on their way (`per_chunk` rows each), and `lead_rows` the rows of
        motion that must still be queued when a request starts (None: no estimate yet)."""
        s = self.s
        if not s.prefetch or lead_rows is None:
            return 0
        per_chunk = max(1, per_chunk)
        start = 0
        while True:
            queued = buffered + in_flight * per_chunk
            if actions + queued >= s.max_actions or (buffered == 0 and not in_flight):
                return start  # nothing more is needed / an empty buffer is a blocking fill's job
            if s.pipelined:
                if in_flight >= MAX_IN_FLIGHT:
                    self._from = s.max_actions  # until an answer arrives
                    return start
                if queued > lead_rows:
                    # the first tick at which queued <= lead_rows, one early to be safe
                    self._from = actions + max(0, math.ceil(queued - lead_rows) - 1)
                    return start
            else:
                single = s.lookahead == 1
                if buffered / per_chunk + in_flight >= s.lookahead:
                    if single:
                        # a request in flight: not until it lands; a whole chunk buffered: not
                        # until one row of it has played (one tick early, to be safe)
                        self._from = s.max_actions if in_flight else actions + buffered - per_chunk
                    return start
                if single and buffered > lead_rows:
                    self._from = actions + max(0, math.floor(buffered - lead_rows) - 1)
                    return start
            start += 1
            in_flight += 1
