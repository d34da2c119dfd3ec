"""`record_dir`: one MCAP file per goal (docs/RECORDING.md), off when the parameter is empty.

The client's run() writes what the model saw and what the arm got (`record=` a Recorder this
module opens); the node adds what only it knows: its action feedback, and its own RunOutcome
message (the reason as the node reports it — canceled, stale_input, estop — its message, held,
the final instruction). The file is finished on a thread of its own, so a slow disk never delays
the goal's result.

    recordings = GoalRecordings.from_parameter(config.record_dir, model=..., joint_names=..., views=..., node=...)
    recorder = recordings.open(goal_id)          # None when record_dir is empty
    policy.run(..., record=recorder)
    recordings.feedback(progress)                # from the feedback timer
    recordings.finish(outcome_msg)               # after the outcome is published
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any, List, Optional, Sequence

__all__ = ["GoalRecordings"]

CLOSE_WAIT_S = 10.0  # shutdown waits this long for files still being finished


class GoalRecordings:
    def __init__(self, folder: Path, *, model: str, joint_names: Sequence[str], camera_views: Sequence[str],
                 node: str):
        self.folder = folder
        self._model, self._joint_names, self._views, self._node = model, tuple(joint_names), tuple(camera_views), node
        self._lock = threading.Lock()
        self._current: Any = None
        self._closing: List[threading.Thread] = []

    @classmethod
    def from_parameter(cls, record_dir: str, **kwargs: Any) -> Optional[GoalRecordings]:
        """None for an empty record_dir; else the folder, created if missing. A folder that cannot
        be written, or a missing [record] extra, is a ValueError naming it (the node does not start)."""
        if not record_dir.strip():
            return None
        try:
            from sequence_ai.recording.sink import require_mcap

            require_mcap()
        except ImportError as exc:
            raise ValueError(f"record_dir is set but {exc}") from None
        folder = Path(record_dir).expanduser()
        try:
            folder.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise ValueError(f"record_dir {record_dir!r} cannot be created: {exc.strerror}") from None
        if not os.access(folder, os.W_OK | os.X_OK):
            raise ValueError(f"record_dir {record_dir!r} is not writable")
        return cls(folder, **kwargs)

    def open(self, goal_id: str) -> Any:
        """A Recorder for this goal's file: `<UTC time>-<goal id>.mcap`."""
        from sequence_ai.recording import Recorder

        stamp = time.strftime("%Y%m%d-%H%M%S", time.gmtime())
        path = self.folder / f"{stamp}-{goal_id[:8]}.mcap"
        recorder = Recorder(path, joint_names=self._joint_names, camera_views=self._views,
                            extra={"node": self._node, "goal_id": goal_id, "model": self._model})
        with self._lock:
            self._current = recorder
        return recorder

    @property
    def path(self) -> Optional[str]:
        """The file of the goal being recorded, if any."""
        current = self._current
        return None if current is None else current.path

    def feedback(self, progress: Any) -> None:
        current = self._current
        if current is not None:
            current.feedback(progress)

    def finish(self, outcome: Any) -> Optional[threading.Thread]:
        """Write the node's outcome message and finish the file on a thread of its own."""
        with self._lock:
            current, self._current = self._current, None
        if current is None:
            return None
        current.outcome(outcome)
        closing = threading.Thread(target=current.close, name="sequence-ai-recording-close", daemon=True)
        closing.start()
        self._closing = [t for t in self._closing if t.is_alive()] + [closing]
        return closing

    def close(self) -> None:
        """Shutdown: finish a goal still being recorded, and wait (bounded) for files being finished."""
        with self._lock:
            current, self._current = self._current, None
        if current is not None:
            current.close(timeout_s=CLOSE_WAIT_S)
        deadline = time.monotonic() + CLOSE_WAIT_S
        for closing in self._closing:
            closing.join(max(0.0, deadline - time.monotonic()))
