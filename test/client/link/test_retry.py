"""The worker connection's retry decisions as a table (`_link/_retry.py`), without a socket: what
an attempt got, the counts so far and the time left, against the step taken and the error it gives
up with. The same decisions run against the real platform in test_faults.py and the fault matrix."""

from __future__ import annotations

import json

import pytest

from sequence_ai import AuthError, CertPinError, InvalidRequest, SequencesError, Unavailable
from sequence_ai._link._retry import MAX_RECONNECTS, Next, Retry
from sequence_ai._net._transport import (
    Answer,
    AnswerTooLarge,
    ConnectFailed,
    ConnectionLost,
    Headers,
    TransportClosed,
    TransportTimeout,
)

DEADLINE = 100.0
IN_TIME, LATE = 90.0, 100.0  # the clock at the decision: 10 s left, or none


def answer(status, body=None, headers=None):
    return Answer(status, Headers(headers or {}), b"" if body is None else json.dumps(body).encode())


def retry(reconnects=0, busy=0, repinned=False):
    return Retry(deadline=DEADLINE, budget_s=5.0, reconnects=reconnects, busy=busy, repinned=repinned,
                 jitter=lambda: 1.0)


BUSY = {"detail": "busy"}

# (what the attempt got, link had served, counts before, clock) -> (next, wait_s, counts after, error)
TABLE = [
    # a 2xx is read; nothing is spent
    (answer(200, {}), True, retry(), IN_TIME, Next.ANSWER, 0.0, (0, 0, False), None),
    (answer(200, {}), False, retry(3, 2), LATE, Next.ANSWER, 0.0, (3, 2, False), None),
    # 401: reconnect at once (the backoff applies only if the gateway has no worker yet)
    (answer(401), True, retry(), IN_TIME, Next.RECONNECT, 0.1, (1, 0, False), None),
    (answer(401), False, retry(4), IN_TIME, Next.RECONNECT, 1.6, (5, 0, False), None),
    (answer(401), True, retry(MAX_RECONNECTS), IN_TIME, Next.GIVE_UP, 0.0, (6, 0, False),
     (AuthError, 401, "after 5 reconnects")),
    (answer(401), True, retry(1), LATE, Next.GIVE_UP, 0.0, (2, 0, False), (AuthError, 401, "after 1 reconnects")),
    # 429: wait on the same link, doubling from 50 ms, capped at Retry-After; give up past the deadline
    (answer(429, BUSY), True, retry(), IN_TIME, Next.WAIT, 0.05, (0, 1, False), None),
    (answer(429, BUSY), True, retry(2, 3), IN_TIME, Next.WAIT, 0.4, (2, 4, False), None),
    (answer(429, BUSY, {"retry-after": "1"}), True, retry(busy=9), IN_TIME, Next.WAIT, 1.0, (0, 10, False), None),
    (answer(429, BUSY, {"retry-after": "12"}), True, retry(busy=9), IN_TIME, Next.GIVE_UP, 0.0, (0, 10, False),
     (Unavailable, 429, "busy on 10 attempts in a row")),
    (answer(429, BUSY), True, retry(), LATE, Next.GIVE_UP, 0.0, (0, 1, False), (Unavailable, 429, "busy on 1")),
    # any other status: its own error, at once
    (answer(422, {"detail": "bad frame"}), True, retry(), IN_TIME, Next.GIVE_UP, 0.0, (0, 0, False),
     (InvalidRequest, 422, "bad frame")),
    (answer(503, {"detail": "down"}), True, retry(), IN_TIME, Next.GIVE_UP, 0.0, (0, 0, False),
     (Unavailable, 503, "down")),
    # a pin that had verified: ask the gateway once; fresh, already re-pinned or spent: fail closed
    (CertPinError("mismatch"), True, retry(), IN_TIME, Next.REPIN, 0.1, (1, 0, False), None),
    (CertPinError("mismatch"), False, retry(), IN_TIME, Next.FAIL_CLOSED, 0.0, (1, 0, False),
     (CertPinError, None, "mismatch")),
    (CertPinError("mismatch"), True, retry(repinned=True), IN_TIME, Next.FAIL_CLOSED, 0.0, (1, 0, True),
     (CertPinError, None, "mismatch")),
    (CertPinError("mismatch"), True, retry(MAX_RECONNECTS), IN_TIME, Next.FAIL_CLOSED, 0.0, (6, 0, False),
     (CertPinError, None, "mismatch")),
    # the worker broke the caps: refused, never retried
    (AnswerTooLarge("9 MiB"), True, retry(), IN_TIME, Next.GIVE_UP, 0.0, (0, 0, False),
     (SequencesError, None, "refused the worker's answer: 9 MiB")),
    # another thread closed the link: its replacement, no reconnect spent
    (TransportClosed("closed"), True, retry(2), IN_TIME, Next.REPLACE, 0.0, (2, 0, False),
     (TransportClosed, None, "closed")),
    # a transport failure: back off, then reconnect; give up after five or at the deadline
    (ConnectFailed("refused"), True, retry(), IN_TIME, Next.BACK_OFF, 0.1, (1, 0, False), None),
    (ConnectionLost("reset"), False, retry(5), LATE, Next.GIVE_UP, 0.0, (6, 0, False),
     (Unavailable, 503, "unreachable after 5 reconnect attempts")),
    (ConnectionLost("reset"), True, retry(2), LATE, Next.GIVE_UP, 0.0, (3, 0, False),
     (Unavailable, 503, "unreachable after 2 reconnect attempts")),
    (TransportTimeout("slow"), True, retry(), IN_TIME, Next.BACK_OFF, 0.1, (1, 0, False), None),
    (TransportTimeout("slow"), True, retry(), LATE, Next.GIVE_UP, 0.0, (1, 0, False),
     (Unavailable, 503, "did not answer within 5s")),
]


def _name(row):
    happened, next_ = row[0], row[4]
    got = happened.status_code if isinstance(happened, Answer) else type(happened).__name__
    return f"{got}-{next_.value}"


@pytest.mark.parametrize("happened,served,before,now,next_,wait_s,after,error", TABLE, ids=[_name(r) for r in TABLE])
def test_each_attempt_leads_to_one_step(happened, served, before, now, next_, wait_s, after, error):
    step = before.after(happened, served=served, now=now)
    assert step.next is next_
    assert step.wait_s == pytest.approx(wait_s)
    assert (step.retry.reconnects, step.retry.busy, step.retry.repinned) == after
    if error is None:
        assert step.error is None
    else:
        kind, status, says = error
        assert type(step.error) is kind and says in str(step.error)
        assert getattr(step.error, "status", None) == status


def test_a_reconnect_after_401_backs_off_more_each_time_it_finds_no_worker():
    spent, waits = retry(), []
    for _ in range(MAX_RECONNECTS):
        step = spent.after(answer(401), served=True, now=IN_TIME)
        assert step.next is Next.RECONNECT
        spent, waits = step.retry, [*waits, step.wait_s]
    assert waits == pytest.approx([0.1, 0.2, 0.4, 0.8, 1.6])
    assert spent.after(answer(401), served=True, now=IN_TIME).next is Next.GIVE_UP


def test_401s_pin_failures_and_transport_failures_share_one_count_of_reconnects():
    spent = retry()
    for happened in (answer(401), CertPinError("x"), ConnectFailed("x"), answer(401), ConnectionLost("x")):
        spent = spent.after(happened, served=True, now=IN_TIME).retry
    assert spent.reconnects == 5 and spent.busy == 0
    assert spent.after(answer(401), served=True, now=IN_TIME).next is Next.GIVE_UP
    assert spent.after(answer(429, BUSY), served=True, now=IN_TIME).next is Next.WAIT  # busy counts apart


def test_the_busy_wait_draws_its_jitter_only_on_a_429():
    draws = []
    spent = Retry(deadline=DEADLINE, budget_s=5.0, jitter=lambda: draws.append(1) or 0.5)
    spent.after(answer(401), served=True, now=IN_TIME)
    spent.after(answer(200, {}), served=True, now=IN_TIME)
    assert draws == []
    assert spent.after(answer(429, BUSY), served=True, now=IN_TIME).wait_s == pytest.approx(0.025)
    assert draws == [1]


def test_the_timeout_names_the_whole_request_budget():
    error = Retry(deadline=DEADLINE, budget_s=2.5).timed_out()
    assert isinstance(error, Unavailable) and error.status == 503 and "within 2.5s" in str(error)
