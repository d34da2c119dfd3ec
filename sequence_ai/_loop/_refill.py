"""The refill state of one Policy: what is buffered, what is on its way, and how long refills take.

`Refills` is the one owner of the action buffer, the requests in flight, the refill-latency
estimate, and the rate and window of the chunks being played. The control loop (`_control_loop`)
and the four levels of `Policy` use it only through this interface:

    submit(observation, instruction=...) -> InFlight
                                 check and encode here, send on a background thread; the request
                                 carries the instruction in force and the joints the robot reported
    wait(flight, deadline)       until it is answered (interrupt() raises Interrupted)
    queue(flight)                a prefetch: installed after the requests already in flight
    in_flight, head()            the requests queued, oldest first (a snapshot), and the oldest
    queued                       the queue itself, read only (len() without a snapshot)
    take_head(), take_arrived()  the oldest, taken off the queue (take_arrived: only if it has
                                 arrived, answered)
    awaiting(flight)             a blocking fill's request, abandoned by drop() meanwhile
    install(rows, chunk, append) rows into the buffer (stitched by the caller)
    record(flight, prediction)   a served answer: latency sample, telemetry
    drop(), end_episode(), close()
    buffer, latency              the ActionBuffer and the RefillLatency (their own interfaces)
    hz, steps_per_chunk, model, served, episode_resets   read only
"""

from __future__ import annotations

import time
from collections import deque
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Callable, Deque, Iterator, List, Mapping, Optional, Tuple

from .._act._chunk import ActionChunk, Prediction, check_against_model, model_rate, parse_prediction
from .._act._request import ObservationCheck, act_body, in_force, new_rid
from .._errors import SequencesError, Unavailable
from .._link._act_request import Abandoned, ActTrace
from .._link._fetch import Fetch
from .._link._telemetry import TelemetrySender, act_report
from .._link._worker import WorkerConnection
from .._vision._observation import joints_of
from .._waiting import Waiter
from .._wire import Model
from ._buffer import ActionBuffer
from ._latency import RefillLatency

__all__ = ["InFlight", "Refills"]


@dataclass
class InFlight:
    """A request on its way: the background fetch, what it is costing, and what it was built from."""

    fetch: Fetch
    trace: ActTrace
    observation: Any = None  # what was sent: the chunk's rows are relative to this moment
    actions_at_submit: int = 0  # actions the run had executed when the observation was taken
    observed_at: float = 0.0  # monotonic time of the observation
    swap_since: Optional[float] = None  # a new instruction goes with this request (set at this time)
    instruction: Optional[str] = None  # the instruction in force it carries
    joints: Optional[List[float]] = None  # the joint positions the robot reported: q_ref of its rows
    held_s: float = 0.0  # the run's time held for late chunks when the observation was taken

    def service_s(self) -> Optional[float]:
        """Refill latency without one-off costs (admission, reconnect backoff): what the
        estimator learns from. None if the fetch has not finished."""
        finished = self.fetch.finished_at
        if finished is None:
            return None
        return max(0.0, finished - self.fetch.started_at - self.trace.overhead_s)


class Refills:
    def __init__(self, *, model: str, worker: WorkerConnection, telemetry: TelemetrySender,
                 check: ObservationCheck, row: Callable[[], Optional[Model]],
                 cached_row: Callable[[], Optional[Model]], waiter: Waiter, seed: Optional[int]):
        self.model = model
        self.worker = worker
        self._telemetry = telemetry
        self._check = check
        self._row = row  # the catalogue row (None when unknown), looked up for the send-time check
        self._cached_row = cached_row  # the same, never looked up (for the refill threads)
        self._waiter = waiter
        self._seed = seed
        self.buffer = ActionBuffer()
        self._in_flight: Deque[InFlight] = deque()
        self.queued = self._in_flight  # the same deque, read only (its length, every tick of a run)
        self._blocking: Optional[InFlight] = None  # a blocking fill's request, abandoned on interrupt
        self.latency = RefillLatency()
        self.steps_per_chunk = 0  # rows per installed chunk (its window)
        self.hz: Optional[float] = None  # the model's rate (_chunk.model_rate), known once a chunk is installed
        self.served = False
        self.closed = False

    @property
    def max_in_flight(self) -> Optional[int]:
        """How many requests the server behind the worker answers at once (an openpi server: 1,
        one at a time across all its connections); None: as many as the schedule starts."""
        return getattr(self.worker, "max_in_flight", None)

    @property
    def episode_resets(self) -> int:
        """Worker changes that reset the episode, over this Policy's life."""
        return self.worker.episode_resets

    def submit(self, observation: Any, *, instruction: Optional[str] = None, timeout_s: Optional[float] = None,
               episode_id: Optional[str] = None, options: Optional[Mapping[str, Any]] = None,
               actions_done: int = 0, swap_since: Optional[float] = None) -> InFlight:
        """Check and encode on this thread, then send on a background one. `instruction` (the one
        set on the Policy) replaces the observation's; None sends the observation's own."""
        if self.closed:
            raise SequencesError("this Policy is closed")
        joints = joints_of(observation)
        row = self._row() if self._check.mode != "off" else None
        observation = self._check.apply(row, observation)
        observation, instruction = in_force(observation, instruction)
        body, encoded = act_body(self.model, observation, seed=self._seed, options=options or {})
        trace = ActTrace(rid=new_rid())

        def call(cancelled: Callable[[], bool]) -> Prediction:
            try:
                answer = self.worker.act(body, rid=trace.rid, episode_id=episode_id, timeout_s=timeout_s,
                                         cancelled=cancelled, trace=trace, encoded=encoded)
                prediction = parse_prediction(answer, rid=trace.rid, model=self.model)
                check_against_model(prediction.action_chunk, self.model, self.worker.declared_action,
                                    self._cached_row())
                return prediction
            except Abandoned:
                raise
            except SequencesError as exc:
                warming = isinstance(exc, Unavailable) and exc.warming
                self._telemetry.submit(act_report(trace, "warming" if warming else "error"))
                raise

        return InFlight(Fetch(call, on_done=self._waiter.notify), trace, observation, actions_done,
                        time.monotonic(), swap_since, instruction, joints)

    def wait(self, flight: InFlight, deadline: Optional[float] = None) -> bool:
        """Block until `flight` is answered (True) or `deadline` passes (False); Interrupted on
        interrupt(). Woken by the fetch itself, never polled."""
        return self._waiter.until(flight.fetch.done, deadline)

    # -- the requests in flight (oldest first) ---------------------------------------------

    def queue(self, flight: InFlight) -> None:
        self._in_flight.append(flight)

    @property
    def in_flight(self) -> Tuple[InFlight, ...]:
        return tuple(self._in_flight)

    def head(self) -> Optional[InFlight]:
        return self._in_flight[0] if self._in_flight else None

    def take_head(self) -> InFlight:
        return self._in_flight.popleft()

    def take_arrived(self) -> Optional[InFlight]:
        """The oldest request, off the queue, if it was answered; a failed one stays at the head."""
        queued = self._in_flight
        return queued.popleft() if queued and queued[0].fetch.succeeded() else None

    @contextmanager
    def awaiting(self, flight: InFlight) -> Iterator[InFlight]:
        """A blocking fill waits for `flight`: drop() abandons it meanwhile."""
        self._blocking = flight
        try:
            yield flight
        finally:
            self._blocking = None

    def catalogue_window(self) -> Tuple[Optional[int], Optional[int]]:
        """The catalogue row's (open_loop_horizon, action_horizon), as cached; (None, None) unknown."""
        row = self._cached_row()
        return (None, None) if row is None else (row.open_loop_horizon, row.action_horizon)

    def learn_rate(self) -> Optional[float]:
        """The model's rate (_chunk.model_rate: never a chunk's claim), once an answer has come."""
        self.hz = model_rate(self.worker.declared_action, self._cached_row())
        return self.hz

    def install(self, rows: List[Any], *, chunk: ActionChunk, append: bool) -> None:
        self.buffer.install(rows, append=append)
        self.steps_per_chunk = len(rows) or self.steps_per_chunk
        self.learn_rate()

    def record(self, flight: InFlight, prediction: Prediction, *, warmup_s: Optional[float] = None,
               learn: bool = True) -> None:
        """A served answer: the latency estimate learns its service time (`learn`: run() only —
        predict() does not count, docs/PROTOCOL.md §7.7, but seeds an estimate that has no sample yet),
        and telemetry reports it."""
        self.served = True
        service = flight.service_s()
        if service is not None:
            if learn:
                self.latency.record(service)
            else:
                self.latency.seed(service)  # the best guess a run that follows has
        if warmup_s is not None:
            prediction.perf["warmup_ms"] = round(warmup_s * 1000.0, 2)
        total = None if flight.fetch.finished_at is None else flight.fetch.finished_at - flight.fetch.started_at
        self._telemetry.submit(act_report(flight.trace, "served", total_s=total, perf=prediction.perf,
                                          warmup_s=warmup_s))

    def drop(self) -> None:
        """Forget every buffered row and every request in flight (interrupt, a failed run)."""
        self.buffer.clear()
        for flight in self._in_flight:
            flight.fetch.abandon()
        self._in_flight.clear()
        blocking = self._blocking
        if blocking is not None:
            blocking.fetch.abandon()

    def end_episode(self, episode_id: str) -> None:
        if self.worker.connected:
            self.worker.end_episode(episode_id)

    def close(self) -> None:
        """No request goes out from now on; the buffer and every request in flight are dropped."""
        self.closed = True
        self.drop()
