"""The compiled resampler behind encode() (sequence_ai/_resample.c): built in this workspace,
within one level of Pillow's own resize for every size, filter and array layout it accepts, the
same split into bands as whole, and refusing a buffer that does not match its geometry."""

from __future__ import annotations

import numpy as np
import pytest
from _frames import natural_frame
from PIL import Image

from sequence_ai._vision import _resize
from sequence_ai._vision._resize import SizePlan

FILTERS = {"bilinear": Image.BILINEAR, "area": Image.BOX}


def _pillow(frame: np.ndarray, size, filter_name: str) -> np.ndarray:
    return np.asarray(Image.fromarray(frame).convert("RGB").resize(size, FILTERS[filter_name])).astype(int)


def _ours(frame: np.ndarray, size, filter_name: str) -> np.ndarray:
    image = _resize._native_resize(frame, SizePlan("stretch", frame.shape[1::-1], size, filter_name))
    assert image is not None, "the compiled resampler did not take an array it accepts"
    assert image.mode == "RGB" and image.size == size
    return np.asarray(image).astype(int)


def test_the_workspace_built_the_resampler_and_encode_uses_it(monkeypatch):
    assert _resize._native is not None, "sequence_ai._vision._resample was not built (CMakeLists.txt / setup.py)"
    calls = []
    real = _resize._native.resample_into
    monkeypatch.setattr(_resize, "_native", type("Spy", (), {"resample_into": staticmethod(
        lambda *a: calls.append(a[-2:]) or real(*a))}))
    from sequence_ai import Model, encode

    pi05 = Model.from_wire({"id": "m/pi05-droid", "input_resize": "pad", "input_aspect_ratio": 1.7778,
                            "client_resize": {"size": [224, 224], "filter": "bilinear"}})
    encode(natural_frame(1280, 720), pi05)
    assert calls and sum(b - a for a, b in calls) == 126  # every row of the 224x126 picture, once


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
@pytest.mark.parametrize("source,size", [
    ((1280, 720), (224, 126)), ((1280, 720), (455, 256)), ((1920, 1080), (640, 360)), ((640, 480), (224, 168)),
    ((1280, 720), (1000, 700)), ((320, 180), (640, 360)), ((97, 61), (13, 7)), ((8, 8), (1, 1)),
])
def test_within_one_level_of_pillow_on_noise_and_edges(source, size, filter_name):
    rng = np.random.default_rng(source[0] + size[0])
    noise = rng.integers(0, 256, (source[1], source[0], 3), dtype=np.uint8)
    for frame in (noise, natural_frame(*source, seed=3)):
        assert np.abs(_ours(frame, size, filter_name) - _pillow(frame, size, filter_name)).max() <= 1


def test_rgba_grey_and_strided_arrays_read_like_their_rgb_pixels():
    rgb = natural_frame(640, 360, seed=5)
    size = (224, 126)
    reference = _pillow(rgb, size, "bilinear")
    rgba = np.dstack([rgb, np.full(rgb.shape[:2], 7, np.uint8)])
    assert np.abs(_ours(rgba, size, "bilinear") - reference).max() <= 1  # alpha ignored, not blended
    assert np.abs(_ours(np.ascontiguousarray(rgb[:, ::-1])[:, ::-1], size, "bilinear") - reference).max() <= 1
    wide = natural_frame(800, 360, seed=5)
    window = wide[:, 80:720]  # a view whose rows are longer than the picture
    assert np.abs(_ours(window, size, "bilinear") - _pillow(np.ascontiguousarray(window), size, "bilinear")).max() <= 1
    grey = rgb[:, :, 1].copy()
    ours = _ours(grey, size, "bilinear")
    assert (ours[..., 0] == ours[..., 2]).all()
    assert np.abs(ours - _pillow(grey, size, "bilinear")).max() <= 1


def test_letterbox_lands_on_a_black_canvas_at_the_offset():
    frame = np.full((720, 1280, 3), 200, np.uint8)
    image = _resize._native_resize(frame, SizePlan("pad", (1280, 720), (224, 126), "bilinear", (224, 224), (0, 49)))
    pixels = np.asarray(image)
    assert pixels.shape == (224, 224, 3)
    assert pixels[:49].max() == 0 and pixels[175:].max() == 0 and (pixels[49:175] == 200).all()


@pytest.mark.parametrize("filter_name", sorted(FILTERS))
@pytest.mark.parametrize("threads", ["2", "3"])
def test_bands_on_threads_equal_one_pass(threads, filter_name, monkeypatch):
    frame = natural_frame(1920, 1080, seed=11)
    monkeypatch.setenv("SEQUENCES_ENCODE_THREADS", "1")
    whole = _ours(frame, (640, 360), filter_name)
    monkeypatch.setenv("SEQUENCES_ENCODE_THREADS", threads)
    assert (_ours(frame, (640, 360), filter_name) == whole).all()


def test_filters_with_negative_lobes_stay_with_pillow():
    frame = natural_frame(1280, 720)
    for name in ("bicubic", "lanczos"):
        assert _resize._native_resize(frame, SizePlan("stretch", (1280, 720), (640, 360), name)) is None


def test_a_buffer_that_does_not_match_its_geometry_is_refused():
    native = _resize._native
    frame = np.zeros((10, 10, 3), np.uint8)
    canvas = bytearray(5 * 5 * 3)
    with pytest.raises(ValueError, match="shorter than its geometry"):
        native.resample_into(frame, 11, 10, 30, 3, 3, canvas, 5, 5, 0, 0, 5, 5, 0, 0, 5)
    with pytest.raises(ValueError, match="does not fit the canvas"):
        native.resample_into(frame, 10, 10, 30, 3, 3, canvas, 5, 5, 1, 0, 5, 5, 0, 0, 5)
    with pytest.raises(ValueError, match="row range or filter"):
        native.resample_into(frame, 10, 10, 30, 3, 3, canvas, 5, 5, 0, 0, 5, 5, 7, 0, 5)
    with pytest.raises(TypeError):
        native.resample_into(frame, 10, 10, 30, 3, 3, bytes(canvas), 5, 5, 0, 0, 5, 5, 0, 0, 5)  # read-only
