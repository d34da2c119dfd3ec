"""The connection to the worker: admission, lease renewal, reconnect-and-replay, busy retry and
episode remapping (docs/PROTOCOL.md §5, §6).

One `WorkerConnection` per Policy. Its `act()` is one logical request, bounded as a whole by its
timeout: several HTTP attempts may share its request id. In layers: `act` sets the deadline and
takes the current link (admitting or renewing the lease), `_act_handling_retries` runs attempts
until one answers, `_act_once` is one POST, and `_read_answer` reads a 2xx. What follows each
attempt is decided in `_retry.py` (reconnect after a 401 or a transport failure, wait out a 429,
re-pin once, give up with which error) and carried out by `_follow`. Episode ids go through
`_episodes.py`. The HTTP client for the worker comes from a `WorkerTransportFactory`
(`_transport.py`; by default the pinned `_http11.pinned_client`, docs/CLIENT-LOOP.md says why).
"""

from __future__ import annotations

import json
import threading
import time
import uuid
import warnings
from typing import Any, Callable, Dict, Mapping, Optional

from .._errors import CertPinError, SequencesError, Unavailable
from .._net._http import gateway_call
from .._net._http11 import pinned_client
from .._net._transport import (
    Answer,
    GatewayTransport,
    TransportError,
    WorkerTransport,
    WorkerTransportFactory,
)
from .._waiting import wait_on
from ._act_request import Abandoned, ActRequest, ActTrace, with_fields
from ._admission import Grant, check_expect, parse_grant, renew_after_s
from ._episodes import EpisodeMap
from ._retry import Happened, Next, Retry, Step

__all__ = ["WorkerConnection"]

EPISODE_END_TIMEOUT_S = 5.0  # the whole request: a worker that trickles its answer is cut off


class _Link:
    """One set of worker coordinates and the pinned client that uses them."""

    def __init__(self, grant: Grant, client: WorkerTransport, renew_at: Optional[float]):
        self.grant = grant
        self.client = client
        self.renew_at = renew_at
        self.served = False


class WorkerConnection:
    """The Policy's link to its worker: admission through the gateway, then `act()` and
    `end_episode()` on a pinned client, replaced when the lease's epoch or the worker changes."""

    def __init__(self, *, gateway: GatewayTransport, base_url: str, model: str,
                 timeout_s: float, embodiment: Optional[str] = None,
                 expect: Optional[Mapping[str, Any]] = None,
                 clock: Callable[[], float] = time.monotonic,
                 transport: WorkerTransportFactory = pinned_client):
        self._gateway = gateway
        self._transport = transport
        self._base_url = base_url
        self.model = model
        self.session = uuid.uuid4().hex
        self.embodiment = embodiment
        self._expect = expect
        self._timeout_s = timeout_s
        self._clock = clock
        self._lock = threading.RLock()
        self._link: Optional[_Link] = None
        self._episodes = EpisodeMap()
        self.contract: Optional[Dict[str, Any]] = None
        self.declared_action: Optional[Dict[str, Any]] = None
        self.declared: Optional[Dict[str, Any]] = None  # the last connect answer's contract (Policy.contract)
        self._closed = False

    # -- admission -------------------------------------------------------------------------

    @property
    def connected(self) -> bool:
        return self._link is not None

    def _admit(self) -> Grant:
        body: Dict[str, Any] = {"model": self.model, "session": self.session}
        if self.embodiment:
            body["embodiment"] = self.embodiment
        answer = gateway_call("POST", self._base_url, "/v1/act/connect", api_key=None,
                              json_body=body, timeout_s=self._timeout_s, client=self._gateway)
        grant = parse_grant(answer)
        check_expect(self._expect, grant.action)
        if grant.embodiment:
            self.embodiment = grant.embodiment
        if grant.observation is not None:
            self.contract = grant.observation
        self.declared_action = grant.action
        self.declared = {"action": grant.action, "observation": grant.observation, "embodiment": grant.embodiment}
        return grant

    def _renew_at(self, grant: Grant) -> Optional[float]:
        after = renew_after_s(grant.ttl_s)
        return None if after is None else self._clock() + after

    def _install(self, grant: Grant) -> _Link:
        """Replace the current link with a new one built from `grant` (lock held)."""
        headers = {"Authorization": f"Bearer {grant.direct_secret}", "Content-Type": "application/json"}
        client = self._transport(grant.worker_url, grant.cert_fingerprint, headers, self._timeout_s)
        old, self._link = self._link, _Link(grant, client, self._renew_at(grant))
        if old is not None:
            old.client.retire()  # a request still on it may finish; the next one uses the new link
            self._episodes.remap(stacklevel=4)
        return self._link

    def _open(self) -> None:
        if self._closed:  # an abandoned request must not re-admit a closed Policy
            raise Abandoned("the Policy is closed")

    def _current(self, trace: ActTrace) -> _Link:
        """The link to use now: admit if there is none, renew the lease if it is due (§6.3)."""
        with self._lock:
            self._open()
            link = self._link
            if link is not None and (link.renew_at is None or self._clock() < link.renew_at):
                return link
            started = self._clock()
            try:
                grant = self._admit()
                same_epoch = (link is not None and grant.epoch is not None
                              and grant.epoch == link.grant.epoch)
                if same_epoch:
                    link.renew_at = self._renew_at(grant)  # keep the connection and the old secret
                    return link
                return self._install(grant)
            finally:
                trace.overhead_s += self._clock() - started

    def _reconnect(self, failed: _Link, trace: ActTrace) -> _Link:
        with self._lock:
            self._open()
            if self._link is not failed and self._link is not None:
                return self._link  # another thread already replaced it
            started = self._clock()
            try:
                return self._install(self._admit())
            finally:
                trace.overhead_s += self._clock() - started

    # -- the request -----------------------------------------------------------------------

    @property
    def episode_resets(self) -> int:
        """Worker changes that gave the episodes in progress fresh worker-side ids."""
        return self._episodes.resets

    def worker_episode(self, caller_id: Optional[str]) -> Optional[str]:
        if caller_id is None:
            return None
        with self._lock:
            return self._episodes.worker_id(caller_id)

    def act(self, payload: Dict[str, Any], *, rid: str, episode_id: Optional[str] = None,
            timeout_s: Optional[float] = None, cancelled: Callable[[], bool] = lambda: False,
            trace: Optional[ActTrace] = None, encoded: Optional[bytes] = None) -> Any:
        """POST /act until it answers; returns the parsed JSON body. `timeout_s` (default: the
        connection's) bounds the whole call — every attempt, reconnect and busy wait — and each
        attempt gets what is left of it, so a worker that trickles its answer is cut off in time.
        `encoded`: `payload` as compact JSON already (act_body), so the frames are not encoded
        again."""
        request = ActRequest(payload, encoded, rid, episode_id, cancelled, trace or ActTrace())
        request.trace.rid = rid
        budget = self._timeout_s if timeout_s is None else timeout_s
        retry = Retry(deadline=self._clock() + budget, budget_s=budget)
        return self._act_handling_retries(request, self._current(request.trace), retry)

    def _act_handling_retries(self, request: ActRequest, link: _Link, retry: Retry) -> Any:
        """Attempts until one answers, starting on `link`; `Retry` decides each next step."""
        while True:
            happened = self._act_once(request, link, retry)
            step = retry.after(happened, served=link.served, now=self._clock())
            if step.next is Next.ANSWER:
                return self._read_answer(happened, link, request)
            fresh = self._follow(step, link, request)
            retry = step.retry.with_repin() if step.next is Next.REPIN and fresh is not link else step.retry
            link = fresh

    def _act_once(self, request: ActRequest, link: _Link, retry: Retry) -> Happened:
        """One POST /act on `link` with what is left of the deadline: the answer, or the error
        the transport raised instead (any other exception propagates)."""
        if request.cancelled():
            raise Abandoned("request abandoned")
        content = with_fields(request.payload, request.encoded, self._fields(request))
        request.trace.first_after_connect = not link.served
        sent = self._clock()
        if sent >= retry.deadline:
            raise retry.timed_out() from None
        try:
            answer = link.client.post("/act", content=content, headers={"X-Seq-Request-Id": request.rid},
                                      timeout=retry.deadline - sent)
        except (CertPinError, TransportError) as exc:
            return exc
        request.trace.rtt_s = self._clock() - sent
        return answer

    def _fields(self, request: ActRequest) -> Dict[str, Any]:
        """What the connection adds to the body: the worker-side episode id, the embodiment."""
        extra: Dict[str, Any] = {}
        worker_episode = self.worker_episode(request.episode_id)
        if worker_episode is not None:
            extra["episode_id"] = worker_episode
        if self.embodiment and "embodiment" not in request.payload:
            extra["embodiment"] = self.embodiment
        return extra

    def _read_answer(self, answer: Answer, link: _Link, request: ActRequest) -> Any:
        """A 2xx: the link has served; the echoed request id is checked; the body parsed."""
        link.served = True
        echoed = answer.headers.get("x-seq-request-id")
        if echoed is not None and echoed != request.rid:
            request.trace.rid_mismatch = True
            warnings.warn(f"worker echoed request id {echoed!r} for {request.rid!r}; correlation is broken",
                          UserWarning, stacklevel=4)
        try:
            return json.loads(answer.content)
        except (ValueError, RecursionError):
            raise SequencesError("malformed /act answer from the worker: not JSON", answer.status_code) from None

    def _follow(self, step: Step, link: _Link, request: ActRequest) -> _Link:
        """Carry out `step`: the link for the next attempt, or raise the error it gives up with."""
        if step.next is Next.WAIT:
            self._pause(step.wait_s, request, overhead=False)
            return link
        if step.next is Next.BACK_OFF:
            self._pause(step.wait_s, request)
            return self._reconnect_or_raise(link, request.trace)
        if step.next in (Next.RECONNECT, Next.REPIN):
            return self._reconnect_or_wait(link, step.wait_s, request)
        if step.next is Next.REPLACE:
            return self._replacement(link, step.error)
        if step.next is Next.FAIL_CLOSED:
            self._forget(link)
        raise step.error from None  # never the transport's error as its cause: no request in a traceback

    def _replacement(self, closed: _Link, error: BaseException) -> _Link:
        """The link another thread installed when it closed `closed`; `error` when there is none."""
        with self._lock:
            self._open()
            current = self._link
        if current is None or current is closed:
            raise error from None
        return current

    def _forget(self, link: _Link) -> None:
        """Never use a link whose pin failed again; otherwise every later run would fail on it
        until the lease came up for renewal."""
        with self._lock:
            if self._link is link:
                self._link = None

    def _reconnect_or_raise(self, failed: _Link, trace: ActTrace) -> _Link:
        trace.reconnects += 1
        try:
            return self._reconnect(failed, trace)
        except Unavailable as exc:
            if exc.warming:
                raise  # scaled to zero: the warm-wait (before the first action) or the caller decides
            return failed  # no worker or no gateway for now: the next attempt counts as another failure

    def _reconnect_or_wait(self, failed: _Link, backoff_s: float, request: ActRequest) -> _Link:
        """New coordinates from the gateway, or — when it has none yet (mid-redeploy, gateway
        down) — the failed link back after the reconnect backoff, so the next attempt asks again."""
        fresh = self._reconnect_or_raise(failed, request.trace)
        if fresh is failed:
            self._pause(backoff_s, request)
        return fresh

    def _pause(self, seconds: float, request: ActRequest, overhead: bool = True) -> None:
        """Back off `seconds`, or stop at once when the request is abandoned (the fetch's flag
        wakes the wait: no poll). A busy wait is service time, not `overhead`."""
        if request.cancelled() or wait_on(request.cancelled, seconds):
            raise Abandoned("request abandoned")
        if overhead:
            request.trace.overhead_s += seconds

    # -- episodes and shutdown -------------------------------------------------------------

    def end_episode(self, caller_id: str) -> None:
        """POST /act/episode_end for the caller's episode; every error is swallowed."""
        with self._lock:
            link = self._link
            worker_id = self._episodes.end(caller_id)
        if link is None:
            return
        try:
            link.client.post("/act/episode_end", json={"episode_id": worker_id}, timeout=EPISODE_END_TIMEOUT_S)
        except Exception:
            pass

    def close(self) -> None:
        with self._lock:
            link, self._link = self._link, None
            self._closed = True
        if link is not None:
            link.client.close()
