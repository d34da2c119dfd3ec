"""ROS image messages -> RGB uint8 arrays, the colour order the models were trained on.

cv_bridge is used where it imports (a robot's apt-installed ROS). Without it (the PyPI wheels
here) raw images are converted with NumPy, honouring `step` (row padding) and `is_bigendian`, and
compressed ones decoded with OpenCV. rosbags-image was considered but ignores `step`, which
shears any padded image.
"""

from __future__ import annotations

import threading
from typing import Any, Dict, Optional, Tuple

import numpy as np

try:  # pragma: no cover - only on machines with an apt-installed ROS
    from cv_bridge import CvBridge

    _BRIDGE: Any = CvBridge()
except Exception:
    _BRIDGE = None

__all__ = ["FrameRule", "ImageConversionError", "to_rgb"]

# encoding -> (channels, dtype, channel order of the source)
_RAW = {
    "rgb8": (3, np.uint8, "rgb"),
    "bgr8": (3, np.uint8, "bgr"),
    "rgba8": (4, np.uint8, "rgba"),
    "bgra8": (4, np.uint8, "bgra"),
    "mono8": (1, np.uint8, "mono"),
    "8UC1": (1, np.uint8, "mono"),
    "8UC3": (3, np.uint8, "bgr"),
    "mono16": (1, np.uint16, "mono"),
    "16UC1": (1, np.uint16, "mono"),
    "rgb16": (3, np.uint16, "rgb"),
    "bgr16": (3, np.uint16, "bgr"),
    "rgba16": (4, np.uint16, "rgba"),
    "bgra16": (4, np.uint16, "bgra"),
}


class ImageConversionError(ValueError):
    """An image message that cannot be turned into a picture; the message says why."""


class FrameRule:
    """Which frame sizes a model takes, asked of the client's own encoder (`sequence_ai.encode`)
    once per size: a camera whose frames the model refuses (a square frame for a 16:9 model) is
    bad input the moment a frame is read, before a request is built, and /diagnostics says so."""

    SIZES_KEPT = 16  # verdicts remembered; a camera produces one or two sizes

    def __init__(self, model: Any):
        self.model = model
        self._lock = threading.Lock()  # the run and /diagnostics ask from their own threads
        self._verdicts: Dict[Tuple[int, int], Optional[str]] = {}

    def problem(self, rgb: np.ndarray) -> Optional[str]:
        """Why the model would refuse a frame of this size, or None."""
        size = (int(rgb.shape[1]), int(rgb.shape[0]))
        with self._lock:
            if size in self._verdicts:
                return self._verdicts[size]
        import sequence_ai

        try:
            sequence_ai.encode(rgb, self.model)
            verdict = None
        except ValueError as exc:
            verdict = str(exc)
        with self._lock:
            while len(self._verdicts) >= self.SIZES_KEPT:
                self._verdicts.pop(next(iter(self._verdicts)))
            self._verdicts[size] = verdict
        return verdict


def to_rgb(msg: Any) -> np.ndarray:
    """An `Image` or `CompressedImage` as an H×W×3 uint8 RGB array."""
    if _BRIDGE is not None:  # pragma: no cover - robots only
        try:
            if hasattr(msg, "format"):
                return np.asarray(_BRIDGE.compressed_imgmsg_to_cv2(msg, desired_encoding="rgb8"))
            return np.asarray(_BRIDGE.imgmsg_to_cv2(msg, desired_encoding="rgb8"))
        except Exception as exc:
            raise ImageConversionError(str(exc)) from None
    if hasattr(msg, "format"):
        return _compressed_to_rgb(msg)
    return _raw_to_rgb(msg)


def _compressed_to_rgb(msg: Any) -> np.ndarray:
    import cv2

    data = np.frombuffer(bytes(msg.data), dtype=np.uint8)
    if data.size == 0:
        raise ImageConversionError("compressed image has no data")
    decoded = cv2.imdecode(data, cv2.IMREAD_COLOR)  # always 3-channel BGR
    if decoded is None:
        raise ImageConversionError(f"compressed image ({msg.format or 'no format'}) could not be decoded")
    return np.ascontiguousarray(decoded[:, :, ::-1])


def _raw_to_rgb(msg: Any) -> np.ndarray:
    encoding = str(msg.encoding)
    if encoding not in _RAW:
        raise ImageConversionError(f"unsupported image encoding {encoding!r} (supported: {', '.join(_RAW)})")
    channels, dtype, order = _RAW[encoding]
    height, width, step = int(msg.height), int(msg.width), int(msg.step)
    if height <= 0 or width <= 0:
        raise ImageConversionError(f"image is {width}x{height}")
    row_bytes = width * channels * np.dtype(dtype).itemsize
    if step < row_bytes:
        raise ImageConversionError(f"step {step} is shorter than a row of {width} {encoding} pixels ({row_bytes} bytes)")
    buffer = bytes(msg.data) if not isinstance(msg.data, (bytes, bytearray, memoryview)) else msg.data
    if len(buffer) < step * (height - 1) + row_bytes:
        raise ImageConversionError(f"image data is {len(buffer)} bytes; {width}x{height} {encoding} with step {step} needs {step * height}")
    rows = np.frombuffer(buffer, dtype=np.uint8, count=step * (height - 1) + row_bytes)
    rows = np.lib.stride_tricks.as_strided(rows, shape=(height, row_bytes), strides=(step, 1))
    wire_dtype = np.dtype(dtype).newbyteorder(">" if msg.is_bigendian else "<")
    pixels = np.ascontiguousarray(rows).view(wire_dtype).reshape(height, width, channels).astype(dtype)
    if pixels.dtype.itemsize == 2:
        pixels = (pixels >> 8).astype(np.uint8)  # 16-bit -> the top 8 bits
    if order == "mono":
        return np.repeat(pixels, 3, axis=2)
    if order.startswith("bgr"):
        pixels = pixels[:, :, 2::-1]
    else:
        pixels = pixels[:, :, :3]
    return np.ascontiguousarray(pixels)
