"""A broken or hostile upstream (a real gateway and a real pinned TLS worker on loopback,
`_hostile.py`) never moves the arm wrongly, never wedges the client and never gets our secrets
back into a message: rates and widths that contradict the model are refused, every request ends
by its deadline however slowly the answer comes, every answer is capped, and an echoed request
is redacted. The same attacks through every driving level are rows of test_fault_matrix.py."""

from __future__ import annotations

import logging
import threading
import time
import traceback
import warnings

import pytest
from _hostile import (
    API_KEY,
    CHUNKED_HEAD,
    DIRECT_SECRET,
    MODEL,
    HostileUpstream,
    answer,
    chunk_answer,
    echo,
    endless,
    finishes_within,
    send,
    trickle,
)
from _loop_robot import Robot, observation, run_kwargs
from eventually import wait_until

from sequence_ai import SequencesError, Unavailable, connect
from sequence_ai._net._http11 import pinned_client
from sequence_ai._net._httpx_gateway import HttpxGateway
from sequence_ai._net._transport import AnswerTooLarge, ConnectionLost, TransportTimeout

PERIOD = 1.0 / 15.0  # pi05-droid's rate
MiB = 1024 * 1024


@pytest.fixture
def up(tmp_path):
    with HostileUpstream(tmp_path) as upstream:
        yield upstream


def _policy(up, **kwargs):
    kwargs.setdefault("startup_timeout_s", 0)  # the hostile gateway is ready at once
    return connect(MODEL, api_key=up.api_key, base_url=up.base_url, **kwargs)


def _run(policy, robot, **kwargs):
    """(outcome, message): the run's outcome, also when it ended by raising (it re-raises after
    the hold), and the error's message ("" when it did not raise)."""
    try:
        return policy.run(**run_kwargs(robot, **kwargs.pop("overrides", {})), **kwargs), ""
    except SequencesError as error:
        return policy.last_outcome, error.message


def _texts(error: BaseException, outcome=None) -> str:
    text = "".join(traceback.format_exception(type(error), error, error.__traceback__)) + repr(vars(error))
    return text + repr(outcome)


# -- item 1: the rate comes from the model, never from the answer --------------------------------


def test_a_chunk_for_another_rate_than_the_models_is_refused_and_the_model_rate_paces(up):
    up.worker.on("/act", send(chunk_answer(control_frequency_hz=1000.0, covers_seconds=0.008)), after=1)
    robot = Robot()
    with _policy(up) as policy:
        out, message = _run(policy, robot, max_actions=16)
    assert out.reason == "raised:SequencesError" and "1000 Hz" in message and "15 Hz" in message
    assert len(robot.actions) == 8 and robot.holds == 1  # the first chunk only; nothing of the 1000 Hz one
    spanned = robot.act_times[-1] - robot.act_times[0]
    assert spanned >= 7 * PERIOD * 0.8, f"8 actions in {spanned:.3f} s: faster than the model's 15 Hz"


def test_a_model_that_declares_no_rate_is_paced_at_the_default_never_at_the_chunks_claim(tmp_path):
    undeclared = {"robot": "droid_franka", "action_space": "joint_delta", "action_dim": 8}
    with HostileUpstream(tmp_path, action=undeclared) as up:
        up.worker.on("/act", send(chunk_answer(control_frequency_hz=1000.0, covers_seconds=0.008)))
        robot = Robot()
        with _policy(up, validate="off") as policy:  # no catalogue lookup: the chunk's rate is the only one
            out = policy.run(**run_kwargs(robot), max_actions=8)
    assert out.reason == "completed"
    spanned = robot.act_times[-1] - robot.act_times[0]
    assert spanned >= 7 * 0.1 * 0.8, f"8 actions in {spanned:.3f} s: paced by the answer's 1000 Hz"


# -- item 8: width against the catalogue too; values finite -------------------------------------

# The width against the catalogue (a 7-wide contract and chunk for an 8-wide model) and values
# too large for the client's own arithmetic (1e308) are rows of test_fault_matrix.py.


# -- items 3 and 5: every request ends by its deadline -------------------------------------------


def test_a_trickling_worker_ends_the_run_at_max_seconds_and_episode_end_at_its_deadline(up):
    up.worker.on("/act", trickle(chunk_answer()), after=1)
    up.worker.on("/act/episode_end", trickle(answer({"ok": True, "pad": "x" * 600}), every_s=0.1))  # ~70 s
    robot = Robot()
    policy = _policy(up)  # the default 30 s request timeout: max_seconds must end it first
    finished, out = finishes_within(15.0, lambda: policy.run(**run_kwargs(robot), max_actions=40, max_seconds=1.0))
    assert finished, "run() wedged on a trickling worker"
    assert out.reason == "timeout" and robot.holds == 1
    assert up.worker.count("/act/episode_end") == 1
    closed, _ = finishes_within(5.0, policy.close)
    assert closed, "close() wedged on a trickling worker"


def test_without_max_seconds_a_trickled_answer_ends_the_run_at_the_request_timeout_with_a_hold(up):
    up.worker.on("/act", trickle(chunk_answer()), after=1)
    robot = Robot()
    stalls = []
    with _policy(up, timeout_s=1.0) as policy:
        hold_form = {"on_underrun": lambda: stalls.append(time.monotonic())}
        finished, result = finishes_within(15.0, lambda: _run(policy, robot, overrides=hold_form, max_actions=40))
    assert finished, "run() wedged on a trickled answer"
    out, message = result
    assert out.reason == "raised:Unavailable" and "did not answer within 1s" in message
    assert robot.holds == 1 and len(robot.actions) == 8 and len(stalls) == 1


def test_a_trickled_connect_answer_ends_at_the_request_deadline(up):
    up.gateway.on("/v1/act/connect", trickle(answer(up.grant)))
    with _policy(up, timeout_s=0.5) as policy:
        finished, error = finishes_within(10.0, lambda: policy.predict(observation()))
    assert finished, "connect wedged on a trickling gateway"
    assert isinstance(error, Unavailable) and "timed out after 0.5s" in error.message
    assert error.__cause__ is None and error.__suppress_context__


def test_close_returns_in_bounded_time_and_ends_a_post_stuck_on_a_trickling_gateway(up):
    up.gateway.on("/v1/reports/act", trickle(answer({"accepted": True}), every_s=0.3))
    robot = Robot()
    policy = _policy(up)
    assert policy.run(**run_kwargs(robot), max_actions=8).reason == "completed"
    closed, _ = finishes_within(8.0, policy.close)  # the queued reports meet the trickle now
    assert closed, "close() wedged on a trickling gateway"
    stuck = lambda: [t for t in threading.enumerate() if t.name == "sequence-ai-telemetry" and t.is_alive()]  # noqa: E731
    assert wait_until(lambda: not stuck(), 3.0), "a telemetry post is still reading the trickle after close()"


# -- item 6: caps on every answer, header block and line, on both HTTP paths ----------------------

CHUNKED = CHUNKED_HEAD
WORKER_ATTACKS = {
    "endless-chunk-size-line": (endless(CHUNKED, b"f"), AnswerTooLarge),
    "endless-trailers": (endless(CHUNKED + b"2\r\n{}\r\n0\r\n", b"X-Trailer: 1\r\n"), AnswerTooLarge),
    "endless-100-continue": (endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n"), AnswerTooLarge),
    "endless-header-block": (endless(b"HTTP/1.1 200 OK\r\n", b"X-Pad: " + b"a" * 100 + b"\r\n"), AnswerTooLarge),
    "content-length-400MiB": (endless(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (400 * MiB), b"\0"),
                              AnswerTooLarge),
    "endless-body-until-close": (endless(b"HTTP/1.1 200 OK\r\n\r\n", b"0"), AnswerTooLarge),
    "trickled-trailers": (endless(CHUNKED + b"2\r\n{}\r\n0\r\n", b"X: 1\r\n", every_s=0.2), TransportTimeout),
    "trickled-100-continue": (endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n", every_s=0.3), TransportTimeout),
}


@pytest.mark.parametrize("attack", WORKER_ATTACKS)
def test_the_worker_link_caps_every_answer_and_ends_by_the_deadline(up, attack):
    reply, error = WORKER_ATTACKS[attack]
    up.worker.on("/act", reply)
    headers = {"Authorization": f"Bearer {DIRECT_SECRET}"}
    deadline = 0.5 if error is TransportTimeout else 10.0  # a cap must not race the deadline
    with pinned_client(up.worker_url, up.fingerprint, headers, 30.0) as client:
        finished, raised = finishes_within(15.0, lambda: client.post("/act", json={}, timeout=deadline))
    assert finished, f"{attack}: the request never ended"
    assert isinstance(raised, error), f"{attack}: {raised!r}"
    assert sum(wire.sent for wire in up.worker.wires) < 64 * MiB, "the client kept reading past its caps"


GATEWAY_ATTACKS = {
    "content-length-400MiB": (endless(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (400 * MiB), b"\0"),
                              AnswerTooLarge),
    "endless-chunked-body": (endless(CHUNKED, b"10000\r\n" + b"0" * 0x10000 + b"\r\n"), AnswerTooLarge),
    "endless-header-block": (endless(b"HTTP/1.1 200 OK\r\n", b"X-Pad: " + b"a" * 100 + b"\r\n"), ConnectionLost),
    "endless-chunk-size-line": (endless(CHUNKED, b"f"), ConnectionLost),
    "trickled-body": (trickle(answer({"pad": "x" * 200})), TransportTimeout),
    "trickled-100-continue": (endless(b"", b"HTTP/1.1 100 Continue\r\n\r\n", every_s=0.3), TransportTimeout),
}


@pytest.mark.parametrize("attack", GATEWAY_ATTACKS)
def test_the_gateway_path_caps_every_answer_and_ends_by_the_deadline(up, attack):
    reply, error = GATEWAY_ATTACKS[attack]
    up.gateway.on("/v1/act/connect", reply)
    deadline = 0.5 if error is TransportTimeout else 10.0  # a cap must not race the deadline
    with HttpxGateway(up.base_url, {"Authorization": f"Bearer {API_KEY}"}, 30.0) as gateway:
        finished, raised = finishes_within(15.0, lambda: gateway.post("/v1/act/connect", json={}, timeout=deadline))
    assert finished, f"{attack}: the request never ended"
    assert isinstance(raised, error), f"{attack}: {raised!r}"
    assert sum(wire.sent for wire in up.gateway.wires) < 80 * MiB, "the client kept reading past its caps"


def test_a_400_mib_connect_answer_is_refused_as_it_arrives(up):
    up.gateway.on("/v1/act/connect", endless(b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % (400 * MiB), b"\0"))
    with _policy(up) as policy, pytest.raises(SequencesError, match="refused the gateway's answer") as info:
        policy.predict(observation())
    assert "cap" in info.value.message and API_KEY not in _texts(info.value)


# -- item 4: secrets in an upstream's words are redacted ------------------------------------------


@pytest.mark.parametrize("where", ["worker", "gateway-json", "gateway-text", "gateway-status-line"])
def test_an_upstream_that_echoes_the_request_never_gets_a_secret_into_a_message(up, where, caplog):
    caplog.set_level(logging.DEBUG)
    if where == "worker":
        up.worker.on("/act", echo(), after=1)
    elif where == "gateway-status-line":
        up.gateway.on("/v1/act/connect", lambda request, wire: wire.send(
            b"HTTP/1.1 2x0 " + request.headers["authorization"].encode() + b"\r\n\r\n"))
    else:
        up.gateway.on("/v1/act/connect", echo(as_json=where == "gateway-json"))
    robot = Robot()
    with warnings.catch_warnings(record=True) as caught, _policy(up) as policy:
        warnings.simplefilter("always")
        with pytest.raises(SequencesError) as info:
            policy.run(**run_kwargs(robot), max_actions=16)
        outcome = policy.last_outcome
    text = _texts(info.value, outcome) + "".join(str(w.message) for w in caught) + caplog.text
    assert "[redacted]" in text, "the echo never arrived: the test would prove nothing"
    assert API_KEY not in text and DIRECT_SECRET not in text
    assert robot.holds == 1


def test_a_request_id_echoed_as_the_secret_is_redacted_in_the_warning(up):
    up.worker.on("/act", send(chunk_answer().replace(b"\r\n\r\n", f"\r\nX-Seq-Request-Id: {DIRECT_SECRET}\r\n\r\n"
                                                      .encode(), 1)))
    robot = Robot()
    with warnings.catch_warnings(record=True) as caught, _policy(up) as policy:
        warnings.simplefilter("always")
        assert policy.run(**run_kwargs(robot), max_actions=8).reason == "completed"
    echoed = [str(w.message) for w in caught if "echoed request id" in str(w.message)]
    assert echoed and all(DIRECT_SECRET not in text and "[redacted]" in text for text in echoed)
