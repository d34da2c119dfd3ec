"""The caller's episode ids and the worker-side ids they are sent as.

A worker keeps per-episode state under the id it is sent. A new worker (a reconnect, a new lease
epoch) does not carry the old one's state over, so every episode in progress then gets a fresh
worker-side id, counted and warned about, instead of a state the new worker never had.
"""

from __future__ import annotations

import uuid
import warnings
from typing import Dict

__all__ = ["EpisodeMap"]


class EpisodeMap:
    """Caller's episode id -> worker-side id; the worker connection's lock guards it."""

    def __init__(self) -> None:
        self._ids: Dict[str, str] = {}
        self.resets = 0  # worker changes that remapped episodes in progress

    def worker_id(self, caller_id: str) -> str:
        return self._ids.setdefault(caller_id, caller_id)

    def end(self, caller_id: str) -> str:
        """The worker-side id of an episode that ends; it is forgotten."""
        return self._ids.pop(caller_id, caller_id)

    def remap(self, stacklevel: int) -> None:
        """The worker changed: fresh worker-side ids for the episodes in progress, and a warning
        (`stacklevel` as `warnings.warn` counts it from here)."""
        if not self._ids:
            return
        self._ids = {caller: uuid.uuid4().hex for caller in self._ids}
        self.resets += 1
        warnings.warn("the worker changed mid-episode; its per-episode state did not carry over",
                      UserWarning, stacklevel=stacklevel)
