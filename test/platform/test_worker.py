"""The worker: pinning, auth, the model contract, the answer's shape, the stand-in policies."""

from __future__ import annotations

import base64
import math

import pytest
from platform_helpers import JOINTS, act_body, connect, frame, lying_png_b64, png_b64, served_fingerprint, worker


@pytest.fixture
def pi05(platform):
    answer = connect(platform)
    with worker(answer) as client:
        yield client


def test_the_served_certificate_is_the_one_connect_pins(platform):
    answer = connect(platform)
    assert served_fingerprint(answer["worker_url"]) == answer["cert_fingerprint"]


def test_a_pi05_chunk_has_every_field_and_moves_from_the_observed_joints(pi05):
    r = pi05.post("/act", json=act_body())
    assert r.status_code == 200, r.text
    body = r.json()
    chunk = body["action_chunk"]
    assert chunk["covers_seconds"] == 1.0 and chunk["open_loop_horizon"] == 8 and chunk["sustains_seconds"] == 0.533
    assert chunk["control_frequency_hz"] == 15.0
    assert [s["index"] for s in chunk["steps"]] == list(range(15))
    assert body["usage"]["frames_received"] == body["usage"]["frames_used"] == 2
    assert body["perf"]["provider"] == "local stand-in" and body["perf"]["handler_ms"] >= body["perf"]["inference_ms"]
    assert body["rid"] == "r-0000abcd" and body["warnings"] == []
    rows = [s["values"] for s in chunk["steps"]]
    # joint_delta rows are cumulative displacements from q_obs: small at first, each step small
    assert max(abs(v) for v in rows[0][:7]) <= 0.4 / 15 + 1e-9
    for prev, cur in zip(rows, rows[1:]):
        assert max(abs(a - b) for a, b in zip(prev[:7], cur[:7])) <= 0.4 / 15 + 1e-9
    assert all(-1.0 <= v <= 1.0 for r in rows for v in r[:7]) and all(0.0 <= r[7] <= 1.0 for r in rows)


def test_the_stand_in_is_deterministic_and_follows_instruction_and_seed(pi05):
    def rows(**kw):
        return pi05.post("/act", json=act_body(**kw)).json()["action_chunk"]["steps"]

    assert rows() == rows()
    assert rows(instruction="put the cup on the plate") != rows()
    assert rows(seed=8) != rows()
    assert rows(joints=[0.1, -0.4, 0.0, -2.0, 0.0, 1.5, 0.7]) != rows()
    assert rows(instruction="pick up the cup")[-1]["values"][7] > 0.5  # closing
    assert rows(instruction="open the drawer", gripper=[1.0])[-1]["values"][7] < 0.5  # opening


def test_absolute_rows_start_next_to_the_observed_joints(platform):
    answer = connect(platform, "cosmos3-edge-policy-droid")
    body = act_body("cosmos3-edge-policy-droid", views=["exterior_1", "exterior_2", "wrist_left"], size=(640, 360))
    with worker(answer) as w:
        r = w.post("/act", json=body)
    assert r.status_code == 200, r.text
    chunk = r.json()["action_chunk"]
    assert chunk["action_space"] == "joint_absolute" and len(chunk["steps"]) == 32
    first = chunk["steps"][0]["values"]
    assert max(abs(a - b) for a, b in zip(first[:7], JOINTS)) <= 0.4 / 15 + 1e-9


@pytest.mark.parametrize(("size", "ok"), [((455, 256), True), ((256, 341), True), ((200, 120), True),
                                          ((300, 300), False), ((1280, 720), False)])
def test_groot_frames_follow_the_shortest_edge_rule(platform, size, ok):
    answer = connect(platform, "groot-n1-7-3b-droid")
    with worker(answer) as w:
        r = w.post("/act", json=act_body("groot-n1-7-3b-droid", size=size))
    assert (r.status_code == 200) is ok, r.text
    if not ok:
        assert "shortest edge 256" in r.json()["detail"]


@pytest.mark.parametrize("secret", [None, "dsk_wrong"])
def test_act_without_the_direct_secret_is_401_and_still_echoes_the_rid(platform, secret):
    answer = connect(platform)
    with worker(answer, secret=secret or " ") as w:
        if secret is None:
            del w.headers["Authorization"]
        r = w.post("/act", json=act_body())
        ping = w.get("/ping")
    assert r.status_code == 401 and "direct secret" in r.json()["detail"]
    assert r.headers["x-seq-request-id"] == "r-0000abcd"
    assert ping.status_code == 401


@pytest.mark.parametrize("path", ["/openapi.json", "/ping", "/act/episode_end", "/admin/faults", "/no-such-route"])
def test_every_worker_path_needs_the_direct_secret(platform, path):
    answer = connect(platform)
    with worker(answer) as w:
        assert w.get("/openapi.json").status_code == 200
        del w.headers["Authorization"]
        r = w.get(path)
    assert r.status_code == 401 and "direct secret" in r.json()["detail"]


def test_ping_and_episode_end(pi05):
    assert pi05.get("/ping").json()["ok"] is True
    pi05.post("/act", json=act_body(episode_id="ep-end"))
    r = pi05.post("/act/episode_end", json={"episode_id": "ep-end"})
    assert r.status_code == 200 and r.json() == {"ok": True, "episode_id": "ep-end", "known": True}


def test_a_missing_view_is_400_naming_missing_and_sent(pi05):
    r = pi05.post("/act", json=act_body(views=["exterior_1"]))
    assert r.status_code == 400
    assert r.json()["detail"] == "observation.images is missing view(s): wrist_left; you sent: exterior_1"


def test_an_undeclared_view_is_received_but_not_used(pi05):
    r = pi05.post("/act", json=act_body(views=["exterior_1", "wrist_left", "exterior_2"]))
    assert r.status_code == 200
    assert r.json()["usage"]["frames_received"] == 3 and r.json()["usage"]["frames_used"] == 2
    assert "exterior_2" in r.json()["warnings"][0]


@pytest.mark.parametrize("view", ["exterior_1", "exterior_2"])  # declared, undeclared
@pytest.mark.parametrize("url", ["https://example.com/cam.jpg", "file:///etc/passwd"])
def test_a_url_is_refused_in_any_view_and_never_fetched(pi05, view, url):
    body = act_body()
    body["observation"]["images"].append({"view": view, "data": url, "timestamp_ms": None})
    r = pi05.post("/act", json=body)
    assert r.status_code == 400
    assert "never fetched" in r.json()["detail"] and repr(view) in r.json()["detail"]


def test_extra_context_frames_of_a_view_are_not_used(pi05):
    r = pi05.post("/act", json=act_body(views=["exterior_1", "exterior_1", "wrist_left"]))
    assert r.status_code == 200
    assert r.json()["usage"] == {**r.json()["usage"], "frames_received": 3, "frames_used": 2}


def test_an_older_context_frame_at_the_wrong_size_is_400(pi05):
    body = act_body()
    older = {"view": "exterior_1", "data": frame(320, 180), "timestamp_ms": None}
    body["observation"]["images"].insert(0, older)
    r = pi05.post("/act", json=body)
    assert r.status_code == 400
    detail = r.json()["detail"]
    assert "images[0]" in detail and "exterior_1" in detail and "320x180" in detail and "224x224" in detail


def test_a_frame_declaring_more_pixels_than_its_bytes_hold_is_400(platform):
    answer = connect(platform, "groot-n1-7-3b-droid")  # shortest_edge 256: the long edge is unbounded
    body = act_body("groot-n1-7-3b-droid", size=(455, 256))
    body["observation"]["images"][0]["data"] = lying_png_b64(65535, 256)
    with worker(answer) as w:
        r = w.post("/act", json=body)
    assert r.status_code == 400 and "65535x256" in r.json()["detail"] and "45 bytes" in r.json()["detail"]


@pytest.mark.parametrize("size", [(224, 126), (320, 180), (225, 224)])
def test_a_frame_not_at_client_resize_is_400_naming_view_and_sizes(pi05, size):
    body = act_body()
    body["observation"]["images"][1]["data"] = frame(*size)
    r = pi05.post("/act", json=body)
    assert r.status_code == 400
    detail = r.json()["detail"]
    assert "wrist_left" in detail and f"{size[0]}x{size[1]}" in detail and "224x224" in detail


def test_png_frames_are_accepted(pi05):
    body = act_body()
    body["observation"]["images"][0]["data"] = png_b64(224, 224)
    assert pi05.post("/act", json=body).status_code == 200


@pytest.mark.parametrize(("data", "words"), [
    ("https://example.com/cam.jpg", "never fetched"),
    ("data:image/jpeg;base64,/9j/4AAQ", "never fetched"),
    ("not base64 at all!", "base64"),
    (base64.b64encode(b"GIF89a....").decode(), "JPEG or PNG"),
    (frame(224, 224)[:400], "JPEG or PNG"),  # truncated: no end-of-image marker
])
def test_undecodable_image_data_is_400(pi05, data, words):
    body = act_body()
    body["observation"]["images"][0]["data"] = data
    r = pi05.post("/act", json=body)
    assert r.status_code == 400 and words in r.json()["detail"] and "exterior_1" in r.json()["detail"]


@pytest.mark.parametrize(("joints", "warning"), [
    (JOINTS[:6], "joint_positions had 6 values; padded to 7"),
    ([*JOINTS, 0.04], "joint_positions had 8 values; truncated to 7"),
])
def test_wrong_joint_widths_are_fitted_with_a_warning(pi05, joints, warning):
    r = pi05.post("/act", json=act_body(joints=joints))
    assert r.status_code == 200 and warning in r.json()["warnings"]


def test_a_missing_gripper_is_zero_filled_with_a_warning(pi05):
    body = act_body()
    body["observation"]["proprioception"]["gripper"] = None
    r = pi05.post("/act", json=body)
    assert r.status_code == 200 and "zero-filled" in r.json()["warnings"][0]


def test_a_scalar_gripper_is_a_pydantic_style_422(pi05):
    r = pi05.post("/act", json=act_body(gripper=0.0))
    assert r.status_code == 422
    (error,) = r.json()["detail"]
    assert error["type"] == "list_type" and error["loc"] == ["body", "observation", "proprioception", "gripper"]


def test_non_finite_joints_are_refused(pi05):
    body = act_body()
    r = pi05.post("/act", content=__import__("json").dumps(body).replace("-0.5", "NaN"),
                  headers={"Content-Type": "application/json"})
    assert r.status_code == 422 and r.json()["detail"]


def test_a_body_over_the_limit_is_413_with_a_detail(pi05):
    body = act_body()
    body["observation"]["images"][0]["data"] = "A" * (5 * 1024 * 1024)
    r = pi05.post("/act", json=body)
    assert r.status_code == 413 and "limit" in r.json()["detail"]


def test_the_worker_logs_every_act_it_received(platform):
    answer = connect(platform)
    with worker(answer, rid="r-feedbeef") as w:
        w.post("/act", json=act_body(instruction="wave", episode_id="ep-log"))
        w.post("/act", json=act_body(views=["exterior_1"]))
    ok, refused = platform.requests()[-2:]
    assert ok["rid"] == "r-feedbeef" and ok["instruction"] == "wave" and ok["episode_id"] == "ep-log"
    assert ok["views"] == ["exterior_1", "wrist_left"] and ok["joint_positions"] == JOINTS and ok["status"] == 200
    assert refused["status"] == 400
    assert math.isfinite(ok["time"])
    assert ok["worker_ms"] > 0 and refused["worker_ms"] > 0
    assert platform.stats()["worker"]["POST /act"] == {"200": 1, "400": 1}
