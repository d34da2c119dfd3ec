"""One run's requests: each observed on the driving thread and sent with the instruction in force,
announced to the run's observers, waited for and answered.

The loop decides when a request starts (its refill rule, `_refill_rule.py`) and what its answer
does (`ControlLoop.install`); this is the request itself: `observe()` timed, the instruction latch
consumed, the refill rule told when it went out, and a wait that interrupt and max_seconds end.
"""

from __future__ import annotations

import time
from typing import Optional

from .._act._chunk import Prediction
from ._instruction import InstructionLatch
from ._observers import Observers
from ._outcome import RunTally
from ._refill import InFlight, Refills
from ._refill_rule import RefillRule
from ._settings import RunSettings

__all__ = ["OutOfTime", "RunRequests"]


class OutOfTime(Exception):
    """max_seconds ran out (reason `timeout`)."""


class RunRequests:
    """The requests of the run `settings` describe, over the Policy's `refills`, counted in `tally`,
    announced to `watch`, timed by `rule`; max_seconds ends a wait at `deadline` (None: never)."""

    def __init__(self, refills: Refills, settings: RunSettings, *, latch: InstructionLatch, tally: RunTally,
                 watch: Observers, rule: RefillRule, deadline: Optional[float]):
        self.r = refills
        self.s = settings
        self._latch = latch
        self.tally = tally
        self.watch = watch
        self.rule = rule
        self.deadline = deadline

    def submit(self, actions: int, timeout_s: Optional[float] = None) -> InFlight:
        """Observe and send one request, `actions` played so far, carrying the instruction in force."""
        started = time.monotonic()
        observation = self.s.observe()
        self.tally.observe_s += time.monotonic() - started
        instruction, swap_since = self._latch.consume()
        if swap_since is not None:
            self.tally.swaps += 1
        flight = self.r.submit(observation, instruction=instruction, timeout_s=timeout_s,
                               episode_id=self.s.episode_id, options=self.s.options, actions_done=actions,
                               swap_since=swap_since)
        flight.held_s = self.tally.underrun_s
        self.rule.started(flight.fetch.started_at)
        self.tally.instruction = flight.instruction
        self.watch.sent(flight)
        return flight

    def result_of(self, flight: InFlight) -> Prediction:
        """The answer of a finished `flight`; a failed one is announced before it is raised."""
        try:
            return flight.fetch.result()
        except Exception as exc:
            self.watch.failed(flight, exc)
            raise

    def wait_for(self, flight: InFlight) -> float:
        """Block until `flight` is answered (the seconds waited); interrupt (Interrupted) and
        max_seconds (OutOfTime) end the wait at once."""
        started = time.monotonic()
        if not self.r.wait(flight, self.deadline):
            raise OutOfTime()
        return time.monotonic() - started
