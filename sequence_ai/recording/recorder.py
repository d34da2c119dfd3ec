"""`Recorder`: the events of one run, written to an MCAP file that Foxglove and rosbag2 open.

    with Recorder("run.mcap") as rec:
        rec.run_started(model="pi05-droid", episode_id=episode)
        rec.observation(rid, wire_observation)        # the frames and joints as sent
        rec.request(rid, instruction, actions_at_submit=0)
        rec.answer(rid, steps, sent_t=..., latency_s=..., action_space=..., control_hz=...)
        rec.command(row, rid=rid, row_index=0)
        rec.hold("underrun")
        rec.outcome(run_outcome)

Each event method only stamps the time and queues its arguments (see sink.py): building and
encoding the message happen on the recorder's own thread, so the control loop pays a deque
append per event. An event method never raises: a recording problem is logged and reported in
`stats()` and `error`, never turned into a stopped arm. A write error (a full disk) stops the
writing; `on_error(text)` hears of it once, from the writer's thread (without one, it is logged at
ERROR).

The file is opened without following a symbolic link (`path` naming a link is refused): a
recording overwrites only a file of its own.

Time: every `t` is seconds on `time.monotonic()` (the control loop's clock; default: now). The
file's log times are UNIX-epoch nanoseconds: one `time.time_ns()` reading taken when the
Recorder is created, advanced by the monotonic clock, so they never go backwards within a file
and still line up with other logs of the same machine.
"""

from __future__ import annotations

import json
import logging
import math
import os
import time
from typing import IO, Any, Callable, Mapping, Optional, Sequence, Union

from . import messages as m
from .file import RecordingFile
from .sink import STATS_METADATA, RecordingStats, RecordSink

__all__ = ["Recorder"]

log = logging.getLogger("sequence_ai.recording")


class Recorder:
    """Records one run to `path` (or to an open binary `stream`). Use it as a context manager, or
    call close(); a file that was never closed still reads back up to its last complete chunk."""

    def __init__(self, path: Union[str, os.PathLike, None] = None, *, stream: Optional[IO[bytes]] = None,
                 max_pending_bytes: int = 32 << 20, flush_interval_s: float = 1.0, chunk_size: int = 1 << 20,
                 compression: str = "zstd", joint_names: Sequence[str] = (), camera_views: Sequence[str] = (),
                 extra: Optional[Mapping[str, Any]] = None, on_error: Optional[Callable[[str], None]] = None):
        if (path is None) == (stream is None):
            raise ValueError("Recorder needs a path or a stream (one of them)")
        self.path = None if path is None else str(path)
        self._mono0 = time.monotonic()
        self._wall0_ns = time.time_ns()
        opened: Any = RecordingFile(self.path) if stream is None else stream
        try:
            self._sink = RecordSink(opened, max_pending_bytes=max_pending_bytes, chunk_size=chunk_size,
                                    flush_interval_s=flush_interval_s, compression=compression,
                                    close_stream=stream is None, on_error=on_error)
        except OSError as exc:  # the file's first bytes did not fit (a full disk): name the file
            if stream is None:
                opened.close()
                raise OSError(exc.errno, exc.strerror or str(exc), self.path) from None
            raise
        except BaseException:
            if stream is None:
                opened.close()
            raise
        # run_started()'s defaults: the caller that knows them (the ROS node) sets them here
        self._joint_names, self._views, self._extra = tuple(joint_names), tuple(camera_views), dict(extra or {})
        self._actions = 0
        self._warned = False
        self._run_outcome: Any = None  # run_ended()

    # -- context manager -----------------------------------------------------------------------

    def __enter__(self) -> Recorder:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def close(self, timeout_s: Optional[float] = None) -> RecordingStats:
        """Write what is queued and finish the file. Idempotent."""
        if not self._sink.closed:
            self._sink.put_metadata(STATS_METADATA, self._sink.stats_strings)
        return self._sink.close(timeout_s)

    def stats(self) -> RecordingStats:
        return self._sink.stats()

    @property
    def error(self) -> Optional[str]:
        """The first write error ("OSError: [Errno 28] No space left on device"), else None."""
        return self._sink.error

    def check_file(self) -> Optional[str]:
        """`error`, after checking that the file is still where it was opened: a file deleted (or
        replaced) while being written stops the recording, and that is its error (`on_error` hears
        of it once). The writer also checks at each flush."""
        return self._sink.check_stream()

    @property
    def frames_dropped(self) -> int:
        return self._sink.frames_dropped

    # -- time ----------------------------------------------------------------------------------

    def stamp_ns(self, t: Optional[float] = None) -> int:
        """UNIX-epoch ns for monotonic time `t` (now if None)."""
        return self._wall0_ns + round(((time.monotonic() if t is None else t) - self._mono0) * 1e9)

    # -- events ----------------------------------------------------------------------------------

    def run_started(self, *, model: str, episode_id: str = "", control_hz: Optional[float] = None,
                    joint_names: Sequence[str] = (), camera_views: Sequence[str] = (),
                    extra: Optional[Mapping[str, Any]] = None, t: Optional[float] = None) -> None:
        """Names the joint states' joints (`joint_names`, in the order of joint_positions then
        gripper); anything not given falls back to what the Recorder was created with."""
        self._joint_names = tuple(joint_names) or self._joint_names
        self._queue(m.run_started, self.stamp_ns(t), model, episode_id, control_hz, self._joint_names,
                    tuple(camera_views) or self._views,
                    json.dumps({**self._extra, **(extra or {})}, default=str, sort_keys=True))

    def instruction(self, text: str, t: Optional[float] = None) -> None:
        """The instruction was changed (set_instruction): when, and to what."""
        self._queue(m.instruction, self.stamp_ns(t), text)

    def observation(self, rid: str, observation: Any, t: Optional[float] = None) -> None:
        """What request `rid` sent: an Observation, or its wire form (`images` with base64 or
        bytes `data`, `proprioception`). Read on the recorder's thread, so it must not change
        after (the client never changes one it sent). The frames may be dropped when the disk
        falls behind; the joint state never is."""
        if self._sink.closed:
            return
        try:
            log_ns = self.stamp_ns(t)
            images = m.field_of(observation, "images") or ()
            if images:
                nbytes = sum(len(m.field_of(frame, "data") or b"") for frame in images)
                self._sink.put_frames(m.frames, (log_ns, tuple(images)), nbytes, len(images))
            proprioception = m.field_of(observation, "proprioception")
            if proprioception:
                self._sink.put(m.joint_state, log_ns, proprioception, self._joint_names)
        except Exception as exc:
            self._failed(exc)

    def request(self, rid: str, instruction: Optional[str], *, actions_at_submit: int = 0, episode_id: str = "",
                views: Sequence[str] = (), t: Optional[float] = None) -> None:
        self._queue(m.request, self.stamp_ns(t), rid, instruction or "", episode_id, actions_at_submit, tuple(views))

    def answer(self, rid: str, steps: Sequence[Sequence[float]], *, sent_t: float, latency_s: float,
               action_space: str = "", control_hz: float = math.nan, first_row: int = 0,
               rows_installed: Optional[int] = None, warnings: Sequence[str] = (), error: str = "",
               t: Optional[float] = None) -> None:
        """The answer to `rid` arrived (or, with `error`, the request failed)."""
        installed = len(steps) - first_row if rows_installed is None else rows_installed
        self._queue(m.answer, self.stamp_ns(t), self.stamp_ns(sent_t), rid, steps, latency_s, action_space,
                    control_hz, first_row, installed, tuple(warnings), error)

    def command(self, row: Sequence[float], *, rid: str = "", row_index: int = 0, age_s: Optional[float] = None,
                lateness_s: Optional[float] = None, t: Optional[float] = None) -> None:
        """One action handed to the robot: row `row_index` of the chunk that answered `rid`; its age
        (seconds from its chunk's observation to act()) and lateness (past the moment the row was
        computed for), where known."""
        self._actions += 1
        self._queue(m.command, self.stamp_ns(t), tuple(row), rid, row_index, self._actions, age_s, lateness_s)

    def hold(self, reason: str, t: Optional[float] = None) -> None:
        self._queue(m.hold, self.stamp_ns(t), reason, self._actions)

    def arm_command(self, names: Sequence[str], values: Sequence[float], *, velocity: bool = False,
                    t: Optional[float] = None) -> None:
        """A command as published to the robot (the ROS node: each command and hold on its command
        topic), in joint units: positions, or velocities with `velocity`."""
        self._queue(m.arm_command, self.stamp_ns(t), tuple(names), tuple(values), velocity)

    def feedback(self, progress: Any, t: Optional[float] = None) -> None:
        """A RunProgress (or anything with its fields), e.g. each action-feedback message."""
        self._queue(m.progress, self.stamp_ns(t), m.progress_fields(progress))

    def run_ended(self, outcome: Any) -> None:
        """The client's RunOutcome of a run recorded into this Recorder by run(record=...), which
        leaves the outcome to the Recorder's owner. Writes nothing: an outcome written later
        without the actions' freshness (the ROS node's message) takes it from this one."""
        self._run_outcome = outcome

    def outcome(self, outcome: Any, *, message: str = "", held: Optional[bool] = None,
                final_instruction: Optional[str] = None, t: Optional[float] = None) -> None:
        """How the run ended: a RunOutcome, or the node's RunOutcome message (anything with their
        fields); also the file's `sequence_ai.outcome` metadata. `held` defaults to the
        outcome's own, else "every ending but completed". The frame counts are the recording's own."""
        fields = m.outcome_fields(outcome, message, held, final_instruction, self._sink.frames_recorded,
                                  self._sink.frames_dropped)
        for name in m.FRESHNESS:  # the node's message does not carry them: the client's outcome does
            if m.known(fields[name]) is None:
                fields[name] = getattr(self._run_outcome, name, None)
        self._queue(m.outcome, self.stamp_ns(t), fields)
        if not self._sink.closed:
            self._sink.put_metadata("sequence_ai.outcome", lambda: {k: "" if v is None else str(v) for k, v in fields.items()})

    # -- internals -------------------------------------------------------------------------------

    def _queue(self, build: Any, *args: Any) -> None:
        if self._sink.closed:
            return  # nothing drains the queue any more
        try:
            self._sink.put(build, *args)
        except Exception as exc:
            self._failed(exc)

    def _failed(self, exc: Exception) -> None:
        if not self._warned:
            self._warned = True
            log.error("recording an event failed (%s: %s); the run goes on", type(exc).__name__, exc)
