"""The request budget: how many requests per second a run may spend to play fresher rows.

Every request costs the user credit. The appending rule (`_prefetch.py`) starts a request when the
motion queued — the rows buffered plus a window for each request in flight — falls to the lead
(the latency estimate and its margins): one request per window played, the fewest a chunk's length
allows. With the newest chunk taking over on arrival (`_refill_rule.TakingOver`), the rows buffered
are cut at every arrival, so that count does not say when the next chunk is needed; the time does:
a request starts once 1/B has passed since the last one started, B the budget in requests per
second, by default one window's worth of motion per request (the appending rule's rate). The lead
still starts one when none is on its way and the rows buffered run low (after a stall, below the
window): the arm never waits on the budget for a request it needs to keep moving.

The physics, with the newest chunk taking over on arrival (`_takeover.py`), H rows per chunk, W the
window, L the latency and I = 1/B the time between requests: the age of what plays runs from L to
L + I (p50 ≈ L + I/2); a row can play at its moment only while the chunk still holds a row for now,
so the least lateness is max(0, L − (H/hz − I)), 0 once I ≤ H/hz − L. About L·B requests are in
flight at once.
"""

from __future__ import annotations

import math
from typing import Any, Optional

from .._errors import InvalidArgument

__all__ = ["MAX_IN_FLIGHT_BUDGET", "RequestCadence", "budget_for_lateness", "check_budget", "default_budget",
           "expected_age_s", "expected_lateness_s", "in_flight_for"]


def check_budget(value: Any) -> Optional[float]:
    """run()'s `request_budget` (requests per second of motion; None: the default), or one error
    naming what was wrong."""
    if value is None:
        return None
    if not isinstance(value, (int, float)) or isinstance(value, bool) or not math.isfinite(value) or value <= 0:
        raise InvalidArgument(f"request_budget must be a finite number of requests per second > 0 (got {value!r})")
    return float(value)


def default_budget(hz: float, window: int) -> float:
    """The appending rule's rate: one request per window played (1.875/s for pi05-droid's 8 rows at 15 Hz)."""
    return hz / max(1, window)


def expected_age_s(latency_s: float, interval_s: float) -> float:
    """p50 age of the observation behind what plays: ages run from L to L + I."""
    return latency_s + interval_s / 2.0


def expected_lateness_s(latency_s: float, interval_s: float, chunk_s: float) -> float:
    """The least lateness a chunk of `chunk_s` seconds allows when the next one lands I later."""
    return max(0.0, latency_s - (chunk_s - interval_s))


def budget_for_lateness(latency_s: float, chunk_s: float, margin: float = 1.2) -> Optional[float]:
    """The budget that lets rows play at their moment with the latency `margin` times over
    (the issue's goal point, 1/(H/hz − 1.2·L)); None when no rate can (L·margin ≥ the chunk)."""
    interval = chunk_s - margin * latency_s
    return 1.0 / interval if interval > 0 else None


def in_flight_for(latency_s: float, budget: float) -> int:
    """How many requests are in flight at once at that budget (the prefetch's cap must allow it)."""
    return max(1, math.ceil(latency_s * budget))


# Never more requests in flight than this with a budget, whatever it and the latency ask.
MAX_IN_FLIGHT_BUDGET = 8


class RequestCadence:
    """When a run taking over on arrival starts its requests: every 1/budget seconds, the budget
    set by run(request_budget=) or, by default, fixed from the first chunk's rate and window
    (`default_budget`). Before it is known only the first request and the lead's go out.

    Requests start on control ticks, so each starts up to a period after it was due; the next is
    due 1/budget after the one before was *due* (`last_started` is that slot), not after it started,
    so the rate is the budget, not hz/ceil(hz/budget) (4/s would be spent as 3.75/s at 15 Hz). A
    request more than an interval late (a stall, the in-flight cap) or early (the lead's) starts the
    schedule afresh from its start."""

    def __init__(self, budget: Optional[float], max_in_flight: Optional[int] = None):
        self.budget = budget
        self.max_in_flight = max_in_flight  # the server's limit (Refills.max_in_flight); None: none
        self.last_started: Optional[float] = None
        self._learned = budget is not None  # the user's, or the first chunk's: kept from then on

    def learn(self, hz: float, window: int, provisional: bool = False) -> None:
        """The default budget from the model's rate and window: `provisional` (the catalogue's,
        before any chunk) until the first chunk's sets it for the run."""
        if not self._learned:
            self.budget = default_budget(hz, window)
            self._learned = not provisional

    def started(self, at: float) -> None:
        slot = self.last_started
        if slot is None or self.budget is None:
            self.last_started = at
            return
        due = slot + 1.0 / self.budget
        self.last_started = due if due <= at < due + 1.0 / self.budget else at

    def next_start(self, now: float) -> Optional[float]:
        """When the next request is due by the budget alone (None: not known yet)."""
        if self.last_started is None:
            return now
        if self.budget is None:
            return None
        return max(now, self.last_started + 1.0 / self.budget)

    def due(self, now: float, *, actions_left: int, deadline: Optional[float], in_flight: int, buffered: int,
            hz: float, lead_s: Optional[float], latency_s: Optional[float]) -> bool:
        """Whether a request starts now (called every tick), with `actions_left` to play before
        max_actions (and max_seconds' `deadline`), `buffered` rows. No request while the rows
        buffered end the run (as the appending rule: no more requests than it), none whose answer
        would land after the run has ended (`latency_s`: the estimate), none past the in-flight cap.
        Else the first request, or one once 1/budget has passed since the last started; or one
        when none is on its way and the rows buffered are down to the lead (`lead_s`; None: no
        estimate yet): the arm needs it sooner than the budget would spend it. A budget not known
        yet: only the lead's."""
        left_s = actions_left / hz if deadline is None else min(actions_left / hz, deadline - now)
        if buffered >= actions_left or (latency_s is not None and left_s <= latency_s):
            return False
        buffered_s = buffered / hz
        if in_flight and in_flight >= self.in_flight_cap(latency_s):  # the cap is never below 1
            return False
        last, budget = self.last_started, self.budget
        if last is None or (budget is not None and now - last >= 1.0 / (budget or 1.0) - 1e-9):
            return True
        return in_flight == 0 and lead_s is not None and buffered_s <= lead_s

    def in_flight_cap(self, latency_s: Optional[float]) -> int:
        """As many requests at once as the budget needs at this latency: one while a refill takes
        well under 1/budget (a request slow to come back — a reconnect — is not joined by more),
        else one more than L·budget, at most MAX_IN_FLIGHT_BUDGET — and never more than the server
        takes at once (a serial one: a second request would only queue there, its observation aging)."""
        if latency_s is None or self.budget is None:
            return 1
        need = latency_s * self.budget
        cap = 1 if need <= 0.75 else min(MAX_IN_FLIGHT_BUDGET, in_flight_for(latency_s, self.budget) + 1)
        return cap if self.max_in_flight is None else min(cap, self.max_in_flight)
