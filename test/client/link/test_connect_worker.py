"""WorkerConnection logic with scripted answers: lease math, epochs, remaps, retries, echo.

The gateway and the worker are scripted transports passed in through the transport seam
(`_transport.py`) so the clock and every answer are under the test's control; the same paths run
against the real platform in test_faults.py.
"""

from __future__ import annotations

import json
import warnings

import pytest

import sequence_ai._link._act_request as act_request
from sequence_ai import AuthError, CertPinError, InvalidRequest, SequencesError
from sequence_ai._link._admission import check_expect, parse_grant, renew_after_s
from sequence_ai._link._retry import busy_wait_s, reconnect_backoff_s
from sequence_ai._link._worker import WorkerConnection
from sequence_ai._net._transport import Answer, Headers, TransportClosed, compact_json

CHUNK = {"action_chunk": {"steps": [[0.0]], "robot": "r", "action_space": "joint_delta", "action_dim": 1,
                          "control_frequency_hz": 10, "covers_seconds": 0.1}}


@pytest.mark.parametrize("ttl,after", [(3600, 3570), (300, 270), (60, 48), (2, 1), (1, 0), (0.5, 0)])
def test_lease_is_renewed_a_lead_before_expiry(ttl, after):
    assert renew_after_s(ttl) == after


@pytest.mark.parametrize("ttl", [None, 0, -5])
def test_lease_without_ttl_is_never_renewed(ttl):
    assert renew_after_s(ttl) is None


def test_reconnect_backoff_doubles_from_100ms_and_caps_at_2s():
    assert [reconnect_backoff_s(n) for n in range(1, 8)] == [0.1, 0.2, 0.4, 0.8, 1.6, 2.0, 2.0]


def test_busy_wait_doubles_from_50ms_capped_at_retry_after():
    assert [busy_wait_s(n, 1.0, 1.0) for n in range(1, 7)] == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0]
    assert busy_wait_s(3, None, 0.5) == 0.1 and busy_wait_s(12, 3.0, 1.0) == 3.0


def test_connect_answer_missing_a_required_field_is_malformed_and_not_echoed():
    with pytest.raises(SequencesError) as info:
        parse_grant({"worker_url": "https://x", "direct_secret": "dsk_secret"})
    assert "dsk_secret" not in str(info.value) and "malformed" in str(info.value)


def test_grant_repr_hides_the_direct_secret():
    grant = parse_grant({"worker_url": "https://x/", "cert_fingerprint": "ab" * 32, "direct_secret": "dsk_s"})
    assert "dsk_s" not in repr(grant) and grant.worker_url == "https://x"


def test_expect_compares_declared_values_as_strings():
    check_expect({"action_dim": 8}, {"action_dim": "8"})
    with pytest.raises(InvalidRequest):
        check_expect({"action_dim": 8}, None)


class Sent:
    """One request a scripted worker received."""

    def __init__(self, path, headers, content):
        self.path, self.headers, self.content = path, Headers({k.lower(): v for k, v in headers.items()}), content


class ScriptedWorker:
    """A WorkerTransport that answers from the test's list and refuses requests once closed."""

    def __init__(self, owner, headers):
        self.owner, self.headers, self.closed = owner, dict(headers), False

    def post(self, path, *, json=None, content=None, headers=None, timeout=None):
        if self.closed:
            raise TransportClosed("the client for the worker has been closed")
        body = content if content is not None else compact_json(json)
        self.owner.act_requests.append(Sent(path, {**self.headers, **(headers or {})}, body))
        answer = self.owner.acts.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer

    def close(self):
        self.closed = True

    retire = close


class ScriptedGateway:
    """A GatewayTransport answering /v1/act/connect from the test's list."""

    def __init__(self, owner):
        self.owner = owner

    def request(self, method, path, *, json=None, timeout=None):
        self.owner.connect_bodies.append(json)
        return self.owner.connects.pop(0)

    def post(self, path, *, json=None, timeout=None):
        return self.request("POST", path, json=json, timeout=timeout)

    def close(self):
        pass


class Scripted:
    """A gateway and a worker driven by lists of answers, passed in (no patching)."""

    def __init__(self, connects, acts):
        self.connects, self.acts = list(connects), list(acts)
        self.connect_bodies, self.act_requests, self.clients = [], [], []
        self.now = 1000.0
        self.connection = WorkerConnection(gateway=ScriptedGateway(self), base_url="https://gw", model="m",
                                           timeout_s=5.0, clock=lambda: self.now, transport=self._pinned)

    def _pinned(self, url, fingerprint, headers, timeout):
        client = ScriptedWorker(self, headers)
        self.clients.append(client)
        return client


def answer(status, body=None, headers=None):
    return Answer(status, Headers(headers or {}), b"" if body is None else json.dumps(body).encode())


def grant(epoch=1, ttl=300.0, secret="dsk_1", url="https://w1"):
    return answer(200, {"worker_url": url, "cert_fingerprint": "ab" * 32, "direct_secret": secret,
                        "lease": {"ttl_s": ttl, "epoch": epoch}})


def ok(rid=None):
    return answer(200, CHUNK, {"x-seq-request-id": rid} if rid else None)


def test_renewal_with_the_same_epoch_keeps_the_connection():
    s = Scripted([grant(ttl=60), grant(ttl=60, secret="dsk_2")], [ok(), ok()])
    s.connection.act({}, rid="r-00000001")
    s.now += 49  # past renew_at (48 s)
    s.connection.act({}, rid="r-00000002")
    assert len(s.connect_bodies) == 2 and len(s.clients) == 1
    assert s.act_requests[1].headers["authorization"] == "Bearer dsk_1"
    assert s.connect_bodies[0]["session"] == s.connect_bodies[1]["session"]


def test_renewal_with_a_new_epoch_replaces_the_connection_and_remaps_the_episode():
    s = Scripted([grant(ttl=60), grant(epoch=2, ttl=60, secret="dsk_2")], [ok(), ok()])
    s.connection.act({}, rid="r-00000001", episode_id="mine")
    s.now += 49
    with pytest.warns(UserWarning, match="per-episode state"):
        s.connection.act({}, rid="r-00000002", episode_id="mine")
    first, second = (json.loads(r.content)["episode_id"] for r in s.act_requests)
    assert first == "mine" and second != "mine" and len(second) == 32
    assert s.connection.episode_resets == 1 and len(s.clients) == 2
    assert s.act_requests[1].headers["authorization"] == "Bearer dsk_2"


def test_worker_401_reconnects_at_once_and_gives_up_after_five():
    s = Scripted([grant(epoch=i) for i in range(7)], [answer(401)] * 7)
    with pytest.raises(AuthError, match="after 5 reconnects") as info:
        s.connection.act({}, rid="r-00000001")
    assert info.value.status == 401 and len(s.connect_bodies) == 6


def test_request_id_echo_mismatch_warns_and_keeps_the_answer():
    s = Scripted([grant()], [ok(rid="r-ffffffff")])
    with pytest.warns(UserWarning, match="correlation"):
        answer = s.connection.act({}, rid="r-00000001")
    assert answer == CHUNK


def test_request_id_and_secret_headers_go_to_the_worker_only():
    s = Scripted([grant()], [ok(rid="r-00000001")])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        s.connection.act({}, rid="r-00000001")
    request = s.act_requests[0]
    assert request.headers["x-seq-request-id"] == "r-00000001"
    assert request.headers["authorization"] == "Bearer dsk_1"


def test_pin_error_from_a_fresh_grant_is_never_retried():
    s = Scripted([grant(), grant()], [CertPinError("pin mismatch"), ok()])
    with pytest.raises(CertPinError):
        s.connection.act({}, rid="r-00000001")
    assert len(s.connect_bodies) == 1


def test_embodiment_adopted_from_the_connect_answer_is_sent_on_acts():
    body = grant().json()
    body["embodiment"] = "left_arm"
    s = Scripted([answer(200, body)], [ok()])
    s.connection.act({"model": "m"}, rid="r-00000001")
    assert json.loads(s.act_requests[0].content)["embodiment"] == "left_arm"


def test_an_encoded_body_is_sent_with_the_episode_and_embodiment_appended_not_encoded_again():
    connected = grant().json()
    connected["embodiment"] = "left_arm"
    s = Scripted([answer(200, connected)], [ok()])
    payload = {"model": "m", "observation": {"instruction": "pick"}}
    # the frames' bytes as act_body encoded them; spaced differently from compact JSON, so a body
    # encoded again from `payload` would not start with them
    encoded = b'{"model": "m", "observation": {"instruction": "pick"}}'
    s.connection.act(payload, rid="r-00000001", episode_id="mine", encoded=encoded)
    sent = s.act_requests[0].content
    assert sent.startswith(encoded[:-1] + b",")
    assert json.loads(sent) == {**payload, "episode_id": "mine", "embodiment": "left_arm"}


def test_with_fields_encodes_again_only_when_a_key_is_replaced():
    payload = {"model": "m", "episode_id": "theirs"}
    encoded = act_request.compact_json(payload)
    assert act_request.with_fields(payload, encoded, {}) is encoded
    replaced = act_request.with_fields(payload, encoded, {"episode_id": "ours"})
    assert json.loads(replaced) == {"model": "m", "episode_id": "ours"} and replaced.count(b"episode_id") == 1
    assert json.loads(act_request.with_fields({}, b"{}", {"embodiment": "e"})) == {"embodiment": "e"}
    assert json.loads(act_request.with_fields(payload, None, {"seed": 3})) == {**payload, "seed": 3}


def test_a_link_closed_by_another_thread_is_replaced_without_spending_an_attempt(monkeypatch):
    s = Scripted([grant(), grant(epoch=2, secret="dsk_2")], [ok(), ok()])
    s.connection.act({}, rid="r-00000001")
    stale = s.connection._link
    s.connection._reconnect(stale, act_request.ActTrace())  # another thread replaced the link
    stale.client.close()
    monkeypatch.setattr(s.connection, "_current", lambda trace: stale)
    s.connection.act({}, rid="r-00000002")
    assert s.act_requests[-1].headers["authorization"] == "Bearer dsk_2"
