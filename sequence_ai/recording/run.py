"""`run(..., record=...)`: the control loop's moments, turned into Recorder events.

A run observer (`sequence_ai._loop._observers`): the loop calls these on its own thread at the
moments that matter — a request sent, an answer installed or failed, an action played, a stall,
a hold, the end — and `instruction()` comes from whichever thread calls set_instruction(). Each
costs the loop a Recorder event (a deque append); what the loop objects hold is read here, never
changed.

`record` is a path (this run opens the file, writes the outcome and closes it when the run ends)
or a `Recorder` the caller keeps: the run writes everything up to its end, and the outcome and
close() are the caller's (the ROS node writes its own RunOutcome message, whose reason says
canceled or stale_input where the client saw an interrupt, and adds feedback).

A recording that stopped writing (a full disk) never stops the run; the run's outcome carries the
error (`recording_error`), and a run that opened the file warns when it ends, on its caller's
thread (a caller's own Recorder reports to its owner: `on_error`, `error`, else the log).
"""

from __future__ import annotations

import dataclasses
import functools
import logging
import os
import time
from typing import Any, Callable, Optional, Sequence, TypeVar

from .._console import warn_user
from .._loop._observers import RunObserver
from .messages import field_of
from .recorder import Recorder

__all__ = ["RunRecording"]

log = logging.getLogger("sequence_ai.recording")
CLOSE_WAIT_S = 10.0  # run() returns after this even if the disk is still behind (the file finishes later)
F = TypeVar("F", bound=Callable[..., None])


def _never_raises(hook: F) -> F:
    """A loop hook: a recording problem is logged (once per run) and never reaches the loop."""

    @functools.wraps(hook)
    def guarded(self: RunRecording, *args: Any, **kwargs: Any) -> None:
        try:
            hook(self, *args, **kwargs)
        except Exception as exc:
            if not self._failed:
                self._failed = True
                log.error("recording the run's %s failed (%s: %s); the run goes on", hook.__name__,
                          type(exc).__name__, exc)

    return guarded  # type: ignore[return-value]


class RunRecording(RunObserver):
    def __init__(self, recorder: Recorder, *, owned: bool):
        self.recorder = recorder
        self.owned = owned
        self._closed = False
        self._failed = False

    @classmethod
    def open(cls, target: Any) -> RunRecording:
        """From run()'s `record` argument. Opens the file (OSError naming it if it cannot be
        created) and needs the [record] extra (ImportError naming it) before the run starts."""
        if isinstance(target, Recorder):
            return cls(target, owned=False)
        if isinstance(target, (str, os.PathLike)):
            return cls(Recorder(target), owned=True)
        raise TypeError(f"record must be a file path or a sequence_ai.recording.Recorder "
                        f"(got {type(target).__name__})")

    @property
    def frames_dropped(self) -> int:
        return self.recorder.frames_dropped

    # -- the loop's moments ------------------------------------------------------------------

    @_never_raises
    def started(self, *, model: str, episode_id: str, control_hz: Optional[float],
                instruction: Optional[str]) -> None:
        self.recorder.run_started(model=model, episode_id=episode_id, control_hz=control_hz)
        if instruction is not None:
            self.recorder.instruction(instruction)

    @_never_raises
    def sent(self, flight: Any) -> None:
        """A request went out: `flight` is the loop's InFlight (rid, observation and instruction as
        sent, times)."""
        rid, observation = flight.trace.rid, flight.observation
        sent_at = flight.fetch.started_at
        self.recorder.observation(rid, observation, t=flight.observed_at)
        self.recorder.request(rid, flight.instruction, actions_at_submit=flight.actions_at_submit, t=sent_at,
                              views=_views(observation))

    @_never_raises
    def answered(self, flight: Any, prediction: Any, rows: Sequence[Any]) -> None:
        """The answer to `flight` was installed: `rows` are the stitched rows the loop will play."""
        chunk = prediction.action_chunk
        fetch = flight.fetch
        arrived = fetch.finished_at if fetch.finished_at is not None else time.monotonic()
        first_row = getattr(rows[0], "row", 0) if rows else 0
        self.recorder.answer(flight.trace.rid, chunk.steps, sent_t=fetch.started_at, t=arrived,
                             latency_s=arrived - fetch.started_at, action_space=chunk.action_space,
                             control_hz=chunk.control_frequency_hz, first_row=first_row, rows_installed=len(rows),
                             warnings=prediction.warnings)

    @_never_raises
    def failed(self, flight: Any, error: BaseException) -> None:
        """The request `flight` failed (the loop retries or ends the run; either way, it is recorded)."""
        fetch = flight.fetch
        arrived = fetch.finished_at if fetch.finished_at is not None else time.monotonic()
        self.recorder.answer(flight.trace.rid, [], sent_t=fetch.started_at, t=arrived,
                             latency_s=arrived - fetch.started_at, error=f"{type(error).__name__}: {error}")

    @_never_raises
    def played(self, action: Any) -> None:
        """`action` went to act() and act() has returned (the command is stamped now: the node's
        act() publishes on its tick, and the LeRobot export pairs each action with the command
        published nearest it); a stitched Action knows its request and row, and how old and how
        late it was when handed over."""
        self.recorder.command(action, rid=getattr(action, "rid", None) or "", row_index=getattr(action, "row", 0),
                              age_s=getattr(action, "age_s", None), lateness_s=getattr(action, "lateness_s", None))

    @_never_raises
    def stalled(self) -> None:
        self.recorder.hold("underrun")  # no command goes out until the chunk arrives

    @_never_raises
    def held(self, reason: str) -> None:
        self.recorder.hold(reason)

    @_never_raises
    def instruction(self, text: str) -> None:
        self.recorder.instruction(text)

    def ended(self, outcome: Any, *, held: bool) -> Any:
        """The run's outcome, and the file finished, if this run opened it (else the caller's).
        Returns the outcome with what the recording kept: frames dropped, and the write error
        (warned about here when the file is this run's, on the run's thread, so the warning
        points at the caller's run())."""
        try:
            self.recorder.check_file()  # a file deleted mid-run says so (writes to it went nowhere)
            if self.owned:
                self.recorder.outcome(outcome, held=held)
                self.close()
            else:
                self.recorder.run_ended(outcome)
        except Exception as exc:
            log.error("finishing the recording failed (%s: %s)", type(exc).__name__, exc)
        error = self.recorder.error or ""
        if error and self.owned:
            where = self.recorder.path or "the recording's stream"
            warn_user(f"the recording {where} stopped writing ({error}); it holds the run up to then, "
                      "and the run went on")
        return dataclasses.replace(outcome, recording_frames_dropped=self.frames_dropped, recording_error=error)

    def close(self) -> None:
        if self.owned and not self._closed:
            self._closed = True
            self.recorder.close(timeout_s=CLOSE_WAIT_S)


def _views(observation: Any) -> Sequence[str]:
    return tuple(str(field_of(frame, "view") or "") for frame in field_of(observation, "images") or ())
