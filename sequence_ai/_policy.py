"""`connect()` and the `Policy` handle: one model, one worker connection, one control loop.

    with sequence_ai.connect(model="pi05-droid") as policy:
        out = policy.run(observe=robot.read, act=robot.apply, validate=robot.is_safe,
                         hold=robot.hold, max_actions=250)

connect() sends nothing (WIRE.md §6.1); the first request admits the session through the gateway
and then talks to the worker directly over one pinned, kept-alive connection.
"""

from __future__ import annotations

import threading
import time
import warnings
from collections import deque
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, List, Mapping, Optional, Tuple

from ._buffer import ActionBuffer
from ._chunk import ActionChunk, Prediction, parse_prediction
from ._driver import DriverGuard
from ._errors import ChunkExhausted, InvalidRequest, SequencesError, Unavailable
from ._fetch import Fetch
from ._http import gateway_call, gateway_client, require_api_key, resolve_base_url, telemetry_client
from ._instruction import InstructionLatch
from ._latency import RefillLatency
from ._loop import ControlLoop, RunSettings, stderr_status
from ._outcome import RunOutcome, RunProgress
from ._pacing import InterruptFlag, Pacer
from ._request import ObservationCheck, act_body, new_rid
from ._telemetry import TelemetrySender, act_report
from ._warming import Interrupted, WarmWait, interruptible_sleep
from ._wire import Model
from ._worker import Abandoned, ActTrace, WorkerConnection

__all__ = ["Policy", "connect"]

_warned_no_validate = False
_warned_lock = threading.Lock()


@dataclass
class InFlight:
    """A request on its way: the background fetch and what it is costing."""

    fetch: Fetch
    trace: ActTrace
    observation: Any = None  # what was sent: the chunk's rows are relative to this moment
    actions_at_submit: int = 0  # actions the run had executed when the observation was taken

    def service_s(self) -> Optional[float]:
        """Refill latency without one-off costs (admission, reconnect backoff): what the
        estimator learns from. None if the fetch has not finished."""
        finished = self.fetch.finished_at
        if finished is None:
            return None
        return max(0.0, finished - self.fetch.started_at - self.trace.overhead_s)


def _warn_no_validate() -> None:
    global _warned_no_validate
    with _warned_lock:
        if _warned_no_validate:
            return
        _warned_no_validate = True
    warnings.warn("run() without validate=: actions reach the robot unchecked; pass a bounds check on hardware",
                  UserWarning, stacklevel=4)


class Policy:
    """A handle on one act model. Not shared between control loops: one Policy per robot arm."""

    def __init__(self, model: str, *, api_key: str, base_url: str, timeout_s: float, startup_timeout_s: float,
                 on_warming: Optional[Callable[[float, float], Any]], validate: str, embodiment: Optional[str],
                 expect: Optional[Mapping[str, Any]], seed: Optional[int], control_hz: Optional[float] = None):
        if not isinstance(model, str) or not model:
            raise InvalidRequest("model must be a non-empty string")
        self.model = model
        self._base_url = base_url
        self._timeout_s = timeout_s
        self._startup_timeout_s = startup_timeout_s
        self._on_warming = on_warming
        self._seed = seed
        self._control_hz = control_hz
        self._check = ObservationCheck(validate)
        self._gateway = gateway_client(base_url, api_key, timeout_s)
        self._telemetry = TelemetrySender(telemetry_client(base_url, api_key, min(timeout_s, 10.0)))
        self._worker = WorkerConnection(gateway=self._gateway, base_url=base_url, model=model,
                                        timeout_s=timeout_s, embodiment=embodiment, expect=expect)
        self._buffer = ActionBuffer()
        self._inflight: Deque[InFlight] = deque()
        self._inflight_blocking: Optional[InFlight] = None
        self._latency = RefillLatency()
        self._latch = InstructionLatch()
        self._interrupt = InterruptFlag()
        self._guard = DriverGuard()
        self._lookahead = 1
        self._steps_per_chunk = 0
        self._hz: Optional[float] = None
        self._served = False
        self._instruction_in_force: Optional[str] = None
        self._spec_lock = threading.Lock()
        self._spec: Optional[Model] = None
        self._row_cache: Any = None  # Model, or False once the lookup failed
        self._loop: Optional[ControlLoop] = None
        self._warm: Optional[WarmWait] = None
        self.last_outcome: Optional[RunOutcome] = None
        self._closed = False

    # -- context manager -------------------------------------------------------------------

    def __enter__(self) -> Policy:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self) -> None:
        """Drop pending requests and close every connection. Idempotent."""
        if self._closed:
            return
        self._closed = True
        self._drop_pending()
        self._worker.close()
        self._telemetry.close()
        self._gateway.close()

    def __repr__(self) -> str:
        return f"Policy(model={self.model!r}, buffered={len(self._buffer)})"

    # -- catalogue -------------------------------------------------------------------------

    def _catalogue_row(self) -> Model:
        from ._catalogue import find_model

        answer = gateway_call("GET", self._base_url, "/v1/models?endpoint=act", api_key=None,
                              timeout_s=self._timeout_s, client=self._gateway)
        data = answer.get("data") if isinstance(answer, dict) else None
        rows = [Model.from_wire(row) for row in (data or []) if isinstance(row, dict) and row.get("id")]
        row = find_model(rows, self.model)
        if row is None:
            raise InvalidRequest(f"model {self.model!r} is not in the act catalogue")
        return row

    def spec(self) -> Model:
        """The model's catalogue row (action space, image geometry, robot), fetched once."""
        with self._spec_lock:
            if self._spec is None:
                self._spec = self._catalogue_row()
                self._row_cache = self._spec
            return self._spec

    def _row(self) -> Optional[Model]:
        """The row the send-time check uses; a failed lookup disables checking (§7.2). Looked up
        on a background thread so an interrupt is honoured while the gateway is slow."""
        with self._spec_lock:
            if self._row_cache is None:
                lookup: Fetch = Fetch(lambda cancelled: self._catalogue_row(), name="sequence-ai-catalogue")
                while not lookup.wait(0.02):
                    if self._interrupt.is_set():
                        lookup.abandon()
                        raise Interrupted()
                try:
                    self._row_cache = self._spec = lookup.result()
                except SequencesError:
                    self._row_cache = False
            return self._row_cache or None

    # -- readiness -------------------------------------------------------------------------

    def ready(self) -> Tuple[bool, Optional[float]]:
        """(ready, eta_s) without blocking; also starts a cold worker. Never admits a session."""
        answer = gateway_call("GET", self._base_url, f"/v1/act/ready?model={self.model}", api_key=None,
                              timeout_s=self._timeout_s, client=self._gateway)
        if not isinstance(answer, dict):
            raise SequencesError("malformed /v1/act/ready answer")
        eta = answer.get("eta_s")
        eta_s = float(eta) if isinstance(eta, (int, float)) and not isinstance(eta, bool) else None
        return bool(answer.get("ready")), eta_s

    def wait_until_ready(self, timeout_s: float = 300.0, poll_s: float = 5.0) -> float:
        """Block until the model can serve; returns the seconds waited. Interruptible."""
        self._interrupt.clear()
        started = time.monotonic()
        while True:
            answer = gateway_call("GET", self._base_url, f"/v1/act/ready?model={self.model}",
                                  api_key=None, timeout_s=self._timeout_s, client=self._gateway)
            answer = answer if isinstance(answer, dict) else {}
            if answer.get("ready"):
                return time.monotonic() - started
            eta = answer.get("eta_s")
            eta_s = float(eta) if isinstance(eta, (int, float)) and not isinstance(eta, bool) else None
            left = timeout_s - (time.monotonic() - started)
            if left <= 0:
                if answer.get("status") == "building":
                    message = f"{self.model} is still building after {timeout_s:g}s"
                else:
                    message = f"{self.model} was still loading after {timeout_s:g}s; about {eta_s or 0:.0f}s to go"
                raise Unavailable(message, 503, warming=True, retry_after_s=eta_s)
            try:
                interruptible_sleep(max(0.5, min(poll_s, left)), self._interrupt.is_set)
            except Interrupted:
                raise Unavailable(f"interrupted while waiting for {self.model} to be ready", 503,
                                  warming=True, retry_after_s=eta_s) from None

    # -- the request path ------------------------------------------------------------------

    def _submit(self, observation: Any, *, timeout_s: Optional[float] = None, episode_id: Optional[str] = None,
                options: Optional[Mapping[str, Any]] = None) -> InFlight:
        """Check and encode on this thread, then send on a background one."""
        if self._closed:
            raise SequencesError("this Policy is closed")
        row = self._row() if self._check.mode != "off" else None
        observation = self._check.apply(row, observation)
        body, encoded = act_body(self.model, observation, seed=self._seed, options=options or {})
        instruction = body["observation"].get("instruction")
        self._instruction_in_force = instruction if isinstance(instruction, str) else None
        trace = ActTrace(rid=new_rid())

        def call(cancelled: Callable[[], bool]) -> Prediction:
            try:
                answer = self._worker.act(body, rid=trace.rid, episode_id=episode_id, timeout_s=timeout_s,
                                          cancelled=cancelled, trace=trace, encoded=encoded)
                prediction = parse_prediction(answer, rid=trace.rid, model=self.model)
                self._check_width(prediction.action_chunk)
                return prediction
            except Abandoned:
                raise
            except SequencesError as exc:
                warming = isinstance(exc, Unavailable) and exc.warming
                self._telemetry.submit(act_report(trace, "warming" if warming else "error"))
                raise

        return InFlight(Fetch(call), trace, observation)

    def _check_width(self, chunk: ActionChunk) -> None:
        """A chunk narrower or wider than the model declares is never played: its columns would
        land on the wrong joints."""
        declared = (self._worker.declared_action or {}).get("action_dim")
        row = self._row_cache or None
        expected = declared if isinstance(declared, int) else (row.action_dim if row is not None else None)
        if expected is not None and chunk.action_dim != expected:
            raise SequencesError(f"the worker sent {chunk.action_dim}-wide actions but {self.model} declares "
                                 f"action_dim {expected}; refusing to play them")

    def _record_served(self, flight: InFlight, prediction: Prediction, *, warmup_s: Optional[float] = None) -> None:
        self._served = True
        service = flight.service_s()  # predict() too: service time carries no warm-up (docs/CLIENT-LOOP.md)
        if service is not None:
            self._latency.record(service)
        if warmup_s is not None:
            prediction.perf["warmup_ms"] = round(warmup_s * 1000.0, 2)
        total = None if flight.fetch.finished_at is None else flight.fetch.finished_at - flight.fetch.started_at
        self._telemetry.submit(act_report(flight.trace, "served", total_s=total, perf=prediction.perf,
                                          warmup_s=warmup_s))

    def _install_rows(self, rows: List[List[float]], *, append: bool, chunk: ActionChunk) -> None:
        self._buffer.install(rows, append=append)
        self._steps_per_chunk = len(rows)
        self._hz = chunk.control_frequency_hz

    def discard_buffer(self) -> None:
        """Forget every buffered action and every request in flight, so the next run starts from
        a fresh observation (rows left by an earlier run are otherwise played first, §7.4).
        Raises SequencesError if another thread is driving this Policy."""
        with self._guard.driving():
            self._drop_pending()

    def _drop_pending(self) -> None:
        """Interrupt: forget every buffered action and every request in flight."""
        self._buffer.clear()
        for flight in self._inflight:
            flight.fetch.abandon()
        self._inflight.clear()
        blocking = self._inflight_blocking
        if blocking is not None:
            blocking.fetch.abandon()

    def _worker_end_episode(self, episode_id: str) -> None:
        if self._worker.connected:
            self._worker.end_episode(episode_id)

    # -- the four levels -------------------------------------------------------------------

    def predict(self, observation: Any, **options: Any) -> Prediction:
        """One request; installs the chunk (cut to its open-loop horizon) into the buffer and
        returns every row. Waits out a cold worker until the handle has served once."""
        with self._guard.driving():
            self._interrupt.clear()  # a stale interrupt never aborts a later predict()
            episode_id = options.pop("episode_id", None)

            def attempt(timeout_s: Optional[float]) -> Tuple[Prediction, InFlight]:
                flight = self._submit(observation, timeout_s=timeout_s, episode_id=episode_id, options=options)
                while not flight.fetch.wait(0.02):
                    if self._interrupt.is_set():
                        flight.fetch.abandon()
                        raise Interrupted()
                return flight.fetch.result(), flight

            try:
                if not self._served and self._startup_timeout_s > 0:
                    self._warm = WarmWait(self._startup_timeout_s, self._on_warming, self._interrupt.is_set)
                    (prediction, flight), waited = self._warm.run(attempt)
                    warmup = waited if waited >= 0.25 else None
                else:
                    (prediction, flight), warmup = attempt(None), None
            except Interrupted:
                raise SequencesError("predict() was interrupted") from None
            finally:
                self._warm = None
            rows = prediction.action_chunk.executable_rows()
            self._install_rows(rows, append=self._lookahead > 1, chunk=prediction.action_chunk)
            self._record_served(flight, prediction, warmup_s=warmup)
            return prediction

    def next_action(self, observation: Any = None, **options: Any) -> List[float]:
        """The next buffered action; refills from `observation` only when the buffer is empty."""
        with self._guard.driving():
            if len(self._buffer) == 0:
                if observation is None:
                    raise ChunkExhausted("the action buffer is empty and no observation was given to refill it")
                self.predict(observation, **options)
            return self._buffer.pop()

    @property
    def buffered(self) -> int:
        """Actions left in the local buffer; 0 means the next call is a round trip."""
        return len(self._buffer)

    def run(self, observe: Callable[[], Any], act: Callable[[List[float]], Any], *, max_actions: int,
            validate: Optional[Callable[[List[float]], bool]] = None, hold: Optional[Callable[[], Any]] = None,
            on_chunk: Optional[Callable[[ActionChunk], Any]] = None,
            on_underrun: Optional[Callable[[float], Any]] = None, on_status: Optional[Callable[[str], Any]] = None,
            on_warming: Optional[Callable[[float, float], Any]] = None, progress: Any = "auto",
            prefetch: bool = True, lookahead: int = 1, open_loop_horizon: Optional[int] = None,
            max_seconds: Optional[float] = None, until: Optional[Callable[[], bool]] = None,
            startup_timeout_s: Optional[float] = None, smooth_seam: int = 0, align_chunks: bool = False,
            pacer: Optional[Pacer] = None,
            control_hz: Optional[float] = None, episode_id: Optional[str] = None, **options: Any) -> RunOutcome:
        """Drive the robot for at most `max_actions` actions (see the module docstring)."""
        if validate is None:
            _warn_no_validate()
        if on_status is None and (progress is True or (progress == "auto" and _stderr_is_tty())):
            on_status = stderr_status
        settings = RunSettings(
            observe=observe, act=act, max_actions=max_actions, validate=validate, hold=hold, on_chunk=on_chunk,
            on_underrun=on_underrun, on_status=on_status, on_warming=on_warming, prefetch=prefetch,
            lookahead=lookahead, open_loop_horizon=open_loop_horizon, max_seconds=max_seconds, until=until,
            startup_timeout_s=self._startup_timeout_s if startup_timeout_s is None else startup_timeout_s,
            smooth_seam=smooth_seam, align_chunks=align_chunks, pacer=pacer, control_hz=control_hz or self._control_hz, episode_id=episode_id,
            options=options)
        if self._closed:
            raise SequencesError("this Policy is closed")
        with self._guard.driving():
            self._interrupt.clear()
            self._lookahead = lookahead
            loop = self._loop = ControlLoop(self, settings)
            try:
                return loop.run()
            finally:
                self.last_outcome = loop.final  # also set when the run re-raises

    def act(self, instruction: str, observe: Callable[[], Any], act: Callable[[List[float]], Any], *,
            max_seconds: float, until: Optional[Callable[[], bool]] = None, **run_kwargs: Any) -> RunOutcome:
        """run() with `instruction` pinned on every observation, bounded by `max_seconds`."""
        if not isinstance(max_seconds, (int, float)) or isinstance(max_seconds, bool) or max_seconds <= 0:
            raise ValueError("max_seconds must be a number > 0")
        max_actions = run_kwargs.pop("max_actions", None) or int(max_seconds * 1000) + 1000
        with self._guard.driving():  # refused before it could touch the running loop's instruction
            self._latch.set(instruction)
            try:
                return self.run(observe, act, max_actions=max_actions, max_seconds=max_seconds, until=until,
                                **run_kwargs)
            finally:
                self._latch.clear()

    # -- steering from other threads -------------------------------------------------------

    def set_instruction(self, instruction: str) -> None:
        """Change the instruction for the next request; returns at once, the arm keeps moving."""
        self._latch.set(instruction)

    @property
    def instruction(self) -> Optional[str]:
        """The instruction in force, or None: the one set by set_instruction()/act() (it goes
        with the next request); else, while a run is going, the one its last request carried
        (the observation's own)."""
        latched = self._latch.value
        if latched is not None:
            return latched
        loop = self._loop
        return self._instruction_in_force if loop is not None and loop.running else None

    def interrupt(self) -> None:
        """Stop the run within one control period; it holds and reports `interrupted`."""
        self._interrupt.set()

    @property
    def interrupted(self) -> bool:
        """True from `interrupt()` until the next call starts (for callbacks that wait)."""
        return self._interrupt.is_set()

    def progress(self) -> RunProgress:
        """A snapshot of the current (or last) run, safe from any thread."""
        loop, warm = self._loop, self._warm
        if loop is not None and (loop.running or warm is None):
            return loop.progress()
        active = bool(warm and warm.active)
        return RunProgress(buffered=len(self._buffer), instruction=self._latch.value, warming=active,
                           warming_waited_s=warm.waited_s if warm and active else 0.0,
                           warming_eta_s=warm.eta_s if warm and active else None,
                           refill_latency_s=self._latency.estimate_s)

    @property
    def contract(self) -> Optional[Dict[str, Any]]:
        """The observation contract the worker declared on connect, if any."""
        return self._worker.contract

    @property
    def session(self) -> str:
        return self._worker.session


def _stderr_is_tty() -> bool:
    import sys

    try:
        return sys.stderr.isatty()
    except Exception:
        return False


def connect(model: str, *, api_key: Optional[str] = None, base_url: Optional[str] = None, timeout_s: float = 30.0,
            startup_timeout_s: float = 1800.0, on_warming: Optional[Callable[[float, float], Any]] = None,
            validate: str = "warn", embodiment: Optional[str] = None, expect: Optional[Mapping[str, Any]] = None,
            seed: Optional[int] = None, control_hz: Optional[float] = None) -> Policy:
    """A Policy for `model`. Sends nothing: the key is checked locally (AuthError if missing)
    and the first request admits the session. Use it as a context manager."""
    key = require_api_key(api_key)
    return Policy(model, api_key=key, base_url=resolve_base_url(base_url), timeout_s=timeout_s,
                  startup_timeout_s=startup_timeout_s, on_warming=on_warming, validate=validate,
                  embodiment=embodiment, expect=expect, seed=seed, control_hz=control_hz)
