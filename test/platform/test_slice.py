"""The minimal path a client walks: catalogue, connect, one act."""

from __future__ import annotations

from platform_helpers import act_body, connect, gateway, served_fingerprint, worker


def test_health_needs_no_key_and_says_keystore(platform):
    with gateway(platform, key=None) as g:
        assert g.get("/v1/health").json() == {"ok": True, "backend": "local", "auth": "keystore"}


def test_catalogue_lists_the_three_droid_policies_without_a_key(platform):
    with gateway(platform, key=None) as g:
        rows = g.get("/v1/models", params={"endpoint": "act"}).json()["data"]
    ids = {r["id"].rsplit("/", 1)[-1] for r in rows}
    assert ids == {"pi05-droid", "cosmos3-edge-policy-droid", "groot-n1-7-3b-droid"}


def test_connect_pins_the_certificate_the_worker_serves(platform):
    answer = connect(platform)
    assert served_fingerprint(answer["worker_url"]) == answer["cert_fingerprint"]
    assert answer["worker_url"].startswith("https://127.0.0.1:")


def test_act_answers_a_chunk_of_the_declared_shape(platform):
    answer = connect(platform)
    with worker(answer, rid="r-1234abcd") as w:
        r = w.post("/act", json=act_body())
    assert r.status_code == 200, r.text
    assert r.headers["x-seq-request-id"] == "r-1234abcd"
    chunk = r.json()["action_chunk"]
    assert len(chunk["steps"]) == 15 and all(len(s["values"]) == 8 for s in chunk["steps"])
    assert (chunk["robot"], chunk["action_space"], chunk["action_dim"]) == ("droid_franka", "joint_delta", 8)
