"""Every wire parser the client has, fed anything: a parsed object or a SequencesError, never
another exception type. Complements test/client/test_catalogue_properties.py (catalogue rows,
catalogue answers, error bodies, decide) and test_policy_chunk.py (the action_chunk object) with
the parsers those leave out: connect answers, whole /act answers, raw HTTP answers, ready,
account and the three perception answers (over a real loopback server).
"""

from __future__ import annotations

import json
import math

import pytest
from _canned_server import CannedServer
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from sequence_ai import Model, SequencesError, connect
from sequence_ai._act._chunk import parse_prediction
from sequence_ai._link._admission import Grant, parse_grant, renew_after_s
from sequence_ai._net._http import error_from_response, parse_json_answer
from sequence_ai._net._http11 import pinned_client
from sequence_ai._net._http11_answer import Connection, read_answer
from sequence_ai._net._tls import normalise_fingerprint
from sequence_ai._net._transport import Answer, Headers, TransportError
from sequence_ai._oneshot._calls import account
from sequence_ai._oneshot._perception import depth, detect, embed

scalars = st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=16)
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=10), inner, max_size=5),
    max_leaves=25,
)
PIN = "ab" * 32
DEEP = "[" * 100_000 + "]" * 100_000  # nests deeper than the json module recurses


def _fields(names, values=json_values):
    return st.dictionaries(st.sampled_from(names) | st.text(max_size=6), values, max_size=len(names) + 2)


# -- connect answers ---------------------------------------------------------------------------

LEASES = st.fixed_dictionaries({}, optional={"ttl_s": json_values | st.floats(), "epoch": json_values,
                                             "expires_at": json_values})
CONNECT = st.fixed_dictionaries(
    {},
    optional={"worker_url": st.sampled_from(["https://127.0.0.1:9", "https://127.0.0.1:99999", "https://[::1",
                                             "http://127.0.0.1:9", "https://"]) | json_values,
              "cert_fingerprint": st.just(PIN) | json_values,
              "direct_secret": st.sampled_from(["s3cret", "dsk_a\r\nX: 1", "dsk_\u2603", "dsk a"]) | json_values,
              "lease": LEASES | json_values, "action": json_values, "observation": json_values,
              "embodiment": json_values, "warming": json_values, "model": json_values},
)


@settings(max_examples=250, deadline=None)
@given(CONNECT | json_values)
@example({"worker_url": "https://127.0.0.1:9", "cert_fingerprint": PIN, "direct_secret": "s",
          "lease": {"ttl_s": float("nan")}})
@example({"worker_url": "https://127.0.0.1:9", "cert_fingerprint": 12345, "direct_secret": "s"})
def test_connect_answer_becomes_a_usable_grant_or_a_sequences_error(body):
    try:
        grant = parse_grant(body)
        pin = normalise_fingerprint(grant.cert_fingerprint)  # the next thing admission does with it
        client = pinned_client(grant.worker_url, pin, headers={"Authorization": f"Bearer {grant.direct_secret}"},
                               timeout=1.0)  # what the worker link is built from (no socket yet)
    except SequencesError:
        return
    # ... and its first request head can be written: no line break, nothing outside ASCII
    assert client.head("POST", "/act", {"X-Seq-Request-Id": "r"}, b"{}").startswith(b"POST /act HTTP/1.1\r\n")
    assert isinstance(grant, Grant) and len(pin) == 64
    assert isinstance(grant.worker_url, str) and isinstance(grant.direct_secret, str)
    assert grant.ttl_s is None or not math.isnan(grant.ttl_s)
    after = renew_after_s(grant.ttl_s)
    assert after is None or (math.isfinite(after) and after >= 0) or after == math.inf


# -- raw bytes from the worker, through its HTTP/1.1 parser ----------------------------------------


class _Replay:
    """Stands in for the TLS socket: hands out `data` in the given slice sizes, then EOF."""

    def __init__(self, data: bytes, sizes):
        self.data, self.sizes = data, list(sizes) or [len(data) or 1]

    def settimeout(self, _timeout) -> None:
        pass

    def recv(self, _n: int) -> bytes:
        size = self.sizes.pop(0) if len(self.sizes) > 1 else self.sizes[0]
        piece, self.data = self.data[:size], self.data[size:]
        return piece


HEADS = st.sampled_from([b"HTTP/1.1 200 OK\r\n", b"HTTP/1.0 503 x\r\n", b"HTTP/1.1 \xb2\xb2\xb2 x\r\n",
                         b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\n", b"garbage\r\n"])
HEADERS = st.lists(st.sampled_from([b"Content-Length: 5\r\n", b"Content-Length: -1\r\n", b"Content-Length: 99\r\n",
                                    b"Transfer-Encoding: chunked\r\n", b"Connection: close\r\n", b"X: \xff\r\n",
                                    b"no colon\r\n", b" folded: x\r\n"]), max_size=3)
BODIES = st.sampled_from([b"hello", b"5\r\nhello\r\n0\r\n\r\n", b"-2\r\nxx\r\n0\r\n\r\n", b"zz\r\n",
                          b"ffffffffffffffffffff\r\n", b""]) | st.binary(max_size=40)


@settings(max_examples=400, deadline=None)
@given(HEADS, HEADERS, BODIES, st.lists(st.integers(1, 12), max_size=6), st.binary(max_size=60))
@example(b"HTTP/1.1 200 OK\r\n", [b"Content-Length: 5\r\n"], b"hello", [], b"")
def test_any_bytes_from_the_worker_are_an_answer_or_a_transport_error(head, headers, body, sizes, noise):
    """Whatever arrives, the worker link returns an answer or raises one of the seam's transport
    errors (which the reconnect logic turns into a retry, then Unavailable); never another
    exception, never a hang (the replay ends in EOF)."""
    connection = Connection(_Replay(head + b"".join(headers) + b"\r\n" + body + noise, sizes), "the worker")  # type: ignore[arg-type]
    try:
        response, _keep = read_answer(connection, "POST", 1 << 20)
    except TransportError:
        return
    assert 200 <= response.status_code <= 599 and isinstance(response.content, bytes)


# -- whole /act answers --------------------------------------------------------------------------

GOOD_CHUNK = {"steps": [[0.1, 0.2]], "robot": "droid_franka", "action_space": "joint_delta", "action_dim": 2,
              "control_frequency_hz": 15, "covers_seconds": 0.07}
ACT_ANSWERS = st.fixed_dictionaries(
    {"action_chunk": st.just(GOOD_CHUNK) | json_values},
    optional={"usage": json_values, "perf": json_values, "warnings": json_values, "rid": json_values,
              "id": json_values, "model": json_values},
)


@settings(max_examples=200, deadline=None)
@given(ACT_ANSWERS | json_values)
def test_act_answer_parses_or_raises_sequences_error(body):
    try:
        prediction = parse_prediction(body, rid="r-00000000", model="pi05-droid")
    except SequencesError:
        return
    assert isinstance(prediction.id, str) and isinstance(prediction.model, str)
    assert all(isinstance(w, str) for w in prediction.warnings)
    assert all(math.isfinite(v) for row in prediction.action_chunk.steps for v in row)


# -- raw HTTP answers (as a transport hands them over) ----------------------------------------------

@settings(max_examples=200, deadline=None)
@given(st.integers(min_value=200, max_value=599),
       st.binary(max_size=64) | json_values.map(lambda v: json.dumps(v).encode()),
       st.dictionaries(st.sampled_from(["retry-after", "content-type"]), st.text(
           alphabet=st.characters(min_codepoint=32, max_codepoint=126), max_size=10), max_size=2))
@example(200, DEEP.encode(), {})
@example(500, DEEP.encode(), {})
@example(200, b"\xff\xfe{", {})
@example(503, b'{"detail": {"status": "warming_up", "retry_after_s": 1e400}}', {"retry-after": "nan"})
def test_any_http_answer_is_a_value_or_a_sequences_error(status, content, headers):
    response = Answer(status, Headers(headers), content)
    try:
        parse_json_answer(response, "/v1/x")
    except SequencesError as error:
        assert isinstance(error.message, str)


@pytest.mark.parametrize("status", [401, 429, 500, 503])
def test_error_body_nested_deeper_than_json_recursion_is_still_a_sequences_error(status):
    assert isinstance(error_from_response(status, DEEP), SequencesError)


# -- answers that only come over the network: ready, account, perception ------------------------

@pytest.fixture(scope="module")
def canned():
    with CannedServer() as server:
        yield server


@pytest.fixture(scope="module")
def canned_policy(canned):
    with connect("pi05-droid", api_key="k", base_url=canned.url, validate="off") as policy:
        yield policy


def _row(short: str, architecture: str) -> Model:
    return Model.from_wire({"id": f"accounts/sequences/models/{short}", "endpoint": "perceive",
                            "architecture": architecture})


DETECTOR, EMBEDDER, DEPTH = _row("grounding-dino-base", "det"), _row("siglip-so400m", "emb"), \
    _row("depth-anything-v2-small", "depth")
PERCEPTION = st.fixed_dictionaries(
    {},
    optional={"detections": json_values, "image_embeddings": json_values, "text_embeddings": json_values,
              "embedding_dim": json_values, "depth": st.lists(st.just("AAA=") | st.text(max_size=8), max_size=2)
              | json_values, "depth_shape": st.lists(st.lists(st.integers(-2, 4) | st.floats() | st.text(max_size=2),
                                                             max_size=3), max_size=2) | json_values,
              "depth_dtype": st.sampled_from(["float16", "float32", "int8"]) | json_values,
              "usage": json_values, "perf": json_values, "warnings": json_values, "id": json_values},
)
ANSWER_BYTES = (PERCEPTION | json_values).map(lambda v: json.dumps(v).encode()) | st.binary(max_size=40)
SLOW_OK = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


@SLOW_OK
@given(ANSWER_BYTES, st.sampled_from(["detect", "embed", "depth"]))
@example(b'{"depth": ["AAAAAA=="], "depth_shape": [[1e400, 1]]}', "depth")
@example(b'{"depth": ["AAAA"], "depth_shape": [[-1, -1]]}', "depth")
def test_perception_answer_is_a_perception_or_a_sequences_error(canned, body, task):
    canned.answer(body)
    call = {"detect": lambda: detect(DETECTOR, "aGVsbG8=", ["cup"], base_url=canned.url, api_key="k"),
            "embed": lambda: embed(EMBEDDER, text=["cup"], base_url=canned.url, api_key="k"),
            "depth": lambda: depth(DEPTH, "aGVsbG8=", base_url=canned.url, api_key="k")}[task]
    try:
        result = call()
    except SequencesError:
        return
    assert result.task == task and isinstance(result.id, str)


@SLOW_OK
@given((st.fixed_dictionaries({}, optional={"ready": json_values, "eta_s": json_values | st.floats(),
                                            "status": json_values}) | json_values)
       .map(lambda v: json.dumps(v).encode()) | st.binary(max_size=40))
def test_ready_answer_is_a_pair_or_a_sequences_error(canned, canned_policy, body):
    canned.answer(body)
    try:
        ready, eta = canned_policy.ready()
    except SequencesError:
        return
    assert isinstance(ready, bool) and (eta is None or isinstance(eta, float))


@SLOW_OK
@given(json_values.map(lambda v: json.dumps(v).encode()) | st.binary(max_size=40))
def test_account_answer_is_an_object_or_a_sequences_error(canned, body):
    canned.answer(body)
    try:
        assert isinstance(account(base_url=canned.url, api_key="k"), dict)
    except SequencesError:
        pass
