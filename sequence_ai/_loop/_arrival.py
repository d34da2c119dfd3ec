"""An arriving chunk meets the motion in progress: which rows it puts in the buffer, and how.

Two rules (issue #23; docs/CLIENT-LOOP.md "Fresh rows"):

* taking over (the default wherever run() is pipelined with stitch="continue"): the chunk replaces
  every row not yet played of the older chunks, from its row for the moment being played, as far as
  it reaches — but never fewer rows than must be there until the next chunk can be counted on
  (the next request's start plus `RefillLatency.latest_s()`), so the arm never runs dry waiting for
  it (`_takeover.take_over`);
* appending (`take_over=False`, an int lookahead, prefetch=False, stitch "align"/"none"): the chunk
  plays after the rows still buffered, stitched by `_stitch.Stitcher` as before.

Either way every row is labelled with where it came from (request, chunk, observation, instruction)
and the moment it was computed for (`due_at`), so each Action can say how old and how late it is
when it plays.

Time the arm spent holding for a late chunk since a chunk's observation does not count toward its
row for "now": the arm did not move then, so the chunk's plan for that time is still ahead of it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Callable, List, Optional

from .._act._chunk import ActionChunk
from ._budget import RequestCadence
from ._refill import InFlight, Refills
from ._settings import RunSettings
from ._stitch import Action, RowKind, Stitcher, seam_jump
from ._takeover import Arrival, rows_to_keep, take_over

__all__ = ["Arrivals", "Joined", "window_of"]


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


class Arrivals:
    """How one run's chunks join its motion. `cadence` is the run's request cadence (taking over),
    told the budget's default from the first chunk; `layout()` the model's state_layout."""

    def __init__(self, settings: RunSettings, refills: Refills, cadence: RequestCadence,
                 layout: Callable[[], Optional[dict]]):
        self.s = settings
        self.r = refills
        self.cadence = cadence
        self._layout = layout
        self.stitcher = Stitcher(settings.stitch, settings.open_loop_horizon, settings.smooth_seam)
        # Before the first chunk (a run after predict(), or on a known model): the catalogue's
        # rate and window set the cadence, so the second request does not wait for the first answer.
        hz, (window, rows) = refills.learn_rate(), refills.catalogue_window()
        if settings.take_over and hz and rows:
            cadence.learn(hz, window_of(rows, window, settings.open_loop_horizon), provisional=True)

    def rows_for(self, chunk: ActionChunk, flight: InFlight, *, actions: int, last: Any, held_s: float,
                 hz: float, now: float, chunks: int) -> Joined:
        """The rows `chunk` (the answer to `flight`) puts in the buffer, with `actions` played so far,
        `last` the last of them, `held_s` the run's time held for late chunks so far, playing from `now`."""
        kind = RowKind.of(chunk.action_space, self._layout(), chunk.action_dim)
        if self.s.take_over:
            joined = self._take_over(chunk, kind, flight, actions=actions, last=last, held_s=held_s, hz=hz, now=now)
        else:
            joined = self._append(chunk, kind, flight, actions=actions, last=last, chunks=chunks)
        rid, observed_at, instruction = flight.trace.rid, flight.observed_at, flight.instruction
        for action in joined.rows:
            action.rid, action.chunk, action.observed_at = rid, chunks, observed_at
            action.instruction = instruction
            action.due_at = observed_at + action.row / hz
        if joined.rows:
            joined.rows[0].swap_since = flight.swap_since
        return joined

    def _append(self, chunk: ActionChunk, kind: RowKind, flight: InFlight, *, actions: int, last: Any,
                chunks: int) -> Joined:
        append = self.s.lookahead != 1
        ahead = len(self.r.buffer) if append else 0
        last = (self.r.buffer.last() if ahead else None) or last
        join = self.stitcher.join(chunk.steps, kind, late=actions + ahead - flight.actions_at_submit, last=last,
                                  q_obs=flight.joints, first_of_run=chunks == 0, window=chunk.open_loop_horizon)
        return Joined(join.rows, append, seam_jump(last, join.raw_first) if actions else None)

    def _take_over(self, chunk: ActionChunk, kind: RowKind, flight: InFlight, *, actions: int, last: Any,
                   held_s: float, hz: float, now: float) -> Joined:
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
