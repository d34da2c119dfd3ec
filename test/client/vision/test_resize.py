"""Sizing rules of docs/PROTOCOL.md §8.2: every mode's output size, the letterbox pixels, aspect refusal."""

from __future__ import annotations

import base64
import io

import numpy as np
import pytest
from _frames import natural_frame
from PIL import Image

from sequence_ai import Model, encode
from sequence_ai._vision._resize import plan

PI05 = Model.from_wire({"id": "m/pi05-droid", "input_resize": "pad", "input_aspect_ratio": 1.7778,
                        "client_resize": {"size": [224, 224], "filter": "bilinear"}})
PI05_126 = Model.from_wire({"id": "m/pi05-126", "input_resize": "pad", "input_aspect_ratio": 1.7778,
                            "client_resize": {"size": [224, 126], "filter": "bilinear"}})
GROOT = Model.from_wire({"id": "m/groot-n1-7-3b-droid", "client_resize": {"shortest_edge": 256, "filter": "area"}})
COSMOS = Model.from_wire({"id": "m/cosmos3-edge-policy-droid", "input_resize": "stretch", "input_aspect_ratio": 1.7778,
                          "client_resize": {"size": [640, 360], "filter": "bilinear"}})
PERCEIVE = Model.from_wire({"id": "m/grounding-dino-base", "endpoint": "perceive"})

SOURCES = [(1280, 720), (848, 480), (640, 480), (320, 180), (4104, 2736)]
REFUSED = None
# docs/PROTOCOL.md §8.2, measured with the 0.20.0 client.
TABLE = {
    "pi05 224x224": (PI05, [(224, 224), (224, 224), REFUSED, (224, 224), REFUSED]),
    "pi05 224x126": (PI05_126, [(224, 126), (224, 126), REFUSED, (224, 126), REFUSED]),
    "groot shortest edge": (GROOT, [(455, 256), (452, 256), (341, 256), (320, 180), (384, 256)]),
    "cosmos stretch": (COSMOS, [(640, 360), (640, 360), REFUSED, (640, 360), REFUSED]),
    "no client_resize": (PERCEIVE, [(640, 360), (640, 362), (640, 480), (320, 180), (640, 427)]),
    "no model": (None, [(640, 360), (640, 362), (640, 480), (320, 180), (640, 427)]),
}


@pytest.mark.parametrize("case", sorted(TABLE))
def test_every_resize_mode_produces_the_wire_table_size(case):
    model, expected = TABLE[case]
    for (w, h), want in zip(SOURCES, expected):
        if want is REFUSED:
            with pytest.raises(ValueError):
                plan(w, h, model)
        else:
            assert plan(w, h, model).output == want, (case, w, h)


@pytest.mark.parametrize("case", ["pi05 224x224", "groot shortest edge", "cosmos stretch", "no model"])
def test_encoded_jpeg_has_the_planned_size(case):
    model, expected = TABLE[case]
    frame = natural_frame(848, 480, seed=3)
    data = base64.b64decode(encode(frame, model))
    with Image.open(io.BytesIO(data)) as image:
        assert image.format == "JPEG"
        assert image.size == expected[1]


def test_aspect_refusal_names_both_ratios_and_advises_a_crop():
    with pytest.raises(ValueError) as refused:
        encode(np.zeros((480, 640, 3), np.uint8), PI05)
    message = str(refused.value)
    assert "4:3" in message and "16:9" in message
    assert "crop the frame" in message.lower() and "168 rows" in message
    assert "pi05-droid" in message


def test_frame_already_at_target_size_is_not_resized_or_checked():
    assert plan(224, 224, PI05).mode == "keep"


def test_unknown_filter_is_refused_not_substituted():
    model = Model.from_wire({"id": "m/x", "client_resize": {"size": [224, 224], "filter": "nearest"}})
    with pytest.raises(ValueError, match="nearest"):
        plan(1280, 720, model)


def test_shortest_edge_never_upsizes():
    assert plan(200, 100, GROOT).mode == "keep"


# ---- letterbox pixels vs an independent resize_with_pad written from its definition ----------

def reference_resize_with_pad(frame: np.ndarray, width: int, height: int) -> np.ndarray:
    """openpi's definition: ratio = max(w/W, h/H); PIL bilinear resize to (int(w/ratio),
    int(h/ratio)); paste centred (int((W-w')/2), int((H-h')/2)) onto black."""
    source = Image.fromarray(frame)
    w, h = source.size
    ratio = max(w / width, h / height)
    new_w, new_h = int(w / ratio), int(h / ratio)
    resized = source.resize((new_w, new_h), resample=Image.BILINEAR)
    canvas = Image.new("RGB", (width, height), 0)
    canvas.paste(resized, (max(0, int((width - new_w) / 2)), max(0, int((height - new_h) / 2))))
    return np.asarray(canvas)


@pytest.mark.parametrize("size", [(1280, 720), (848, 480), (320, 180), (1920, 1080)])
@pytest.mark.parametrize("threads", ["1", "2", "4"])
@pytest.mark.parametrize("given", ["array (compiled resampler)", "PIL image (Pillow)"])
def test_letterbox_pixels_match_reference_resize_with_pad(size, threads, given, monkeypatch):
    from sequence_ai._vision import _resize

    monkeypatch.setenv("SEQUENCES_ENCODE_THREADS", threads)
    frame = natural_frame(*size, seed=size[0])
    pixels = frame if given.startswith("array") else Image.fromarray(frame)
    ours = np.asarray(_resize.apply(pixels, plan(size[0], size[1], PI05))).astype(int)
    reference = reference_resize_with_pad(frame, 224, 224).astype(int)
    assert ours.shape == reference.shape == (224, 224, 3)
    assert np.abs(ours - reference).max() <= 1


def test_letterbox_bars_are_black_and_centred():
    frame = np.full((720, 1280, 3), 200, np.uint8)
    ours = np.asarray(Image.open(io.BytesIO(base64.b64decode(encode(frame, PI05, quality=100)))))
    assert ours[:40].max() <= 8 and ours[-40:].max() <= 8  # 49 black rows above and below
    assert abs(int(ours[112, 112, 0]) - 200) <= 3


@pytest.mark.parametrize("model", [None, COSMOS], ids=["640 cap (lanczos)", "stretch (bilinear)"])
def test_banded_resize_equals_one_pillow_resize(model, monkeypatch):
    from sequence_ai._vision import _resize

    frame = natural_frame(1920, 1080, seed=7)
    size_plan = plan(1920, 1080, model)
    whole = np.asarray(Image.fromarray(frame).resize(size_plan.resize_to, {"lanczos": Image.LANCZOS}.get(
        size_plan.filter, Image.BILINEAR))).astype(int)
    monkeypatch.setenv("SEQUENCES_ENCODE_THREADS", "3")
    banded = np.asarray(_resize.apply(Image.fromarray(frame), size_plan)).astype(int)
    assert np.abs(banded - whole).max() <= 1
