"""Each scripted fault behaves as docs/PLATFORM.md says, and the admin API guards itself."""

from __future__ import annotations

import json
import threading
import time

import httpx
import pytest
from eventually import wait_until
from platform_helpers import act_body, connect, gateway, served_fingerprint, worker


def _act(answer, **kw):
    with worker(answer) as w:
        return w.post("/act", json=act_body(**kw))


# -- warming --------------------------------------------------------------------------------------
def test_warming_detail_form_on_connect_ready_and_act_then_ready(platform):
    answer = connect(platform)
    armed = platform.fault("warming", seconds=1.0, eta_s=180)
    with gateway(platform) as g:
        r = g.post("/v1/act/connect", json={"model": "pi05-droid", "session": "a" * 32})
        ready = g.get("/v1/act/ready", params={"model": "pi05-droid"}).json()
        act = _act(answer)
        assert r.status_code == 503 and act.status_code == 503
        assert r.headers["retry-after"] == "1"
        detail = r.json()["detail"]
        assert detail["status"] == "warming_up" and detail["retry_after_s"] == 1
        assert detail["warming_job_id"] == armed["warming_job_id"] and detail["message"]
        assert ready == {**ready, "ready": False, "eta_s": 180.0, "status": "starting"}
        assert wait_until(lambda: g.get("/v1/act/ready", params={"model": "pi05-droid"}).json()["ready"] is True,
                          10.0, poll_s=0.05), "the 1 s warming never ended"
        assert g.post("/v1/act/connect", json={"model": "pi05-droid", "session": "a" * 32}).status_code == 200
    assert _act(answer).status_code == 200


def test_warming_code_form_and_a_503_ready(platform):
    platform.fault("warming", seconds=5, form="code", ready_status=503)
    with gateway(platform) as g:
        r = g.post("/v1/act/connect", json={"model": "pi05-droid", "session": "a" * 32})
        ready = g.get("/v1/act/ready", params={"model": "pi05-droid"})
    body = r.json()
    assert r.status_code == 503 and body["code"] == "warming" and 1 <= body["retry_after_s"] <= 5
    assert "detail" not in body and int(r.headers["retry-after"]) == body["retry_after_s"]
    assert ready.status_code == 503 and ready.json()["code"] == "warming"
    platform.clear_faults()
    with gateway(platform) as g:
        assert g.post("/v1/act/connect", json={"model": "pi05-droid", "session": "a" * 32}).status_code == 200


# -- per-request faults ---------------------------------------------------------------------------
def test_latency_delays_each_act_and_is_reported_as_injected(platform):
    answer = connect(platform)
    platform.fault("latency", ms=300, jitter=0.1)
    t0 = time.monotonic()
    r = _act(answer)
    elapsed = time.monotonic() - t0
    assert r.status_code == 200 and elapsed >= 0.27
    injected = r.json()["perf"]["injected_ms"]
    assert 270 <= injected <= 330
    # the request log times the worker's whole handling of it, the injected delay included
    assert injected <= platform.requests()[-1]["worker_ms"] < elapsed * 1000


def test_latency_jitter_spreads_each_act_around_the_base(platform):
    answer = connect(platform)
    platform.fault("latency", ms=200, jitter=0.5)
    injected = [_act(answer).json()["perf"]["injected_ms"] for _ in range(8)]
    assert all(100 <= ms <= 300 for ms in injected), injected
    assert max(injected) - min(injected) >= 40, injected  # not one fixed delay


def test_busy_answers_429_for_the_next_n_then_serves(platform):
    answer = connect(platform)
    platform.fault("busy", count=2)
    with worker(answer) as w:
        statuses = [w.post("/act", json=act_body()) for _ in range(3)]
    assert [r.status_code for r in statuses] == [429, 429, 200]
    assert statuses[0].headers["retry-after"] == "1" and statuses[0].json() == {"error": "overloaded"}


def test_a_fraction_fault_fires_on_some_requests_reproducibly(platform):
    answer = connect(platform)

    def run():
        platform.clear_faults()
        platform.fault("busy", fraction=0.5, seed=3)
        with worker(answer) as w:
            return [w.post("/act", json=act_body()).status_code for _ in range(16)]

    first = run()
    assert set(first) == {200, 429}
    assert run() == first


def test_busy_on_connect(platform):
    platform.fault("busy", route="connect", count=1)
    with gateway(platform) as g:
        assert g.post("/v1/act/connect", json={"model": "pi05-droid"}).status_code == 429
        assert g.post("/v1/act/connect", json={"model": "pi05-droid"}).status_code == 200


@pytest.mark.parametrize("code", [413, 500, 502, 504])
def test_status_fault_answers_that_code_with_a_detail(platform, code):
    answer = connect(platform)
    platform.fault("status", code=code, count=1)
    r = _act(answer)
    assert r.status_code == code and str(code) in r.json()["detail"]
    assert _act(answer).status_code == 200


def test_drop_cuts_the_answer_mid_body(platform):
    answer = connect(platform)
    platform.fault("drop", count=1)
    with worker(answer) as w, pytest.raises(httpx.RemoteProtocolError):
        w.post("/act", json=act_body())
    assert _act(answer).status_code == 200


def test_malformed_json_is_a_200_that_does_not_parse(platform):
    answer = connect(platform)
    platform.fault("malformed_json", count=1)
    r = _act(answer)
    assert r.status_code == 200 and r.headers["content-type"] == "application/json"
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.text)


@pytest.mark.parametrize(("kind", "check"), [
    ("nan_actions", lambda v: v != v),
    ("inf_actions", lambda v: v in (float("inf"), float("-inf"))),
])
def test_non_finite_actions_reach_the_client_as_such(platform, kind, check):
    answer = connect(platform)
    platform.fault(kind, count=1)
    rows = [s["values"] for s in _act(answer).json()["action_chunk"]["steps"]]
    assert any(check(v) for row in rows for v in row)


def test_wrong_action_dim_sends_rows_narrower_than_declared(platform):
    answer = connect(platform)
    platform.fault("wrong_action_dim", count=1)
    chunk = _act(answer).json()["action_chunk"]
    assert chunk["action_dim"] == 8 and {len(s["values"]) for s in chunk["steps"]} == {7}


def test_bad_fingerprint_hands_out_a_pin_that_does_not_match(platform):
    platform.fault("bad_fingerprint", count=1)
    with gateway(platform) as g:
        bad = g.post("/v1/act/connect", json={"model": "pi05-droid"}).json()
        good = g.post("/v1/act/connect", json={"model": "pi05-droid"}).json()
    served = served_fingerprint(bad["worker_url"])
    assert len(bad["cert_fingerprint"]) == 64 and bad["cert_fingerprint"] != served
    assert good["cert_fingerprint"] == served


def test_lease_ttl_changes_what_connect_hands_out(platform):
    platform.fault("lease_ttl", ttl_s=2)
    assert connect(platform)["lease"]["ttl_s"] == 2.0
    platform.clear_faults()
    assert connect(platform)["lease"]["ttl_s"] == 300.0


# -- incidents ------------------------------------------------------------------------------------
def test_rotate_secret_refuses_the_old_secret_and_reconnect_gets_a_new_epoch(platform):
    old = connect(platform)
    platform.fault("rotate_secret")
    assert _act(old).status_code == 401
    new = connect(platform)
    assert new["lease"]["epoch"] == old["lease"]["epoch"] + 1 and new["direct_secret"] != old["direct_secret"]
    assert new["cert_fingerprint"] == old["cert_fingerprint"]
    assert _act(new).status_code == 200


def test_restart_worker_brings_a_new_certificate_secret_and_epoch(fresh_platform):
    old = connect(fresh_platform)
    fresh_platform.fault("restart_worker")
    new = connect(fresh_platform)
    assert new["worker_url"] == old["worker_url"]
    assert new["cert_fingerprint"] != old["cert_fingerprint"] and new["lease"]["epoch"] == old["lease"]["epoch"] + 1
    assert served_fingerprint(new["worker_url"]) == new["cert_fingerprint"]
    with httpx.Client(base_url=old["worker_url"], verify=False,
                      headers={"Authorization": f"Bearer {old['direct_secret']}"}) as w:
        assert w.post("/act", json=act_body()).status_code == 401
    assert _act(new).status_code == 200
    fresh_platform.fault("restart_worker", same_port=False)
    assert _act(connect(fresh_platform)).status_code == 200


def test_restart_worker_kills_requests_in_flight(fresh_platform):
    answer = connect(fresh_platform)
    fresh_platform.fault("latency", ms=3000)
    outcome = {}

    def slow_act():
        try:
            outcome["status"] = _act(answer).status_code
        except httpx.TransportError as err:
            outcome["error"] = err

    thread = threading.Thread(target=slow_act)
    thread.start()
    assert wait_until(lambda: fresh_platform.arrivals("worker POST /act") == 1, 10.0), "the act never reached the worker"
    fresh_platform.fault("restart_worker")
    thread.join(5)
    assert "error" in outcome, outcome


def test_worker_down_refuses_connections_until_worker_up(platform):
    answer = connect(platform)
    platform.fault("worker_down")
    with pytest.raises(httpx.ConnectError), httpx.Client(verify=False) as w:
        w.post(answer["worker_url"] + "/act", json=act_body(),
               headers={"Authorization": f"Bearer {answer['direct_secret']}"})
    platform.fault("worker_up")
    assert _act(answer).status_code == 200  # same identity: a network outage, not a redeploy


def test_kill_takes_the_gateway_down_and_restart_brings_it_back_on_the_same_address(fresh_platform):
    base_url, key = fresh_platform.base_url, fresh_platform.api_key
    fresh_platform.kill()
    with pytest.raises(httpx.ConnectError):
        httpx.get(base_url + "/v1/health")
    fresh_platform.restart()
    assert (fresh_platform.base_url, fresh_platform.api_key) == (base_url, key)
    assert httpx.get(base_url + "/v1/health").json()["ok"] is True


# -- the admin API itself -------------------------------------------------------------------------
@pytest.mark.parametrize("peer", ["192.0.2.7", "10.1.2.3", "2001:db8::5"])
def test_admin_refuses_a_peer_that_is_not_loopback_even_with_the_token(peer):
    # The platform binds 127.0.0.1, so no other host can reach it here: the real gateway app is
    # called in-process with the peer address another host would have.
    import warnings

    from sequence_ai.platform import policies
    from sequence_ai.platform.gateway import build_gateway_app
    from sequence_ai.platform.keystore import KeyStore
    from sequence_ai.platform.state import PlatformState

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # starlette's note about its httpx-based test client
        from starlette.testclient import TestClient

    state = PlatformState(KeyStore.from_sources("seq_test_" + "a" * 32), "admin-token", policies.stand_in, "stand-in")
    headers = {"X-Admin-Token": "admin-token"}
    with TestClient(build_gateway_app(state), client=(peer, 50000)) as remote:
        armed = remote.post("/admin/faults", json={"kind": "busy", "count": 1}, headers=headers)
        assert armed.status_code == 403 and peer in armed.json()["detail"]
        assert remote.get("/admin/requests", headers=headers).status_code == 403
        assert remote.get("/v1/health").status_code == 200  # the public routes answer anyone
    assert state.faults.listing() == []  # nothing was armed
    with TestClient(build_gateway_app(state), client=("127.0.0.1", 50000)) as local:
        assert local.post("/admin/faults", json={"kind": "busy", "count": 1}, headers=headers).status_code == 200
    assert [f["kind"] for f in state.faults.listing()] == ["busy"]


@pytest.mark.parametrize("token", [None, "wrong"])
def test_admin_needs_the_token(platform, token):
    headers = {"X-Admin-Token": token} if token else {}
    r = httpx.post(platform.base_url + "/admin/faults", json={"kind": "busy"}, headers=headers)
    assert r.status_code == 401 and "X-Admin-Token" in r.json()["detail"]


@pytest.mark.parametrize(("spec", "status"), [
    ({"kind": "earthquake"}, 422),
    ({"kind": "busy", "count": 0}, 422),
    ({"kind": "latency"}, 400),
    ({"kind": "warming"}, 400),
    ({"kind": "rotate_secret", "count": 2}, 400),
    ({"kind": "bad_fingerprint", "route": "act"}, 400),
    ({"kind": "busy", "colour": "red"}, 422),
])
def test_admin_refuses_nonsense_with_a_detail(platform, spec, status):
    r = platform.admin("POST", "faults", json=spec)
    assert r.status_code == status and r.json()["detail"]


def test_faults_are_listed_and_cleared(platform):
    platform.fault("busy", count=3)
    platform.fault("latency", ms=10)
    listed = platform.admin("GET", "faults").json()["faults"]
    assert [f["kind"] for f in listed] == ["busy", "latency"] and listed[0]["count_left"] == 3
    assert platform.clear_faults("busy")["cleared"] == 1
    assert platform.clear_faults()["cleared"] == 1


def test_a_request_is_counted_on_arrival_before_its_answer(platform):
    answer = connect(platform)
    assert platform.arrivals("gateway POST /v1/act/connect") == 1
    platform.fault("latency", ms=1500)
    replies = []
    slow = threading.Thread(target=lambda: replies.append(_act(answer)))
    slow.start()
    try:
        assert wait_until(lambda: platform.arrivals("worker POST /act") == 1, 10.0)
        assert not replies and "worker" not in platform.stats(), "counted as arrived while still being answered"
    finally:
        slow.join(10.0)
    assert replies[0].status_code == 200 and platform.stats()["worker"]["POST /act"] == {"200": 1}
    platform.reset()
    assert platform.arrivals("worker POST /act") == 0 and platform.arrivals("gateway POST /v1/act/connect") == 0


def test_reset_clears_requests_and_stats(platform):
    _act(connect(platform))
    assert platform.requests() and platform.stats()
    platform.reset()
    assert platform.requests() == [] and platform.stats() == {}
