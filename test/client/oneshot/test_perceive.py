"""detect(), embed(), depth(): shapes, local limits, and the warm-wait of docs/PROTOCOL.md §4.9."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from _frames import natural_frame
from _scripted_gateway import ScriptedGateway
from PIL import Image

from sequence_ai import InvalidRequest, SequencesError, Unavailable, depth, detect, embed
from sequence_ai._oneshot import _perception

KEY = "seq_test_key_for_stub_0000"


@pytest.fixture
def on(platform):
    return {"base_url": platform.base_url, "api_key": platform.api_key}


def test_detect_gives_one_entry_per_image_with_boxes_inside_the_sent_frame(on):
    frames = [natural_frame(1280, 720, seed=1), natural_frame(640, 480, seed=2)]
    result = detect("grounding-dino-base", frames, ["cup", "gripper", "table"], box_threshold=0.0, **on)
    assert result.task == "detect" and len(result.detections) == 2
    for entry, (w, h) in zip(result.detections, [(640, 360), (640, 480)]):  # sent at the 640 cap
        assert len(entry["boxes"]) == len(entry["labels"]) == len(entry["scores"]) == 3
        for x0, y0, x1, y1 in entry["boxes"]:
            assert 0 <= x0 <= x1 <= w and 0 <= y0 <= y1 <= h


def test_embed_vectors_are_unit_length(on):
    result = embed("siglip-so400m", natural_frame(320, 180), text=["a red cup", "a gripper"], **on)
    assert result.embedding_dim == len(result.image_embeddings[0]) == len(result.text_embeddings[1])
    assert np.linalg.norm(result.text_embeddings[0]) == pytest.approx(1.0, abs=1e-4)
    assert len(result.image_embeddings) == 1


def test_depth_decodes_to_one_float_map_per_image(on):
    jpeg = io.BytesIO()
    Image.fromarray(natural_frame(320, 180)).save(jpeg, "JPEG")
    result = depth("depth-anything-v2-small", jpeg.getvalue(), **on)
    (depth_map,) = result.depth
    assert depth_map.shape == (180, 320) and depth_map.dtype == np.float32
    assert depth_map[-1].mean() > depth_map[0].mean()  # the floor nearest


def test_perception_limits_and_task_are_checked_locally(on):
    frame = base64.b64encode(b"not sent").decode()
    with pytest.raises(InvalidRequest, match="labels"):
        detect("grounding-dino-base", frame, [], **on)
    with pytest.raises(InvalidRequest, match="64"):
        depth("depth-anything-v2-small", [frame] * 65, **on)
    with pytest.raises(InvalidRequest, match="embed"):
        detect("siglip-so400m", frame, ["cup"], **on)
    with pytest.raises(InvalidRequest, match="images, text"):
        embed("siglip-so400m", **on)


def test_perceive_waits_through_warming_and_reports_progress(monkeypatch):
    sleeps = []
    monkeypatch.setattr(_perception, "_sleep", sleeps.append)
    answer = {"id": "per_1", "model": "accounts/sequences/models/siglip-so400m", "image_embeddings": None,
              "text_embeddings": [[1.0, 0.0]], "embedding_dim": 2, "usage": {}, "perf": {}, "warnings": []}
    warming = {"detail": {"status": "warming_up", "retry_after_s": 7, "message": "loading"}}
    with ScriptedGateway() as gateway:
        gateway.script["/v1/perceive"] = [(503, {}, warming), (503, {}, {"code": "warming"}), (200, {}, answer)]
        progress = []
        result = embed("siglip-so400m", text=["cup"], on_warming=lambda w, eta: progress.append(eta),
                       base_url=gateway.base_url, api_key=KEY)
    assert result.text_embeddings == [[1.0, 0.0]]
    assert progress == [7.0, 20.0]  # the stated eta, then the default when none is given
    assert sleeps == [7.0, 20.0]


def test_perceive_gives_up_at_the_startup_timeout_and_never_retries_other_errors(monkeypatch):
    monkeypatch.setattr(_perception, "_sleep", lambda s: None)
    with ScriptedGateway() as gateway:
        gateway.script["/v1/perceive"] = [(503, {"Retry-After": "5"}, {"code": "warming"})]
        with pytest.raises(Unavailable) as failed:
            embed("siglip-so400m", text=["x"], startup_timeout_s=0, base_url=gateway.base_url, api_key=KEY)
        assert failed.value.warming
        gateway.script["/v1/perceive"] = [(501, {}, {"detail": "perception is not served yet"})]
        before = len(gateway.seen)
        with pytest.raises(SequencesError, match="not served") as failed:
            embed("siglip-so400m", text=["x"], base_url=gateway.base_url, api_key=KEY)
        assert type(failed.value) is SequencesError and len(gateway.seen) == before + 1
