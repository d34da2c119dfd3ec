"""One run of the control loop (WIRE.md §7.6–§7.13).

    while actions < max_actions:
        refill if the buffer is empty      (blocking; warm-wait before the first action; underruns)
        top up                             (prefetch the next chunk while this one plays)
        stop on interrupt / max_seconds / until()
        pop → validate → act → pace

observe, validate and act run on the calling thread; only HTTP runs on background threads.
Every early ending holds exactly once (never on completion); an exception is re-raised after
the hold; the worker is told the episode ended in every case.
"""

from __future__ import annotations

import dataclasses
import inspect
import math
import sys
import threading
import time
import uuid
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Optional, Tuple

from ._buffer import blend_seam, is_absolute_space, seam_jump
from ._chunk import ActionChunk, Prediction
from ._errors import Unavailable
from ._outcome import RunOutcome, RunProgress
from ._pacing import POLL_S, MonotonicPacer, Pacer
from ._request import with_instruction
from ._warming import Interrupted, WarmWait

if TYPE_CHECKING:
    from ._policy import InFlight, Policy

__all__ = ["ControlLoop", "RunSettings"]

DEFAULT_HZ = 10.0


class _Timeout(Exception):
    """max_seconds ran out (reason `timeout`)."""


class RunSettings:
    """The arguments of one run(), checked once."""

    def __init__(self, *, observe: Callable[[], Any], act: Callable[[List[float]], Any], max_actions: int,
                 validate: Optional[Callable[[List[float]], bool]], hold: Optional[Callable[[], Any]],
                 on_chunk: Optional[Callable[[ActionChunk], Any]], on_underrun: Optional[Callable[[float], Any]],
                 on_status: Optional[Callable[[str], Any]], on_warming: Optional[Callable[[float, float], Any]],
                 prefetch: bool, lookahead: int, open_loop_horizon: Optional[int], max_seconds: Optional[float],
                 until: Optional[Callable[[], bool]], startup_timeout_s: float, smooth_seam: int,
                 align_chunks: bool, pacer: Optional[Pacer], control_hz: Optional[float], episode_id: Optional[str],
                 options: Dict[str, Any]):
        if not isinstance(max_actions, int) or isinstance(max_actions, bool) or max_actions <= 0:
            raise ValueError("max_actions must be a positive int")
        if not isinstance(lookahead, int) or lookahead < 1:
            raise ValueError("lookahead must be an int >= 1")
        if smooth_seam < 0:
            raise ValueError("smooth_seam must be >= 0")
        if max_seconds is not None and max_seconds <= 0:
            raise ValueError("max_seconds must be > 0")
        self.observe, self.act, self.max_actions = observe, act, max_actions
        self.validate, self.hold, self.until = validate, hold, until
        self.on_chunk, self.on_underrun, self.on_status, self.on_warming = on_chunk, on_underrun, on_status, on_warming
        self.hold_on_underrun = on_underrun is not None and _takes_no_argument(on_underrun)
        self.prefetch, self.lookahead, self.open_loop_horizon = prefetch, lookahead, open_loop_horizon
        self.max_seconds, self.startup_timeout_s, self.smooth_seam = max_seconds, startup_timeout_s, smooth_seam
        self.align_chunks = bool(align_chunks)
        self.pacer: Pacer = pacer if pacer is not None else MonotonicPacer()
        self.control_hz = control_hz
        self.episode_id = episode_id or uuid.uuid4().hex
        self.options = options


def _takes_no_argument(callback: Callable[..., Any]) -> bool:
    """on_underrun comes in two forms. `on_underrun(wait_s)` (WIRE.md §7.8) is told how long a
    stall lasted, when it ends. A callback that takes no argument (the guide's
    `on_underrun=robot.hold_position`) cannot be told a duration: it is a hold, so it is called
    when the buffer runs dry, before the wait, so the arm holds instead of coasting."""
    try:
        signature = inspect.signature(callback)
    except (TypeError, ValueError):  # a builtin without introspection: the documented form
        return False
    try:
        signature.bind(0.0)
        return False
    except TypeError:
        pass
    try:
        signature.bind()
    except TypeError:
        raise TypeError("on_underrun must take no argument (a hold) or one: the stall's duration in seconds") from None
    return True


class ControlLoop:
    def __init__(self, policy: Policy, settings: RunSettings):
        self.p = policy
        self.s = settings
        self._lock = threading.Lock()
        self.started = time.monotonic()
        self.actions = 0
        self.chunks = 0
        self.underruns = 0
        self.underrun_s = 0.0
        self.observe_s = 0.0
        self.swaps = 0
        self.max_lag: Optional[float] = None
        self.max_jump: Optional[float] = None
        self.action_space: Optional[str] = None
        self.last_action: Optional[List[float]] = None
        self.warm: Optional[WarmWait] = None
        self.running = False
        self.ended: Optional[float] = None
        self.final: Optional[RunOutcome] = None
        self._resets_at_start = policy._worker.episode_resets
        # lookahead 1: the action count before which a top-up cannot start a request (the buffer
        # only shrinks between installs, and the lead time changes only at one), so the ticks in
        # between skip it; 0 after every install.
        self._top_up_from = 0

    # -- small helpers ---------------------------------------------------------------------

    def elapsed(self) -> float:
        return (self.ended or time.monotonic()) - self.started

    def interrupted(self) -> bool:
        return self.p._interrupt.is_set()

    def hz(self) -> float:
        return self.s.control_hz or self.p._hz or DEFAULT_HZ

    def status(self, text: str) -> None:
        if self.s.on_status is not None:
            self.s.on_status(text)

    def check_stop(self) -> None:
        if self.interrupted():
            raise Interrupted()
        if self.s.max_seconds is not None and self.elapsed() >= self.s.max_seconds:
            raise _Timeout()

    def progress(self) -> RunProgress:
        warm = self.warm
        return RunProgress(
            running=self.running, actions=self.actions, chunks=self.chunks, buffered=len(self.p._buffer),
            elapsed_s=self.elapsed(), underruns=self.underruns, underrun_s=self.underrun_s,
            instruction=self.p._instruction_in_force, warming=bool(warm and warm.active),
            warming_waited_s=warm.waited_s if warm and warm.active else 0.0,
            warming_eta_s=warm.eta_s if warm and warm.active else None,
            refill_latency_s=self.p._latency.estimate_s,
        )

    def observe(self) -> Any:
        started = time.monotonic()
        observation = self.s.observe()
        self.observe_s += time.monotonic() - started
        instruction, lag = self.p._latch.consume()
        if instruction is not None:
            observation = with_instruction(observation, instruction)
        if lag is not None:
            self.swaps += 1
            self.max_lag = lag if self.max_lag is None else max(self.max_lag, lag)
        return observation

    def submit(self, timeout_s: Optional[float] = None) -> InFlight:
        flight = self.p._submit(self.observe(), timeout_s=timeout_s, episode_id=self.s.episode_id,
                                options=self.s.options)
        flight.actions_at_submit = self.actions
        return flight

    def wait_for(self, flight: InFlight) -> float:
        """Block until `flight` is done, checking interrupt and max_seconds every 20 ms."""
        started = time.monotonic()
        while not flight.fetch.wait(POLL_S):
            self.check_stop()
        return time.monotonic() - started

    # -- refills ---------------------------------------------------------------------------

    def take_delivery(self) -> None:
        inflight = self.p._inflight
        if inflight:
            flight = inflight[0]
            waited = 0.0
            if not flight.fetch.done():
                self.stall_begins()
                waited = self.wait_for(flight)
            inflight.popleft()
            try:
                prediction = flight.fetch.result()
            except Unavailable as exc:
                if not (exc.warming and self.actions == 0):
                    raise
                self.blocking_fill()  # a leftover prefetch met a cold worker before any action
                return
            self.install(prediction, flight)
            if waited > 0 and self.actions > 0:
                self.count_underrun(waited)
            return
        self.blocking_fill()

    def blocking_fill(self) -> None:
        started = time.monotonic()
        if self.actions > 0:
            self.stall_begins()
        budget = self.s.startup_timeout_s
        cut_by_max_seconds = False
        if self.s.max_seconds is not None:
            left = self.s.max_seconds - self.elapsed()
            if left <= 0:
                raise _Timeout()
            cut_by_max_seconds = left < budget
            budget = min(budget, left)
        if self.actions == 0 and budget > 0:
            self.warm = WarmWait(budget, self.s.on_warming or self.p._on_warming, self.interrupted)
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
        self.p._inflight_blocking = flight
        try:
            self.wait_for(flight)
        finally:
            self.p._inflight_blocking = None
        return flight.fetch.result(), flight

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

    def count_underrun(self, wait_s: float) -> None:
        self.restart_schedule()
        self.underruns += 1
        self.underrun_s += wait_s
        if self.s.on_underrun is not None and not self.s.hold_on_underrun:
            self.s.on_underrun(wait_s)
        self.status("running")

    def collect_ready(self) -> None:
        """lookahead > 1 (run() calls it only then): append every chunk that has already arrived,
        so the buffer holds them."""
        inflight = self.p._inflight
        while inflight and inflight[0].fetch.done():
            flight = inflight.popleft()
            self.install(flight.fetch.result(), flight)

    def top_up(self) -> None:
        """Start the next request early enough that it lands before the buffer runs dry (§7.7)."""
        if not self.s.prefetch:
            return
        hz = self.hz()
        lead = self.p._latency.lead_s(hz)
        if lead is None:
            return
        per_chunk = max(1, self.p._steps_per_chunk)
        buffer, inflight = self.p._buffer, self.p._inflight
        single = self.s.lookahead == 1
        while self.actions + len(buffer) + len(inflight) * per_chunk < self.s.max_actions:
            if len(buffer) / per_chunk + len(inflight) >= self.s.lookahead:
                if single:
                    # a request in flight: not until it lands; a whole chunk buffered: not until
                    # one row of it has played (one tick early, to be safe)
                    self._top_up_from = self.s.max_actions if inflight else self.actions + len(buffer) - per_chunk
                return
            if single and (len(buffer) == 0 or len(buffer) / hz > lead):
                if len(buffer) > 0:
                    # the first tick at which len(buffer) / hz <= lead, one early to be safe
                    self._top_up_from = self.actions + max(0, math.floor(len(buffer) - lead * hz) - 1)
                return
            inflight.append(self.submit())

    def install(self, prediction: Prediction, flight: InFlight, warmup_s: Optional[float] = None) -> None:
        chunk = prediction.action_chunk
        rows = chunk.executable_rows(self.s.open_loop_horizon)
        append = self.s.lookahead > 1
        if self.s.align_chunks:
            # Row i is the action for i periods after the observation. The chunk starts playing
            # once what is buffered ahead of it has played; rows for earlier periods are past.
            starts_at = self.actions + (len(self.p._buffer) if append else 0)
            rows = rows[min(max(0, starts_at - flight.actions_at_submit), len(rows) - 1):]
        before = self.p._buffer.last() if append else None
        before = before if before is not None else self.last_action
        if self.actions > 0:
            jump = seam_jump(before, rows[0])
            if jump is not None:
                self.max_jump = jump if self.max_jump is None else max(self.max_jump, jump)
        if self.s.smooth_seam and self.chunks > 0 and before is not None and is_absolute_space(chunk.action_space):
            rows = blend_seam(rows, before, self.s.smooth_seam)
        self.p._install_rows(rows, append=append, chunk=chunk)
        self._top_up_from = 0
        self.p._record_served(flight, prediction, warmup_s=warmup_s)
        self.chunks += 1
        self.action_space = chunk.action_space
        if self.s.on_chunk is not None:
            self.s.on_chunk(dataclasses.replace(chunk, observation=flight.observation))

    # -- the loop --------------------------------------------------------------------------

    def run(self) -> RunOutcome:
        s = self.s
        reason: Optional[str] = None
        error: Optional[BaseException] = None
        self.restart_schedule()
        self.running = True
        interrupted, buffer, several = self.p._interrupt.is_set, self.p._buffer, s.lookahead > 1
        try:
            self.status("starting")
            while self.actions < s.max_actions:
                if interrupted():
                    raise Interrupted()
                if len(buffer) == 0:
                    self.take_delivery()
                if several:
                    self.collect_ready()
                if self.actions == 0:
                    self.top_up()
                if interrupted():
                    raise Interrupted()
                if s.max_seconds is not None and self.elapsed() >= s.max_seconds:
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
                self.last_action = action
                self.actions += 1
                if self.actions == 1:
                    self.status("running")
                if self.actions < s.max_actions:
                    # Prefetch right after an action, in the slack of the period, so observe()
                    # and encoding never delay the next action past its tick.
                    if self.actions >= self._top_up_from:
                        self.top_up()
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
                self.p._drop_pending()
            elif reason == "timeout" and self.actions == 0:
                self.p._buffer.clear()
            try:
                if reason != "completed" and s.hold is not None:
                    s.hold()
            finally:
                self.p._worker_end_episode(s.episode_id)
                try:
                    self.status("done")
                except Exception:
                    pass
        outcome = self.final = self.outcome(reason or "completed")
        if error is not None:
            raise error
        return outcome

    def outcome(self, reason: str) -> RunOutcome:
        return RunOutcome(
            actions=self.actions, chunks=self.chunks, elapsed_s=self.elapsed(), reason=reason,
            underruns=self.underruns, underrun_s=self.underrun_s,
            episode_resets=self.p._worker.episode_resets - self._resets_at_start,
            max_seam_jump=self.max_jump, action_space=self.action_space, instruction_swaps=self.swaps,
            max_instruction_lag_s=self.max_lag, observe_s=self.observe_s,
        )


def stderr_status(text: str) -> None:
    """progress=True: one self-overwriting status line on stderr."""
    end = "\n" if text == "done" else ""
    sys.stderr.write(f"\r[sequences] {text:<10}{end}")
    sys.stderr.flush()
