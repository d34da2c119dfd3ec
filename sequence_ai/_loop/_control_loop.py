"""One run of the control loop (WIRE.md §7.6–§7.13).

    while actions < max_actions:
        refill if the buffer is empty      (blocking; warm-wait before the first action; underruns)
        take in the chunks that arrived    (stitched onto the motion in progress: _stitch.py)
        stop on interrupt / max_seconds / until()
        pop → validate → act → top up (start the next requests: _prefetch.py) → pace

observe, validate and act run on the calling thread; only HTTP runs on background threads.
Every early ending holds exactly once (never on completion); an exception is re-raised after
the hold; the worker is told the episode ended in every case.
"""

from __future__ import annotations

import dataclasses
import time
from typing import Any, Callable, Optional, Tuple

from .._act._chunk import Prediction
from .._act._request import with_instruction
from .._errors import Unavailable
from .._waiting import Interrupted
from ._instruction import InstructionLatch
from ._outcome import RunOutcome, RunProgress
from ._prefetch import PrefetchRule
from ._refill import InFlight, Refills, joints_of
from ._settings import RunSettings
from ._stitch import Action, RowKind, Stitcher, seam_jump
from ._warming import WarmWait

__all__ = ["ControlLoop"]

DEFAULT_HZ = 10.0


class _Timeout(Exception):
    """max_seconds ran out (reason `timeout`)."""


class ControlLoop:
    """One run: `settings` (frozen) over the Policy's `refills`. `sleep` is the Policy's
    interruptible sleep; `layout()` the model's state_layout (None when unknown)."""

    def __init__(self, refills: Refills, settings: RunSettings, *, latch: InstructionLatch,
                 interrupted: Callable[[], bool], sleep: Callable[[float], None],
                 on_warming: Optional[Callable[[float, float], Any]], layout: Callable[[], Optional[dict]],
                 recording: Optional[Any] = None):
        self.r = refills
        self.recording = recording  # run(record=...): a recording.run.RunRecording, else None
        self.s = settings
        self._latch = latch
        self.interrupted = interrupted
        self._sleep = sleep
        self._on_warming = on_warming
        self._layout = layout
        self.started = time.monotonic()
        self.deadline = None if settings.max_seconds is None else self.started + settings.max_seconds
        self.actions = self.chunks = self.underruns = self.swaps = 0
        self.underrun_s = self.observe_s = 0.0
        self.max_lag: Optional[float] = None
        self.max_jump: Optional[float] = None
        self.action_space: Optional[str] = None
        self.last_action: Optional[list] = None
        self.warm: Optional[WarmWait] = None
        self.running = False
        self.ended: Optional[float] = None
        self.final: Optional[RunOutcome] = None
        self._resets_at_start = refills.worker.episode_resets
        self.stitcher = Stitcher(settings.stitch, settings.open_loop_horizon, settings.smooth_seam)
        self.prefetch = PrefetchRule(settings, refills)

    # -- small helpers ---------------------------------------------------------------------

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def hz(self) -> float:
        return self.s.control_hz or self.r.hz or DEFAULT_HZ

    def status(self, text: str) -> None:
        if self.s.on_status is not None:
            self.s.on_status(text)

    def check_stop(self) -> None:
        if self.interrupted():
            raise Interrupted()
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise _Timeout()

    def progress(self) -> RunProgress:
        warm = self.warm
        active = bool(warm and warm.active)
        return RunProgress(
            running=self.running, actions=self.actions, chunks=self.chunks, buffered=len(self.r.buffer),
            elapsed_s=self.elapsed(), underruns=self.underruns, underrun_s=self.underrun_s,
            instruction=self.r.instruction_in_force, warming=active,
            warming_waited_s=warm.waited_s if warm and active else 0.0,
            warming_eta_s=warm.eta_s if warm and active else None,
            refill_latency_s=self.r.latency.estimate_s,
        )

    def submit(self, timeout_s: Optional[float] = None) -> InFlight:
        started = time.monotonic()
        observation = self.s.observe()
        self.observe_s += time.monotonic() - started
        instruction, swap_since = self._latch.consume()
        if instruction is not None:
            observation = with_instruction(observation, instruction)
        if swap_since is not None:
            self.swaps += 1
        flight = self.r.submit(observation, timeout_s=timeout_s, episode_id=self.s.episode_id,
                               options=self.s.options, actions_done=self.actions, swap_since=swap_since)
        if self.recording is not None:
            self.recording.sent(flight, self.r.instruction_in_force)
        return flight

    def result_of(self, flight: InFlight) -> Prediction:
        """The answer of a finished `flight`; a failed one is recorded before it is raised."""
        try:
            return flight.fetch.result()
        except Exception as exc:
            if self.recording is not None:
                self.recording.failed(flight, exc)
            raise

    def wait_for(self, flight: InFlight) -> float:
        """Block until `flight` is answered; interrupt and max_seconds end the wait at once."""
        started = time.monotonic()
        if not self.r.wait(flight, self.deadline):
            raise _Timeout()
        return time.monotonic() - started

    # -- refills ---------------------------------------------------------------------------

    def take_delivery(self) -> None:
        """The buffer is dry: install the oldest request in flight (waiting for it: a stall), or
        fill it with a blocking request."""
        in_flight = self.r.in_flight
        if not in_flight:
            return self.blocking_fill()
        flight = in_flight[0]
        waited = 0.0
        if not flight.fetch.done():
            self.stall_begins()
            waited = self.wait_for(flight)
        in_flight.popleft()
        try:
            prediction = self.result_of(flight)
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
                raise _Timeout()
            cut_by_max_seconds = left < budget
            budget = min(budget, left)
        if self.actions == 0 and budget > 0:
            self.warm = WarmWait(budget, self.s.on_warming or self._on_warming, self._sleep)
            try:
                (prediction, flight), waited = self.warm.run(self.attempt)
            except Unavailable as exc:
                if exc.warming and cut_by_max_seconds:
                    raise _Timeout() from None
                raise
            self.install(prediction, flight, warmup_s=waited if waited >= 0.25 else None)
            return
        prediction, flight = self.attempt(None)
        self.install(prediction, flight)
        if self.actions > 0:
            self.count_underrun(time.monotonic() - started)

    def attempt(self, timeout_s: Optional[float]) -> Tuple[Prediction, InFlight]:
        self.check_stop()
        flight = self.submit(timeout_s)
        self.r.blocking = flight
        try:
            self.wait_for(flight)
        finally:
            self.r.blocking = None
        return self.result_of(flight), flight

    def restart_schedule(self) -> None:
        """The next action comes one full period after the one about to play: at the start of a
        run, and after a stall, so the rows after a late chunk are never played faster to catch
        up (which would also shorten the window the next refill has)."""
        reset = getattr(self.s.pacer, "reset", None)
        if callable(reset):
            reset()

    def stall_begins(self) -> None:
        """The buffer is dry at a tick and the next chunk is not here: hold, never coast."""
        self.status("waiting")
        if self.actions > 0 and self.s.hold_on_underrun:
            self.s.on_underrun()  # type: ignore[misc]
        if self.actions > 0 and self.recording is not None:
            self.recording.held("underrun")  # no command goes out until the chunk arrives

    def count_underrun(self, wait_s: float) -> None:
        self.restart_schedule()
        self.underruns += 1
        self.underrun_s += wait_s
        if self.s.on_underrun is not None and not self.s.hold_on_underrun:
            self.s.on_underrun(wait_s)
        self.status("running")

    def collect_arrived(self) -> None:
        """Pipelined or lookahead > 1: append every chunk that has already arrived, in order. A
        request that failed stays at the head: its error is raised when its rows are due (the
        rows buffered ahead of it were computed from good answers and still play)."""
        in_flight = self.r.in_flight
        while in_flight and in_flight[0].fetch.succeeded():
            flight = in_flight.popleft()
            self.install(self.result_of(flight), flight)

    def install(self, prediction: Prediction, flight: InFlight, warmup_s: Optional[float] = None) -> None:
        chunk = prediction.action_chunk
        buffer = self.r.buffer
        append = self.s.lookahead != 1
        ahead = len(buffer) if append else 0
        last = (buffer.last() if ahead else None) or self.last_action
        kind = RowKind.of(chunk.action_space, self._layout(), chunk.action_dim)
        join = self.stitcher.join(chunk.steps, kind, late=self.actions + ahead - flight.actions_at_submit, last=last,
                                  q_obs=joints_of(flight.observation), first_of_run=self.chunks == 0,
                                  window=chunk.open_loop_horizon)
        if self.actions > 0:
            jump = seam_jump(last, join.raw_first)
            if jump is not None:
                self.max_jump = jump if self.max_jump is None else max(self.max_jump, jump)
        for action in join.rows:
            action.rid, action.chunk, action.observed_at = flight.trace.rid, self.chunks, flight.observed_at
        join.rows[0].swap_since = flight.swap_since
        self.r.install(join.rows, chunk=chunk, append=append)
        if self.recording is not None:
            self.recording.answered(flight, prediction, join.rows)
        self.prefetch.installed()
        self.r.record(flight, prediction, warmup_s=warmup_s)
        self.chunks += 1
        self.action_space = chunk.action_space
        if self.s.on_chunk is not None:
            self.s.on_chunk(dataclasses.replace(chunk, observation=flight.observation))

    def start_when_carried(self) -> None:
        """Pipelined, before the first action: when the next chunk can be counted on (its request's
        start plus the lead, the margin every request is timed with) only after the rows buffered
        would have played, wait for it — at most that long — so the arm starts a moment later
        instead of stopping after its first chunk (above the window, where this happens)."""
        in_flight = self.r.in_flight
        lead = self.r.latency.lead_s(self.hz())
        if not (self.s.pipelined and in_flight and lead is not None) or in_flight[0].fetch.done():
            return
        start = in_flight[0].fetch.started_at + lead - len(self.r.buffer) / self.hz()
        if start > time.monotonic():
            deadline = start if self.deadline is None else min(start, self.deadline)
            self.r.wait(in_flight[0], deadline)
            self.restart_schedule()

    def played(self, action: Any) -> None:
        self.last_action = action
        self.actions += 1
        if self.recording is not None:
            self.recording.played(action)
        since = action.swap_since if isinstance(action, Action) else None
        if since is not None:  # the first action computed with a new instruction (guide: its lag)
            lag = time.monotonic() - since
            self.max_lag = lag if self.max_lag is None else max(self.max_lag, lag)

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> RunOutcome:
        s = self.s
        reason: Optional[str] = None
        error: Optional[BaseException] = None
        self.restart_schedule()
        self.running = True
        held = False
        if self.recording is not None:
            self.recording.started(model=self.r.model, episode_id=s.episode_id, control_hz=s.control_hz or self.r.hz,
                                   instruction=self._latch.value)
        interrupted, buffer, collect = self.interrupted, self.r.buffer, s.lookahead != 1
        prefetch = self.prefetch
        try:
            self.status("starting")
            while self.actions < s.max_actions:
                if interrupted():
                    raise Interrupted()
                if len(buffer) == 0:
                    self.take_delivery()
                if collect:
                    self.collect_arrived()
                if self.actions == 0:
                    prefetch.top_up(self)
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
                s.act(action)
                self.played(action)
                if self.actions == 1:
                    self.status("running")
                if self.actions < s.max_actions:
                    # Prefetch right after an action, in the slack of the period, so observe()
                    # and encoding never delay the next action past its tick.
                    if prefetch.due(self.actions):
                        prefetch.top_up(self)
                    s.pacer.wait(1.0 / self.hz(), interrupted)
            else:
                reason = "completed"
        except Interrupted:
            reason = "interrupted"
        except _Timeout:
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
                    if self.recording is not None:
                        self.recording.held(reason or "")
            finally:
                self.r.end_episode(s.episode_id)
                try:
                    self.status("done")
                except Exception:
                    pass
        outcome = self.final = self.outcome(reason or "completed")
        if self.recording is not None:  # the outcome gains what finishing the file found
            outcome = self.final = self.recording.ended(outcome, held=held)
        if error is not None:
            raise error
        return outcome

    def outcome(self, reason: str) -> RunOutcome:
        return RunOutcome(
            actions=self.actions, chunks=self.chunks, elapsed_s=self.elapsed(), reason=reason,
            underruns=self.underruns, underrun_s=self.underrun_s,
            episode_resets=self.r.worker.episode_resets - self._resets_at_start,
            max_seam_jump=self.max_jump, action_space=self.action_space, instruction_swaps=self.swaps,
            max_instruction_lag_s=self.max_lag, observe_s=self.observe_s,
            recording_frames_dropped=self.recording.frames_dropped if self.recording is not None else 0,
        )
