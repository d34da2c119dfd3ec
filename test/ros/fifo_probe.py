"""Whether this user may run a thread under SCHED_FIFO, asked on a throw-away thread."""

from __future__ import annotations

import os
import threading


def in_thread(fn):
    """fn's value, computed on a throw-away thread (this one is left as it was)."""
    result: list = []
    thread = threading.Thread(target=lambda: result.append(fn()))
    thread.start()
    thread.join(10.0)
    return result[0]


def fifo_permitted() -> bool:
    def attempt() -> bool:
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(1))
            return True
        except OSError:
            return False

    return in_thread(attempt)
