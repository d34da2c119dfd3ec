"""`record_dir`: one MCAP file per goal (docs/RECORDING.md), off when the parameter is empty.

The client's run() writes what the model saw and what the arm got (`record=` a Recorder this
module opens); the node adds what only it knows: its action feedback, the hold of a run that
completed (the client holds only on an early ending), and its own RunOutcome message (the reason
as the node reports it — canceled, stale_input, estop — its message, held, the final
instruction). The file is finished on a thread of its own, so a slow disk never delays the goal's
result. A write error (a full disk) stops the file, never the goal: it is logged at ERROR once,
when it happens, and the goal's RunOutcome carries it (`recording_error`) when it came before
the goal ended.

    recordings = GoalRecordings.for_node(config, model, node_name, log_error)   # None: record_dir empty
    recorder = recordings.open(goal_id)          # None if the file cannot be created (logged)
    policy.run(..., record=recorder)
    recorder.feedback(progress)                  # from the feedback timer
    recordings.finish(recorder, outcome_msg)     # after the outcome is published
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, Callable, List, Optional, Sequence

from ..parameters import ConfigError

__all__ = ["GoalRecordings"]

CLOSE_WAIT_S = 3.0  # shutdown waits this long for files still being finished (launch escalates at 5 s)


class GoalRecordings:
    """One MCAP recording per goal in `folder`: opened as the goal's run starts, finished with its
    outcome on a thread of its own."""

    def __init__(self, folder: Path, *, model: str, joint_names: Sequence[str], camera_views: Sequence[str],
                 node: str, log_error: Callable[[str], None] = print):
        self.folder = folder
        self._model, self._joint_names, self._views, self._node = model, tuple(joint_names), tuple(camera_views), node
        self._log_error = log_error
        self._lock = threading.Lock()
        self._open: List[Any] = []  # recorders of goals not finished yet
        self._closing: List[threading.Thread] = []

    @classmethod
    def for_node(cls, config: Any, model: Any, node: str, log_error: Callable[[str], None]) -> Optional[GoalRecordings]:
        """From the node's parameters: the joint states are named after joint_names, then
        `gripper` (in the model's units, 0 open to 1 closed) when the model reads one."""
        gripper = ("gripper",) if model.state_layout and model.state_layout.get("gripper") else ()
        return cls.from_parameter(config.record_dir, model=model.short_id, joint_names=tuple(config.joint_names) + gripper,
                                  camera_views=config.camera_views, node=node, log_error=log_error)

    @classmethod
    def from_parameter(cls, record_dir: str, **kwargs: Any) -> Optional[GoalRecordings]:
        """None for an empty record_dir; else the folder, created if missing. A folder that cannot
        be written, a value of only blanks, a `~user` with no home, or a missing [record] extra is a
        ConfigError naming it (the node does not start)."""
        if not record_dir:
            return None
        if not record_dir.strip():
            raise ConfigError(f"record_dir {record_dir!r} is only blanks; leave it empty for no recording")
        try:
            from sequence_ai.recording.sink import require_mcap

            require_mcap()
        except ImportError as exc:
            raise ConfigError(f"record_dir is set but {exc}") from None
        try:
            folder = Path(record_dir).expanduser().absolute()
        except RuntimeError:  # pathlib: "Could not determine home directory."
            raise ConfigError(f"record_dir {record_dir!r}: {record_dir.split('/')[0]} names no user's home") from None
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ConfigError(f"record_dir {record_dir!r} cannot be created: {exc.strerror}") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ConfigError(f"record_dir {record_dir!r} is not writable")
        return cls(folder, **kwargs)

    def open(self, goal_id: str) -> Any:
        """A Recorder for this goal's file, `<UTC time>-<goal id>.mcap`; None (logged) when the file
        cannot be created — the goal runs unrecorded, as it goes on when a write fails later."""
        from sequence_ai.recording import Recorder

        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        path = self.folder / f"{stamp}-{goal_id[:8]}.mcap"

        def stopped(error: str) -> None:  # once, on the recorder's writer thread (or describe's)
            kept = "" if "while it was being written" in error else ", the file keeps what was written before"
            self._log_error(f"the recording {path} stopped writing ({error}); the goal goes on{kept}")

        try:
            recorder = Recorder(path, joint_names=self._joint_names, camera_views=self._views,
                                extra={"node": self._node, "goal_id": goal_id, "model": self._model},
                                on_error=stopped)
        except Exception as exc:  # never a reason for the goal not to run, nor to skip its hold
            why = exc.strerror if isinstance(exc, OSError) and exc.strerror else f"{type(exc).__name__}: {exc}"
            self._log_error(f"this goal is not recorded: {path} cannot be created ({why})")
            return None
        with self._lock:
            self._open.append(recorder)
        return recorder

    @staticmethod
    def describe(msg: Any, recorder: Any) -> None:
        """The goal's RunOutcome message names its file and what stopped it (so far): a file
        deleted (or its record_dir) while the goal ran says so."""
        msg.recording = recorder.path
        msg.recording_error = recorder.check_file() or msg.recording_error

    def finish(self, recorder: Any, outcome: Any) -> Optional[threading.Thread]:
        """Write the node's outcome message to `recorder` and finish its file on a thread of its own."""
        with self._lock:
            if recorder not in self._open:
                return None  # None, or finished already: one outcome per goal
            self._open.remove(recorder)
        recorder.outcome(outcome)
        closing = threading.Thread(target=recorder.close, name="sequence-ai-recording-close", daemon=True)
        closing.start()
        with self._lock:
            self._closing = [t for t in self._closing if t.is_alive()] + [closing]
        return closing

    def close(self) -> None:
        """Shutdown: finish the files of goals still open, and wait (bounded) for those being finished."""
        with self._lock:
            still_open, self._open = self._open, []
            closing = list(self._closing)
        deadline = time.monotonic() + CLOSE_WAIT_S
        for recorder in still_open:
            recorder.close(timeout_s=max(0.0, deadline - time.monotonic()))
        for thread in closing:
            thread.join(max(0.0, deadline - time.monotonic()))
