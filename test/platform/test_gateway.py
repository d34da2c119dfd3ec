"""Every gateway route: shapes, auth and error bodies (docs/PROTOCOL.md §3, §4)."""

from __future__ import annotations

import base64
import math
import time

import numpy as np
import pytest
from platform_helpers import connect, flat_png_b64, frame, gateway, lying_png_b64, png_b64

SECTION_4_2_FIELDS = {"id", "endpoint", "architecture", "robot", "action_dim", "state_dim", "state_layout",
                      "action_horizon", "control_hz", "camera_views", "context_frames", "training_frame_size",
                      "input_aspect_ratio", "input_resize", "client_resize", "action_space", "open_loop_horizon",
                      "sustains_seconds", "action_semantics", "pass_raw"}


def _rows(platform, endpoint=None):
    with gateway(platform, key=None) as g:
        r = g.get("/v1/models", params={"endpoint": endpoint} if endpoint else None)
    assert r.status_code == 200
    body = r.json()
    assert body["object"] == "list"
    return {row["id"].rsplit("/", 1)[-1]: row for row in body["data"]}


def test_every_act_row_carries_every_contract_field(platform):
    for short, row in _rows(platform, "act").items():
        assert set(row) >= SECTION_4_2_FIELDS, (short, SECTION_4_2_FIELDS - set(row))
        assert row["id"] == f"accounts/sequences/models/{short}"
        assert sum(row["state_layout"].values()) == row["state_dim"]


def test_catalogue_values_agree_with_what_the_client_team_was_told(platform):
    rows = _rows(platform, "act")
    pi = rows["pi05-droid"]
    assert pi["client_resize"] == {"size": [224, 224], "filter": "bilinear"}
    assert (pi["action_space"], pi["action_horizon"], pi["open_loop_horizon"], pi["sustains_seconds"]) == (
        "joint_delta", 15, 8, 0.533)
    assert pi["action_semantics"]["to_joint_positions"] == "offset_q_ref"
    cosmos = rows["cosmos3-edge-policy-droid"]
    assert cosmos["camera_views"] == ["exterior_1", "exterior_2", "wrist_left"]
    assert (cosmos["client_resize"]["size"], cosmos["input_resize"], cosmos["action_space"]) == (
        [640, 360], "stretch", "joint_absolute")
    groot = rows["groot-n1-7-3b-droid"]
    assert groot["client_resize"] == {"shortest_edge": 256, "filter": "area"}
    assert groot["input_aspect_ratio"] is None and groot["input_resize"] is None


def test_models_filters_by_endpoint_and_refuses_an_unknown_one(platform):
    everything = _rows(platform)
    assert {"jev", "claude-opus-4-8", "grounding-dino-base", "siglip-so400m", "depth-anything-v2-small"} <= set(everything)
    assert set(_rows(platform, "decide")) == {"jev"}
    assert {r["architecture"] for r in _rows(platform, "perceive").values()} == {"det", "emb", "depth"}
    with gateway(platform, key=None) as g:
        r = g.get("/v1/models", params={"endpoint": "teleport"})
    assert r.status_code == 400 and "endpoint" in r.json()["detail"]


@pytest.mark.parametrize("route", ["/v1/account", "/v1/act/ready?model=pi05-droid"])
@pytest.mark.parametrize("key", [None, "seq_test_wrong"])
def test_key_routes_answer_401_with_a_detail_without_a_valid_key(platform, route, key):
    with gateway(platform, key=key) as g:
        r = g.get(route)
    assert r.status_code == 401
    assert "API key" in r.json()["detail"]


@pytest.mark.parametrize("route", ["/v1/act/connect", "/v1/reports/act", "/v1/decide", "/v1/perceive", "/v1/chat"])
def test_posts_check_the_key_before_the_body(platform, route):
    with gateway(platform, key=None) as g:
        r = g.post(route, content=b"{not json")
    assert r.status_code == 401 and r.json()["detail"]


def test_account_has_balance_usage_and_limits(platform):
    with gateway(platform) as g:
        body = g.get("/v1/account").json()
    assert body["balance"]["balance"] > 0 and body["balance"]["currency"] == "USD"
    assert set(body["limits"]) == {"max_gpus_per_user", "daily_spend_cap_per_user_usd"}
    assert "policies" in body["usage"]


def test_ready_answers_running_for_a_warm_model_by_short_or_full_id(platform):
    with gateway(platform) as g:
        for name in ("pi05-droid", "accounts/sequences/models/pi05-droid"):
            assert g.get("/v1/act/ready", params={"model": name}).json()["ready"] is True
        missing = g.get("/v1/act/ready", params={"model": "no-such-model"})
        unnamed = g.get("/v1/act/ready")
    assert missing.status_code == 404 and "no-such-model" in missing.json()["detail"]
    assert unnamed.status_code == 422 and isinstance(unnamed.json()["detail"], list)


def test_connect_answers_coordinates_lease_and_declared_contract(platform):
    with gateway(platform) as g:
        body = g.post("/v1/act/connect", json={"model": "cosmos3-edge-policy-droid", "session": "a" * 32,
                                               "embodiment": "left_arm"}).json()
    assert len(body["cert_fingerprint"]) == 64 and body["direct_secret"].startswith("dsk_")
    assert body["lease"]["ttl_s"] == 300.0 and body["lease"]["expires_at"].endswith("Z")
    assert isinstance(body["lease"]["epoch"], int)
    assert body["action"] == {"robot": "droid_franka", "action_space": "joint_absolute", "action_dim": 8,
                              "control_frequency_hz": 15.0}
    assert body["observation"]["cameras"]["exterior_2"] == {"width": 640, "height": 360}
    assert body["observation"]["proprio"] == {"joint_positions": 7, "gripper": 1}
    assert body["embodiment"] == "left_arm" and body["warming"] is False


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"model": "no-such-model", "session": "a" * 32}, 404, "not in the catalogue"),
    ({"model": "jev", "session": "a" * 32}, 400, "not an act model"),
    ({"session": "a" * 32}, 422, "model"),
    ({"model": 7}, 422, "model"),
])
def test_connect_refusals_say_what_is_wrong(platform, body, status, words):
    with gateway(platform) as g:
        r = g.post("/v1/act/connect", json=body)
    assert r.status_code == status
    assert words in str(r.json()["detail"])


def test_reports_are_acknowledged_and_visible_to_the_admin_api(platform):
    report = {"rid": "r-0c4f9a2e", "outcome": "served", "client": {"total_ms": 12.5}, "perf": {"handler_ms": 1.0}}
    with gateway(platform) as g:
        r = g.post("/v1/reports/act", json={"reports": [report]})
        bad = g.post("/v1/reports/act", json={"reports": "lots"})
    assert r.status_code == 200 and r.json()["ok"] is True
    assert bad.status_code == 422
    assert platform.reports()[-1] == report


# -- decide ---------------------------------------------------------------------------------------
QUESTIONS = {
    "grasped": {"type": "noul", "instructions": "Is the cup in the gripper?", "criteria": {"yes": "lifted", "no": "on table"}},
    "team": {"type": "choice", "instructions": "Which team?", "criteria": {"billing": "Payments", "technical": "Bugs"}},
    "quality": {"type": "score", "instructions": "How tidy?", "criteria": ["messy", "ok", "tidy"]},
}


def test_decide_answers_every_question_under_its_own_key_with_its_type_shape(platform):
    with gateway(platform) as g:
        body = g.post("/v1/decide", json={"model": "jev", "state": {"scene": "cup"}, "questions": QUESTIONS}).json()
        again = g.post("/v1/decide", json={"model": "jev", "state": {"scene": "cup"}, "questions": QUESTIONS}).json()
    answers = body["answers"]
    assert set(answers) == set(QUESTIONS) and body["provider"] == "TypeSafe"
    assert 0.0 <= answers["grasped"]["noul"] <= 1.0
    assert answers["team"]["choice"] in ("billing", "technical")
    assert math.isclose(sum(answers["team"]["probabilities"].values()), 1.0, abs_tol=1e-4)
    assert answers["team"]["confidence"] == max(answers["team"]["probabilities"].values())
    assert set(answers["quality"]) == {"type", "score", "legend", "probabilities", "confidence"}
    assert answers == again["answers"]


@pytest.mark.parametrize(("body", "status"), [
    ({"model": "jev", "state": "s", "questions": {}}, 400),
    ({"model": "claude-opus-4-8", "state": "s", "questions": QUESTIONS}, 400),
    ({"model": "nope", "state": "s", "questions": QUESTIONS}, 404),
    ({"model": "jev", "state": "s", "questions": {"q": {"type": "vibes"}}}, 422),
    ({"model": "jev", "state": "s", "questions": {"q": {"type": "choice", "criteria": ["only"]}}}, 400),
])
def test_decide_refusals_carry_a_detail(platform, body, status):
    with gateway(platform) as g:
        r = g.post("/v1/decide", json=body)
    assert r.status_code == status and r.json()["detail"]


# -- perceive -------------------------------------------------------------------------------------
def test_detect_returns_one_entry_per_image_with_boxes_inside_it(platform):
    with gateway(platform) as g:
        body = g.post("/v1/perceive", json={"model": "grounding-dino-base", "task": "detect",
                                            "images": [frame(320, 180), png_b64(64, 48)], "labels": ["cup", "plate"],
                                            "box_threshold": 0.0}).json()
    assert len(body["detections"]) == 2
    for entry, (w, h) in zip(body["detections"], [(320, 180), (64, 48)]):
        assert len(entry["boxes"]) == len(entry["labels"]) == len(entry["scores"]) == 2
        for x0, y0, x1, y1 in entry["boxes"]:
            assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h


def test_embed_vectors_are_unit_length(platform):
    with gateway(platform) as g:
        body = g.post("/v1/perceive", json={"model": "siglip-so400m", "task": "embed", "images": [frame(64, 64)],
                                            "text": ["a cup", "a plate"]}).json()
    assert body["embedding_dim"] == len(body["image_embeddings"][0]) == len(body["text_embeddings"][1])
    for vec in body["image_embeddings"] + body["text_embeddings"]:
        assert math.isclose(sum(v * v for v in vec), 1.0, rel_tol=1e-5)


def test_depth_is_a_float16_buffer_of_the_image_shape_nearer_at_the_bottom(platform):
    with gateway(platform) as g:
        body = g.post("/v1/perceive", json={"model": "depth-anything-v2-small", "task": "depth",
                                            "images": [frame(96, 64)]}).json()
    assert body["depth_dtype"] == "float16" and body["depth_shape"] == [[64, 96]]
    depth = np.frombuffer(base64.b64decode(body["depth"][0]), dtype=np.float16).reshape(64, 96)
    assert depth[-1].mean() > depth[0].mean()


@pytest.mark.parametrize(("model", "task", "extra"), [
    ("depth-anything-v2-small", "depth", {}),
    ("grounding-dino-base", "detect", {"labels": ["cup"]}),
    ("siglip-so400m", "embed", {}),
])
def test_tiny_images_declaring_huge_sizes_are_refused_at_once(platform, model, task, extra):
    body = {"model": model, "task": task, "images": [lying_png_b64(4096, 4096)] * 64, **extra}
    with gateway(platform) as g:
        t0 = time.monotonic()
        r = g.post("/v1/perceive", json=body)
        elapsed = time.monotonic() - t0
    assert r.status_code == 400 and elapsed < 2.0, (r.status_code, elapsed)
    assert "4096x4096" in r.json()["detail"] and "45 bytes" in r.json()["detail"]


@pytest.mark.parametrize(("images", "limit"), [
    ([flat_png_b64(4096, 4096)] * 64, "26214400 pixels per request"),  # each one alone would be allowed
    ([flat_png_b64(5000, 5000)], "16777216 pixels per image"),
])
def test_depth_is_bounded_per_request_before_any_work(platform, images, limit):
    with gateway(platform) as g:
        t0 = time.monotonic()
        r = g.post("/v1/perceive", json={"model": "depth-anything-v2-small", "task": "depth", "images": images})
        elapsed = time.monotonic() - t0
    assert r.status_code == 413 and elapsed < 2.0, (r.status_code, elapsed)
    assert limit in r.json()["detail"]


@pytest.mark.parametrize(("body", "status", "words"), [
    ({"model": "grounding-dino-base", "task": "depth", "images": ["x"]}, 400, "does detect"),
    ({"model": "grounding-dino-base", "task": "detect", "images": [], "labels": ["a"]}, 400, "images"),
    ({"model": "grounding-dino-base", "task": "detect", "images": ["https://example.com/cup.jpg"],
      "labels": ["cup"]}, 400, "never fetched"),
    ({"model": "siglip-so400m", "task": "embed"}, 400, "images, text"),
    ({"model": "jev", "task": "embed", "text": ["a"]}, 400, "not a perceive model"),
    ({"model": "siglip-so400m", "task": "segment", "text": ["a"]}, 422, "task"),
])
def test_perceive_refusals_carry_a_detail(platform, body, status, words):
    with gateway(platform) as g:
        r = g.post("/v1/perceive", json=body)
    assert r.status_code == status and words in str(r.json()["detail"])


# -- chat -----------------------------------------------------------------------------------------
def test_chat_answers_a_message_without_a_choices_wrapper(platform):
    with gateway(platform) as g:
        body = g.post("/v1/chat", json={"model": "accounts/sequences/models/claude-opus-4-8", "max_tokens": 64,
                                        "messages": [{"role": "user", "content": "what next?"}]}).json()
    assert body["message"]["role"] == "assistant" and "what next?" in body["message"]["content"]
    assert body["finish_reason"] == "stop" and "choices" not in body


@pytest.mark.parametrize(("body", "status"), [
    ({"model": "claude-opus-4-8", "messages": [{"role": "user", "content": "x"}], "stream": True}, 422),
    ({"model": "claude-opus-4-8", "messages": []}, 422),
    ({"model": "pi05-droid", "messages": [{"role": "user", "content": "x"}]}, 400),
    ({"model": "gpt-nope", "messages": [{"role": "user", "content": "x"}]}, 404),
])
def test_chat_refusals_carry_a_detail(platform, body, status):
    with gateway(platform) as g:
        r = g.post("/v1/chat", json=body)
    assert r.status_code == status and r.json()["detail"]


def test_the_openapi_document_lists_every_route(platform):
    with gateway(platform, key=None) as g:
        paths = set(g.get("/openapi.json").json()["paths"])
    assert {"/v1/health", "/v1/models", "/v1/account", "/v1/act/ready", "/v1/act/connect", "/v1/reports/act",
            "/v1/decide", "/v1/perceive", "/v1/chat"} <= paths


def test_connect_through_the_helper_matches_the_served_pin(platform):
    assert connect(platform)["cert_fingerprint"]
