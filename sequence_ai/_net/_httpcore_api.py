"""The parts of httpcore the gateway transport builds on (`_httpx_gateway.py`), on every httpcore
from 0.14 to 1.x: httpx 0.22 with httpcore 0.14 (what Ubuntu 22.04, ROS 2 Humble, installs through
rosdep) up to the newest releases.

httpcore 0.14 keeps its network backend classes under `httpcore.backends` (later releases export
them at the top), and its backends' `connect_tcp` takes no `socket_options`.
"""

from __future__ import annotations

from typing import Any, Dict

import httpcore

try:
    from httpcore import NetworkBackend, NetworkStream, SyncBackend
except ImportError:  # httpcore 0.14-0.16: the same classes, not yet exported at the top
    try:
        from httpcore.backends.base import NetworkBackend, NetworkStream  # type: ignore[no-redef]
        from httpcore.backends.sync import SyncBackend  # type: ignore[no-redef]
    except ImportError:  # before 0.14: another API altogether
        raise ImportError(f"the client needs httpx 0.22 or newer, with httpcore 0.14 or newer; this Python has "
                          f"httpcore {getattr(httpcore, '__version__', '(version unknown)')}") from None

__all__ = ["NetworkBackend", "NetworkStream", "SyncBackend", "connect_options"]


def connect_options(socket_options: Any) -> Dict[str, Any]:
    """The keywords to pass on to the inner backend's connect: `socket_options` only when httpcore
    gave some (those before 0.17 give none, and their backends take none)."""
    return {} if socket_options is None else {"socket_options": socket_options}
