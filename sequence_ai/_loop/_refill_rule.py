"""The refill rule of one run: when its requests start, how an arriving chunk meets the motion in
progress, and how long the first action waits. Chosen once, when the run starts (`refill_rule`):

* `TakingOver` (the default wherever run() is pipelined with stitch="continue"): a request starts on
  the request budget's cadence (`_budget.RequestCadence`), looked at every tick. An arriving chunk
  replaces every row not yet played of the older chunks, from its row for the moment being played,
  as far as it reaches — but never fewer rows than must be there until the next chunk can be
  counted on (the next request's start plus `RefillLatency.latest_s()`), so the arm never runs dry
  waiting for it (`_takeover.take_over`). The first action waits by `RefillLatency.start_lead_s`.
* `Appending` (`take_over=False`, an int lookahead, prefetch=False, stitch "align"/"none"): a request
  starts when the motion queued falls to the lead (`_prefetch.PrefetchRule`). An arriving chunk
  plays after the rows still buffered, stitched by `_stitch.Stitcher`. The first action waits by
  `RefillLatency.lead_s` (pipelined only).

The loop hands a rule values and never asks which rule it is:

    to_start(actions, hz) -> int        every tick: how many requests to start now (one call)
    started(at)                         a request went out at `at`
    first_action_at(started_at, buffered, hz)   before the first action: when it may go (None: now)
    rows_for(chunk, flight, ...) -> Joined      the rows an arriving chunk puts in the buffer
    installed()                         those rows are in the buffer

Either way every row is labelled with where it came from (request, chunk, observation,
instruction) and the moment it was computed for (`due_at`), so each Action can say how old and how
late it is when it plays. Time the arm spent holding for a late chunk since a chunk's observation
does not count toward its row for "now": the arm did not move then, so the chunk's plan for that
time is still ahead of it.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from .._act._chunk import ActionChunk
from ._budget import RequestCadence
from ._prefetch import PrefetchRule
from ._refill import InFlight, Refills
from ._settings import RunSettings
from ._stitch import Action, RowKind, Stitcher, seam_jump
from ._takeover import Arrival, rows_to_keep, take_over

__all__ = ["Appending", "Joined", "RefillRule", "TakingOver", "refill_rule", "window_of"]


@dataclass
class Joined:
    """The rows to buffer, whether they go after the rows buffered (`append`) or replace them, and
    the jump across the seam before any stitching (max_seam_jump; None: nothing to compare)."""

    rows: List[Action]
    append: bool
    seam: Optional[float]


def window_of(rows: int, claim: Optional[int], run_horizon: Optional[int]) -> int:
    """The open-loop window the default budget is one request per, for chunks of `rows` rows:
    run()'s open_loop_horizon, else the claim (the chunk's or the catalogue's) — never trusted below
    half the rows (a claim of 1 would spend 15 requests a second of the user's credit) nor above."""
    claim = run_horizon or claim or rows
    return max(1, min(rows, max(claim, math.ceil(rows / 2))))


def refill_rule(settings: RunSettings, refills: Refills, layout: Callable[[], Optional[dict]],
                deadline: Optional[float]) -> RefillRule:
    """The rule of the run `settings` describe, ending at max_seconds' `deadline` (None: none)."""
    refills.learn_rate()  # the model's rate before the first chunk, where it is known: pacing and cadence
    rule = TakingOver if settings.take_over else Appending
    return rule(settings, refills, layout, deadline)


class RefillRule:
    """What the two rules share: the run's settings and refills, and the labelling of the rows."""

    def __init__(self, settings: RunSettings, refills: Refills, layout: Callable[[], Optional[dict]],
                 deadline: Optional[float]):
        self.s = settings
        self.r = refills
        self._layout = layout
        self._deadline = deadline

    def to_start(self, actions: int, hz: float) -> int:
        """How many requests to start now, with `actions` played (once per tick: keep it cheap)."""
        raise NotImplementedError

    def started(self, at: float) -> None:
        """A request went out at `at`."""

    def installed(self) -> None:
        """An arriving chunk's rows went into the buffer."""

    def first_action_lead(self, hz: float) -> Optional[float]:
        """The motion (s) the next chunk must find still queued for the first action to go."""
        raise NotImplementedError

    def first_action_at(self, started_at: float, buffered: int, hz: float) -> Optional[float]:
        """Before the first action: when the next chunk can be counted on (its request's start,
        `started_at`, plus the first action's lead) only after the `buffered` rows would have
        played, the first action waits — at most until this time, the chunk's arrival ending the
        wait — so the arm starts a moment later instead of stopping after its first chunk (above
        the window, where this happens). None: no wait."""
        lead = self.first_action_lead(hz)
        return None if lead is None else started_at + lead - buffered / hz

    def rows_for(self, chunk: ActionChunk, flight: InFlight, *, actions: int, last: Any, held_s: float,
                 hz: float, now: float, chunks: int) -> Joined:
        """The rows `chunk` (the answer to `flight`) puts in the buffer, with `actions` played so far,
        `last` the last of them, `held_s` the run's time held for late chunks so far, playing from `now`."""
        kind = RowKind.of(chunk.action_space, self._layout(), chunk.action_dim)
        joined = self.join(chunk, kind, flight, actions=actions, last=last, held_s=held_s, hz=hz, now=now,
                           chunks=chunks)
        rid, observed_at, instruction = flight.trace.rid, flight.observed_at, flight.instruction
        for action in joined.rows:
            action.rid, action.chunk, action.observed_at = rid, chunks, observed_at
            action.instruction = instruction
            action.due_at = observed_at + action.row / hz
        if joined.rows:
            joined.rows[0].swap_since = flight.swap_since
        return joined

    def join(self, chunk: ActionChunk, kind: RowKind, flight: InFlight, *, actions: int, last: Any,
             held_s: float, hz: float, now: float, chunks: int) -> Joined:
        """The rule's own join of `chunk` to the motion (the rows unlabelled)."""
        raise NotImplementedError


class TakingOver(RefillRule):
    """The newest chunk takes over on arrival; requests start on the budget's cadence."""

    def __init__(self, settings: RunSettings, refills: Refills, layout: Callable[[], Optional[dict]],
                 deadline: Optional[float]):
        super().__init__(settings, refills, layout, deadline)
        self.cadence = RequestCadence(settings.request_budget, refills.max_in_flight)
        # Before the first chunk (a run after predict(), or on a known model): the catalogue's
        # rate and window set the cadence, so the second request does not wait for the first answer.
        hz, (window, rows) = refills.hz, refills.catalogue_window()
        if hz and rows:
            self.cadence.learn(hz, window_of(rows, window, settings.open_loop_horizon), provisional=True)

    def to_start(self, actions: int, hz: float) -> int:
        r = self.r
        lead, estimate = r.latency.lead_and_estimate(hz)  # the estimate and the lead in one look
        return 1 if self.cadence.due(time.monotonic(), actions_left=self.s.max_actions - actions,
                                     deadline=self._deadline, in_flight=len(r.queued), buffered=len(r.buffer),
                                     hz=hz, lead_s=lead, latency_s=estimate) else 0

    def started(self, at: float) -> None:
        self.cadence.started(at)

    def first_action_lead(self, hz: float) -> Optional[float]:
        return self.r.latency.start_lead_s(hz)

    def join(self, chunk: ActionChunk, kind: RowKind, flight: InFlight, *, actions: int, last: Any,
             held_s: float, hz: float, now: float, chunks: int) -> Joined:
        window = window_of(len(chunk.steps), chunk.open_loop_horizon, self.s.open_loop_horizon)
        self.cadence.learn(hz, window)
        # Before the first action the arm is where it was observed: the chunk plays from its row 0.
        moment = flight.observed_at if actions == 0 else now - max(0.0, held_s - flight.held_s)
        keep = rows_to_keep(now, self._next_chunk_due(now, hz), hz, window)
        taken = take_over(self.r.buffer.rows(), Arrival(chunk.steps, kind, flight.observed_at, flight.joints),
                          last=last, now=moment, hz=hz, keep=keep)
        if taken is None:  # a buffered row is newer (answers are installed in the order asked): keep them
            return Joined([], True, None)  # appending nothing
        return Joined(taken.rows, False, seam_jump(last, taken.raw_first) if actions else None)

    def _next_chunk_due(self, now: float, hz: float) -> Optional[float]:
        """When the chunk after the one arriving can be counted on: the next request in flight's
        start, else the next the budget will start, plus how late a refill may still come."""
        latest = self.r.latency.latest_s()
        if latest is None:
            return None
        head = self.r.head()
        if head is not None:
            return head.fetch.started_at + latest
        start = self.cadence.next_start(now)  # it starts on a tick: up to a period after it is due
        return None if start is None else start + latest + 1.0 / hz


class Appending(RefillRule):
    """Each chunk plays after the rows buffered; requests start by the lead (`PrefetchRule`)."""

    def __init__(self, settings: RunSettings, refills: Refills, layout: Callable[[], Optional[dict]],
                 deadline: Optional[float]):
        super().__init__(settings, refills, layout, deadline)
        self.prefetch = PrefetchRule(settings)
        self.stitcher = Stitcher(settings.stitch, settings.open_loop_horizon, settings.smooth_seam)

    def to_start(self, actions: int, hz: float) -> int:
        prefetch, r = self.prefetch, self.r
        if not prefetch.due(actions):  # most ticks: no request can be due before a known action count
            return 0
        lead = r.latency.lead_s(hz)
        return prefetch.start_now(actions=actions, buffered=len(r.buffer), in_flight=len(r.queued),
                                  per_chunk=r.steps_per_chunk, lead_rows=None if lead is None else lead * hz)

    def installed(self) -> None:
        self.prefetch.installed()

    def first_action_lead(self, hz: float) -> Optional[float]:
        return self.r.latency.lead_s(hz) if self.s.pipelined else None

    def join(self, chunk: ActionChunk, kind: RowKind, flight: InFlight, *, actions: int, last: Any,
             held_s: float, hz: float, now: float, chunks: int) -> Joined:
        append = self.s.lookahead != 1
        ahead = len(self.r.buffer) if append else 0
        last = (self.r.buffer.last() if ahead else None) or last
        join = self.stitcher.join(chunk.steps, kind, late=actions + ahead - flight.actions_at_submit, last=last,
                                  q_obs=flight.joints, first_of_run=chunks == 0, window=chunk.open_loop_horizon)
        return Joined(join.rows, append, seam_jump(last, join.raw_first) if actions else None)
