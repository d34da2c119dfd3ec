"""The connection to an openpi policy server: what `WorkerConnection` is to a Sequences worker.

One `OpenpiConnection` per Policy, with the same face the refills use (`act`, `declared_action`,
`declared`, `connected`, `episode_resets`, `end_episode`, `close`): the loop above cannot tell which
server answers. `act()` is one request, bounded as a whole by its timeout, one at a time (the
server answers one request at a time anyway). The observation becomes the card's request
(`_openpi_frames`), and the answer the chunk the card declares, refused when it contradicts it.

A socket that broke is reopened — which reads the server's metadata again — and the request sent
again within its timeout; a late answer can never be read for another request (`_net._websocket`).
Before the first answer, a server that refuses connections is warming (`ServerNotUp`: the run's warm
wait and on_warming); after it, a restart is waited out within the request's timeout.
"""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any, Callable, Dict, Mapping, Optional

from .._cards import Card
from .._errors import SequencesError, Unavailable
from .._net._msgpack_numpy import FrameError, pack, unpack
from .._net._websocket import Cancelled, ConnectionLost, FrameRefused, PolicySocket, ServerNotUp
from .._waiting import wait_on
from ._act_request import Abandoned, ActTrace
from ._openpi_frames import chunk_answer, openpi_request

__all__ = ["OpenpiConnection", "api_key_header"]

MAX_RECONNECTS = 5
RECONNECT_PAUSE_S = 0.25


def api_key_header(api_key: Optional[str]) -> Dict[str, str]:
    """openpi's own client's header for a key (a proxy in front of the server checks it)."""
    return {"Authorization": f"Api-Key {api_key}"} if api_key else {}


class OpenpiConnection:
    max_in_flight = 1  # the server calls the policy one request at a time across all connections

    def __init__(self, *, url: str, card: Card, model: str, timeout_s: float, api_key: Optional[str] = None,
                 max_frame_bytes: Optional[int] = None):
        self.model = model
        self.card = card
        self.session = uuid.uuid4().hex
        self.embodiment: Optional[str] = None
        self.episode_resets = 0
        self.contract: Optional[Dict[str, Any]] = None
        self.declared_action: Dict[str, Any] = card.declared_action()
        self.declared: Optional[Dict[str, Any]] = None  # set when the server first answers the handshake
        self.metadata: Optional[Dict[str, Any]] = None  # the server's first frame, re-read on every connection
        self._timeout_s = timeout_s
        options = {} if max_frame_bytes is None else {"max_frame_bytes": max_frame_bytes}
        self.socket = PolicySocket(url, api_key_header(api_key), **options)
        self._lock = threading.Lock()
        self._served = False
        self._closed = False

    @property
    def connected(self) -> bool:
        return self.socket.connected

    @property
    def reconnects(self) -> int:
        return max(0, self.socket.opened - 1)

    def _open(self, timeout_s: float) -> None:
        """Connect and read the metadata; one that contradicts the card stops here, before any command."""
        frame = self.socket.open(timeout_s)
        try:
            metadata = unpack(frame)
        except FrameError as exc:
            self.socket.close()
            raise FrameRefused(f"the openpi server's metadata is malformed: {exc}") from None
        if not isinstance(metadata, dict):
            self.socket.close()
            raise FrameRefused(f"the openpi server's metadata is a {type(metadata).__name__}, not a map")
        width = metadata.get("action_dim")
        if isinstance(width, int) and not isinstance(width, bool) and width != self.card.action_dim:
            self.socket.close()
            raise SequencesError(f"the openpi server's metadata says action_dim {width} but model card "
                                 f"{self.card.name} declares {self.card.action_dim}; refusing to run it")
        self.metadata = metadata
        self.declared = {"action": dict(self.declared_action), "observation": None, "embodiment": None}

    def ready(self, timeout_s: float) -> bool:
        """True once a connection is open (opening one if needed); False while nothing listens."""
        with self._lock:
            if self.socket.connected:
                return True
            try:
                self._open(timeout_s)
            except ServerNotUp:
                return False
            return True

    def act(self, payload: Mapping[str, Any], *, rid: str, episode_id: Optional[str] = None,
            timeout_s: Optional[float] = None, cancelled: Callable[[], bool] = lambda: False,
            trace: Optional[ActTrace] = None, encoded: Optional[bytes] = None) -> Dict[str, Any]:
        """One request: `payload` is the /act body (its `observation` is read); returns the answer as
        a worker's /act answer. `timeout_s` (default: the connection's) bounds all of it."""
        trace = trace or ActTrace()
        trace.rid = rid
        budget = self._timeout_s if timeout_s is None else timeout_s
        deadline = time.monotonic() + budget
        frame = pack(openpi_request(self.card, payload.get("observation") or {}))
        failures = 0
        with self._lock:
            while True:
                if self._closed or cancelled():
                    raise Abandoned("request abandoned")
                left = deadline - time.monotonic()
                if left <= 0:
                    raise Unavailable(f"the openpi server did not answer within {budget:g}s", 503)
                try:
                    if not self.socket.connected:
                        started = time.monotonic()
                        try:
                            self._open(left)
                        finally:
                            trace.overhead_s += time.monotonic() - started
                        trace.first_after_connect = True
                    sent = time.monotonic()
                    answer = self.socket.exchange(frame, deadline - sent, cancelled)
                except Cancelled:
                    raise Abandoned("request abandoned") from None
                except (ConnectionLost, ServerNotUp) as exc:
                    if isinstance(exc, ServerNotUp) and not self._served:
                        raise  # not up yet: the warm wait before the first action decides (on_warming)
                    failures += 1
                    trace.reconnects += 1
                    if failures > MAX_RECONNECTS and not isinstance(exc, ServerNotUp):
                        raise Unavailable(f"{exc.message}; gave up after {failures - 1} reconnects", 503) from None
                    self._pause(min(RECONNECT_PAUSE_S * failures, 2.0), deadline, cancelled, trace)
                    continue
                trace.rtt_s = time.monotonic() - sent
                try:
                    decoded = unpack(answer)
                except FrameError as exc:
                    self.socket.close()
                    raise SequencesError(f"malformed answer from the openpi server: {exc}") from None
                result = chunk_answer(self.card, decoded, model=self.model, rid=rid)
                self._served = True
                return result

    def _pause(self, seconds: float, deadline: float, cancelled: Callable[[], bool], trace: ActTrace) -> None:
        seconds = max(0.0, min(seconds, deadline - time.monotonic()))
        if cancelled() or wait_on(cancelled, seconds):
            raise Abandoned("request abandoned")
        trace.overhead_s += seconds

    def end_episode(self, caller_id: str) -> None:
        """openpi's wire has no episodes: nothing to tell the server."""

    def close(self) -> None:
        self._closed = True
        self.socket.close()
