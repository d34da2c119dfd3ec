"""Malformed and hostile requests always get a 4xx with a `detail`: never a 500, never a hang.

Property-based (hypothesis): random JSON documents, and valid requests with one field replaced
by a random value, sent over real HTTP/TLS to every route.
"""

from __future__ import annotations

import copy
import json

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from platform_helpers import act_body, connect, gateway

SETTINGS = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])

json_leaf = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(),
                      st.text(max_size=40))
json_value = st.recursive(json_leaf, lambda inner: st.one_of(st.lists(inner, max_size=5),
                                                            st.dictionaries(st.text(max_size=12), inner, max_size=5)),
                          max_leaves=20)

GATEWAY_POSTS = {
    "/v1/act/connect": {"model": "pi05-droid", "session": "a" * 32},
    "/v1/reports/act": {"reports": [{"rid": "r-00000000", "outcome": "served"}]},
    "/v1/decide": {"model": "jev", "state": "s", "questions": {"q": {"type": "noul", "instructions": "i"}}},
    "/v1/perceive": {"model": "siglip-so400m", "task": "embed", "text": ["cup"]},
    "/v1/chat": {"model": "claude-opus-4-8", "messages": [{"role": "user", "content": "hi"}]},
}


def _paths(doc, prefix=()):
    """Every path to a value inside a JSON document."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*prefix, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _paths(v, (*prefix, i))


def _replace(doc, path, value):
    doc = copy.deepcopy(doc)
    if not path:
        return value
    target = doc
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return doc


def _post(client: httpx.Client, route: str, doc) -> httpx.Response:
    # Python's json writes NaN/Infinity literals; a hostile client may too.
    return client.post(route, content=json.dumps(doc, allow_nan=True), headers={"Content-Type": "application/json"})


def _assert_refused_or_served(r: httpx.Response) -> None:
    assert r.status_code < 500, (r.status_code, r.text[:500])
    if r.status_code >= 400:
        body = r.json()
        assert body.get("detail") or body.get("error"), r.text[:500]


@pytest.fixture
def worker_client(platform):
    answer = connect(platform)
    with httpx.Client(base_url=answer["worker_url"], verify=False, timeout=10.0,
                      headers={"Authorization": f"Bearer {answer['direct_secret']}"}) as w:
        yield w


ACT_PATHS = list(_paths(act_body()))


@SETTINGS
@given(path=st.sampled_from(ACT_PATHS), value=json_value)
def test_act_with_any_one_field_replaced_is_refused_cleanly(worker_client, path, value):
    _assert_refused_or_served(_post(worker_client, "/act", _replace(act_body(), path, value)))


@SETTINGS
@given(doc=json_value)
def test_act_with_any_json_document_is_refused_cleanly(worker_client, doc):
    _assert_refused_or_served(_post(worker_client, "/act", doc))


@SETTINGS
@given(route=st.sampled_from(sorted(GATEWAY_POSTS)), data=st.data())
def test_gateway_posts_with_any_one_field_replaced_are_refused_cleanly(platform, route, data):
    valid = GATEWAY_POSTS[route]
    path = data.draw(st.sampled_from(list(_paths(valid))))
    value = data.draw(json_value)
    with gateway(platform) as g:
        _assert_refused_or_served(_post(g, route, _replace(valid, path, value)))


@settings(SETTINGS, max_examples=25)
@given(raw=st.binary(max_size=200))
def test_arbitrary_bytes_are_refused_cleanly(platform, worker_client, raw):
    with gateway(platform) as g:
        for route in GATEWAY_POSTS:
            _assert_refused_or_served(g.post(route, content=raw, headers={"Content-Type": "application/json"}))
    _assert_refused_or_served(worker_client.post("/act", content=raw, headers={"Content-Type": "application/json"}))


@pytest.mark.parametrize("route", [*GATEWAY_POSTS, "/act"])
@pytest.mark.parametrize("payload", [
    b"[" * 100_000 + b"]" * 100_000,  # nesting deeper than any parser's recursion
    b'{"model": "\xff\xfe"}',  # not UTF-8
    b"NaN",
    b"",
])
def test_pathological_documents_are_refused_cleanly(platform, worker_client, route, payload):
    headers = {"Content-Type": "application/json"}
    if route == "/act":
        r = worker_client.post(route, content=payload, headers=headers)
    else:
        with gateway(platform) as g:
            r = g.post(route, content=payload, headers=headers)
    assert 400 <= r.status_code < 500 and r.json()["detail"]


def test_a_huge_body_on_the_gateway_is_413(platform):
    with gateway(platform) as g:
        r = g.post("/v1/perceive", content=b"x" * (17 * 1024 * 1024), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and "limit" in r.json()["detail"]


def test_a_chunked_body_over_the_limit_is_413(worker_client):
    def chunks():
        for _ in range(5):
            yield b"x" * (1024 * 1024)

    r = worker_client.post("/act", content=chunks(), headers={"Content-Type": "application/json"})
    assert r.status_code == 413 and r.json()["detail"]


def test_a_deeply_nested_decide_state_is_handled(platform):
    state = json.loads("[" * 500 + "]" * 500)
    with gateway(platform) as g:
        r = g.post("/v1/decide", json={"model": "jev", "state": state,
                                       "questions": {"q": {"type": "noul", "instructions": "i"}}})
    assert r.status_code < 500
