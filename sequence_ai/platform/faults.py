"""Scripted faults: what the next requests should suffer.

A fault is armed with a kind and its parameters, and fires on requests of its route:
  - `count` N: the next N matching requests, then it disarms itself;
  - `fraction` f (with `seed`): each matching request with probability f, reproducibly;
  - neither: every matching request until cleared.
Kinds that are one-off actions (rotate_secret, restart_worker, worker_down, ...) are not armed
here; the admin API performs them at once (see admin.py).
"""

from __future__ import annotations

import itertools
import random
import threading
from dataclasses import dataclass, field
from typing import Any, Dict, List, Optional

# Faults that fire per request, and the routes where each one is honoured.
REQUEST_FAULTS: Dict[str, frozenset] = {
    "latency": frozenset({"act", "connect", "ready"}),
    "busy": frozenset({"act", "connect"}),
    "status": frozenset({"act", "connect", "ready", "episode_end", "ping"}),
    "drop": frozenset({"act", "connect"}),
    "malformed_json": frozenset({"act", "connect"}),
    "nan_actions": frozenset({"act"}),
    "inf_actions": frozenset({"act"}),
    "wrong_action_dim": frozenset({"act"}),
    "bad_fingerprint": frozenset({"connect"}),
}


@dataclass
class ArmedFault:
    id: int
    kind: str
    route: str
    params: Dict[str, Any]
    count: Optional[int] = None  # remaining firings; None = unlimited
    fraction: Optional[float] = None
    seed: Optional[int] = None
    fired: int = 0
    _rng: random.Random = field(default_factory=random.Random, repr=False)

    def as_dict(self) -> Dict[str, Any]:
        return {"id": self.id, "kind": self.kind, "route": self.route, "params": dict(self.params),
                "count_left": self.count, "fraction": self.fraction, "seed": self.seed, "fired": self.fired}


class FaultBoard:
    """The armed faults of one process (the worker's board holds those of its routes)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._faults: List[ArmedFault] = []
        self._ids = itertools.count(1)

    def next_id(self) -> int:
        return next(self._ids)

    def arm(self, kind: str, *, route: str = "act", count: Optional[int] = None,
            fraction: Optional[float] = None, seed: Optional[int] = None, fault_id: Optional[int] = None,
            **params: Any) -> ArmedFault:
        if kind not in REQUEST_FAULTS:
            raise ValueError(f"unknown fault kind {kind!r}; request faults are: {', '.join(sorted(REQUEST_FAULTS))}")
        if route not in REQUEST_FAULTS[kind]:
            raise ValueError(f"fault {kind!r} is not honoured on route {route!r}; "
                             f"it is on: {', '.join(sorted(REQUEST_FAULTS[kind]))}")
        # The gateway numbers the faults it hands to the worker's board, so ids never collide.
        fault = ArmedFault(fault_id if fault_id is not None else next(self._ids), kind, route, params, count,
                           fraction, seed)
        fault._rng.seed(seed)
        with self._lock:
            self._faults.append(fault)
        return fault

    def take(self, kind: str, route: str) -> Optional[Dict[str, Any]]:
        """Params of the first armed `kind` fault on `route` that fires for this request, else None."""
        with self._lock:
            for fault in self._faults:
                if fault.kind != kind or fault.route != route:
                    continue
                if fault.fraction is not None and fault._rng.random() >= fault.fraction:
                    continue
                fault.fired += 1
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
                return dict(fault.params)
        return None

    def clear(self, kind: Optional[str] = None) -> int:
        with self._lock:
            before = len(self._faults)
            self._faults = [f for f in self._faults if kind is not None and f.kind != kind]
            return before - len(self._faults)

    def listing(self) -> List[Dict[str, Any]]:
        with self._lock:
            return [f.as_dict() for f in self._faults]
