"""What the worker connection does after each `/act` attempt, and how long it waits (docs/PROTOCOL.md §6.5,
§6.6).

The decision is a value, apart from what sends: `Retry` holds what one logical request has spent
and `Retry.after` turns what the last attempt got into a `Step`. `_worker.py` only carries it out.

| the attempt got | next | gives up when |
|---|---|---|
| a 2xx (or 1xx) answer | `ANSWER`: read it | |
| 401 (the direct secret was rotated) | `RECONNECT` at once; back off if the gateway has no worker | 5 reconnects spent, or the deadline passed: `AuthError` |
| 429 (the worker is busy) | `WAIT` a jittered, doubling pause, same link | the pause would end past the deadline: `Unavailable` 429 |
| any other status ≥ 300 | `GIVE_UP` | at once: the status's own error |
| `CertPinError`, on a link that had served | `REPIN`: ask the gateway once for fresh coordinates | the link never served, it already re-pinned, or 5 reconnects: `FAIL_CLOSED` |
| `AnswerTooLarge` | `GIVE_UP`: the worker broke the caps, not a glitch | at once: `SequencesError` |
| `TransportClosed` (another thread replaced the link) | `REPLACE`: use the new link, no reconnect spent | there is no new link: the error itself |
| another `TransportError` | `BACK_OFF` then reconnect | 5 reconnects, or the deadline passed: `Unavailable` 503 |

401s, pin failures and transport errors share one count of reconnects; 429s count apart.
"""

from __future__ import annotations

import enum
import random
from dataclasses import dataclass, replace
from typing import Callable, Optional, Union

from .._errors import AuthError, CertPinError, SequencesError, Unavailable
from .._net._status_errors import error_from_response
from .._net._transport import Answer, AnswerTooLarge, TransportClosed, TransportError, TransportTimeout

__all__ = ["MAX_RECONNECTS", "Happened", "Next", "Retry", "Step", "busy_wait_s", "reconnect_backoff_s"]

MAX_RECONNECTS = 5

# What one attempt got: the worker's answer, or what the transport raised instead of one.
Happened = Union[Answer, CertPinError, TransportError]


def reconnect_backoff_s(attempt: int) -> float:
    """0.1, 0.2, 0.4, 0.8, 1.6 s, capped at 2 s (§6.5)."""
    return min(2.0, 0.1 * 2 ** (attempt - 1))


def busy_wait_s(consecutive: int, retry_after_s: Optional[float], jitter: float) -> float:
    """Jittered exponential wait after the n-th 429 in a row, capped at Retry-After (§6.6).
    `jitter` is a uniform draw in [0.5, 1.0]."""
    cap = retry_after_s if retry_after_s and retry_after_s > 0 else 1.0
    return jitter * min(cap, 0.05 * 2 ** min(consecutive - 1, 10))


def _jitter() -> float:
    return random.uniform(0.5, 1.0)


class Next(enum.Enum):
    """What the worker connection does after an attempt."""

    ANSWER = "answer"  # a 2xx: read it
    RECONNECT = "reconnect"  # new coordinates from the gateway now; `wait_s` first if it has none
    REPIN = "repin"  # as RECONNECT, after a pin that had verified stopped matching (asked once)
    BACK_OFF = "back_off"  # wait `wait_s`, then new coordinates from the gateway
    WAIT = "wait"  # the same link again after `wait_s` (busy)
    REPLACE = "replace"  # the link another thread installed; `error` when there is none
    FAIL_CLOSED = "fail_closed"  # drop the link (the next request asks the gateway afresh), raise `error`
    GIVE_UP = "give_up"  # raise `error`


@dataclass(frozen=True)
class Step:
    """One decision: what to do next, the counts after this attempt, and how long to wait or
    which error ends the request."""

    next: Next
    retry: Retry
    wait_s: float = 0.0
    error: Optional[BaseException] = None


@dataclass(frozen=True)
class Retry:
    """What one logical `/act` has spent, and its deadline (`time.monotonic()` or the connection's
    clock). `after()` decides the next step; the counts only grow."""

    deadline: float
    budget_s: float  # the whole request's timeout, named in the timeout message
    reconnects: int = 0  # attempts that cost a reconnect: 401s, pin failures, transport errors
    busy: int = 0  # 429s
    repinned: bool = False  # fresh coordinates were taken after a pin failure
    jitter: Callable[[], float] = _jitter

    def timed_out(self) -> Unavailable:
        return Unavailable(f"the worker did not answer within {self.budget_s:g}s", 503)

    def with_repin(self) -> Retry:
        return replace(self, repinned=True)

    def after(self, happened: Happened, *, served: bool, now: float) -> Step:
        """The step after an attempt that got `happened`, on a link that had `served` a 2xx
        before, decided at `now` (the connection's clock)."""
        if isinstance(happened, Answer):
            return self._after_answer(happened, now)
        if isinstance(happened, CertPinError):
            return self._after_pin_failure(happened, served)
        return self._after_transport_failure(happened, now)

    def _after_answer(self, answer: Answer, now: float) -> Step:
        status = answer.status_code
        if status == 401:
            return self._reconnect_after_401(now)
        if status == 429:
            return self._wait_while_busy(answer, now)
        if status >= 300:
            return Step(Next.GIVE_UP, self, error=error_from_response(status, answer.text, answer.headers))
        return Step(Next.ANSWER, self)

    def _reconnect_after_401(self, now: float) -> Step:
        """A rotated direct secret: the gateway has the new one."""
        spent = replace(self, reconnects=self.reconnects + 1)
        if spent.reconnects > MAX_RECONNECTS or now >= self.deadline:
            error = AuthError(f"the worker kept rejecting the direct secret after {self.reconnects} reconnects", 401)
            return Step(Next.GIVE_UP, spent, error=error)
        return Step(Next.RECONNECT, spent, wait_s=reconnect_backoff_s(spent.reconnects))

    def _wait_while_busy(self, answer: Answer, now: float) -> Step:
        spent = replace(self, busy=self.busy + 1)
        error = error_from_response(answer.status_code, answer.text, answer.headers)
        retry_after_s = getattr(error, "retry_after_s", None)
        wait = busy_wait_s(spent.busy, retry_after_s, self.jitter())
        if now + wait > self.deadline:
            error = Unavailable(f"worker was busy on {spent.busy} attempts in a row ({error.message})", 429,
                                answer.text, retry_after_s=retry_after_s)
            return Step(Next.GIVE_UP, spent, error=error)
        return Step(Next.WAIT, spent, wait_s=wait)

    def _after_pin_failure(self, error: CertPinError, served: bool) -> Step:
        """A pin fresh from the gateway that does not match fails closed. A pin that had verified
        and now does not means another worker answers at that address (a restart): ask the
        gateway once for its coordinates, never trust the new certificate."""
        spent = replace(self, reconnects=self.reconnects + 1)
        if not served or self.repinned or spent.reconnects > MAX_RECONNECTS:
            return Step(Next.FAIL_CLOSED, spent, error=error)
        return Step(Next.REPIN, spent, wait_s=reconnect_backoff_s(spent.reconnects))

    def _after_transport_failure(self, error: TransportError, now: float) -> Step:
        if isinstance(error, AnswerTooLarge):
            return Step(Next.GIVE_UP, self, error=SequencesError(f"refused the worker's answer: {error.message}"))
        if isinstance(error, TransportClosed):
            return Step(Next.REPLACE, self, error=error)
        spent = replace(self, reconnects=self.reconnects + 1)
        if isinstance(error, TransportTimeout) and now >= self.deadline:
            return Step(Next.GIVE_UP, spent, error=self.timed_out())
        if spent.reconnects > MAX_RECONNECTS or now >= self.deadline:
            error = Unavailable(f"worker unreachable after {self.reconnects} reconnect attempts", 503)
            return Step(Next.GIVE_UP, spent, error=error)
        return Step(Next.BACK_OFF, spent, wait_s=reconnect_backoff_s(spent.reconnects))
