"""`connect()` and the `Policy` handle: one model, one worker connection, one control loop.

    with sequence_ai.connect(model="pi05-droid") as policy:
        out = policy.run(observe=robot.read, act=robot.apply, validate=robot.is_safe,
                         hold=robot.hold, max_actions=250)

connect() sends nothing (docs/PROTOCOL.md §6.1); the first request admits the session through the gateway
and then talks to the worker directly over one pinned, kept-alive connection.
"""

from __future__ import annotations

import threading
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

from ._act._chunk import ActionChunk, Prediction
from ._act._request import ObservationCheck
from ._catalogue._model_row import ModelRow
from ._console import status_line, warming_line, warn_user
from ._errors import ChunkExhausted, InvalidRequest, SequencesError, Unavailable
from ._link._links import open_link
from ._loop._control_loop import ControlLoop
from ._loop._driver import DriverGuard
from ._loop._instruction import InstructionLatch
from ._loop._observers import Callbacks, RunObserver
from ._loop._outcome import RunOutcome, RunProgress
from ._loop._pacing import Pacer
from ._loop._refill import InFlight, Refills
from ._loop._settings import AUTO, RunSettings, check_max_seconds
from ._waiting import Interrupted, InterruptFlag, Waiter
from ._warming import NotReady, WarmWait, eta_of, poll_every
from ._wire import Model

__all__ = ["Policy", "connect"]

_warned_no_validate = False
_warned_lock = threading.Lock()


def _warn_no_validate() -> None:
    global _warned_no_validate
    with _warned_lock:
        if _warned_no_validate:
            return
        _warned_no_validate = True
    warn_user("run() without validate=: actions reach the robot unchecked; pass a bounds check on hardware")


class Policy:
    """A handle on one act model. Not shared between control loops: one Policy per robot arm."""

    def __init__(self, model: str, *, link: Any, timeout_s: float, startup_timeout_s: float,
                 on_warming: Optional[Callable[[float, float], Any]], validate: str, seed: Optional[int],
                 control_hz: Optional[float] = None):
        if not isinstance(model, str) or not model:
            raise InvalidRequest("model must be a non-empty string")
        self.model = model
        self._link = link  # _link._links: the Sequences platform or an openpi server, chosen by connect()
        self._timeout_s = timeout_s
        self._startup_timeout_s = startup_timeout_s
        self._on_warming = on_warming
        self._control_hz = control_hz
        check = ObservationCheck(validate)
        self._worker = link.worker
        self._interrupt = InterruptFlag()
        self._waiter = Waiter(self._interrupt)
        self._model_row = ModelRow(model, link.catalogue, self._waiter)
        self._refills = Refills(model=model, worker=self._worker, telemetry=link.telemetry, check=check,
                                row=self._model_row.lookup, cached_row=self._model_row.cached, waiter=self._waiter,
                                seed=seed)
        self._latch = InstructionLatch()
        self._guard = DriverGuard()
        self._lookahead: Union[int, str] = 1
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
        self._refills.close()
        self._link.close()

    def __repr__(self) -> str:
        return f"Policy(model={self.model!r}, buffered={self.buffered})"

    # -- catalogue -------------------------------------------------------------------------

    def spec(self) -> Model:
        """The model's catalogue row (action space, image geometry, robot), fetched once."""
        return self._model_row.spec()

    # -- readiness -------------------------------------------------------------------------

    def _ready_answer(self) -> Dict[str, Any]:
        answer = self._link.ready_answer(self.model)
        if not isinstance(answer, dict):
            raise SequencesError("malformed /v1/act/ready answer")
        return answer

    def ready(self) -> Tuple[bool, Optional[float]]:
        """(ready, eta_s) without blocking; also starts a cold worker. Never admits a session."""
        answer = self._ready_answer()
        return bool(answer.get("ready")), eta_of(answer)

    def wait_until_ready(self, timeout_s: float = 300.0, poll_s: float = 5.0,
                         on_warming: Optional[Callable[[float, Optional[float]], Any]] = None) -> float:
        """Block until the model can serve; returns the seconds waited. Interruptible.
        `on_warming(waited_s, eta_s)` (eta None when the gateway gives none) before each sleep."""
        self._interrupt.clear()

        def ready(read_timeout_s: float) -> None:
            answer = self._ready_answer()
            if answer.get("ready"):
                return
            eta_s = eta_of(answer)
            # The warming error this wait gives up with, once `timeout_s` has passed.
            if answer.get("status") == "building":
                message = f"{self.model} is still building after {timeout_s:g}s"
            else:
                message = f"{self.model} was still loading after {timeout_s:g}s; about {eta_s or 0:.0f}s to go"
            raise NotReady(message, 503, warming=True, retry_after_s=eta_s)

        warm = WarmWait(timeout_s, self._waiter.sleep, on_warming, pause=poll_every(poll_s))
        try:
            return warm.run(ready)[1]
        except Interrupted:
            raise Unavailable(f"interrupted while waiting for {self.model} to be ready", 503,
                              warming=True, retry_after_s=warm.eta_s) from None

    def _warm_wait(self, budget_s: float, on_warming: Optional[Callable[[float, float], Any]] = None) -> WarmWait:
        """A wait for a cold worker before the first action (docs/PROTOCOL.md §7.5), on this Policy's
        interruptible sleep; `on_warming` (a run's own) before connect()'s, else the warming line."""
        return WarmWait(budget_s, self._waiter.sleep, on_warming or self._on_warming or warming_line, warn=True)

    # -- the four levels -------------------------------------------------------------------

    def discard_buffer(self) -> None:
        """Forget every buffered action and every request in flight, so the next run starts from
        a fresh observation (rows left by an earlier run are otherwise played first, §7.4).
        Raises SequencesError if another thread is driving this Policy."""
        with self._guard.driving():
            self._refills.drop()

    def predict(self, observation: Any, **options: Any) -> Prediction:
        """One request; installs the chunk (cut to its open-loop horizon) into the buffer and
        returns every row. Waits out a cold worker until the handle has served once."""
        with self._guard.driving():
            self._interrupt.clear()  # a stale interrupt never aborts a later predict()
            episode_id = options.pop("episode_id", None)
            refills = self._refills

            def attempt(timeout_s: Optional[float]) -> Tuple[Prediction, InFlight]:
                flight = refills.submit(observation, timeout_s=timeout_s, episode_id=episode_id, options=options)
                try:
                    refills.wait(flight)
                except Interrupted:
                    flight.fetch.abandon()
                    raise
                return flight.fetch.result(), flight

            try:
                if not refills.served and self._startup_timeout_s > 0:
                    self._warm = self._warm_wait(self._startup_timeout_s)
                    (prediction, flight), waited = self._warm.run(attempt)
                    warmup = waited if waited >= 0.25 else None
                else:
                    (prediction, flight), warmup = attempt(None), None
            except Interrupted:
                raise SequencesError("predict() was interrupted") from None
            finally:
                self._warm = None
            chunk = prediction.action_chunk
            refills.install(chunk.executable_rows(), chunk=chunk, append=self._lookahead not in (1, AUTO))
            refills.record(flight, prediction, warmup_s=warmup, learn=False)  # §7.7: predict() does not count
            return prediction

    def next_action(self, observation: Any = None, **options: Any) -> List[float]:
        """The next buffered action; refills from `observation` only when the buffer is empty."""
        with self._guard.driving():
            if len(self._refills.buffer) == 0:
                if observation is None:
                    raise ChunkExhausted("the action buffer is empty and no observation was given to refill it")
                self.predict(observation, **options)
            return self._refills.buffer.pop()

    @property
    def buffered(self) -> int:
        """Actions left in the local buffer; 0 means the next call is a round trip."""
        return len(self._refills.buffer)

    def run(self, observe: Callable[[], Any], act: Callable[[List[float]], Any], *, max_actions: int,
            validate: Optional[Callable[[List[float]], bool]] = None, hold: Optional[Callable[[], Any]] = None,
            on_chunk: Optional[Callable[[ActionChunk], Any]] = None,
            on_underrun: Optional[Callable[[float], Any]] = None, on_status: Optional[Callable[[str], Any]] = None,
            on_warming: Optional[Callable[[float, float], Any]] = None, progress: Any = "auto",
            prefetch: bool = True, lookahead: Union[int, str] = AUTO, open_loop_horizon: Optional[int] = None,
            max_seconds: Optional[float] = None, until: Optional[Callable[[], bool]] = None,
            startup_timeout_s: Optional[float] = None, smooth_seam: int = 0, stitch: Optional[str] = None,
            align_chunks: bool = False, pacer: Optional[Pacer] = None, control_hz: Optional[float] = None,
            episode_id: Optional[str] = None, instruction: Optional[str] = None, record: Any = None,
            take_over: Optional[bool] = None, request_budget: Optional[float] = None,
            **options: Any) -> RunOutcome:
        """Drive the robot for at most `max_actions` actions (docs/CLIENT-LOOP.md)."""
        arguments = dict(locals())
        del arguments["self"], arguments["progress"]
        if validate is None:
            _warn_no_validate()
        if on_status is None and (progress is True or (progress == "auto" and _stderr_is_tty())):
            arguments["on_status"] = status_line
        if startup_timeout_s is None:
            arguments["startup_timeout_s"] = self._startup_timeout_s
        arguments["control_hz"] = control_hz if control_hz is not None else self._control_hz  # 0 is refused
        settings = RunSettings.from_arguments(arguments)
        if settings.smooth_seam and settings.stitch == "continue":
            warn_user("smooth_seam has no effect with stitch='continue': its seams are already continuous; "
                      "pass stitch='align' or 'none' to ramp them")
        if self._closed:
            raise SequencesError("this Policy is closed")
        with self._guard.driving():
            self._interrupt.clear()
            if settings.instruction is not None:
                self._latch.seed(settings.instruction)
            self._lookahead = settings.lookahead
            recording = None if settings.record is None else _open_recording(settings.record)  # before anything moves
            callbacks = Callbacks.given(settings)
            observers: List[RunObserver] = [o for o in (recording, callbacks) if o is not None]
            loop = self._loop = ControlLoop(self._refills, settings, latch=self._latch,
                                            interrupted=self._interrupt.is_set,
                                            warm_wait=lambda budget_s: self._warm_wait(budget_s, settings.on_warming),
                                            layout=self._model_row.layout, observers=observers)
            try:
                return loop.run()
            finally:
                self.last_outcome = loop.final  # also set when the run re-raises
                if recording is not None:
                    recording.close()  # only a file this run opened; idempotent

    def act(self, instruction: str, observe: Callable[[], Any], act: Callable[[List[float]], Any], *,
            max_seconds: float, until: Optional[Callable[[], bool]] = None, **run_kwargs: Any) -> RunOutcome:
        """run() with `instruction` pinned on every observation, bounded by `max_seconds`."""
        check_max_seconds(max_seconds)  # before the action bound below is computed from it
        max_actions = run_kwargs.pop("max_actions", None)  # any other value: run() checks it
        if max_actions is None or (type(max_actions) is int and max_actions == 0):  # 0: bounded by time only
            max_actions = int(max_seconds * 1000) + 1000
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
        loop = self._loop
        if self._latch.set(instruction) and loop is not None and loop.running:
            loop.watch.instruction(instruction)

    @property
    def instruction(self) -> Optional[str]:
        """The instruction in force, or None: the one set by set_instruction()/act() (it goes
        with the next request); else, while a run is going, the one its last request carried
        (the observation's own)."""
        latched = self._latch.value
        if latched is not None:
            return latched
        loop = self._loop
        return loop.tally.instruction if loop is not None and loop.running else None

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
        return RunProgress(buffered=self.buffered, instruction=self._latch.value, warming=active,
                           warming_waited_s=warm.waited_s if warm and active else 0.0,
                           warming_eta_s=warm.eta_s if warm and active else None,
                           refill_latency_s=self._refills.latency.estimate_s)

    @property
    def contract(self) -> Optional[Dict[str, Any]]:
        """What the last connect answer declared, as 0.20.0: {"action", "observation", "embodiment"}; None before."""
        return None if self._worker.declared is None else dict(self._worker.declared)

    @property
    def session(self) -> str:
        return self._worker.session


def _open_recording(record: Any) -> Any:
    from .recording.run import RunRecording  # only a recorded run imports it (and needs [record])

    return RunRecording.open(record)


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
    and the first request admits the session. Use it as a context manager. A `base_url` of
    ws://host:port (or wss://) is an openpi policy server, and `model` a model card: a shipped
    one's name (`pi05_droid`) or a card file (README, "An openpi server on another machine")."""
    link = open_link(model, api_key=api_key, base_url=base_url, timeout_s=timeout_s, embodiment=embodiment,
                     expect=expect)
    return Policy(model, link=link, timeout_s=timeout_s,
                  startup_timeout_s=startup_timeout_s, on_warming=on_warming, validate=validate,
                  seed=seed, control_hz=control_hz)
