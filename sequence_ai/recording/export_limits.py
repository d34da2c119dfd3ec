"""What `sequence-ai export` builds at most, checked before it writes (docs/RECORDING.md, "Bounds").

A recording is untrusted input, and a few bytes of it can ask for gigabytes: a rate of 1e-7 Hz
resampled at 30 fps, or a 9 KB PNG of 9000×9000 pixels. So each run is checked against stated
limits, and the export's totals against a budget the user can raise:

    control_hz                     0.1 to 1000 Hz
    --fps                          1 to 1000
    a frame                        at most 8192 pixels a side, 3840×2160 pixels in all
    frames, the whole export       1,000,000 (--max-frames)
    decoded images, the whole      64 GiB (--max-gib): frames × views × height × width × 3, what
    export                         lerobot is handed to encode

and every action, state and published command value is checked for NaN, ±inf and magnitudes
beyond float32 (which a dataset's float32 turns into inf).
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

__all__ = ["CONTROL_HZ", "FLOAT32_MAX", "FPS", "FRAME_PIXELS", "FRAME_SIDE", "BadFrame", "ExportBudget",
           "OverLimit", "ValuesOutOfRange", "check_frames", "check_rate", "image_bytes", "values_out_of_range"]

CONTROL_HZ = (0.1, 1000.0)
FPS = (1, 1000)
FRAME_SIDE = 8192
FRAME_PIXELS = 3840 * 2160
FLOAT32_MAX = 3.4028234663852886e38


class OverLimit(ValueError):
    """A run the export will not build: `field` is what is over its limit; the message says by how much."""

    def __init__(self, field: str, message: str):
        super().__init__(message)
        self.field = field


class BadFrame(ValueError):
    """A frame that is not an image, or whose view changes size mid-run: the file is skipped."""


@dataclass(frozen=True)
class ExportBudget:
    frames: int = 1_000_000
    image_bytes: int = 64 << 30


def check_rate(hz: float) -> None:
    low, high = CONTROL_HZ
    if not low <= hz <= high:
        raise OverLimit("control_hz", f"control_hz is {hz:g} Hz, outside what an export builds ({low:g} to "
                                      f"{high:g} Hz)")


def check_frames(frames: int, steps: int, hz: float, fps: int, budget: ExportBudget) -> None:
    if frames > budget.frames:
        raise OverLimit("frames", f"{steps} actions at {hz:g} Hz make {frames:,} frames at {fps} fps, over the "
                                  f"budget of {budget.frames:,} (--max-frames raises it)")


def image_bytes(views: Sequence[str], images: Dict[str, List[bytes]], used: Iterable[Tuple[int, ...]]) -> int:
    """Decoded bytes of the frames `used` (each step's frame index per view), from the images'
    headers alone: nothing is decoded. OverLimit for a frame over the stated size, BadFrame for
    one that is not an image or whose view changed size."""
    shapes: Dict[Tuple[int, int], Tuple[int, int]] = {}  # (view, index) -> (width, height)
    first: Dict[int, Tuple[int, int]] = {}
    total = 0
    for frames in used:
        for v, index in enumerate(frames):
            size = shapes.get((v, index))
            if size is None:
                size = shapes[(v, index)] = _checked_size(views[v], index, images[views[v]][index])
                if first.setdefault(v, size) != size:
                    raise BadFrame(f"frame {index} of view {views[v]} is {size[0]}×{size[1]}, the view's first "
                                   f"{first[v][0]}×{first[v][1]} (a dataset's view has one size)")
            total += size[0] * size[1] * 3
    return total


def _checked_size(view: str, index: int, data: bytes) -> Tuple[int, int]:
    from PIL import Image, UnidentifiedImageError

    where = f"frame {index} of view {view}"
    bomb_limit = Image.MAX_IMAGE_PIXELS
    try:
        Image.MAX_IMAGE_PIXELS = None  # the header only, to name the size; the limits below are stricter
        with Image.open(io.BytesIO(data)) as image:
            width, height = image.size
    except UnidentifiedImageError:
        raise BadFrame(f"{where} is not an image (no format Pillow reads; its first bytes: {data[:12]!r})") from None
    except (OSError, ValueError, SyntaxError) as exc:
        raise BadFrame(f"{where} is not an image ({type(exc).__name__}: {' '.join(str(exc).split())[:120]})") from None
    finally:
        Image.MAX_IMAGE_PIXELS = bomb_limit
    if width > FRAME_SIDE or height > FRAME_SIDE or width * height > FRAME_PIXELS:
        raise OverLimit("frame size", f"{where} is {width}×{height} pixels, over what an export decodes (at most "
                                      f"{FRAME_SIDE} a side and {FRAME_PIXELS:,} in all)")
    if width < 1 or height < 1:
        raise BadFrame(f"{where} is {width}×{height} pixels: no image")
    return width, height


@dataclass(frozen=True)
class ValuesOutOfRange:
    """Values of one feature that float32 cannot hold as numbers: how many, and the first."""

    feature: str
    count: int
    first: float
    step: int
    name: str

    def __str__(self) -> str:
        return (f"{self.feature} holds {self.count} value(s) not finite or beyond float32 (the first: "
                f"{self.first:g}, {self.name} at step {self.step})")


def values_out_of_range(feature: str, rows: Iterable[Sequence[float]],
                        names: Sequence[str]) -> Optional[ValuesOutOfRange]:
    count, first = 0, None
    for step, row in enumerate(rows):
        for j, value in enumerate(row):
            if not (math.isfinite(value) and abs(value) <= FLOAT32_MAX):
                count += 1
                if first is None:
                    first = (float(value), step, names[j] if j < len(names) else f"value {j}")
    return None if first is None else ValuesOutOfRange(feature, count, *first)
