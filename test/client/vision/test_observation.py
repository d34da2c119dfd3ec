"""observation() for the live catalogue rows: drop-and-warn, missing views, state halves."""

from __future__ import annotations

import base64
import io
import warnings

import pytest
from _frames import natural_frame
from PIL import Image

from sequence_ai import ImageFrame, Observation, models, observation


@pytest.fixture
def catalogue(platform):
    return {m.short_id: m for m in models("act", base_url=platform.base_url)}


def _size(frame: ImageFrame):
    with Image.open(io.BytesIO(base64.b64decode(frame.data))) as image:
        return image.size


def test_observation_sizes_each_view_for_the_model(catalogue):
    camera = natural_frame(1280, 720)
    for short_id, size in [("pi05-droid", (224, 224)), ("groot-n1-7-3b-droid", (455, 256))]:
        model = catalogue[short_id]
        obs = observation(model, images={v: camera for v in model.camera_views}, joints=[0.0] * 7, gripper=[0.0],
                          instruction="pick up the cup", timestamp_ms=1234)
        assert isinstance(obs, Observation)
        assert [f.view for f in obs.images] == list(model.camera_views)
        assert {_size(f) for f in obs.images} == {size}
        assert {f.timestamp_ms for f in obs.images} == {1234}
        assert obs.proprioception.gripper == [0.0]


def test_undeclared_camera_is_dropped_with_a_warning_naming_it(catalogue):
    camera = natural_frame(320, 180)
    with pytest.warns(UserWarning, match="top_down") as caught:
        obs = observation(catalogue["pi05-droid"], images={"exterior_1": camera, "wrist_left": camera, "top_down": camera},
                          joints=[0.0] * 7, gripper=[1.0], instruction="x")
    assert [f.view for f in obs.images] == ["exterior_1", "wrist_left"]
    assert len(caught) == 1


def test_missing_declared_view_is_an_error_naming_it(catalogue):
    with pytest.raises(ValueError, match="wrist_left") as refused:
        observation(catalogue["pi05-droid"], images={"exterior_1": natural_frame(320, 180), "top_down": b"x"},
                    joints=[0.0] * 7, gripper=[0.0], instruction="x")
    assert "rejected" in str(refused.value)


def test_state_layout_halves_are_checked_separately(catalogue):
    camera = natural_frame(320, 180)
    images = {"exterior_1": camera, "wrist_left": camera}
    with pytest.raises(ValueError, match="gripper") as refused:
        observation(catalogue["pi05-droid"], images=images, joints=[0.0] * 8, instruction="x")  # 8 = 8, still wrong
    assert "7 joint position" in str(refused.value)
    with pytest.raises(ValueError, match="joint"):
        observation(catalogue["pi05-droid"], images=images, joints=[0.0] * 6, gripper=[0.0, 0.0], instruction="x")


def test_strict_false_warns_instead_and_still_builds(catalogue):
    camera = natural_frame(320, 180)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        obs = observation(catalogue["pi05-droid"], images={"exterior_1": camera, "wrist_left": camera},
                          joints=[0.0] * 8, instruction="x", strict=False)
    assert any("quietly wrong" in str(w.message) for w in caught)
    assert len(obs.proprioception.joint_positions) == 8


def test_model_by_name_and_string_frames_pass_through(platform, monkeypatch):
    monkeypatch.setenv("SEQUENCES_BASE_URL", platform.base_url)
    from sequence_ai._catalogue._models import clear_cache

    clear_cache()
    obs = observation("cosmos3-edge-policy-droid", images={"exterior_1": "AAAA", "exterior_2": "BBBB", "wrist_left": "CCCC"},
                      joints=[0.0] * 7, gripper=[0.0], instruction="x")
    assert [f.data for f in obs.images] == ["AAAA", "BBBB", "CCCC"]


def test_images_must_be_a_mapping(catalogue):
    with pytest.raises(TypeError, match="mapping"):
        observation(catalogue["pi05-droid"], images=[b"x", b"y"], joints=[0.0] * 7, gripper=[0.0], instruction="x")


def test_aspect_refusal_surfaces_from_observation(catalogue):
    camera = natural_frame(640, 480)
    with pytest.raises(ValueError, match="Crop the frame to 16:9"):
        observation(catalogue["cosmos3-edge-policy-droid"],
                    images={"exterior_1": camera, "exterior_2": camera, "wrist_left": camera},
                    joints=[0.0] * 7, gripper=[0.0], instruction="x")
