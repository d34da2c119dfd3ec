"""Image messages to RGB arrays (sequence_ai_ros/inputs/images.py): every encoding the node takes,
red staying red, and a malformed message refused naming why."""

from __future__ import annotations

import numpy as np
import pytest
from sensor_msgs.msg import CompressedImage, Image

from sequence_ai_ros.inputs.images import ImageConversionError, to_rgb

pytestmark = pytest.mark.ros
RED = (230, 10, 20)


def red_rgb(width=6, height=4):
    image = np.zeros((height, width, 3), dtype=np.uint8)
    image[:, :] = RED
    image[0, 0] = (1, 2, 3)  # a marker pixel to catch transposition and row shifts
    return image


def raw_message(rgb: np.ndarray, encoding: str, padding: int = 0, bigendian: bool = False) -> Image:
    height, width, _ = rgb.shape
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "bgr8":
        pixels = rgb[:, :, ::-1]
    elif encoding == "rgba8":
        pixels = np.dstack([rgb, np.full((height, width), 255, np.uint8)])
    elif encoding == "bgra8":
        pixels = np.dstack([rgb[:, :, ::-1], np.full((height, width), 255, np.uint8)])
    elif encoding == "mono8":
        pixels = rgb[:, :, :1]
    elif encoding in ("mono16", "16UC1"):
        pixels = (rgb[:, :, :1].astype(np.uint16) * 257).astype(">u2" if bigendian else "<u2")
    else:
        raise AssertionError(encoding)
    row = np.ascontiguousarray(pixels).reshape(height, -1).view(np.uint8)
    padded = np.zeros((height, row.shape[1] + padding), dtype=np.uint8)
    padded[:, : row.shape[1]] = row
    return Image(height=height, width=width, encoding=encoding, is_bigendian=int(bigendian),
                 step=row.shape[1] + padding, data=padded.tobytes())


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8", "rgba8", "bgra8"])
@pytest.mark.parametrize("padding", [0, 5])
def test_colour_images_convert_to_rgb_with_red_staying_red(encoding, padding):
    rgb = red_rgb()
    out = to_rgb(raw_message(rgb, encoding, padding))
    assert out.shape == (4, 6, 3) and out.dtype == np.uint8
    assert tuple(out[2, 3]) == RED, "colour order wrong"
    assert tuple(out[0, 0]) == (1, 2, 3)


@pytest.mark.parametrize("encoding,bigendian", [("mono8", False), ("mono16", False), ("mono16", True), ("16UC1", False)])
def test_mono_images_become_grey_rgb(encoding, bigendian):
    out = to_rgb(raw_message(red_rgb(), encoding, padding=3, bigendian=bigendian))
    assert out.shape == (4, 6, 3)
    assert tuple(out[2, 3]) == (RED[0],) * 3


def test_compressed_images_decode_in_rgb_order():
    import cv2

    ok, jpeg = cv2.imencode(".png", red_rgb(16, 9)[:, :, ::-1])
    out = to_rgb(CompressedImage(format="png", data=jpeg.tobytes()))
    assert tuple(out[4, 8]) == RED


@pytest.mark.parametrize("message,why", [
    (Image(height=4, width=6, encoding="yuv422", step=12, data=bytes(48)), "unsupported image encoding"),
    (Image(height=4, width=6, encoding="rgb8", step=10, data=bytes(72)), "step 10 is shorter"),
    (Image(height=4, width=6, encoding="rgb8", step=18, data=bytes(50)), "needs"),
    (CompressedImage(format="jpeg", data=b"not a jpeg"), "could not be decoded"),
])
def test_malformed_images_are_refused_naming_why(message, why):
    with pytest.raises(ImageConversionError, match=why):
        to_rgb(message)
