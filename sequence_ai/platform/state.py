"""What a platform process knows: who the worker is now, the lease, the cold-start timer, the
armed faults and what has been observed (requests, stats, client reports).

Each process (the gateway's, the worker's: worker_process.py) has one, used from its own asyncio
loop only. The gateway's holds the worker's identity as connect hands it out, the cold start (the
worker gets a copy) and the faults of the gateway's routes; the worker's holds the faults of its
routes, its request log, statistics and episodes.
"""

from __future__ import annotations

import collections
import math
import secrets
import time
from dataclasses import dataclass
from typing import Any, Callable, Deque, Dict, Optional

from .faults import FaultBoard
from .keystore import KeyStore

DEFAULT_LEASE_TTL_S = 300.0
EPISODE_IDLE_S = 300.0  # docs/PROTOCOL.md §5.3: the worker ends an episode after 5 idle minutes
REPORTS_KEPT = 1024  # client telemetry reports the admin API can show
EPISODES_KEPT = 4096  # episodes remembered at once, however many ids callers make up
ACT_LOG_SIZE = 2000  # /act requests the admin API can show (a 1000-action benchmark run sends ~130 each)


def new_direct_secret() -> str:
    return "dsk_" + secrets.token_urlsafe(24)


@dataclass
class WorkerIdentity:
    """What connect hands out: where the worker is, its pin, its bearer secret and generation."""

    url: str
    fingerprint: str
    secret: str
    epoch: int


@dataclass
class ColdStart:
    until: float  # monotonic time the worker becomes ready
    eta_s: float  # how long a load takes (docs/PROTOCOL.md §4.4: an estimate, not a countdown)
    form: str  # "detail" (body form B) or "code" (body form C)
    job_id: str
    ready_status: int  # 200: /v1/act/ready answers {"ready": false} (docs/PROTOCOL.md §4.4); 503: warming body

    def left_s(self) -> float:
        return max(0.0, self.until - time.monotonic())


class PlatformState:
    def __init__(self, keystore: Optional[KeyStore], admin_token: str, policy: Callable[..., Any], policy_name: str,
                 lease_ttl_s: float = DEFAULT_LEASE_TTL_S):
        self.keystore = keystore
        self.admin_token = admin_token
        self.policy = policy
        self.policy_name = policy_name
        self.faults = FaultBoard()
        self.worker: Optional[WorkerIdentity] = None
        self.default_lease_ttl_s = lease_ttl_s
        self.lease_ttl_s = lease_ttl_s
        self.cold_start: Optional[ColdStart] = None
        self.worker_down = False
        self.act_log: Deque[Dict[str, Any]] = collections.deque(maxlen=ACT_LOG_SIZE)
        self.reports: Deque[str] = collections.deque(maxlen=REPORTS_KEPT)  # each one's JSON text
        self.stats: Dict[str, Dict[str, Dict[str, int]]] = {}
        # Requests that arrived, per "app route", counted before they are answered: a test waits
        # on it for a request to be in progress (stats count answers).
        self.arrivals: Dict[str, int] = {}
        self.episodes: Dict[str, float] = {}  # episode id -> last act (monotonic)
        # The gateway's line to the worker process (worker_process.WorkerLink); None when the
        # gateway app runs without one (in-process tests): its admin API then keeps every fault.
        self.worker_link: Any = None

    # -- cold start -------------------------------------------------------------------------
    def start_cold(self, seconds: float, eta_s: Optional[float] = None, form: str = "detail",
                   ready_status: int = 200) -> ColdStart:
        self.cold_start = ColdStart(time.monotonic() + seconds, float(eta_s if eta_s is not None else seconds),
                                    form, "wj_" + secrets.token_hex(4), ready_status)
        return self.cold_start

    def warming_left_s(self) -> float:
        if self.cold_start is None:
            return 0.0
        left = self.cold_start.left_s()
        if left <= 0:
            self.cold_start = None
        return left

    def warming_body(self) -> Dict[str, Any]:
        """503 body while warming, in the selected form (docs/PROTOCOL.md §3.2 B or C)."""
        cold = self.cold_start
        assert cold is not None
        retry = max(1, math.ceil(cold.left_s()))
        message = f"model is loading; about {retry}s to go (a load takes ~{cold.eta_s:g}s)"
        if cold.form == "code":
            return {"code": "warming", "message": message, "retry_after_s": retry, "warming_job_id": cold.job_id}
        return {"detail": {"status": "warming_up", "retry_after_s": retry, "warming_job_id": cold.job_id,
                           "message": message}}

    # -- worker identity --------------------------------------------------------------------
    def rotate_secret(self) -> WorkerIdentity:
        assert self.worker is not None
        self.worker.secret = new_direct_secret()
        self.worker.epoch += 1
        return self.worker

    # -- observation ------------------------------------------------------------------------
    def count(self, app: str, route: str, status: int) -> None:
        per_route = self.stats.setdefault(app, {}).setdefault(route, {})
        per_route[str(status)] = per_route.get(str(status), 0) + 1

    def arrived(self, app: str, route: str) -> None:
        key = f"{app} {route}"
        self.arrivals[key] = self.arrivals.get(key, 0) + 1

    def touch_episode(self, episode_id: Optional[str]) -> None:
        now = time.monotonic()
        if episode_id:
            self.episodes.pop(episode_id, None)  # to the end: the dict stays in order of last use
            self.episodes[episode_id] = now
        if len(self.episodes) > 64:
            self.episodes = {k: t for k, t in self.episodes.items() if now - t < EPISODE_IDLE_S}
        while len(self.episodes) > EPISODES_KEPT:  # the longest idle first
            del self.episodes[next(iter(self.episodes))]

    def reset(self) -> None:
        """Back to a fresh start, keeping the worker's identity and the keys."""
        self.faults.clear()
        self.cold_start = None
        self.lease_ttl_s = self.default_lease_ttl_s
        self.act_log.clear()
        self.reports.clear()
        self.stats.clear()
        self.arrivals.clear()
        self.episodes.clear()
