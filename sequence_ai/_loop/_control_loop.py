"""One run of the control loop (docs/PROTOCOL.md §7.6–§7.13).

    while actions < max_actions:
        refill if the buffer is empty      (blocking; warm-wait before the first action; underruns)
        take in the chunks that arrived    (joined to the motion by the run's refill rule)
        stop on interrupt / max_seconds / until()
        pop → validate → act → top up (start the requests the refill rule says are due) → pace

The refill rule (_refill_rule.py: taking over, or appending) is chosen once, when the run starts;
the loop hands it values and never asks which it is.

observe, validate and act run on the calling thread; only HTTP runs on background threads.
Every early ending holds exactly once (never on completion); an exception is re-raised after
the hold; the worker is told the episode ended in every case. What the run does is announced
to its observers (_observers.py): the caller's callbacks and the recording.
"""

from __future__ import annotations

import time
from typing import Any, Callable, Optional, Sequence, Tuple

from .._act._chunk import Prediction
from .._errors import Unavailable
from .._waiting import Interrupted
from .._warming import WarmWait
from ._instruction import InstructionLatch
from ._observers import Observers, RunObserver
from ._outcome import RunOutcome, RunProgress, RunTally
from ._refill import InFlight, Refills
from ._refill_rule import refill_rule
from ._requests import OutOfTime, RunRequests
from ._settings import RunSettings
from ._stitch import Action

__all__ = ["ControlLoop"]

DEFAULT_HZ = 10.0


class ControlLoop:
    """One run: `settings` (frozen) over the Policy's `refills`, announced to `observers`.
    `warm_wait(budget_s)` is the Policy's WarmWait for this run; `layout()` the model's
    state_layout (None when unknown)."""

    def __init__(self, refills: Refills, settings: RunSettings, *, latch: InstructionLatch,
                 interrupted: Callable[[], bool], warm_wait: Callable[[float], WarmWait],
                 layout: Callable[[], Optional[dict]], observers: Sequence[RunObserver] = ()):
        self.r = refills
        self.s = settings
        self.watch = Observers(observers)
        self._on_played = self.watch.played if self.watch.watching("played") else None  # per action: no empty call
        self._latch = latch
        self.interrupted = interrupted
        self._warm_wait = warm_wait
        self.started = time.monotonic()
        self.deadline = None if settings.max_seconds is None else self.started + settings.max_seconds
        self.actions = 0
        self.tally = RunTally()
        self.last_action: Optional[list] = None
        self.warm: Optional[WarmWait] = None
        self.running = False
        self.ended: Optional[float] = None
        self.final: Optional[RunOutcome] = None
        self._resets_at_start = refills.episode_resets
        self.rule = refill_rule(settings, refills, layout, self.deadline)
        self.requests = RunRequests(refills, settings, latch=latch, tally=self.tally, watch=self.watch, rule=self.rule,
                                    deadline=self.deadline)

    # -- small helpers ---------------------------------------------------------------------

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def hz(self) -> float:
        return self.s.control_hz or self.r.hz or DEFAULT_HZ

    def check_stop(self) -> None:
        if self.interrupted():
            raise Interrupted()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise OutOfTime()

    def progress(self) -> RunProgress:
        return self.tally.progress(running=self.running, actions=self.actions, buffered=len(self.r.buffer),
                                   elapsed_s=self.elapsed(), warm=self.warm, refill_latency_s=self.r.latency.estimate_s)

    # -- refills ---------------------------------------------------------------------------

    def take_delivery(self) -> None:
        """The buffer is dry: install the oldest request in flight (waiting for it: a stall), or
        fill it with a blocking request."""
        flight = self.r.head()
        if flight is None:
            return self.blocking_fill()
        waited = 0.0
        if not flight.fetch.done():
            self.stall_begins()
            waited = self.requests.wait_for(flight)
        self.r.take_head()
        try:
            prediction = self.requests.result_of(flight)
        except Unavailable as exc:
            if not (exc.warming and self.actions == 0):
                raise
            return self.blocking_fill()  # a leftover prefetch met a cold worker before any action
        self.install(prediction, flight)
        if waited > 0 and self.actions > 0:
            self.count_underrun(waited)

    def blocking_fill(self) -> None:
        started = time.monotonic()
        if self.actions > 0:
            self.stall_begins()
        budget = self.s.startup_timeout_s
        cut_by_max_seconds = False
        if self.deadline is not None:
            left = self.deadline - time.monotonic()
            if left <= 0:
                raise OutOfTime()
            cut_by_max_seconds = left < budget
            budget = min(budget, left)
        if self.actions == 0 and budget > 0:
            self.warm = self._warm_wait(budget)
            try:
                (prediction, flight), waited = self.warm.run(self.attempt)
            except Unavailable as exc:
                if exc.warming and cut_by_max_seconds:
                    raise OutOfTime() from None
                raise
            self.install(prediction, flight, warmup_s=waited if waited >= 0.25 else None)
            return
        prediction, flight = self.attempt(None)
        self.install(prediction, flight)
        if self.actions > 0:
            self.count_underrun(time.monotonic() - started)

    def attempt(self, timeout_s: Optional[float]) -> Tuple[Prediction, InFlight]:
        self.check_stop()
        with self.r.awaiting(self.requests.submit(self.actions, timeout_s)) as flight:
            self.requests.wait_for(flight)
        return self.requests.result_of(flight), flight

    def top_up(self) -> None:
        """Start the requests the refill rule says are due now (the run's ticks do this inline)."""
        for _ in range(self.rule.to_start(self.actions, self.hz())):
            self.r.queue(self.requests.submit(self.actions))

    def restart_schedule(self) -> None:
        """The next action comes one full period after the one about to play: at the start of a
        run, and after a stall, so the rows after a late chunk are never played faster to catch
        up (which would also shorten the window the next refill has)."""
        reset = getattr(self.s.pacer, "reset", None)
        if callable(reset):
            reset()

    def stall_begins(self) -> None:
        """The buffer is dry at a tick and the next chunk is not here: hold, never coast."""
        self.watch.status("waiting")
        if self.actions > 0:
            self.tally.stall_began(time.monotonic())
            self.watch.stalled()

    def count_underrun(self, wait_s: float) -> None:
        self.restart_schedule()
        self.tally.underrun(wait_s)
        self.watch.resumed(wait_s)
        self.watch.status("running")

    def collect_arrived(self, flight: Optional[InFlight]) -> None:
        """Pipelined or lookahead > 1: install `flight`, which has arrived, and every chunk arrived after
        it, in order. A failed request stays at the head: its error is raised when its rows are due."""
        while flight is not None:
            self.install(self.requests.result_of(flight), flight)
            flight = self.r.take_arrived()

    # -- a chunk arrives -------------------------------------------------------------------

    def install(self, prediction: Prediction, flight: InFlight, warmup_s: Optional[float] = None) -> None:
        """What happens when a chunk arrives: joined to the motion (the refill rule), buffered, learned from."""
        chunk, now = prediction.action_chunk, time.monotonic()
        _ = self.r.hz or self.r.learn_rate()  # the rows' moments are at the model's rate from the first chunk
        joined = self.rule.rows_for(chunk, flight, actions=self.actions, last=self.last_action,
                                    held_s=self.tally.held_s(now), hz=self.hz(), now=now, chunks=self.tally.chunks)
        self.tally.seam(joined.seam)
        self.r.install(joined.rows, chunk=chunk, append=joined.append)
        self.rule.installed()
        self.r.record(flight, prediction, warmup_s=warmup_s)
        self.tally.chunks += 1
        self.tally.action_space = chunk.action_space
        self.watch.answered(flight, prediction, joined.rows)

    def start_when_carried(self) -> None:
        """Before the first action: wait until the refill rule says the first action can go (the
        next chunk can then be counted on before the rows buffered have played), or it arrives."""
        head, hz = self.r.head(), self.hz()
        if head is None or head.fetch.done():
            return
        start = self.rule.first_action_at(head.fetch.started_at, len(self.r.buffer), hz)
        if start is not None and start > time.monotonic():
            self.r.wait(head, start if self.deadline is None else min(start, self.deadline))
            self.restart_schedule()

    def played(self, action: Any) -> None:
        self.last_action = action
        self.actions += 1
        self.tally.played(action)
        if self._on_played is not None:
            self._on_played(action)
        since = action.swap_since if isinstance(action, Action) else None
        if since is not None:  # the first action computed with a new instruction (guide: its lag)
            self.tally.lag(action.played_at - since)

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> RunOutcome:
        s = self.s
        reason: Optional[str] = None
        error: Optional[BaseException] = None
        self.restart_schedule()
        self.running = True
        held = False
        self.watch.started(model=self.r.model, episode_id=s.episode_id, control_hz=s.control_hz or self.r.hz,
                           instruction=self._latch.value)
        interrupted, buffer, collect = self.interrupted, self.r.buffer, s.lookahead != 1
        to_start, submit, queue = self.rule.to_start, self.requests.submit, self.r.queue
        arrived, queued = self.r.take_arrived, self.r.queued
        try:
            self.watch.status("starting")
            while self.actions < s.max_actions:
                if interrupted():
                    raise Interrupted()
                if len(buffer) == 0:
                    self.take_delivery()
                if collect and queued and (flight := arrived()) is not None:  # one look per tick
                    self.collect_arrived(flight)
                if self.actions == 0:
                    self.top_up()
                    self.start_when_carried()
                if interrupted():
                    raise Interrupted()
                if self.deadline is not None and time.monotonic() >= self.deadline:
                    reason = "timeout"
                    break
                if s.until is not None and s.until():
                    reason = "until"
                    break
                action = buffer.pop()
                if s.validate is not None and not s.validate(action):
                    reason = "validate"
                    break
                if isinstance(action, Action):
                    action.played_at = time.monotonic()
                s.act(action)
                self.played(action)
                if self.actions == 1:
                    self.watch.status("running")
                if self.actions < s.max_actions:  # prefetch now, in the slack of the period, so
                    hz = self.hz()  # observe() and encoding never delay the next action past its tick
                    if due := to_start(self.actions, hz):  # the rule's one call per tick
                        for _ in range(due):
                            queue(submit(self.actions))
                    s.pacer.wait(1.0 / hz, interrupted)
            else:
                reason = "completed"
        except Interrupted:
            reason = "interrupted"
        except OutOfTime:
            reason = "timeout"
        except BaseException as exc:
            reason = f"raised:{type(exc).__name__}"
            error = exc
        finally:
            self.ended = time.monotonic()
            self.running = False
            if reason in ("interrupted", "validate") or (reason or "").startswith("raised:"):
                # Never resume a chunk that produced a refused action or whose run failed.
                self.r.drop()
            elif reason == "timeout" and self.actions == 0:
                buffer.clear()
            try:
                if reason != "completed" and s.hold is not None:
                    s.hold()
                    held = True
                    self.watch.held(reason or "")
            finally:
                self.r.end_episode(s.episode_id)
                try:
                    self.watch.status("done")
                except Exception:
                    pass
        outcome = self.final = self.tally.outcome(
            reason or "completed", actions=self.actions, elapsed_s=self.elapsed(),
            episode_resets=self.r.episode_resets - self._resets_at_start, frames_dropped=self.watch.frames_dropped)
        outcome = self.final = self.watch.ended(outcome, held=held)  # with what finishing the file found
        if error is not None:
            raise error
        return outcome
