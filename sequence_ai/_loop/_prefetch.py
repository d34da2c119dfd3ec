"""When the next request starts (WIRE.md §7.7, extended for refills slower than a chunk).

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
from typing import TYPE_CHECKING

from ._refill import Refills
from ._settings import RunSettings

if TYPE_CHECKING:
    from ._control_loop import ControlLoop

__all__ = ["MAX_IN_FLIGHT", "PrefetchRule"]

# Pipelined: never more requests in flight than this, whatever a latency spike makes the lead.
MAX_IN_FLIGHT = 4


class PrefetchRule:
    def __init__(self, settings: RunSettings, refills: Refills):
        self.s = settings
        self.r = refills
        # The action count before which a top-up cannot start a request: between installs the
        # buffer only shrinks by one row per action and the lead does not change, so the ticks
        # in between skip the arithmetic (0 after every install and arrival).
        self._from = 0

    def due(self, actions: int) -> bool:
        return actions >= self._from

    def installed(self) -> None:
        self._from = 0

    def top_up(self, loop: ControlLoop) -> None:
        """Start the requests that are due now (observe() is called for each, on this thread)."""
        s = self.s
        if not s.prefetch:
            return
        hz = loop.hz()
        lead = self.r.latency.lead_s(hz)
        if lead is None:
            return
        per_chunk = max(1, self.r.steps_per_chunk)
        buffer, in_flight = self.r.buffer, self.r.in_flight
        lead_rows = lead * hz
        while True:
            queued = len(buffer) + len(in_flight) * per_chunk
            if loop.actions + queued >= s.max_actions or (len(buffer) == 0 and not in_flight):
                return  # nothing more is needed / an empty buffer is a blocking fill's job
            if s.pipelined:
                if len(in_flight) >= MAX_IN_FLIGHT:
                    self._from = s.max_actions  # until an answer arrives
                    return
                if queued > lead_rows:
                    # the first tick at which queued <= lead_rows, one early to be safe
                    self._from = loop.actions + max(0, math.ceil(queued - lead_rows) - 1)
                    return
            else:
                single = s.lookahead == 1
                if len(buffer) / per_chunk + len(in_flight) >= s.lookahead:
                    if single:
                        # a request in flight: not until it lands; a whole chunk buffered: not
                        # until one row of it has played (one tick early, to be safe)
                        self._from = s.max_actions if in_flight else loop.actions + len(buffer) - per_chunk
                    return
                if single and len(buffer) > lead_rows:
                    self._from = loop.actions + max(0, math.floor(len(buffer) - lead_rows) - 1)
                    return
            in_flight.append(loop.submit())
