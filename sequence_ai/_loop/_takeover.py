"""The newest chunk takes over on arrival: which rows play from now on.

Row i of a chunk observed at t is for the moment t + i/hz: its *moment*. Played at T, it is
T − moment *late*; the observation behind it is T − t *old*. Appended behind the rows still
buffered (`_refill_rule.Appending`), an arriving chunk starts to play only after them, 14 periods
or more after its observation at 0.7 s, and rows 7–14 of its 15 play 0.47 s late or more (p50
0.67 s in make bench). Taking over instead:

* the arriving chunk replaces every buffered row of an older chunk (rows left by predict(), which
  say nothing of where they came from, count as older); a chunk older than a buffered row's
  replaces nothing (answers are taken in the order they were asked, so that is a caller's bug);
* its rows are taken from the one for the moment being played (`now`, the tick the first of them
  plays at), as far as the chunk reaches — but never fewer than `keep`, the rows that must be there
  until the next chunk can be counted on: the later rows of a chunk are its plan for later, so the
  rows taken then start that much earlier (late), instead of running dry (a hold) before the next;
* they are joined to the last played target by the stitcher's `continue` join, anchored at the
  chunk's own position for the moment each row plays, so the arm never jumps or steps back.

What that costs and buys, by the issue's physics (H rows, W the window, L the latency, I the time
between requests): the age of what plays runs from L to L + I; the least lateness is
max(0, L − (H/hz − I)), 0 once I ≤ H/hz − L (`_budget.py` sets I).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import List, Optional, Sequence

from ._stitch import Action, RowKind, Stitcher

__all__ = ["Arrival", "TakeOver", "lateness_s", "moment_of", "rows_to_keep", "take_over"]

Row = List[float]


def moment_of(action: object, hz: float) -> Optional[float]:
    """The moment (monotonic seconds) a played row was computed for: its observation's time plus
    its row's place in the chunk; None for a row that does not say (predict()'s plain rows)."""
    observed_at = getattr(action, "observed_at", None)
    row = getattr(action, "row", None)
    if observed_at is None or row is None:
        return None
    return observed_at + row / hz


def lateness_s(action: object, played_at: float, hz: float) -> Optional[float]:
    """How late `action` plays at `played_at`: 0 when it plays at the moment it was computed for."""
    moment = moment_of(action, hz)
    return None if moment is None else played_at - moment


def rows_to_keep(now: float, next_due: Optional[float], hz: float, window: int) -> int:
    """The fewest rows a chunk arriving `now` must supply: until `next_due`, when the next chunk can
    be counted on (its request's start plus the latency and a margin); a window when no request is
    in flight (nothing is known to follow)."""
    if next_due is None:
        return max(1, window)
    return max(1, math.ceil((next_due - now) * hz - 1e-9))


@dataclass(frozen=True)
class Arrival:
    """An arriving chunk: all its rows, what they mean, and the observation they came from."""

    steps: Sequence[Sequence[float]]
    kind: RowKind
    observed_at: float  # monotonic time of the observation
    q_obs: Optional[Sequence[float]] = None  # its joints (displacement rows are relative to them)


@dataclass
class TakeOver:
    """The rows to play from now on, the raw row they start from (max_seam_jump), the chunk's
    row for the moment being played (`row_now`, may lie past its end) and how many buffered rows
    of older chunks it replaced."""

    rows: List[Action]
    raw_first: Row
    row_now: int
    replaced: int

    @property
    def start(self) -> int:
        return self.rows[0].row


def take_over(buffered: Sequence[Sequence[float]], arrival: Arrival, *, last: Optional[Sequence[float]],
              now: float, hz: float, keep: int) -> Optional[TakeOver]:
    """The rows that replace `buffered` when `arrival` lands, the first of them playing at `now`
    after `last` (the last row played; None at a run's start). None: a buffered row comes from a
    newer observation than the arrival, which then replaces nothing."""
    observed = (getattr(row, "observed_at", None) for row in buffered)
    if any(t is not None and t > arrival.observed_at for t in observed):
        return None
    total = len(arrival.steps)
    row_now = max(0, math.floor((now - arrival.observed_at) * hz + 0.5))  # the row for this moment
    start = max(0, min(row_now, total - max(1, keep)))
    # continue's join from row `start` to the chunk's end, each row anchored at the chunk's own
    # position for the moment it plays (row_now + k): no horizon, the take-over sets the rows
    join = Stitcher("continue", None, 0).join(arrival.steps, arrival.kind, late=row_now, last=last,
                                              q_obs=arrival.q_obs, first_of_run=False, window=total - start)
    for action in join.rows:
        action.observed_at = arrival.observed_at
    return TakeOver(join.rows, join.raw_first, row_now, len(buffered))
