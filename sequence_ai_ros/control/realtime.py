"""Real-time scheduling for the node's two control threads (parameter `realtime_priority`).

The timer's thread (every tick) and the goal's thread (pop → validate → publish, on the tick) run
under SCHED_FIFO at `realtime_priority` when the OS allows it, as ros2_control's update loop
does: on a 2-core machine with camera streams, a DDS stack and the worker sharing the cores,
ordinary threads wait for a core now and then, and the command goes out late. The flag
SCHED_RESET_ON_FORK keeps threads they start (the client's refill and telemetry threads) at
ordinary priority. When the OS refuses (no rtprio limit for this user), the node says so once
and runs at ordinary priority. The default, `realtime_priority: 0`, asks for nothing: the goal's
thread also observes and encodes, and under FIFO it preempts ordinary processes (camera drivers)
on a small machine (docs/ROS.md).
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Optional, Tuple

__all__ = ["ControlPriority"]


class ControlPriority:
    """SCHED_FIFO at `realtime_priority` for the calling control thread (`apply`, or `raise_thread`
    until `restore`); after the OS refuses once it is never asked again."""

    def __init__(self, priority: int, warn: Callable[[str], None]):
        self.priority = int(priority)
        self._warn = warn
        self._lock = threading.Lock()
        self.refused: Optional[str] = None  # why the OS said no (then never asked again)

    def apply(self) -> bool:
        """Put the calling thread under SCHED_FIFO at the priority; False when not asked for or
        refused (one warning for the node's whole life)."""
        if self.priority <= 0 or self.refused is not None:
            return False
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO | os.SCHED_RESET_ON_FORK, os.sched_param(self.priority))
            return True
        except (OSError, AttributeError) as exc:
            with self._lock:
                first = self.refused is None
                self.refused = getattr(exc, "strerror", None) or str(exc)
            if first:
                self._warn(f"realtime_priority {self.priority}: SCHED_FIFO refused ({self.refused}); the control "
                           "threads run at ordinary priority. Allow it with an rtprio limit for this user "
                           "(/etc/security/limits.conf), or set realtime_priority to 0 to ask for nothing")
            return False

    def raise_thread(self) -> Optional[Tuple[int, Any]]:
        """The calling thread at the control priority until `restore`; returns what to restore
        (None when nothing changed). Never raises."""
        try:
            before = (os.sched_getscheduler(0), os.sched_getparam(0))
        except (OSError, AttributeError):
            return None
        return before if self.apply() else None

    def restore(self, before: Optional[Tuple[int, Any]]) -> None:
        if before is not None:
            try:
                os.sched_setscheduler(0, before[0], before[1])
            except OSError:
                pass
